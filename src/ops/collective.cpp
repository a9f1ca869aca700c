// The collective op family (all_reduce, all_gather, reduce_scatter, broadcast): attribute checks,
// type inference and builders. Semantics: include/tg/collective.h, docs/ops/collective.md.
#include "ops/builder.h"

namespace tg {
namespace {

// The communicator's fields: a rank of the world; the single backend has one rank.
void check_comm(const ir::CollectiveAttrs& a, std::string_view op) {
  if (a.world_size < 1 || a.rank < 0 || a.rank >= a.world_size) {
    fail(ErrorCode::invalid_argument, op, "rank {} is not a rank of a world of {}", a.rank, a.world_size);
  }
  if (a.backend == CommBackend::single && a.world_size != 1) {
    fail(ErrorCode::invalid_argument, op, "a single communicator has world size 1, not {}", a.world_size);
  }
}

void check_reduction(const ir::CollectiveAttrs& a, const TensorType& x, std::string_view op) {
  if (x.dtype == DType::bool_) {
    fail(ErrorCode::dtype_mismatch, op, "x is {}: {} needs a numeric dtype", x.to_string(),
         collective_reduction_name(a.reduction));
  }
  if (a.reduction == CollectiveReduction::mean && !is_floating(x.dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "x is {}: mean needs a floating dtype (use sum)", x.to_string());
  }
}

// all_gather and reduce_scatter: rank >= 1 and the (normalized) axis inside it.
void check_axis(const ir::CollectiveAttrs& a, const TensorType& x, std::string_view op) {
  if (x.shape.empty()) fail(ErrorCode::invalid_argument, op, "x is a scalar {}: needs rank >= 1", x.to_string());
  if (a.axis < 0 || a.axis >= static_cast<int64_t>(x.shape.size())) {
    fail(ErrorCode::invalid_argument, op, "axis {} is out of range for x {}", a.axis, x.to_string());
  }
}

std::vector<TensorType> infer_all_reduce(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<ir::CollectiveAttrs>(node.attrs);
  check_comm(a, "all_reduce");
  check_reduction(a, in[0], "all_reduce");
  return {in[0]};
}

std::vector<TensorType> infer_all_gather(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<ir::CollectiveAttrs>(node.attrs);
  check_comm(a, "all_gather");
  check_axis(a, in[0], "all_gather");
  TensorType out = in[0];
  int64_t& d = out.shape[static_cast<size_t>(a.axis)];
  d = d < 0 ? -1 : d * a.world_size;
  return {out};
}

std::vector<TensorType> infer_reduce_scatter(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<ir::CollectiveAttrs>(node.attrs);
  check_comm(a, "reduce_scatter");
  check_reduction(a, in[0], "reduce_scatter");
  check_axis(a, in[0], "reduce_scatter");
  TensorType out = in[0];
  int64_t& d = out.shape[static_cast<size_t>(a.axis)];
  if (d >= 0 && d % a.world_size != 0) {
    fail(ErrorCode::shape_mismatch, "reduce_scatter", "dim {} of x {} ({}) is not divisible by the world size {}",
         a.axis, in[0].to_string(), d, a.world_size);
  }
  d = d < 0 ? -1 : d / a.world_size;
  return {out};
}

std::vector<TensorType> infer_broadcast(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<ir::CollectiveAttrs>(node.attrs);
  check_comm(a, "broadcast");
  if (a.root < 0 || a.root >= a.world_size) {
    fail(ErrorCode::invalid_argument, "broadcast", "root {} is not a rank of a world of {} (x {})", a.root,
         a.world_size, in[0].to_string());
  }
  return {in[0]};
}

ir::CollectiveAttrs attrs_of(const Communicator& comm) {
  ir::CollectiveAttrs a;
  a.rank = comm.rank();
  a.world_size = comm.world_size();
  a.backend = comm.backend();
  a.group = comm.group_id();
  return a;
}

void check_valid(const Tensor& x, std::string_view op) {
  if (!x.valid()) fail(ErrorCode::invalid_argument, op, "x is an empty Tensor");
}

}  // namespace

namespace ops {
void register_collective_ops(OpRegistry& r) {
  r.set(ir::OpKind::all_reduce, infer_all_reduce);
  r.set(ir::OpKind::all_gather, infer_all_gather);
  r.set(ir::OpKind::reduce_scatter, infer_reduce_scatter);
  r.set(ir::OpKind::broadcast, infer_broadcast);
}
}  // namespace ops

Tensor all_reduce(Tensor x, const Communicator& comm, AllReduceDesc desc) {
  check_valid(x, "all_reduce");
  ir::CollectiveAttrs a = attrs_of(comm);
  a.reduction = desc.reduction;
  return ops::make_op(ir::OpKind::all_reduce, {x}, a);
}

Tensor all_gather(Tensor x, const Communicator& comm, AllGatherDesc desc) {
  check_valid(x, "all_gather");
  if (x.rank() == 0) fail(ErrorCode::invalid_argument, "all_gather", "x is a scalar {}: needs rank >= 1", x.type().to_string());
  ir::CollectiveAttrs a = attrs_of(comm);
  a.axis = ops::normalize_axis(desc.axis, x.rank(), "all_gather");
  return ops::make_op(ir::OpKind::all_gather, {x}, a);
}

Tensor reduce_scatter(Tensor x, const Communicator& comm, ReduceScatterDesc desc) {
  check_valid(x, "reduce_scatter");
  if (x.rank() == 0) {
    fail(ErrorCode::invalid_argument, "reduce_scatter", "x is a scalar {}: needs rank >= 1", x.type().to_string());
  }
  ir::CollectiveAttrs a = attrs_of(comm);
  a.reduction = desc.reduction;
  a.axis = ops::normalize_axis(desc.axis, x.rank(), "reduce_scatter");
  return ops::make_op(ir::OpKind::reduce_scatter, {x}, a);
}

Tensor broadcast(Tensor x, const Communicator& comm, BroadcastDesc desc) {
  check_valid(x, "broadcast");
  ir::CollectiveAttrs a = attrs_of(comm);
  a.root = desc.root;
  return ops::make_op(ir::OpKind::broadcast, {x}, a);
}

}  // namespace tg
