#include "ops/registry.h"

#include <algorithm>

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
  std::vector<TensorType> out = fn(node, inputs);
  for (size_t i = 0; i < out.size(); ++i) check_size_fits(out[i], ir::op_name(node.kind), i);
  return out;
}

void check_size_fits(const TensorType& type, std::string_view op, size_t output) {
  // The byte count of every static shape must fit in int64: num_elements() and every offset
  // computation in the backends multiply sizes in int64 (an overflow there is undefined behaviour
  // and gave wrapped, finite results: sum of broadcast_to(1, [3, 6148914691236517206]) was 2).
  if (std::find(type.shape.begin(), type.shape.end(), 0) != type.shape.end()) return;  // empty
  int64_t bytes = static_cast<int64_t>(dtype_size(type.dtype));
  for (int64_t d : type.shape) {
    if (d < 0) continue;  // dynamic or symbolic: checked against the run's sizes
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      fail(ErrorCode::invalid_argument, op,
           "output {} of shape {} ({}) has more than 2^63-1 bytes", output, str(type.shape),
           dtype_name(type.dtype));
    }
  }
}

}  // namespace tg::ops
