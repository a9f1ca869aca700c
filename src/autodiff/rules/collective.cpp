// Vector-Jacobian rules of the collective family. Each rank's loss is a function of every rank's
// values, and the gradient a rank gets is that of the sum of every rank's loss (the objective of
// data-parallel training); so each rule is the collective's transpose, itself a collective on the
// same communicator:
//   all_reduce sum / mean:  dx = all_reduce(dy) with the same reduction (its own transpose).
//   all_reduce max / min:   dx = all_reduce_sum(dy) * [x == y] / (ranks where x == y), ties
//                           sharing the cotangent equally as reduce_max's rule does (0 where the
//                           result is NaN).
//   all_gather(axis):       dx = reduce_scatter(dy, sum, axis).
//   reduce_scatter(axis):   dx = all_gather(dy, axis) (/ world size for mean; max / min masked
//                           as all_reduce's).
//   broadcast(root):        dx = all_reduce_sum(dy) on root, 0 elsewhere.
// Every rank builds the same collectives in the same order (only the broadcast rule's scale
// depends on the rank, and its all_reduce is used on every rank so no rank's graph drops it).
#include "autodiff/rules.h"
#include "core/communicator.h"

namespace tg::autodiff {
namespace {

bool wants_gradient(const VjpContext& c) { return c.cotangents[0].valid() && is_floating(c.inputs[0].dtype()); }

// The communicator the node was built with (its group is alive while graphs are being built).
Communicator comm_of(const ir::CollectiveAttrs& a, std::string_view op) {
  if (a.world_size == 1 && a.group == 0) return Communicator();
  return Communicator(core::find_comm_group(a.group, op), a.rank, a.world_size, a.backend);
}

// The part of g (= the sum over ranks of the cotangents) that goes to each rank's x: split
// equally among the ranks whose x equals the result y (x and y of the same shape).
Tensor masked(Tensor g, const Tensor& x, const Tensor& y, const Communicator& comm) {
  const DType t = x.dtype();
  Tensor mask = cast(equal(x, y), t);
  Tensor count = maximum(all_reduce(mask, comm, {CollectiveReduction::sum}), ones_like(mask));
  return div(mul(g, mask), count);
}

void all_reduce_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const auto& a = c.attrs<ir::CollectiveAttrs>();
  const Communicator comm = comm_of(a, "all_reduce");
  const Tensor& dy = c.cotangents[0];
  switch (a.reduction) {
    case CollectiveReduction::sum:
    case CollectiveReduction::mean:
      c.input_cotangents[0] = all_reduce(dy, comm, {a.reduction});
      return;
    case CollectiveReduction::max:
    case CollectiveReduction::min:
      c.input_cotangents[0] = masked(all_reduce(dy, comm, {CollectiveReduction::sum}), c.inputs[0], c.outputs[0], comm);
      return;
  }
}

void all_gather_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const auto& a = c.attrs<ir::CollectiveAttrs>();
  c.input_cotangents[0] = reduce_scatter(c.cotangents[0], comm_of(a, "all_gather"),
                                         {.reduction = CollectiveReduction::sum, .axis = a.axis});
}

void reduce_scatter_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const auto& a = c.attrs<ir::CollectiveAttrs>();
  const Communicator comm = comm_of(a, "reduce_scatter");
  Tensor g = all_gather(c.cotangents[0], comm, {.axis = a.axis});
  switch (a.reduction) {
    case CollectiveReduction::sum: c.input_cotangents[0] = g; return;
    case CollectiveReduction::mean:
      c.input_cotangents[0] = div(g, c.graph.constant(static_cast<double>(a.world_size), g.dtype()));
      return;
    case CollectiveReduction::max:
    case CollectiveReduction::min:
      c.input_cotangents[0] = masked(g, c.inputs[0], all_gather(c.outputs[0], comm, {.axis = a.axis}), comm);
      return;
  }
}

void broadcast_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const auto& a = c.attrs<ir::CollectiveAttrs>();
  Tensor g = all_reduce(c.cotangents[0], comm_of(a, "broadcast"), {CollectiveReduction::sum});
  c.input_cotangents[0] = a.rank == a.root ? g : mul(g, c.graph.constant(0.0, g.dtype()));
}

}  // namespace

void register_collective_rules(RuleTable& t) {
  t.set(ir::OpKind::all_reduce, all_reduce_rule);
  t.set(ir::OpKind::all_gather, all_gather_rule);
  t.set(ir::OpKind::reduce_scatter, reduce_scatter_rule);
  t.set(ir::OpKind::broadcast, broadcast_rule);
}

}  // namespace tg::autodiff
