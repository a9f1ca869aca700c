// Shape and data-movement ONNX ops: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat,
// Split, Slice, Expand, Tile, Pad, Shape, Size, DepthToSpace, SpaceToDepth, Compress.
#include <algorithm>
#include <numeric>

#include "core/error_util.h"
#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

// Axes from the attribute `axes` (opset < since) or from input `input` (opset >= since).
std::optional<std::vector<int64_t>> axes_arg(NodeContext& c, int64_t since, int input) {
  if (c.opset() < since) {
    if (!c.has_attr("axes")) return std::nullopt;
    return c.attr_ints("axes");
  }
  if (!c.has_input(input)) return std::nullopt;
  return c.ints(input);
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) {
    if (s[i] < 0) return -1;
    p *= s[i];
  }
  return p;
}

// A shape read from a value that holds no symbols (a constant) whose entries fall in the symbols'
// range is malformed: refused rather than read as run-time sizes.
void check_no_symbol_codes(const NodeContext& c, const std::vector<int64_t>& shape, bool symbolic) {
  if (symbolic) return;
  for (int64_t d : shape) {
    if (d < -1) c.fail(ErrorCode::invalid_argument, "shape {} has an invalid dim {}", str(shape), d);
  }
}

}  // namespace

std::vector<Tensor> convert_reshape(NodeContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> shape = c.opset() < 5 ? c.attr_ints("shape") : c.ints(1);
  check_no_symbol_codes(c, shape, c.opset() >= 5 && c.symbolic(1));
  bool allow_zero = c.attr_int("allowzero", 0) != 0;
  if (!allow_zero) {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 0) continue;
      if (static_cast<int64_t>(i) >= x.rank()) {
        c.fail(ErrorCode::shape_mismatch, "shape {} copies dim {} of input {}, which has no such dim",
               str(shape), i, str(x.shape()));
      }
      shape[i] = x.shape()[i];
    }
  }
  return {reshape(x, shape)};
}

std::vector<Tensor> convert_flatten(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t rank = x.rank();
  int64_t axis = c.attr_int("axis", 1);
  if (axis < -rank || axis > rank) {
    c.fail(ErrorCode::invalid_argument, "axis {} is out of range for rank {}", axis, rank);
  }
  if (axis < 0) axis += rank;
  int64_t outer = product(x.shape(), 0, axis);
  int64_t inner = product(x.shape(), axis, rank);
  if (outer < 0 && inner < 0) {
    c.fail(ErrorCode::unsupported, "both halves of input {} have dynamic dims", str(x.shape()));
  }
  return {reshape(x, {outer, inner})};
}

std::vector<Tensor> convert_transpose(NodeContext& c) {
  return {transpose(c.input(0), c.attr_ints("perm"))};
}

std::vector<Tensor> convert_squeeze(NodeContext& c) {
  Tensor x = c.input(0);
  std::optional<std::vector<int64_t>> axes = axes_arg(c, 13, 1);
  return {squeeze(x, axes.value_or(std::vector<int64_t>{}))};
}

std::vector<Tensor> convert_unsqueeze(NodeContext& c) {
  Tensor x = c.input(0);
  std::optional<std::vector<int64_t>> axes = axes_arg(c, 13, 1);
  if (!axes) c.fail(ErrorCode::invalid_argument, "axes are required");
  int64_t out_rank = x.rank() + static_cast<int64_t>(axes->size());
  std::vector<int64_t> norm;
  for (int64_t a : *axes) norm.push_back(c.axis(a, out_rank));
  std::sort(norm.begin(), norm.end());
  if (std::adjacent_find(norm.begin(), norm.end()) != norm.end()) {
    c.fail(ErrorCode::invalid_argument, "axes {} repeat an axis", fmt::format("{}", *axes));
  }
  // The output shape: the new 1s at `norm`, the input dims in order elsewhere.
  Shape out;
  size_t next = 0, k = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (k < norm.size() && norm[k] == i) {
      out.push_back(1);
      ++k;
    } else {
      out.push_back(x.shape()[next++]);
    }
  }
  return {reshape(x, out)};
}

std::vector<Tensor> convert_concat(NodeContext& c) {
  std::vector<Tensor> xs = c.inputs_from(0);
  if (xs.empty()) c.fail(ErrorCode::invalid_argument, "needs at least one input");
  c.require_attr("axis");
  return {concat(xs, c.attr_int("axis", 0))};
}

std::vector<Tensor> convert_split(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.rank());
  std::vector<int64_t> sizes;
  if (c.opset() < 13 && c.has_attr("split")) sizes = c.attr_ints("split");
  if (c.opset() < 13 && c.opset() >= 2 && sizes.empty() && c.has_input(1)) sizes = c.ints(1);
  if (c.opset() >= 13 && c.has_input(1)) sizes = c.ints(1);
  if (!sizes.empty()) {
    if (static_cast<int>(sizes.size()) != c.num_outputs()) {
      c.fail(ErrorCode::invalid_argument, "split has {} sizes for {} outputs", sizes.size(),
             c.num_outputs());
    }
    return split(x, sizes, axis);
  }
  int64_t n = c.opset() >= 18 && c.has_attr("num_outputs") ? c.attr_int("num_outputs", 0)
                                                           : c.num_outputs();
  if (n < 1) c.fail(ErrorCode::invalid_argument, "num_outputs must be >= 1, got {}", n);
  int64_t dim = c.static_dim(0, axis);
  if (dim % n == 0) return split(x, n, axis);
  if (c.opset() < 18) {
    c.fail(ErrorCode::shape_mismatch, "dim {} of size {} does not split into {} equal parts",
           axis, dim, n);
  }
  // Opset 18: chunks of ceil(dim / n), the last one smaller.
  int64_t chunk = (dim + n - 1) / n;
  sizes.assign(static_cast<size_t>(n), chunk);
  sizes.back() = dim - chunk * (n - 1);
  if (sizes.back() < 0) {
    c.fail(ErrorCode::shape_mismatch, "dim {} of size {} does not split into {} parts", axis,
           dim, n);
  }
  return split(x, sizes, axis);
}

std::vector<Tensor> convert_slice(NodeContext& c) {
  Tensor x = c.input(0);
  SliceDesc d;
  if (c.opset() < 10) {
    d.begin = c.attr_ints("starts");
    d.end = c.attr_ints("ends");
    d.axes = c.attr_ints("axes");
  } else {
    d.begin = c.ints(1);
    d.end = c.ints(2);
    if (c.has_input(3)) d.axes = c.ints(3);
    if (c.has_input(4)) d.strides = c.ints(4);
  }
  if (d.axes.empty()) {
    d.axes.resize(d.begin.size());
    std::iota(d.axes.begin(), d.axes.end(), 0);
  }
  if (c.opset() >= 10 && c.symbolic(2)) {
    // An end that is a symbol (x[:, :sequence], as exporters slice position ids): the first
    // `sequence` elements along that axis, gathered by an iota of that symbolic length.
    for (size_t k = 0; k < d.end.size(); ++k) {
      if (!is_symbolic_dim(d.end[k])) continue;
      if (d.begin.size() != d.end.size() || d.axes.size() != d.end.size() ||
          (!d.strides.empty() && d.strides.size() != d.end.size())) {
        c.fail(ErrorCode::invalid_argument, "starts, ends, axes and steps must have one entry per sliced axis");
      }
      const bool unit = d.begin[k] == 0 && (d.strides.empty() || d.strides[k] == 1);
      if (!unit) {
        c.fail(ErrorCode::unsupported, "slice {} ends at the run-time size {}: only starts 0 with step 1 are "
               "supported", k, dim_name(d.end[k]));
      }
      const int64_t axis = c.axis(d.axes[k], x.rank());
      // The whole axis when it is that symbol's size; else the first `end` elements (a run whose
      // symbol exceeds the axis raises gather's out_of_range, where ONNX would clamp to the axis).
      if (x.shape()[static_cast<size_t>(axis)] != d.end[k]) {
        x = gather(x, iota(c.graph(), {d.end[k]}, 0, DType::i64), {.axis = axis});
      }
      d.begin.erase(d.begin.begin() + static_cast<std::ptrdiff_t>(k));
      d.end.erase(d.end.begin() + static_cast<std::ptrdiff_t>(k));
      d.axes.erase(d.axes.begin() + static_cast<std::ptrdiff_t>(k));
      if (!d.strides.empty()) d.strides.erase(d.strides.begin() + static_cast<std::ptrdiff_t>(k));
      --k;
    }
    if (d.axes.empty()) return {x};
  }
  return {slice(x, d)};
}

std::vector<Tensor> convert_expand(NodeContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> shape = c.ints(1);
  check_no_symbol_codes(c, shape, c.symbolic(1));
  return {broadcast_to(x, broadcast_shape(c, x.shape(), shape))};
}

std::vector<Tensor> convert_tile(NodeContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> reps = c.ints(1);
  if (static_cast<int64_t>(reps.size()) != x.rank()) {
    c.fail(ErrorCode::shape_mismatch, "repeats has {} entries for an input of rank {}",
           reps.size(), x.rank());
  }
  return {tile(x, reps)};
}

std::vector<Tensor> convert_pad(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t rank = x.rank();
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.attr_ints(c.opset() < 2 ? "paddings" : "pads");
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.ints(1);
    if (c.has_input(2)) value = c.scalar(2);
  }
  std::vector<int64_t> axes;
  if (c.opset() >= 18 && c.has_input(3)) {
    for (int64_t a : c.ints(3)) axes.push_back(c.axis(a, rank));
  } else {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (pads.size() != 2 * axes.size()) {
    c.fail(ErrorCode::invalid_argument, "pads has {} entries, expected {}", pads.size(),
           2 * axes.size());
  }
  std::string mode = c.attr_string("mode", "constant");
  PadDesc d;
  if (mode == "constant") d.mode = PadMode::constant;
  else if (mode == "reflect") d.mode = PadMode::reflect;
  else if (mode == "edge") d.mode = PadMode::edge;
  else if (mode == "wrap" && c.opset() >= 19) d.mode = PadMode::periodic;
  else c.fail(ErrorCode::invalid_argument, "unknown pad mode '{}'", mode);
  d.value = value;
  d.before.assign(static_cast<size_t>(rank), 0);
  d.after.assign(static_cast<size_t>(rank), 0);
  // Negative pads crop: pad with the positive parts, then slice the negative ones off.
  SliceDesc crop;
  size_t n = axes.size();
  for (size_t i = 0; i < n; ++i) {
    int64_t a = axes[i], b = pads[i], e = pads[i + n];
    d.before[a] = std::max<int64_t>(b, 0);
    d.after[a] = std::max<int64_t>(e, 0);
    if (b < 0 || e < 0) {
      crop.axes.push_back(a);
      crop.begin.push_back(std::max<int64_t>(-b, 0));
      crop.end.push_back(e < 0 ? e : kSliceEnd);
    }
  }
  Tensor y = pad(x, d);
  if (!crop.axes.empty()) y = slice(y, crop);
  return {y};
}

std::vector<Tensor> convert_shape(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t rank = x.rank();
  int64_t start = c.attr_int("start", 0);
  int64_t end = c.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(x.shape().begin() + start, x.shape().begin() + end);
  bool symbols = false;
  for (int64_t d : dims) {
    if (d == -1) {
      c.fail(ErrorCode::unsupported, "the shape {} of input 0 has dynamic dims (fix them with "
             "ImportOptions::input_shapes, or name them: a dim_param)", str(x.shape()));
    }
    symbols = symbols || is_symbolic_dim(d);
  }
  // Named symbols (an input's dim_param, propagated) stand for their run-time sizes.
  return {symbols ? c.symbolic_ints_constant(dims) : c.ints_constant(dims)};
}

std::vector<Tensor> convert_size(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t n = num_elements(x.shape());
  if (n < 0) {
    c.fail(ErrorCode::unsupported, "input 0 {} has dynamic dims", str(x.shape()));
  }
  return {c.constant(TensorData::scalar<int64_t>(n))};
}

std::vector<Tensor> convert_depth_to_space(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t b = c.attr_int("blocksize", 0);
  if (x.rank() != 4 || b < 1) {
    c.fail(ErrorCode::invalid_argument, "needs a rank-4 input and blocksize >= 1 (input {}, "
           "blocksize {})", str(x.shape()), b);
  }
  int64_t n = x.shape()[0], ch = c.static_dim(0, 1), h = x.shape()[2], w = x.shape()[3];
  if (ch % (b * b) != 0) {
    c.fail(ErrorCode::shape_mismatch, "channels {} are not divisible by blocksize^2 = {}", ch, b * b);
  }
  bool crd = c.attr_string("mode", "DCR") == "CRD";
  Tensor t = crd ? transpose(reshape(x, {n, ch / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3})
                 : transpose(reshape(x, {n, b, b, ch / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
  return {reshape(t, {n, ch / (b * b), h < 0 ? -1 : h * b, w < 0 ? -1 : w * b})};
}

std::vector<Tensor> convert_space_to_depth(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t b = c.attr_int("blocksize", 0);
  if (x.rank() != 4 || b < 1) {
    c.fail(ErrorCode::invalid_argument, "needs a rank-4 input and blocksize >= 1 (input {}, "
           "blocksize {})", str(x.shape()), b);
  }
  int64_t n = x.shape()[0], ch = x.shape()[1];
  int64_t h = c.static_dim(0, 2), w = c.static_dim(0, 3);
  if (h % b != 0 || w % b != 0) {
    c.fail(ErrorCode::shape_mismatch, "spatial dims {} are not divisible by blocksize {}",
           str(x.shape()), b);
  }
  Tensor t = transpose(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  return {reshape(t, {n, ch < 0 ? -1 : ch * b * b, h / b, w / b})};
}

std::vector<Tensor> convert_compress(NodeContext& c) {
  Tensor x = c.input(0);
  TensorData cond = c.value(1);
  if (cond.rank() != 1) c.fail(ErrorCode::invalid_argument, "condition must be 1-d");
  bool has_axis = c.has_attr("axis");
  if (!has_axis) x = reshape(x, {-1});
  int64_t axis = has_axis ? c.axis(c.attr_int("axis", 0), x.rank()) : 0;
  int64_t dim = has_axis ? c.static_dim(0, axis) : num_elements(c.input(0).shape());
  if (dim < 0) c.fail(ErrorCode::unsupported, "input 0 {} has dynamic dims", str(c.input(0).shape()));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < cond.num_elements() && i < dim; ++i) {
    if (cond.element_as_double(i) != 0) idx.push_back(i);
  }
  return {gather(x, c.ints_constant(idx), {.axis = axis})};
}

}  // namespace tg::onnx

namespace tg::onnx {

std::vector<Tensor> convert_center_crop_pad(NodeContext& c) {
  Tensor x = c.input(0);
  std::vector<int64_t> shape = c.ints(1);
  std::vector<int64_t> axes;
  if (c.has_attr("axes")) {
    for (int64_t a : c.attr_ints("axes")) axes.push_back(c.axis(a, x.rank()));
  } else {
    for (int64_t a = 0; a < x.rank(); ++a) axes.push_back(a);
  }
  if (shape.size() != axes.size()) {
    c.fail(ErrorCode::invalid_argument, "shape has {} entries for {} axes", shape.size(), axes.size());
  }
  // Crop the larger dims around their centre, then pad the smaller ones (the extra element of an
  // odd difference goes at the end).
  SliceDesc crop;
  PadDesc p{.before = std::vector<int64_t>(static_cast<size_t>(x.rank()), 0),
            .after = std::vector<int64_t>(static_cast<size_t>(x.rank()), 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t dim = c.static_dim(0, axes[i]), want = shape[i];
    if (want < dim) {
      crop.axes.push_back(axes[i]);
      crop.begin.push_back((dim - want) / 2);
      crop.end.push_back((dim - want) / 2 + want);
    } else if (want > dim) {
      p.before[axes[i]] = (want - dim) / 2;
      p.after[axes[i]] = want - dim - (want - dim) / 2;
    }
  }
  Tensor y = crop.axes.empty() ? x : slice(x, crop);
  return {pad(y, p)};
}

}  // namespace tg::onnx
