// Neural-network ONNX ops: Softmax, LogSoftmax, Hardmax, BatchNormalization,
// InstanceNormalization, LayerNormalization, GroupNormalization, RMSNormalization,
// LpNormalization, MeanVarianceNormalization, LRN, Dropout.
#include <numeric>

#include "frontends/onnx/converters.h"
#include "tg/nn.h"

namespace tg::onnx {
namespace {

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(end - begin, 0)));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// [C] -> [1, C, 1, ...] for an input of rank `rank` with channels at dim 1.
Tensor per_channel(Tensor p, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = -1;
  return reshape(p, s);
}

// Softmax-like ops: before opset 13 the input is coerced to 2-d at `axis` (default 1) and the
// op runs over the second dim; from 13 it runs along `axis` (default -1).
std::vector<Tensor> softmax_family(NodeContext& c, Tensor (*f)(Tensor, int64_t)) {
  Tensor x = c.input(0);
  if (c.opset() >= 13) return {f(x, c.axis(c.attr_int("axis", -1), x.rank()))};
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis > x.rank()) c.fail(ErrorCode::invalid_argument, "axis out of range");
  Shape flat = {1, 1};
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t& d = flat[i < axis ? 0 : 1];
    d = (d < 0 || x.shape()[i] < 0) ? -1 : d * x.shape()[i];
  }
  if (flat[0] < 0 && flat[1] < 0) c.fail(ErrorCode::unsupported, "too many dynamic dims");
  return {reshape(f(reshape(x, flat), 1), x.shape())};
}

Tensor hardmax(Tensor x, int64_t axis) {
  Tensor idx = argmax(x, {.axis = axis, .keep_dims = true});
  Shape s(static_cast<size_t>(x.rank()), 1);
  s[axis] = x.shape()[axis];
  Graph g(x.graph_impl());
  Tensor pos = iota(g, s, axis, DType::i64);
  return cast(equal(idx, pos), x.dtype());
}

// (x - mean) / sqrt(var + eps) over `axes`, computed in `stash` (returns mean and 1/std too).
struct Normalized {
  Tensor y, mean, inv_std;
};
Normalized normalize(Tensor x, const std::vector<int64_t>& axes, double eps) {
  Tensor mean = reduce_mean(x, {.axes = axes, .keep_dims = true});
  Tensor d = x - mean;
  Tensor var = reduce_mean(d * d, {.axes = axes, .keep_dims = true});
  Tensor inv = rsqrt(var + eps);
  return {d * inv, mean, inv};
}

}  // namespace

std::vector<Tensor> convert_softmax(NodeContext& c) { return softmax_family(c, &tg::softmax); }
std::vector<Tensor> convert_log_softmax(NodeContext& c) {
  return softmax_family(c, &tg::log_softmax);
}
std::vector<Tensor> convert_hardmax(NodeContext& c) { return softmax_family(c, &hardmax); }

std::vector<Tensor> convert_batch_norm(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() < 2) c.fail(ErrorCode::invalid_argument, "input must have rank >= 2");
  if (c.opset() < 9 && c.attr_int("spatial", 1) == 0) {
    c.fail(ErrorCode::unsupported, "spatial = 0 is not supported");
  }
  double eps = c.attr_float("epsilon", 1e-5);
  double momentum = c.attr_float("momentum", 0.9);
  int64_t r = x.rank();
  Tensor scale = per_channel(c.input(1), r), bias = per_channel(c.input(2), r);
  Tensor mean = c.input(3), var = c.input(4);
  bool training = c.opset() >= 14 && c.attr_int("training_mode", 0) != 0;
  if (!training) {
    Tensor inv = rsqrt(per_channel(var, r) + eps);
    return {(x - per_channel(mean, r)) * inv * scale + bias};
  }
  // Training: batch statistics over every axis but 1; the running statistics are updated with
  // the biased batch variance, as the ONNX reference does.
  std::vector<int64_t> axes = range(0, r);
  axes.erase(axes.begin() + 1);
  Normalized n = normalize(x, axes, eps);
  Tensor bmean = reshape(n.mean, {-1});
  Tensor bvar = reduce_mean(square(x - n.mean), {.axes = axes});
  Tensor run_mean = mean * momentum + bmean * (1 - momentum);
  Tensor run_var = var * momentum + bvar * (1 - momentum);
  return {n.y * scale + bias, run_mean, run_var};
}

std::vector<Tensor> convert_instance_norm(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() < 3) c.fail(ErrorCode::invalid_argument, "input must have rank >= 3");
  Normalized n = normalize(x, range(2, x.rank()), c.attr_float("epsilon", 1e-5));
  return {n.y * per_channel(c.input(1), x.rank()) + per_channel(c.input(2), x.rank())};
}

std::vector<Tensor> convert_layer_norm(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.rank());
  DType stash = dtype_attr(c, c.attr_int("stash_type", 1));
  Tensor xs = is_floating(stash) ? cast_to(x, stash) : x;
  Normalized n = normalize(xs, range(axis, x.rank()), c.attr_float("epsilon", 1e-5));
  Tensor y = cast_to(n.y, x.dtype()) * c.input(1);
  if (c.has_input(2)) y = y + c.input(2);
  return {y, n.mean, n.inv_std};
}

std::vector<Tensor> convert_rms_norm(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.rank());
  DType stash = dtype_attr(c, c.attr_int("stash_type", 1));
  Tensor xs = is_floating(stash) ? cast_to(x, stash) : x;
  Tensor ms = reduce_mean(xs * xs, {.axes = range(axis, x.rank()), .keep_dims = true});
  Tensor y = xs * rsqrt(ms + c.attr_float("epsilon", 1e-5));
  return {cast_to(y, x.dtype()) * c.input(1)};
}

std::vector<Tensor> convert_group_norm(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() < 3) c.fail(ErrorCode::invalid_argument, "input must have rank >= 3");
  c.require_attr("num_groups");
  int64_t g = c.attr_int("num_groups", 1);
  int64_t ch = c.static_dim(0, 1);
  if (g < 1 || ch % g != 0) {
    c.fail(ErrorCode::shape_mismatch, "{} channels do not divide into {} groups", ch, g);
  }
  int64_t r = x.rank();
  DType stash = dtype_attr(c, c.attr_int("stash_type", 1));
  Tensor xs = c.opset() >= 21 && is_floating(stash) ? cast_to(x, stash) : x;
  Shape grouped = {x.shape()[0], g, -1};
  Normalized n = normalize(reshape(xs, grouped), {2}, c.attr_float("epsilon", 1e-5));
  Tensor y = cast_to(reshape(n.y, x.shape()), x.dtype());
  Tensor scale = c.input(1), bias = c.input(2);
  if (c.opset() >= 21) return {y * per_channel(scale, r) + per_channel(bias, r)};
  // Opset 18: one scale and bias per group.
  Shape per_group = {x.shape()[0], g, ch / g};
  for (int64_t i = 2; i < r; ++i) per_group.push_back(x.shape()[i]);
  Tensor yg = reshape(y, per_group);
  Tensor sg = per_channel(scale, r + 1), bg = per_channel(bias, r + 1);
  return {reshape(yg * sg + bg, x.shape())};
}

std::vector<Tensor> convert_lp_norm(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.rank());
  int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail(ErrorCode::invalid_argument, "p must be 1 or 2, got {}", p);
  ReduceDesc d{.axes = {axis}, .keep_dims = true};
  Tensor norm = p == 1 ? reduce_sum(abs(x), d) : sqrt(reduce_sum(x * x, d));
  // A zero vector stays zero (the reference divides where the norm is non-zero only).
  Tensor zero = scalar_like(norm, 0);
  Tensor is_zero = equal(norm, zero);
  return {select(is_zero, scalar_like(x, 0), x / select(is_zero, scalar_like(norm, 1), norm))};
}

std::vector<Tensor> convert_mvn(NodeContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> axes;
  for (int64_t a : c.attr_ints("axes", {0, 2, 3})) axes.push_back(c.axis(a, x.rank()));
  Tensor mean = reduce_mean(x, {.axes = axes, .keep_dims = true});
  Tensor var = reduce_mean(x * x, {.axes = axes, .keep_dims = true}) - mean * mean;
  return {(x - mean) / sqrt(var)};
}

std::vector<Tensor> convert_lrn(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() < 3) c.fail(ErrorCode::invalid_argument, "input must have rank >= 3");
  c.require_attr("size");
  int64_t size = c.attr_int("size", 1);
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75);
  double bias = c.attr_float("bias", 1.0);
  int64_t ch = c.static_dim(0, 1);
  // Sum of squares over the channel window [c - floor((size-1)/2), c + ceil((size-1)/2)].
  PadDesc p{.before = std::vector<int64_t>(static_cast<size_t>(x.rank()), 0),
            .after = std::vector<int64_t>(static_cast<size_t>(x.rank()), 0)};
  p.before[1] = (size - 1) / 2;
  p.after[1] = size - 1 - (size - 1) / 2;
  Tensor sq = pad(x * x, p);
  Tensor sum;
  for (int64_t k = 0; k < size; ++k) {
    Tensor s = slice(sq, {.begin = {k}, .end = {k + ch}, .axes = {1}});
    sum = sum.valid() ? sum + s : s;
  }
  Tensor base = sum * (alpha / static_cast<double>(size)) + bias;
  return {x / pow(base, scalar_like(base, beta))};
}

std::vector<Tensor> convert_dropout(NodeContext& c) {
  Tensor x = c.input(0);
  bool training = false;
  if (c.opset() >= 12 && c.has_input(2)) training = c.scalar(2) != 0;
  double ratio = c.opset() >= 12 ? (c.has_input(1) ? c.scalar(1) : 0.5) : c.attr_float("ratio", 0.5);
  if (c.opset() < 7 && c.attr_int("is_test", 0) == 0) training = true;
  if (training && ratio != 0) {
    c.fail(ErrorCode::unsupported, "training-mode dropout (ratio {}) is not supported", ratio);
  }
  std::vector<Tensor> out = {x};
  if (c.output_used(1)) {
    Tensor mask = fill(c.graph(), x.shape(), 1.0, DType::bool_);
    out.push_back(c.opset() < 10 ? cast(mask, x.dtype()) : mask);
  }
  return out;
}

}  // namespace tg::onnx
