// Type inference of fused_elementwise (made by passes/fuse_elementwise.cpp, never by the builder):
// output k has FusedAttrs::shape and the dtype of program value outputs[k].
#include "core/error_util.h"
#include "ops/registry.h"

namespace tg::ops {
namespace {

std::vector<TensorType> infer_fused(const ir::Node& node, std::span<const TensorType> inputs) {
  const auto& a = std::get<ir::FusedAttrs>(node.attrs);
  const int num_inputs = static_cast<int>(inputs.size());
  std::vector<TensorType> out;
  for (int v : a.outputs) {
    if (v < num_inputs || v >= num_inputs + static_cast<int>(a.steps.size())) {
      fail(ErrorCode::internal, "fused_elementwise", "output value {} is not a step ({} inputs, {} steps)", v,
           num_inputs, a.steps.size());
    }
    out.push_back({a.shape, a.steps[static_cast<size_t>(v - num_inputs)].dtype});
  }
  return out;
}

}  // namespace

void register_fused_ops(OpRegistry& r) { r.set(ir::OpKind::fused_elementwise, infer_fused); }

}  // namespace tg::ops
