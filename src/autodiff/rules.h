// Vector-Jacobian rules: one per differentiable primitive, written with the public op API, one
// file per op family (src/autodiff/rules/<family>.cpp), registered like kernels.
#pragma once
#include <array>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "tg/autodiff.h"
#include "tg/ops.h"

namespace tg::autodiff {

/// What a rule sees. `cotangents[k]` is the cotangent of output k (same shape and dtype), or an
/// invalid Tensor when no gradient flows into that output. The rule sets `input_cotangents[i]`
/// (shape and dtype of input i) for every floating input that gets a gradient and leaves the
/// others invalid. Rules build ops with the public API (tg::mul, tg::reduce_sum, ...).
struct VjpContext {
  const ir::Node& node;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::vector<Tensor> cotangents;
  std::vector<Tensor> input_cotangents;
  Graph graph;
  /// The node's attributes as type A (std::get).
  template <typename A> const A& attrs() const { return std::get<A>(node.attrs); }
};

using VjpRule = void (*)(VjpContext& ctx);

struct RuleTable {
  std::array<VjpRule, ir::kNumOpKinds> rules{};
  void set(ir::OpKind kind, VjpRule r) { rules[static_cast<size_t>(kind)] = r; }
  VjpRule get(ir::OpKind kind) const { return rules[static_cast<size_t>(kind)]; }
};

/// Every family's rules.
const RuleTable& rule_table();

#define TG_DECLARE_REGISTER_RULES(family) void register_##family##_rules(RuleTable& t);
TG_OP_FAMILIES(TG_DECLARE_REGISTER_RULES)
#undef TG_DECLARE_REGISTER_RULES

/// Sums `grad` (the gradient of a broadcast result) over the dims that NumPy broadcasting added
/// to or stretched in `shape`, and reshapes it to `shape`: the adjoint of broadcast_to.
Tensor unbroadcast(Tensor grad, const Shape& shape);
/// Zeros with x's shape and dtype (works for dynamic dims).
Tensor zeros_like(Tensor x);
/// Ones with x's shape and dtype (works for dynamic dims).
Tensor ones_like(Tensor x);
/// The adjoint of pad(x, p) applied to `g` (pad's output shape), for x of shape `in` (static
/// where a non-constant mode pads): the interior of g, onto which (modes other than constant)
/// every border position is added at the input index it copies (rules/shape.cpp).
Tensor pad_adjoint(Graph& graph, Tensor g, const Shape& in, const PadDesc& p);

}  // namespace tg::autodiff
