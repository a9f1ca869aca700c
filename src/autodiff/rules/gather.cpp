// Vector-Jacobian rules of the gather op family. Indices never get a gradient. Gathers scatter
// their cotangent back into zeros with reduction add (repeated indices accumulate); scatters route
// theirs to whatever survives in the output: with none the data elements that were not
// overwritten and the last writer of each written element, with add everything, with mul the
// product of the other factors (zero-safe), with min/max the operands that attain the result (an
// equal share for each on ties, as JAX).
#include <functional>

#include "autodiff/rules.h"
#include "core/error_util.h"

namespace tg::autodiff {
namespace {

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Tensor permute(Tensor t, const std::vector<int64_t>& perm) {
  return is_identity(perm) ? t : transpose(t, perm);
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

// Zeros shaped like transpose(x, perm).
Tensor zeros_permuted(Tensor x, const std::vector<int64_t>& perm) {
  if (!is_static(x.shape())) return permute(zeros_like(x), perm);
  Shape s;
  for (int64_t p : perm) s.push_back(x.shape()[static_cast<size_t>(p)]);
  Graph g(x.graph_impl());
  return fill(g, s, 0.0, x.dtype());
}

// Index tuples [B..., I..., K] (B = the first batch_dims dims) prefixed with their own batch
// coordinates: [B..., I..., batch_dims + K], tuples into the batch dims too (for scatter_nd,
// which has no batch dims). Needs a static index shape when batch_dims > 0.
Tensor with_batch_coords(Tensor tuples, int64_t batch_dims, std::string_view op) {
  if (batch_dims == 0) return tuples;
  Shape lead(tuples.shape().begin(), tuples.shape().end() - 1);
  if (!is_static(lead)) {
    fail(ErrorCode::unsupported, "gradients",
         "{} with batch_dims {} needs a static indices shape for its gradient, got {}", op,
         batch_dims, tuples.type().to_string());
  }
  Graph g(tuples.graph_impl());
  std::vector<Tensor> parts;
  for (int64_t d = 0; d < batch_dims; ++d) {
    parts.push_back(expand_dims(iota(g, lead, d, tuples.dtype()), -1));
  }
  parts.push_back(tuples);
  return concat(parts, -1);
}

// gather: x [B, P, N, S] (N at axis), cotangent [B, P, I, S]. Scatter-adds the cotangent
// permuted to [B, I, P, S] into zeros [B, N, P, S] at tuples (b, indices[b, i]), then permutes
// back.
void gather_rule(VjpContext& c) {
  Tensor x = c.inputs[0], indices = c.inputs[1], ct = c.cotangents[0];
  if (!ct.valid() || !is_floating(x.dtype())) return;
  const auto& a = c.attrs<GatherDesc>();
  const int64_t r = x.rank(), bd = a.batch_dims, axis = a.axis;
  const int64_t ni = indices.rank() - bd;  // index dims in the output
  std::vector<int64_t> xperm, cperm;
  for (int64_t d = 0; d < bd; ++d) {
    xperm.push_back(d);
    cperm.push_back(d);
  }
  xperm.push_back(axis);
  for (int64_t d = 0; d < ni; ++d) cperm.push_back(axis + d);
  for (int64_t d = bd; d < axis; ++d) {
    xperm.push_back(d);
    cperm.push_back(d);
  }
  for (int64_t d = axis + 1; d < r; ++d) {
    xperm.push_back(d);
    cperm.push_back(d - 1 + ni);
  }
  Tensor tuples = with_batch_coords(expand_dims(indices, -1), bd, "gather");
  Tensor grad = scatter_nd(zeros_permuted(x, xperm), tuples, permute(ct, cperm),
                           {.reduction = ScatterReduction::add});
  c.input_cotangents[0] = permute(grad, inverse(xperm));
}

void gather_nd_rule(VjpContext& c) {
  Tensor x = c.inputs[0], indices = c.inputs[1], ct = c.cotangents[0];
  if (!ct.valid() || !is_floating(x.dtype())) return;
  Tensor tuples = with_batch_coords(indices, c.attrs<GatherNdDesc>().batch_dims, "gather_nd");
  c.input_cotangents[0] =
      scatter_nd(zeros_like(x), tuples, ct, {.reduction = ScatterReduction::add});
}

void gather_elements_rule(VjpContext& c) {
  Tensor x = c.inputs[0], indices = c.inputs[1], ct = c.cotangents[0];
  if (!ct.valid() || !is_floating(x.dtype())) return;
  c.input_cotangents[0] = scatter_elements(
      zeros_like(x), indices, ct,
      {.axis = c.attrs<GatherElementsDesc>().axis, .reduction = ScatterReduction::add});
}

// The two directions of a scatter: `at` reads a data-shaped tensor at the updates' targets
// (updates-shaped result); `into` scatters an updates-shaped tensor into a data-shaped base.
struct ScatterPair {
  std::function<Tensor(Tensor)> at;
  std::function<Tensor(Tensor base, Tensor values, ScatterReduction)> into;
};

// Data-shaped i64 tensor of -1.
Tensor minus_ones_i64(Tensor data) {
  Graph g(data.graph_impl());
  if (is_static(data.shape())) return fill(g, data.shape(), -1.0, DType::i64);
  return cast(zeros_like(data), DType::i64) - 1.0;
}

// True for the updates that survive a scatter with reduction none: the last one (in row-major
// order) written to each target. Invalid (every update survives) when updates has dynamic dims.
Tensor last_writers(const VjpContext& c, const ScatterPair& s) {
  Tensor data = c.inputs[0], updates = c.inputs[2];
  if (!is_static(updates.shape())) return Tensor();
  Graph g = c.graph;
  Tensor order = reshape(iota(g, {num_elements(updates.shape())}, 0, DType::i64), updates.shape());
  Tensor last = s.into(minus_ones_i64(data), order, ScatterReduction::max);
  return equal(s.at(last), order);
}

void scatter_none(VjpContext& c, const ScatterPair& s) {
  Tensor updates = c.inputs[2], ct = c.cotangents[0];
  c.input_cotangents[0] = s.into(ct, zeros_like(updates), ScatterReduction::none);
  Tensor routed = s.at(ct);
  Tensor mask = last_writers(c, s);
  c.input_cotangents[2] =
      mask.valid() ? select(mask, routed, c.graph.constant(0.0, ct.dtype())) : routed;
}

// out = data * prod(updates at the target). d/ddata = prod(updates there); d/dupdate_i = data *
// product of the other updates there, computed from the product of the nonzero updates and the
// number of zero ones (no division by zero).
void scatter_mul(VjpContext& c, const ScatterPair& s) {
  Tensor data = c.inputs[0], updates = c.inputs[2], ct = c.cotangents[0];
  const DType t = data.dtype();
  Tensor zero = c.graph.constant(0.0, t), one = c.graph.constant(1.0, t);
  c.input_cotangents[0] = ct * s.into(ones_like(data), updates, ScatterReduction::mul);
  Tensor is_zero = equal(updates, zero);
  Tensor safe = select(is_zero, one, updates);
  Tensor nonzero_prod = s.at(s.into(ones_like(data), safe, ScatterReduction::mul));
  Tensor zeros = s.at(s.into(zeros_like(data), cast(is_zero, t), ScatterReduction::add));
  Tensor others = select(is_zero, select(equal(zeros, one), nonzero_prod, zero),
                         select(equal(zeros, zero), nonzero_prod / safe, zero));
  c.input_cotangents[2] = s.at(ct * data) * others;
}

// out = min/max(data, updates at the target): the cotangent is shared equally by every operand
// equal to the result (none when the result is NaN).
void scatter_extremum(VjpContext& c, const ScatterPair& s) {
  Tensor data = c.inputs[0], updates = c.inputs[2], out = c.outputs[0], ct = c.cotangents[0];
  const DType t = data.dtype();
  Tensor zero = c.graph.constant(0.0, t), one = c.graph.constant(1.0, t);
  Tensor data_hit = cast(equal(data, out), t);
  Tensor update_hit = equal(updates, s.at(out));
  Tensor count = data_hit + s.into(zeros_like(data), cast(update_hit, t), ScatterReduction::add);
  Tensor share = ct / maximum(count, one);
  c.input_cotangents[0] = share * data_hit;
  c.input_cotangents[2] = select(update_hit, s.at(share), zero);
}

void scatter_vjp(VjpContext& c, ScatterReduction reduction, const ScatterPair& s) {
  if (!c.cotangents[0].valid() || !is_floating(c.inputs[0].dtype())) return;
  switch (reduction) {
    case ScatterReduction::none:
      return scatter_none(c, s);
    case ScatterReduction::add:
      c.input_cotangents[0] = c.cotangents[0];
      c.input_cotangents[2] = s.at(c.cotangents[0]);
      return;
    case ScatterReduction::mul:
      return scatter_mul(c, s);
    case ScatterReduction::min:
    case ScatterReduction::max:
      return scatter_extremum(c, s);
  }
  fail(ErrorCode::unsupported, "gradients", "{} with reduction {} has no gradient",
       ir::op_name(c.node.kind), static_cast<int>(reduction));
}

void scatter_nd_rule(VjpContext& c) {
  Tensor indices = c.inputs[1];
  ScatterPair s{[indices](Tensor t) { return gather_nd(t, indices); },
                [indices](Tensor base, Tensor v, ScatterReduction r) {
                  return scatter_nd(base, indices, v, {.reduction = r});
                }};
  scatter_vjp(c, c.attrs<ScatterNdDesc>().reduction, s);
}

void scatter_elements_rule(VjpContext& c) {
  Tensor indices = c.inputs[1];
  const auto& a = c.attrs<ScatterElementsDesc>();
  const int64_t axis = a.axis;
  ScatterPair s{[indices, axis](Tensor t) { return gather_elements(t, indices, {.axis = axis}); },
                [indices, axis](Tensor base, Tensor v, ScatterReduction r) {
                  return scatter_elements(base, indices, v, {.axis = axis, .reduction = r});
                }};
  scatter_vjp(c, a.reduction, s);
}

}  // namespace

void register_gather_rules(RuleTable& t) {
  t.set(ir::OpKind::gather, gather_rule);
  t.set(ir::OpKind::gather_nd, gather_nd_rule);
  t.set(ir::OpKind::gather_elements, gather_elements_rule);
  t.set(ir::OpKind::scatter_nd, scatter_nd_rule);
  t.set(ir::OpKind::scatter_elements, scatter_elements_rule);
}

}  // namespace tg::autodiff
