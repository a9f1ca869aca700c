// The conv op family: attribute validation, type inference and builders of conv2d,
// conv2d_backward_data and conv2d_backward_weights, and the composite conv_transpose2d.
// Every error names the op and the shapes involved, e.g.
// "[conv2d] input channels 3 do not match weights' 4 (input [8,32,32,3], weights [3,3,4,16],
// hwio)".
#include <algorithm>
#include <string>

#include "ir/attrs.h"
#include "ops/builder.h"
#include "ops/conv_geometry.h"

namespace tg {
namespace {

using ops::ConvGeometry;
using ops::layout_name;

// Strides, dilations and paddings above this are rejected (they keep all size arithmetic far
// from int64 overflow).
constexpr int64_t kMaxAttr = int64_t{1} << 30;

// What an error message ends with: the shapes and layouts of the op being checked.
struct Where {
  std::string_view op;
  std::string shapes;
};

template <typename... Args>
[[noreturn]] void fail_at(ErrorCode code, const Where& at, fmt::format_string<Args...> f,
                          Args&&... args) {
  fail(code, at.op, "{} ({})", fmt::format(f, std::forward<Args>(args)...), at.shapes);
}

void check_pair(const std::vector<int64_t>& v, const char* what, const Where& at) {
  if (v.size() != 2)
    fail_at(ErrorCode::invalid_argument, at, "{} [{}] must have 2 entries", what,
            fmt::join(v, ","));
  for (int64_t s : v) {
    if (s < 1 || s > kMaxAttr) {
      fail_at(ErrorCode::invalid_argument, at, "{} [{}] must be >= 1 (and <= 2^30)", what,
              fmt::join(v, ","));
    }
  }
}

// Attributes only (no shapes).
void check_desc(const Conv2dDesc& d, const Where& at) {
  if (!ops::is_data_layout(d.data_layout)) {
    fail_at(ErrorCode::invalid_argument, at, "data_layout must be nhwc or nchw, got {}",
            layout_name(d.data_layout));
  }
  if (!ops::is_weights_layout(d.weights_layout)) {
    fail_at(ErrorCode::invalid_argument, at, "weights_layout must be hwio, oihw or ohwi, got {}",
            layout_name(d.weights_layout));
  }
  check_pair(d.strides, "strides", at);
  check_pair(d.dilations, "dilations", at);
  const auto& p = d.explicit_padding;
  if (p.size() != 4) {
    fail_at(ErrorCode::invalid_argument, at,
            "explicit_padding [{}] must have 4 entries (top, bottom, left, right)",
            fmt::join(p, ","));
  }
  for (int64_t v : p) {
    if (v < 0 || v > kMaxAttr) {
      fail_at(ErrorCode::invalid_argument, at, "explicit_padding [{}] must be >= 0 (and <= 2^30)",
              fmt::join(p, ","));
    }
  }
  switch (d.padding) {
    case Padding::explicit_padding:
    case Padding::valid:
    case Padding::same:
    case Padding::same_lower:
      break;
    default:
      fail_at(ErrorCode::invalid_argument, at, "unknown padding style {}",
              static_cast<int>(d.padding));
  }
  if (d.groups < 1 || d.groups > kMaxAttr)
    fail_at(ErrorCode::invalid_argument, at, "groups {} must be >= 1", d.groups);
}

void check_rank4(const Shape& s, const char* what, const Where& at) {
  if (s.size() != 4)
    fail_at(ErrorCode::shape_mismatch, at, "{} must have rank 4, got rank {}", what, s.size());
}

void check_dtypes(const TensorType& a, const TensorType& b, const Where& at) {
  if (a.dtype != b.dtype || !is_floating(a.dtype)) {
    fail_at(ErrorCode::dtype_mismatch, at, "needs two inputs of one floating dtype, got {} and {}",
            dtype_name(a.dtype), dtype_name(b.dtype));
  }
}

// The weights' shape must be static, every dim >= 1.
void check_weights_shape(const Shape& w, const Where& at) {
  for (int64_t d : w) {
    if (d < 1 || d > kMaxAttr) {
      fail_at(ErrorCode::invalid_argument, at, "weights dims must be static and in [1, 2^30]");
    }
  }
}

// Checks x (forward input) against w and returns the forward output's shape (-1 where x's dims
// are dynamic). x's channel dim must be static.
Shape forward_shape(const Shape& x, const Shape& w, const Conv2dDesc& d, const Where& at) {
  check_weights_shape(w, at);
  ConvGeometry g = ops::conv_geometry(x, w, d);
  if (g.x.c < 0) fail_at(ErrorCode::invalid_argument, at, "the input channel dim must be static");
  if (g.x.c % d.groups != 0) {
    fail_at(ErrorCode::shape_mismatch, at, "input channels {} are not divisible by groups {}",
            g.x.c, d.groups);
  }
  if (g.w.o % d.groups != 0) {
    fail_at(ErrorCode::shape_mismatch, at, "output channels {} are not divisible by groups {}",
            g.w.o, d.groups);
  }
  if (g.x.c != g.w.i * d.groups) {
    if (d.groups == 1) {
      fail_at(ErrorCode::shape_mismatch, at, "input channels {} do not match weights' {}", g.x.c,
              g.w.i);
    }
    fail_at(ErrorCode::shape_mismatch, at, "input channels {} do not match weights' {} x groups {}",
            g.x.c, g.w.i, d.groups);
  }
  // same/same_lower always fit (an empty input gives an empty output).
  const bool same = d.padding == Padding::same || d.padding == Padding::same_lower;
  auto check_fits = [&](int64_t in, int64_t out, int64_t k, int64_t dil, int64_t before,
                        int64_t after, const char* dim) {
    if (in >= 0 && out <= 0 && !same) {
      fail_at(
          ErrorCode::invalid_argument, at,
          "the window's {} {} (kernel {}, dilation {}) is larger than the padded input {} ({} + "
          "{} + {})",
          dim, dil * (k - 1) + 1, k, dil, in + before + after, in, before, after);
    }
  };
  check_fits(g.x.h, g.y.h, g.w.kh, g.dilation_h, g.pad_top, g.pad_bottom, "height");
  check_fits(g.x.w, g.y.w, g.w.kw, g.dilation_w, g.pad_left, g.pad_right, "width");
  return ops::data_shape(g.y, d.data_layout);
}

// dy's shape must equal `expected` where both are known.
void check_dy(const Shape& dy, const Shape& expected, const char* from, const Where& at) {
  for (size_t i = 0; i < 4; ++i) {
    if (dy[i] >= 0 && expected[i] >= 0 && dy[i] != expected[i]) {
      fail_at(ErrorCode::shape_mismatch, at, "{} gives a forward output of shape {}, not dy's {}",
              from, str(expected), str(dy));
    }
  }
}

std::vector<TensorType> infer_conv2d(const ir::Node& node, std::span<const TensorType> in) {
  const auto& d = std::get<Conv2dDesc>(node.attrs);
  const TensorType &x = in[0], &w = in[1];
  Where at{"conv2d", fmt::format("input {}, weights {}, {}", str(x.shape), str(w.shape),
                                 layout_name(d.weights_layout))};
  check_desc(d, at);
  check_rank4(x.shape, "input", at);
  check_rank4(w.shape, "weights", at);
  check_dtypes(x, w, at);
  return {{forward_shape(x.shape, w.shape, d, at), x.dtype}};
}

// A spatial dim of backward_data's input_shape: `in` itself when a size or a symbol; else (-1) recovered from dy's
// `out` where the stride is 1 (the only case where one input size gives that output); else -1
// while `out` is dynamic too (resolved when the graph is compiled for concrete feeds, which the
// gradient of a conv2d whose input size is dynamic relies on). A dim that dy's cannot determine
// is an error.
int64_t input_size(int64_t in, int64_t out, int64_t k, const Conv2dDesc& d, int dim,
                   const char* name, const Where& at) {
  if (in != -1 || out < 0) return in;  // a size, or a symbol: itself
  const int64_t stride = d.strides[dim], extent = d.dilations[dim] * (k - 1) + 1;
  if (stride != 1) {
    fail_at(ErrorCode::invalid_argument, at,
            "input_shape's {} is dynamic and dy's {} {} does not determine it (stride {}): give "
            "input_shape a static {}",
            name, name, out, stride, name);
  }
  if (d.padding == Padding::same || d.padding == Padding::same_lower) return out;
  const int64_t pads = d.padding == Padding::explicit_padding
                           ? d.explicit_padding[2 * dim] + d.explicit_padding[2 * dim + 1]
                           : 0;
  const int64_t size = out - 1 + extent - pads;
  if (size < 0) {
    fail_at(ErrorCode::shape_mismatch, at, "no input {} gives dy's {} {}", name, name, out);
  }
  return size;
}

std::vector<TensorType> infer_backward_data(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<ir::ConvBackwardAttrs>(node.attrs);
  const Conv2dDesc& d = a.conv;
  const TensorType &dy = in[0], &w = in[1];
  Where at{"conv2d_backward_data",
           fmt::format("dy {}, weights {}, {}, input_shape {}", str(dy.shape), str(w.shape),
                       layout_name(d.weights_layout), str(a.shape))};
  check_desc(d, at);
  check_rank4(dy.shape, "dy", at);
  check_rank4(w.shape, "weights", at);
  check_rank4(a.shape, "input_shape", at);
  check_dtypes(dy, w, at);
  check_weights_shape(w.shape, at);
  Shape x = a.shape;
  for (int64_t v : x) {  // sizes, -1 (from dy) or symbols (a compile-once graph's, bound per signature)
    if (v < -1 && !is_symbolic_dim(v)) fail_at(ErrorCode::invalid_argument, at, "input_shape has a negative dim");
  }
  if (x[0] == -1) x[0] = dy.shape[0];
  const auto c = static_cast<size_t>(ops::channel_axis(d.data_layout));
  if (x[c] < 0)
    fail_at(ErrorCode::invalid_argument, at, "input_shape's channel dim must be static");
  const auto h = static_cast<size_t>(ops::height_axis(d.data_layout));
  const ops::WeightDims wd = ops::weight_dims(w.shape, d.weights_layout);
  x[h] = input_size(x[h], dy.shape[h], wd.kh, d, 0, "height", at);
  x[h + 1] = input_size(x[h + 1], dy.shape[h + 1], wd.kw, d, 1, "width", at);
  check_dy(dy.shape, forward_shape(x, w.shape, d, at), "input_shape", at);
  return {{x, dy.dtype}};
}

std::vector<TensorType> infer_backward_weights(const ir::Node& node,
                                               std::span<const TensorType> in) {
  const auto& a = std::get<ir::ConvBackwardAttrs>(node.attrs);
  const Conv2dDesc& d = a.conv;
  const TensorType &dy = in[0], &x = in[1];
  Where at{"conv2d_backward_weights",
           fmt::format("dy {}, input {}, weights_shape {}, {}", str(dy.shape), str(x.shape),
                       str(a.shape), layout_name(d.weights_layout))};
  check_desc(d, at);
  check_rank4(dy.shape, "dy", at);
  check_rank4(x.shape, "input", at);
  check_rank4(a.shape, "weights_shape", at);
  check_dtypes(dy, x, at);
  check_dy(dy.shape, forward_shape(x.shape, a.shape, d, at), "the input", at);
  return {{a.shape, dy.dtype}};
}

// Zeroes explicit_padding unless it is used, so that equal convolutions have equal attributes.
// A malformed explicit_padding is kept for type inference to reject.
Conv2dDesc normalized(Conv2dDesc d) {
  const auto& p = d.explicit_padding;
  bool well_formed = p.size() == 4 && std::all_of(p.begin(), p.end(), [](int64_t v) {
                       return v >= 0 && v <= kMaxAttr;
                     });
  if (d.padding != Padding::explicit_padding && well_formed) d.explicit_padding = {0, 0, 0, 0};
  return d;
}

// ---- conv_transpose2d -----------------------------------------------------------------------

// One spatial dim of a transposed convolution: the inner conv2d_backward_data's padding and
// output size, and the zero rows added before/after it (where the padding is negative, which
// output_padding or same with a stride larger than the window make it).
struct TransposedDim {
  int64_t inner_before = 0, inner_after = 0, inner_out = 0;
  int64_t extend_before = 0, extend_after = 0;
  int64_t out = 0;
};

TransposedDim transposed_dim(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                             Padding padding, int64_t before, int64_t after, int64_t output_padding,
                             const char* dim, const Where& at) {
  const int64_t full = (in - 1) * stride + dilation * (k - 1) + 1;  // uncropped
  int64_t pb = 0, pa = 0;
  if (padding == Padding::explicit_padding) {
    pb = before;
    pa = after;
  } else if (padding == Padding::same || padding == Padding::same_lower) {
    const int64_t total = full + output_padding - in * stride;  // ONNX auto_pad
    const int64_t small = total / 2, large = total - small;
    pb = padding == Padding::same ? small : large;
    pa = padding == Padding::same ? large : small;
  }
  TransposedDim t;
  const int64_t crop_end = pa - output_padding;
  t.out = full - pb - crop_end;
  t.inner_before = std::max<int64_t>(pb, 0);
  t.inner_after = std::max<int64_t>(crop_end, 0);
  t.inner_out = full - t.inner_before - t.inner_after;
  t.extend_before = std::max<int64_t>(-pb, 0);
  t.extend_after = std::max<int64_t>(-crop_end, 0);
  if (t.out <= 0 || t.inner_out <= 0) {
    fail_at(ErrorCode::invalid_argument, at,
            "the padding ({} + {}) crops the whole output {} (input {}, kernel {}, stride {}, "
            "dilation {})",
            pb, pa, dim, in, k, stride, dilation);
  }
  return t;
}

void check_output_padding(const ConvTranspose2dDesc& d, const Where& at) {
  const auto& op = d.output_padding;
  if (op.size() != 2)
    fail_at(ErrorCode::invalid_argument, at, "output_padding [{}] must have 2 entries",
            fmt::join(op, ","));
  for (size_t i = 0; i < 2; ++i) {
    if (op[i] < 0 || op[i] >= std::max(d.conv.strides[i], d.conv.dilations[i])) {
      fail_at(ErrorCode::invalid_argument, at,
              "output_padding [{}] must be in [0, max(stride, dilation)) per dim",
              fmt::join(op, ","));
    }
  }
}

}  // namespace

Tensor conv_transpose2d(Tensor x, Tensor w, ConvTranspose2dDesc desc) {
  constexpr std::string_view kOp = "conv_transpose2d";
  if (!x.valid() || !w.valid()) fail(ErrorCode::invalid_argument, kOp, "got an invalid tensor");
  const Conv2dDesc& c = desc.conv;
  Where at{kOp, fmt::format("input {}, weights {}, {}", str(x.shape()), str(w.shape()),
                            layout_name(c.weights_layout))};
  check_desc(c, at);
  check_output_padding(desc, at);
  check_rank4(x.shape(), "input", at);
  check_rank4(w.shape(), "weights", at);
  check_dtypes(x.type(), w.type(), at);
  check_weights_shape(w.shape(), at);
  const ops::DataDims xd = ops::data_dims(x.shape(), c.data_layout);
  const ops::WeightDims wd = ops::weight_dims(w.shape(), c.weights_layout);
  if (xd.c < 0 || xd.h < 1 || xd.w < 1) {
    fail_at(ErrorCode::invalid_argument, at,
            "the input's channel and spatial dims must be static (spatial dims >= 1)");
  }
  if (wd.o % c.groups != 0) {
    fail_at(ErrorCode::shape_mismatch, at, "input channels {} are not divisible by groups {}", wd.o,
            c.groups);
  }
  if (xd.c != wd.o)
    fail_at(ErrorCode::shape_mismatch, at, "input channels {} do not match weights' {}", xd.c,
            wd.o);
  const auto& p = c.explicit_padding;
  TransposedDim h = transposed_dim(xd.h, wd.kh, c.strides[0], c.dilations[0], c.padding, p[0], p[1],
                                   desc.output_padding[0], "height", at);
  TransposedDim v = transposed_dim(xd.w, wd.kw, c.strides[1], c.dilations[1], c.padding, p[2], p[3],
                                   desc.output_padding[1], "width", at);
  Conv2dDesc inner = c;
  inner.padding = Padding::explicit_padding;
  inner.explicit_padding = {h.inner_before, h.inner_after, v.inner_before, v.inner_after};
  Shape inner_shape =
      ops::data_shape({xd.n, wd.i * c.groups, h.inner_out, v.inner_out}, c.data_layout);
  Tensor y = conv2d_backward_data(x, w, inner_shape, inner);
  if (h.extend_before + h.extend_after + v.extend_before + v.extend_after == 0) return y;
  PadDesc extend{.before = {0, 0, 0, 0}, .after = {0, 0, 0, 0}};
  const auto ha = static_cast<size_t>(ops::height_axis(c.data_layout));
  extend.before[ha] = h.extend_before;
  extend.after[ha] = h.extend_after;
  extend.before[ha + 1] = v.extend_before;
  extend.after[ha + 1] = v.extend_after;
  return pad(y, extend);
}

namespace ops {
void register_conv_ops(OpRegistry& r) {
  r.set(ir::OpKind::conv2d, infer_conv2d);
  r.set(ir::OpKind::conv2d_backward_data, infer_backward_data);
  r.set(ir::OpKind::conv2d_backward_weights, infer_backward_weights);
}
}  // namespace ops

Tensor conv2d(Tensor x, Tensor w, Conv2dDesc desc) {
  return ops::make_op(ir::OpKind::conv2d, {x, w}, normalized(std::move(desc)));
}

Tensor conv2d_backward_data(Tensor dy, Tensor w, Shape input_shape, Conv2dDesc desc) {
  return ops::make_op(ir::OpKind::conv2d_backward_data, {dy, w},
                      ir::ConvBackwardAttrs{normalized(std::move(desc)), std::move(input_shape)});
}

Tensor conv2d_backward_weights(Tensor dy, Tensor x, Shape weights_shape, Conv2dDesc desc) {
  return ops::make_op(ir::OpKind::conv2d_backward_weights, {dy, x},
                      ir::ConvBackwardAttrs{normalized(std::move(desc)), std::move(weights_shape)});
}

}  // namespace tg
