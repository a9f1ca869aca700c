#include "ops/registry.h"

#include "core/error_util.h"

namespace tg::ops {

const OpRegistry& registry() {
  static const OpRegistry r = [] {
    OpRegistry reg;
#define TG_CALL_REGISTER_OPS(family) register_##family##_ops(reg);
    TG_OP_FAMILIES(TG_CALL_REGISTER_OPS)
#undef TG_CALL_REGISTER_OPS
    return reg;
  }();
  return r;
}

std::vector<TensorType> infer_types(const ir::Node& node, std::span<const TensorType> inputs) {
  InferFn fn = registry().infer[static_cast<size_t>(node.kind)];
  if (fn == nullptr) {
    fail(ErrorCode::unsupported, ir::op_name(node.kind), "op has no type inference registered");
  }
  return fn(node, inputs);
}

}  // namespace tg::ops
