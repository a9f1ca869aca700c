#include "core/error_util.h"
#include "ir/graph.h"
#include "runtime/compile.h"

namespace tg {

namespace {
const CompiledProgram& checked(const std::shared_ptr<const CompiledProgram>& p) {
  if (!p) throw Error(ErrorCode::invalid_argument, "[executable] use of an empty Executable");
  return *p;
}
}  // namespace

std::vector<TensorData> Executable::run(const std::vector<TensorData>& inputs) const { return run(inputs, RunOptions{}); }

std::vector<TensorData> Executable::run(const std::vector<TensorData>& inputs, const RunOptions& options) const {
  const CompiledProgram& p = checked(program_);
  if (inputs.size() != p.feed_types.size()) {
    fail(ErrorCode::not_found, "run", "executable takes {} inputs, got {}", p.feed_types.size(),
         inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) fail(ErrorCode::invalid_argument, "run", "input {} ('{}') is empty", i, p.feed_names[i]);
    if (inputs[i].dtype() != p.feed_types[i].dtype) {
      fail(ErrorCode::dtype_mismatch, "run", "placeholder '{}' expects {}, got {}", p.feed_names[i],
           p.feed_types[i].to_string(), inputs[i].type().to_string());
    }
    if (inputs[i].shape() != p.feed_types[i].shape) {
      fail(ErrorCode::shape_mismatch, "run", "placeholder '{}' expects {}, got {}", p.feed_names[i],
           p.feed_types[i].to_string(), inputs[i].type().to_string());
    }
  }
  return p.program->run(inputs, options);
}

size_t Executable::arena_bytes() const { return checked(program_).program->arena_bytes(); }
size_t Executable::unplanned_bytes() const {
  return static_cast<size_t>(checked(program_).program->memory().planned_bytes);
}
int Executable::arena_count() const { return checked(program_).program->arena_count(); }

std::vector<TensorType> Executable::input_types() const { return checked(program_).feed_types; }
std::vector<TensorType> Executable::output_types() const { return checked(program_).target_types; }
Device Executable::device() const { return checked(program_).device; }
std::string Executable::to_string() const { return ir::print_graph(*checked(program_).plan->graph); }

}  // namespace tg
