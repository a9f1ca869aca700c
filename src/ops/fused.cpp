// Type inference of the fused ops (made by passes/fuse_elementwise.cpp and passes/fuse_reduce.cpp,
// never by the builder): output k has FusedAttrs::shape (fused_reduce: with reduce_axes removed,
// or 1 when keep_dims) and the dtype of program value outputs[k]. Row programs (ir/fused_rows.h):
// fused_elementwise steps that are row reductions are checked here (the verifier's check).
// fused_stencil (passes/fuse_stencil.cpp): prologue, stencil and epilogue typed by their own rules.
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error_util.h"
#include "ir/fused_rows.h"
#include "ops/registry.h"

namespace tg::ops {
namespace {

std::vector<TensorType> infer_fused(const ir::Node& node, std::span<const TensorType> inputs) {
  const auto& a = std::get<ir::FusedAttrs>(node.attrs);
  const int num_inputs = static_cast<int>(inputs.size());
  std::vector<TensorType> out;
  const bool reduce = node.kind == ir::OpKind::fused_reduce;
  std::vector<DType> dtype;
  for (const TensorType& t : inputs) dtype.push_back(t.dtype);
  for (size_t k = 0; k < a.steps.size(); ++k) {
    const ir::FusedStep& s = a.steps[k];
    if (ir::is_row_reduction_step(s.kind)) {
      // A row reduction: one floating argument of the step's dtype, over the last axis.
      const std::string_view step = ir::op_name(s.kind);
      if (reduce || a.shape.empty()) {
        fail(ErrorCode::internal, ir::op_name(node.kind), "step {} ({}) is a row reduction; only fused_elementwise "
             "programs of rank >= 1 have them", k, step);
      }
      const int v = s.args.size() == 1 ? s.args[0] : -1;
      if (v < 0 || v >= num_inputs + static_cast<int>(k)) {
        fail(ErrorCode::internal, ir::op_name(node.kind), "step {} ({}) must read one earlier value", k, step);
      }
      const DType t = dtype[static_cast<size_t>(v)];
      if (!is_floating(t) || t != s.dtype) {
        fail(ErrorCode::internal, ir::op_name(node.kind), "step {} ({}) reduces {} to {}; floating dtypes, unchanged", k,
             step, dtype_name(t), dtype_name(s.dtype));
      }
    } else {
      // Every step reads earlier values only, as many as its op takes (a loaded .tgx file's programs
      // are checked here before any kernel reads them).
      const int arity = ir::op_info(s.kind).arity;
      if (arity >= 0 && static_cast<int>(s.args.size()) != arity) {
        fail(ErrorCode::internal, ir::op_name(node.kind), "step {} ({}) has {} arguments, the op takes {}", k,
             ir::op_name(s.kind), s.args.size(), arity);
      }
      for (int v : s.args) {
        if (v < 0 || v >= num_inputs + static_cast<int>(k)) {
          fail(ErrorCode::internal, ir::op_name(node.kind), "step {} ({}) reads value {}; earlier values are 0..{}", k,
               ir::op_name(s.kind), v, num_inputs + static_cast<int>(k) - 1);
        }
      }
    }
    dtype.push_back(s.dtype);
  }
  Shape shape = a.shape;
  if (reduce) {
    shape.clear();
    for (int64_t d = 0; d < static_cast<int64_t>(a.shape.size()); ++d) {
      const bool reduced = std::find(a.reduce_axes.begin(), a.reduce_axes.end(), d) != a.reduce_axes.end();
      if (!reduced) shape.push_back(a.shape[static_cast<size_t>(d)]);
      else if (a.keep_dims) shape.push_back(1);
    }
  }
  for (int v : a.outputs) {
    // fused_reduce may sum an input directly.
    const int first = reduce ? 0 : num_inputs;
    if (v < first || v >= num_inputs + static_cast<int>(a.steps.size())) {
      fail(ErrorCode::internal, ir::op_name(node.kind), "output value {} is not a step ({} inputs, {} steps)", v,
           num_inputs, a.steps.size());
    }
    const DType dtype = v < num_inputs ? inputs[static_cast<size_t>(v)].dtype : a.steps[static_cast<size_t>(v - num_inputs)].dtype;
    out.push_back({shape, dtype});
  }
  return out;
}

// One stage of a fused_stencil: `program` (a fused_elementwise program with one output, or no steps
// and outputs {0}: input 0 itself) on `inputs`, each of the program's shape or one element.
TensorType infer_stage(const ir::Node& node, const ir::FusedAttrs& program, std::span<const TensorType> inputs,
                       const char* stage) {
  const std::string_view op = ir::op_name(node.kind);
  if (program.outputs.size() != 1 || !program.reduce_axes.empty()) {
    fail(ErrorCode::internal, op, "the {} must have one output and no reduction", stage);
  }
  for (const TensorType& t : inputs) {
    if (t.shape != program.shape && num_elements(t.shape) != 1) {
      fail(ErrorCode::internal, op, "{} input {} is neither of the program's shape [{}] nor one element", stage,
           t.to_string(), fmt::join(program.shape, ","));
    }
  }
  if (program.steps.empty()) {
    if (program.outputs[0] != 0 || inputs.empty() || inputs[0].shape != program.shape) {
      fail(ErrorCode::internal, op, "a {} without steps must output its first input, of shape [{}]", stage,
           fmt::join(program.shape, ","));
    }
    return inputs[0];
  }
  for (const ir::FusedStep& s : program.steps) {
    if (ir::is_row_reduction_step(s.kind)) fail(ErrorCode::internal, op, "the {} has a row reduction", stage);
  }
  ir::Node p;
  p.kind = ir::OpKind::fused_elementwise;
  p.attrs = program;
  return infer_fused(p, inputs).at(0);
}

// fused_stencil (ir::FusedStencilAttrs): the prologue's value, the stencil's result, the epilogue's
// value, each typed by its own rule.
std::vector<TensorType> infer_fused_stencil(const ir::Node& node, std::span<const TensorType> inputs) {
  const auto& a = std::get<ir::FusedStencilAttrs>(node.attrs);
  const std::string_view op = ir::op_name(node.kind);
  const size_t n = inputs.size(), np = static_cast<size_t>(std::max(a.num_prologue_inputs, 0));
  const size_t nw = a.weights.empty() ? 1 : 0;
  if (np < 1 || np + nw > n) {
    fail(ErrorCode::internal, op, "{} inputs for {} prologue inputs and {} weights inputs", n, np, nw);
  }
  const TensorType source = infer_stage(node, a.prologue, inputs.subspan(0, np), "prologue");
  TensorType w{a.window, source.dtype};
  if (nw == 1) {
    w = inputs[np];
  } else if (!is_floating(source.dtype) || static_cast<int64_t>(a.weights.size()) != num_elements(a.window)) {
    fail(ErrorCode::internal, op, "{} constant weights for window [{}] of {}: one per tap, floating dtypes only",
         a.weights.size(), fmt::join(a.window, ","), dtype_name(source.dtype));
  }
  if (w.shape != a.window) {
    fail(ErrorCode::internal, op, "weights {} do not have the window's shape [{}]", w.to_string(),
         fmt::join(a.window, ","));
  }
  ir::Node st;
  st.kind = ir::OpKind::stencil;
  st.attrs = a.stencil;
  const TensorType operands[2] = {source, w};
  const TensorType result = infer_types(st, operands).at(0);
  std::vector<TensorType> epilogue_inputs{result};
  for (size_t i = np + nw; i < n; ++i) epilogue_inputs.push_back(inputs[i]);
  if (a.epilogue.shape != result.shape) {
    fail(ErrorCode::internal, op, "the epilogue's shape [{}] is not the stencil's result {}",
         fmt::join(a.epilogue.shape, ","), result.to_string());
  }
  return {infer_stage(node, a.epilogue, epilogue_inputs, "epilogue")};
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  r.set(ir::OpKind::fused_elementwise, infer_fused);
  r.set(ir::OpKind::fused_reduce, infer_fused);
  r.set(ir::OpKind::fused_stencil, infer_fused_stencil);
}

}  // namespace tg::ops
