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

/// Output types of `node` for `inputs` (dispatches through the registry).
std::vector<TensorType> infer_types(const ir::Node& node, std::span<const TensorType> inputs);

#define TG_DECLARE_REGISTER_OPS(family) void register_##family##_ops(OpRegistry& r);
TG_OP_FAMILIES(TG_DECLARE_REGISTER_OPS)
#undef TG_DECLARE_REGISTER_OPS

}  // namespace tg::ops
