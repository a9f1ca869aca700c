// Gather and scatter ONNX ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements,
// Scatter.
#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

ScatterReduction reduction_attr(const NodeContext& c) {
  std::string r = c.attr_string("reduction", "none");
  if (r == "none") return ScatterReduction::none;
  if (r == "add") return ScatterReduction::add;
  if (r == "mul") return ScatterReduction::mul;
  if (r == "min" && c.opset() >= 18) return ScatterReduction::min;
  if (r == "max" && c.opset() >= 18) return ScatterReduction::max;
  c.fail(ErrorCode::invalid_argument, "unknown reduction '{}'", r);
}

}  // namespace

std::vector<Tensor> convert_gather(NodeContext& c) {
  return {gather(c.input(0), c.input(1), {.axis = c.attr_int("axis", 0)})};
}

std::vector<Tensor> convert_gather_elements(NodeContext& c) {
  return {gather_elements(c.input(0), c.input(1), {.axis = c.attr_int("axis", 0)})};
}

std::vector<Tensor> convert_gather_nd(NodeContext& c) {
  return {gather_nd(c.input(0), c.input(1), {.batch_dims = c.attr_int("batch_dims", 0)})};
}

std::vector<Tensor> convert_scatter_nd(NodeContext& c) {
  return {scatter_nd(c.input(0), c.input(1), c.input(2), {.reduction = reduction_attr(c)})};
}

std::vector<Tensor> convert_scatter_elements(NodeContext& c) {
  return {scatter_elements(c.input(0), c.input(1), c.input(2),
                           {.axis = c.attr_int("axis", 0), .reduction = reduction_attr(c)})};
}

}  // namespace tg::onnx

namespace tg::onnx {
namespace {

// An i64 tensor of `shape` holding its position along `axis` (0, 1, 2, ...).
Tensor positions(NodeContext& c, const Shape& shape, int64_t axis) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) {
    c.fail(ErrorCode::invalid_argument, "axis {} is outside a rank-{} tensor", axis, shape.size());
  }
  Shape s(shape.size(), 1);
  s[axis] = shape[axis];
  return broadcast_to(iota(c.graph(), s, axis, DType::i64), shape);
}

// [B] per-batch values laid along `batch_axis` of a tensor of rank `rank`.
Tensor per_batch(Tensor v, int64_t batch_axis, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[batch_axis] = -1;
  return reshape(cast_to(v, DType::i64), s);
}

}  // namespace

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of batch b reversed.
std::vector<Tensor> convert_reverse_sequence(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t batch_axis = c.axis(c.attr_int("batch_axis", 1), x.rank());
  int64_t time_axis = c.axis(c.attr_int("time_axis", 0), x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) c.static_dim(0, i);
  Tensor t = positions(c, x.shape(), time_axis);
  Tensor len = per_batch(c.input(1), batch_axis, x.rank());
  Tensor one = c.graph().constant(1.0, DType::i64);
  Tensor idx = select(less(t, len), len - one - t, t);
  return {gather_elements(x, idx, {.axis = time_axis})};
}

// TensorScatter (opset 24): past_cache with update written along `axis` at write_indices[b]
// (default 0) for each batch b; circular mode wraps around the cache length.
std::vector<Tensor> convert_tensor_scatter(NodeContext& c) {
  Tensor past = c.input(0), update = c.input(1);
  // (found by fuzzing: an update of lower rank read past the end of its shape)
  if (update.rank() != past.rank()) {
    c.fail(ErrorCode::shape_mismatch, "update {} must have the rank of past_cache {}", shape_to_string(update.shape()),
           shape_to_string(past.shape()));
  }
  int64_t axis = c.axis(c.attr_int("axis", -2), past.rank());
  std::string mode = c.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") c.fail(ErrorCode::invalid_argument, "unknown mode '{}'", mode);
  for (int64_t i = 0; i < update.rank(); ++i) c.static_dim(1, i);
  Tensor idx = positions(c, update.shape(), axis);
  if (c.has_input(2)) idx = idx + per_batch(c.input(2), 0, update.rank());
  if (mode == "circular") {
    idx = floor_mod(idx, c.graph().constant(static_cast<double>(c.static_dim(0, axis)), DType::i64));
  }
  return {scatter_elements(past, idx, update, {.axis = axis})};
}

}  // namespace tg::onnx
