// A constant's value transposed at compile time, by the evaluator's transpose (the CPU backend's
// kernel): the packing passes that store weights in another order (conv_weights.cpp,
// matmul_weights.cpp).
#pragma once
#include <optional>
#include <vector>

#include "passes/passes.h"

namespace tg::passes {

/// The value of constant node `c` (one output) transposed by `perm`, computed by `eval` on a host
/// copy when it lives in device memory; nullopt when `eval` cannot.
inline std::optional<TensorData> transposed_constant(const ir::Node& c, const std::vector<int64_t>& perm,
                                                     const ScalarEvaluator& eval) {
  const TensorType& ct = c.outputs[0];
  Shape shape(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) shape[j] = ct.shape[static_cast<size_t>(perm[j])];
  ir::Node t;
  t.kind = ir::OpKind::transpose;
  t.name = c.name;
  t.attrs = ir::TransposeAttrs{perm};
  t.outputs = {TensorType{shape, ct.dtype}};
  const TensorData& value = std::get<ir::ConstantAttrs>(c.attrs).value;
  std::vector<TensorData> args{value.device().is_cpu() ? value : value.to(Device::cpu())};
  TensorData out(shape, ct.dtype);
  if (!eval(t, args, out)) return std::nullopt;
  return out;
}

}  // namespace tg::passes
