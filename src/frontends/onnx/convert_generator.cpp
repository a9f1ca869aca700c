// ONNX ops that make tensors: Constant, ConstantOfShape, Range, EyeLike, Trilu, OneHot,
// RandomUniformLike/RandomNormalLike-free generators.
#include "core/error_util.h"
#include "frontends/onnx/converters.h"

namespace tg::onnx {

std::vector<Tensor> convert_constant(NodeContext& c) {
  if (c.has_attr("value")) return {c.constant(c.attr_tensor("value"))};
  if (c.has_attr("value_float")) {
    return {c.constant(TensorData::scalar<float>(static_cast<float>(c.attr_float("value_float", 0))))};
  }
  if (c.has_attr("value_int")) {
    return {c.constant(TensorData::scalar<int64_t>(c.attr_int("value_int", 0)))};
  }
  if (c.has_attr("value_floats")) {
    std::vector<double> v = c.attr_floats("value_floats");
    std::vector<float> f(v.begin(), v.end());
    return {c.constant(TensorData::from_vector<float>(f, {static_cast<int64_t>(f.size())}))};
  }
  if (c.has_attr("value_ints")) return {c.ints_constant(c.attr_ints("value_ints"))};
  if (c.has_attr("sparse_value")) c.fail(ErrorCode::unsupported, "sparse_value is not supported");
  if (c.has_attr("value_string") || c.has_attr("value_strings")) {
    c.fail(ErrorCode::unsupported, "string constants are not supported");
  }
  c.fail(ErrorCode::invalid_argument, "no value attribute");
}

std::vector<Tensor> convert_constant_of_shape(NodeContext& c) {
  std::vector<int64_t> shape = c.ints(0);
  for (int64_t d : shape) {
    // Symbols (c.symbolic) stand for run-time sizes.
    if (d < 0 && !(is_symbolic_dim(d) && c.symbolic(0))) c.fail(ErrorCode::invalid_argument, "negative dim in shape {}", str(shape));
  }
  double value = 0;
  DType dtype = DType::f32;
  if (c.has_attr("value")) {
    TensorData v = c.attr_tensor("value");
    if (v.num_elements() != 1) {
      c.fail(ErrorCode::invalid_argument, "value must hold one element, got {}", v.type().to_string());
    }
    value = v.element_as_double(0);
    dtype = v.dtype();
  }
  return {fill(c.graph(), shape, value, dtype)};
}

std::vector<Tensor> convert_range(NodeContext& c) {
  DType dtype = c.input(0).dtype();
  if (c.symbolic(1)) {
    // A limit that is a symbol (arange(sequence)): an iota of that symbolic length.
    const std::vector<int64_t> limit = c.ints(1);
    if (limit.size() == 1 && is_symbolic_dim(limit[0])) {
      if (c.scalar(0) != 0 || c.scalar(2) != 1) {
        c.fail(ErrorCode::unsupported, "a range up to the run-time size {} must start at 0 with delta 1",
               dim_name(limit[0]));
      }
      return {iota(c.graph(), {limit[0]}, 0, dtype)};
    }
  }
  double start = c.scalar(0), limit = c.scalar(1), delta = c.scalar(2);
  if (delta == 0) c.fail(ErrorCode::invalid_argument, "delta is 0");
  return {arange(c.graph(), start, limit, delta, dtype)};
}

std::vector<Tensor> convert_eye_like(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() != 2) c.fail(ErrorCode::invalid_argument, "input must be 2-d, got {}", str(x.shape()));
  DType dtype = c.has_attr("dtype") ? dtype_attr(c, c.attr_int("dtype", 1)) : x.dtype();
  int64_t k = c.attr_int("k", 0);
  Shape s = {c.static_dim(0, 0), c.static_dim(0, 1)};
  Tensor diff = iota(c.graph(), s, 1, DType::i64) - iota(c.graph(), s, 0, DType::i64);
  return {cast(equal(diff, c.graph().constant(static_cast<double>(k), DType::i64)), dtype)};
}

std::vector<Tensor> convert_trilu(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() < 2) c.fail(ErrorCode::invalid_argument, "input must have rank >= 2");
  int64_t k = c.has_input(1) ? static_cast<int64_t>(c.scalar(1)) : 0;
  bool upper = c.attr_int("upper", 1) != 0;
  Shape s = {c.static_dim(0, x.rank() - 2), c.static_dim(0, x.rank() - 1)};
  Tensor diff = iota(c.graph(), s, 1, DType::i64) - iota(c.graph(), s, 0, DType::i64);
  Tensor kk = c.graph().constant(static_cast<double>(k), DType::i64);
  Tensor keep = upper ? greater_equal(diff, kk) : less_equal(diff, kk);
  return {select(keep, x, scalar_like(x, 0))};
}

std::vector<Tensor> convert_one_hot(NodeContext& c) {
  Tensor indices = c.input(0);
  double depth_v = c.scalar(1);
  Tensor values = c.input(2);
  if (values.rank() != 1 || values.shape()[0] != 2) {
    c.fail(ErrorCode::shape_mismatch, "values must have shape [2], got {}", str(values.shape()));
  }
  auto depth = static_cast<int64_t>(depth_v);
  if (depth < 1) c.fail(ErrorCode::invalid_argument, "depth must be >= 1, got {}", depth_v);
  int64_t out_rank = indices.rank() + 1;
  int64_t axis = c.axis(c.attr_int("axis", -1), out_rank);
  Tensor idx = cast_to(indices, DType::i64);
  // Negative indices count from the end (index + depth).
  Tensor zero = c.graph().constant(0.0, DType::i64);
  Tensor d = c.graph().constant(static_cast<double>(depth), DType::i64);
  idx = select(less(idx, zero), idx + d, idx);
  Shape iota_shape(static_cast<size_t>(out_rank), 1);
  iota_shape[axis] = depth;
  Tensor hot = equal(expand_dims(idx, axis), iota(c.graph(), iota_shape, axis, DType::i64));
  std::vector<Tensor> off_on = split(values, 2, 0);
  return {select(hot, reshape(off_on[1], {}), reshape(off_on[0], {}))};
}

}  // namespace tg::onnx

namespace tg::onnx {
namespace {

// Hann, Hamming and Blackman windows: sum_k a_k cos(2 pi k n / N), N = size (periodic) or
// size - 1 (symmetric), computed in f64 and cast to output_datatype.
std::vector<Tensor> window(NodeContext& c, const std::vector<double>& a) {
  auto size = static_cast<int64_t>(c.scalar(0));
  if (size < 0) c.fail(ErrorCode::invalid_argument, "size must be >= 0, got {}", size);
  bool periodic = c.attr_int("periodic", 1) != 0;
  DType dtype = dtype_attr(c, c.attr_int("output_datatype", 1));
  double n = static_cast<double>(periodic ? size : size - 1);
  Tensor pos = iota(c.graph(), {size}, 0, DType::f64);
  Tensor y = fill(c.graph(), {size}, a[0], DType::f64);
  for (size_t k = 1; k < a.size(); ++k) {
    y = y + cos(pos * (2 * M_PI * static_cast<double>(k) / n)) * a[k];
  }
  return {cast(y, dtype)};
}

}  // namespace

std::vector<Tensor> convert_hann_window(NodeContext& c) { return window(c, {0.5, -0.5}); }
std::vector<Tensor> convert_hamming_window(NodeContext& c) {
  return window(c, {25.0 / 46.0, -21.0 / 46.0});
}
std::vector<Tensor> convert_blackman_window(NodeContext& c) { return window(c, {0.42, -0.5, 0.08}); }

}  // namespace tg::onnx

namespace tg::onnx {

// Optional values are tensors here: an Optional wraps a tensor, OptionalHasElement is true for a
// tensor and false without input, OptionalGetElement unwraps. Optional-typed graph inputs and
// empty optionals of sequences are not supported.
std::vector<Tensor> convert_optional_has_element(NodeContext& c) {
  return {c.constant(TensorData::scalar<bool>(c.has_input(0)))};
}

std::vector<Tensor> convert_optional_get_element(NodeContext& c) { return {c.input(0)}; }

std::vector<Tensor> convert_optional(NodeContext& c) {
  if (!c.has_input(0)) c.fail(ErrorCode::unsupported, "empty optionals are not supported");
  return {c.input(0)};
}

}  // namespace tg::onnx
