// Per-op type inference, filled by one register function per op family (src/ops/<family>.cpp).
#pragma once
#include <array>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace tg::ops {

/// Computes a node's output types from its attributes and input types. Raises tg::Error naming
/// the op and the shapes for invalid input. Must accept -1 (dynamic) dims, propagating them
/// where the output depends on them and skipping checks that need their value. Called when the
/// op is built and again at compile time with the feeds' concrete types.
using InferFn = std::vector<TensorType> (*)(const ir::Node& node, std::span<const TensorType> inputs);

struct OpRegistry {
  std::array<InferFn, ir::kNumOpKinds> infer{};
  void set(ir::OpKind kind, InferFn fn) { infer[static_cast<size_t>(kind)] = fn; }
};

/// The registry with every family registered.
const OpRegistry& registry();

/// Output types of `node` for `inputs` (dispatches through the registry). Raises
/// tg::Error(invalid_argument) naming the op when an output's static shape holds more than
/// 2^63-1 bytes (check_size_fits), besides the errors of the op's own inference.
std::vector<TensorType> infer_types(const ir::Node& node, std::span<const TensorType> inputs);

/// Raises tg::Error(invalid_argument) naming `op` and output `output` when the static dims of
/// `type` times its dtype's size overflow int64 (dynamic and symbolic dims are skipped).
void check_size_fits(const TensorType& type, std::string_view op, size_t output);

#define TG_DECLARE_REGISTER_OPS(family) void register_##family##_ops(OpRegistry& r);
TG_OP_FAMILIES(TG_DECLARE_REGISTER_OPS)
#undef TG_DECLARE_REGISTER_OPS

}  // namespace tg::ops
