#include "core/error_util.h"
#include "ir/graph.h"
#include "runtime/compile.h"
#include "runtime/specialize.h"
#include "tg/deferred_errors.h"

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
    const Shape& want = p.feed_types[i].shape;
    const Shape& got = inputs[i].shape();
    bool ok = got.size() == want.size();
    for (size_t d = 0; ok && d < got.size(); ++d) ok = want[d] < 0 || want[d] == got[d];  // symbols: per signature
    if (!ok) {
      fail(ErrorCode::shape_mismatch, "run", "placeholder '{}' expects {}, got {}", p.feed_names[i],
           p.feed_types[i].to_string(), inputs[i].type().to_string());
    }
  }
  if (p.specializations) {  // disable_type_inference: the program lowered for these shapes
    std::vector<TensorType> types;
    for (const TensorData& t : inputs) types.push_back(t.type());
    const std::shared_ptr<const CompiledProgram> q = p.specializations->get(types);
    // Deferred device errors another signature's runs posted are raised before this run queues
    // anything (its own program raises its arenas' errors itself).
    p.specializations->check_deferred_errors(q.get(), false);
    return q->program->run(inputs, options);
  }
  return p.program->run(inputs, options);
}

void set_deferred_device_errors(const Executable& exe, bool deferred) {
  if (!exe.valid()) throw Error(ErrorCode::invalid_argument, "[executable] use of an empty Executable");
  const CompiledProgram& p = *exe.program();
  if (p.specializations) {  // every signature's program, those lowered later too
    p.specializations->set_deferred_errors(deferred);
    return;
  }
  p.program->set_deferred_errors(deferred);
}

void check_device_errors(const Executable& exe) {
  if (!exe.valid()) throw Error(ErrorCode::invalid_argument, "[executable] use of an empty Executable");
  const CompiledProgram& p = *exe.program();
  if (p.specializations) p.specializations->check_deferred_errors(nullptr, true);
  if (p.program) p.program->check_deferred_errors();
}

size_t Executable::arena_bytes() const {
  const CompiledProgram& p = checked(program_);
  return p.specializations ? p.specializations->arena_bytes() : p.program->arena_bytes();
}
size_t Executable::unplanned_bytes() const {
  const CompiledProgram& p = checked(program_);
  return p.specializations ? p.specializations->unplanned_bytes()
                           : static_cast<size_t>(p.program->memory().planned_bytes);
}
int Executable::arena_count() const {
  const CompiledProgram& p = checked(program_);
  return p.specializations ? p.specializations->arena_count() : p.program->arena_count();
}

std::vector<TensorType> Executable::input_types() const { return checked(program_).feed_types; }
std::vector<TensorType> Executable::output_types() const { return checked(program_).target_types; }
Device Executable::device() const { return checked(program_).device; }
std::string Executable::to_string() const { return ir::print_graph(*checked(program_).plan->graph); }

}  // namespace tg
