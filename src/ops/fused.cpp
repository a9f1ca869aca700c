// Type inference of the fused ops (made by passes/fuse_elementwise.cpp and passes/fuse_reduce.cpp,
// never by the builder): output k has FusedAttrs::shape (fused_reduce: with reduce_axes removed,
// or 1 when keep_dims) and the dtype of program value outputs[k]. Row programs (ir/fused_rows.h):
// fused_elementwise steps that are row reductions are checked here (the verifier's check).
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

}  // namespace

void register_fused_ops(OpRegistry& r) {
  r.set(ir::OpKind::fused_elementwise, infer_fused);
  r.set(ir::OpKind::fused_reduce, infer_fused);
}

}  // namespace tg::ops
