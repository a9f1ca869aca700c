// Convolution and pooling ONNX ops (NCHW data, OIHW weights): Conv, ConvTranspose, MaxPool,
// AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool. 2-d windows map onto
// conv2d / conv_transpose2d / max_pool2d / avg_pool2d; 1-d windows run as 2-d ones of height 1;
// 3-d convolutions run as one 2-d convolution per depth tap over every output depth at once
// (depth folded into the batch), summed; 3-d pooling as a 2-d pooling over (H, W) then over D.
#include <cmath>
#include <limits>
#include <numeric>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

// The window geometry attributes shared by conv and pooling, as 2-d values.
struct Window {
  int64_t dims = 2;  ///< spatial dims of the node (1 or 2)
  std::vector<int64_t> kernel, strides, dilations;
  Padding padding = Padding::explicit_padding;
  std::vector<int64_t> pads;  ///< {top, bottom, left, right}
};

Padding auto_pad(const NodeContext& c) {
  std::string a = c.attr_string("auto_pad", "NOTSET");
  if (a == "NOTSET") return Padding::explicit_padding;
  if (a == "VALID") return Padding::valid;
  if (a == "SAME_UPPER") return Padding::same;
  if (a == "SAME_LOWER") return Padding::same_lower;
  c.fail(ErrorCode::invalid_argument, "unknown auto_pad '{}'", a);
}

// Reads kernel_shape (or `kernel` when given), strides, dilations, pads and auto_pad; a 1-d
// window becomes {1, k}.
Window window(const NodeContext& c, int64_t spatial, std::vector<int64_t> kernel) {
  if (spatial != 1 && spatial != 2) {
    c.fail(ErrorCode::unsupported, "only 1-d to 3-d windows are supported (input has {} spatial "
           "dims)", spatial);
  }
  Window w;
  w.dims = spatial;
  if (c.has_attr("kernel_shape")) kernel = c.attr_ints("kernel_shape");
  auto ones = std::vector<int64_t>(static_cast<size_t>(spatial), 1);
  std::vector<int64_t> strides = c.attr_ints("strides", ones);
  std::vector<int64_t> dil = c.attr_ints("dilations", ones);
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (static_cast<int64_t>(kernel.size()) != spatial || strides.size() != kernel.size() ||
      dil.size() != kernel.size() || pads.size() != 2 * kernel.size()) {
    c.fail(ErrorCode::invalid_argument, "kernel_shape, strides, dilations and pads do not fit {} "
           "spatial dims", spatial);
  }
  w.padding = auto_pad(c);
  if (spatial == 1) {
    w.kernel = {1, kernel[0]};
    w.strides = {1, strides[0]};
    w.dilations = {1, dil[0]};
    w.pads = {0, 0, pads[0], pads[1]};
  } else {
    w.kernel = kernel;
    w.strides = strides;
    w.dilations = dil;
    w.pads = {pads[0], pads[2], pads[1], pads[3]};
  }
  return w;
}

// [N, C, L] -> [N, C, 1, L] for 1-d windows.
Tensor to_2d(Tensor x, const Window& w) { return w.dims == 1 ? expand_dims(x, 2) : x; }
Tensor from_2d(Tensor y, const Window& w) { return w.dims == 1 ? squeeze(y, {2}) : y; }

Pool2dDesc pool_desc(const NodeContext& c, const Window& w) {
  return {.kernel_size = w.kernel,
          .strides = w.strides,
          .dilations = w.dilations,
          .padding = w.padding,
          .explicit_padding = w.pads,
          .ceil_mode = c.attr_int("ceil_mode", 0) != 0,
          .count_include_pad = c.attr_int("count_include_pad", 0) != 0,
          .data_layout = Layout::nchw};
}

std::vector<int64_t> spatial_axes(int64_t rank) {
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(rank - 2, 0)));
  std::iota(v.begin(), v.end(), 2);
  return v;
}

// [C] bias -> [1, C, 1, ...].
Tensor channel_bias(Tensor b, int64_t rank) {
  Shape s(static_cast<size_t>(rank), 1);
  s[1] = -1;
  return reshape(b, s);
}

// 3-d max/average pooling as two 2-d poolings: first over (H, W) with the channels and depth
// folded together, then over D (a window of width 1 in the folded H*W dim). Max and the
// average's divisor (a product of per-dim counts) both factor this way.
Tensor pool3d(NodeContext& c, Tensor x, bool is_max, bool count_include_pad) {
  auto three = [&](const char* name, int64_t def) {
    std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(3, def));
    if (v.size() != 3) c.fail(ErrorCode::invalid_argument, "{} must have 3 entries", name);
    return v;
  };
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  if (k.size() != 3) c.fail(ErrorCode::invalid_argument, "kernel_shape must have 3 entries");
  std::vector<int64_t> s = three("strides", 1), dil = three("dilations", 1);
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(6, 0));
  if (pads.size() != 6) c.fail(ErrorCode::invalid_argument, "pads must have 6 entries");
  Padding padding = auto_pad(c);
  bool ceil = c.attr_int("ceil_mode", 0) != 0;
  int64_t n = x.shape()[0], ch = c.static_dim(0, 1), d = c.static_dim(0, 2);
  int64_t h = c.static_dim(0, 3), w = c.static_dim(0, 4);
  auto pool = [&](Tensor t, Pool2dDesc desc) { return is_max ? max_pool2d(t, desc) : avg_pool2d(t, desc); };
  Pool2dDesc hw{.kernel_size = {k[1], k[2]}, .strides = {s[1], s[2]}, .dilations = {dil[1], dil[2]},
                .padding = padding, .explicit_padding = {pads[1], pads[4], pads[2], pads[5]},
                .ceil_mode = ceil, .count_include_pad = count_include_pad,
                .data_layout = Layout::nchw};
  Tensor y = pool(reshape(x, {n, ch * d, h, w}), hw);
  int64_t h2 = y.shape()[2], w2 = y.shape()[3];
  Pool2dDesc dd{.kernel_size = {k[0], 1}, .strides = {s[0], 1}, .dilations = {dil[0], 1},
                .padding = padding, .explicit_padding = {pads[0], pads[3], 0, 0},
                .ceil_mode = ceil, .count_include_pad = count_include_pad,
                .data_layout = Layout::nchw};
  y = pool(reshape(y, {n, ch, d, h2 * w2}), dd);
  return reshape(y, {n, ch, y.shape()[2], h2, w2});
}

// MaxPool's Indices: the flat position (row-major over the whole input, or with storage_order
// 1 column-major within each image) of each window's first maximum, found by an argmax stencil.
Tensor max_pool_indices(NodeContext& c, Tensor x, const Window& win) {
  if (!is_floating(x.dtype())) c.fail(ErrorCode::unsupported, "Indices need a floating input");
  if (win.padding != Padding::explicit_padding && win.padding != Padding::valid) {
    c.fail(ErrorCode::unsupported, "Indices with auto_pad SAME are not supported");
  }
  if (c.attr_int("ceil_mode", 0) != 0) c.fail(ErrorCode::unsupported, "Indices with ceil_mode are not supported");
  const std::vector<int64_t>& p = win.padding == Padding::valid ? std::vector<int64_t>{0, 0, 0, 0} : win.pads;
  int64_t n = c.static_dim(0, 0), ch = c.static_dim(0, 1);
  int64_t h = x.shape()[2], w = x.shape()[3];
  StencilDesc d{.reduction = StencilReduction::argmax, .strides = win.strides,
                .dilations = win.dilations, .explicit_padding = {p[0], p[1], p[2], p[3]},
                .boundary_mode = BoundaryMode::constant,
                .padding_constant = -std::numeric_limits<double>::infinity()};
  Tensor j = cast(stencil(x, fill(c.graph(), {win.kernel[0], win.kernel[1]}, 1.0, x.dtype()), d),
                  DType::i64);  // [N, C, Ho, Wo], row-major offset in the window
  Graph g = c.graph();
  auto k = [&](double v) { return g.constant(v, DType::i64); };
  Tensor kh = floor_div(j, k(static_cast<double>(win.kernel[1])));
  Tensor kw = floor_mod(j, k(static_cast<double>(win.kernel[1])));
  const Shape& os = j.shape();
  Tensor oh = iota(g, {1, 1, os[2], 1}, 2, DType::i64), ow = iota(g, {1, 1, 1, os[3]}, 3, DType::i64);
  Tensor hh = oh * static_cast<double>(win.strides[0]) - static_cast<double>(p[0]) +
              kh * static_cast<double>(win.dilations[0]);
  Tensor ww = ow * static_cast<double>(win.strides[1]) - static_cast<double>(p[2]) +
              kw * static_cast<double>(win.dilations[1]);
  Tensor image = (iota(g, {n, 1, 1, 1}, 0, DType::i64) * static_cast<double>(ch) +
                  iota(g, {1, ch, 1, 1}, 1, DType::i64)) * static_cast<double>(h * w);
  bool column_major = c.attr_int("storage_order", 0) != 0;
  return image + (column_major ? ww * static_cast<double>(h) + hh : hh * static_cast<double>(w) + ww);
}

// The depth (first spatial) dim of a 3-d Conv / ConvTranspose: kernel, stride, dilation, the
// pads before/after (from `pads` = {d0, h0, w0, d1, h1, w1} or auto_pad), and the node's 2-d
// window over (H, W).
struct DepthWindow {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_before = 0, pad_after = 0;
  Window hw;
};

DepthWindow depth_window(const NodeContext& c, std::vector<int64_t> kernel) {
  if (c.has_attr("kernel_shape")) kernel = c.attr_ints("kernel_shape");
  std::vector<int64_t> strides = c.attr_ints("strides", {1, 1, 1});
  std::vector<int64_t> dil = c.attr_ints("dilations", {1, 1, 1});
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(6, 0));
  if (kernel.size() != 3 || strides.size() != 3 || dil.size() != 3 || pads.size() != 6) {
    c.fail(ErrorCode::invalid_argument, "kernel_shape, strides, dilations and pads do not fit 3 "
           "spatial dims");
  }
  DepthWindow w;
  w.kernel = kernel[0];
  w.stride = strides[0];
  w.dilation = dil[0];
  w.pad_before = pads[0];
  w.pad_after = pads[3];
  w.hw.dims = 2;
  w.hw.kernel = {kernel[1], kernel[2]};
  w.hw.strides = {strides[1], strides[2]};
  w.hw.dilations = {dil[1], dil[2]};
  w.hw.padding = auto_pad(c);
  w.hw.pads = {pads[1], pads[4], pads[2], pads[5]};
  for (int64_t v : {w.kernel, w.stride, w.dilation}) {
    if (v < 1) c.fail(ErrorCode::invalid_argument, "kernel_shape, strides and dilations must be >= 1");
  }
  if (w.pad_before < 0 || w.pad_after < 0) c.fail(ErrorCode::invalid_argument, "pads must be >= 0");
  return w;
}

// ONNX Conv over 3 spatial dims: x [N, C, D, H, W], w [O, C/group, kD, kH, kW] ->
// [N, O, Do, Ho, Wo]. y[:, :, z] = sum over taps t of conv2d(x[:, :, z*stride + t*dilation
// - pad_before], w[:, :, t]): per tap one conv2d over [N*Do, C, H, W] (the depth slices it reads,
// folded into the batch), so the work is conv3d's and gradients flow through conv2d's.
Tensor conv3d_by_depth(NodeContext& c, Tensor x, Tensor w) {
  std::vector<int64_t> k(w.shape().begin() + std::min<int64_t>(2, w.rank()), w.shape().end());
  DepthWindow dw = depth_window(c, k);
  int64_t ch = c.static_dim(0, 1), d = c.static_dim(0, 2), h = c.static_dim(0, 3), wd = c.static_dim(0, 4);
  int64_t span = (dw.kernel - 1) * dw.dilation + 1;
  if (dw.hw.padding == Padding::valid) {
    dw.pad_before = dw.pad_after = 0;
  } else if (dw.hw.padding != Padding::explicit_padding) {
    int64_t out = (d + dw.stride - 1) / dw.stride;
    int64_t total = std::max<int64_t>((out - 1) * dw.stride + span - d, 0);
    dw.pad_before = dw.hw.padding == Padding::same ? total / 2 : total - total / 2;
    dw.pad_after = total - dw.pad_before;
  }
  int64_t padded = d + dw.pad_before + dw.pad_after;
  if (padded < span) {
    c.fail(ErrorCode::shape_mismatch, "the depth window ({} with dilation {}) is larger than the "
           "padded depth {} of input {}", dw.kernel, dw.dilation, padded, str(x.shape()));
  }
  int64_t out_d = (padded - span) / dw.stride + 1;
  if (dw.pad_before > 0 || dw.pad_after > 0) {
    x = pad(x, {.before = {0, 0, dw.pad_before, 0, 0}, .after = {0, 0, dw.pad_after, 0, 0}});
  }
  Tensor xt = transpose(x, {0, 2, 1, 3, 4});  // [N, Dp, C, H, W]
  Conv2dDesc desc{.strides = dw.hw.strides, .dilations = dw.hw.dilations, .padding = dw.hw.padding,
                  .explicit_padding = dw.hw.pads, .groups = c.attr_int("group", 1),
                  .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
  Tensor sum;
  for (int64_t t = 0; t < dw.kernel; ++t) {
    int64_t first = t * dw.dilation;
    Tensor xs = slice(xt, {.begin = {first}, .end = {first + (out_d - 1) * dw.stride + 1},
                           .strides = {dw.stride}, .axes = {1}});
    Tensor wt = squeeze(slice(w, {.begin = {t}, .end = {t + 1}, .axes = {2}}), {2});
    Tensor y = conv2d(reshape(xs, {-1, ch, h, wd}), wt, desc);
    sum = t == 0 ? y : sum + y;
  }
  const Shape& ys = sum.shape();  // [N*Do, O, Ho, Wo]
  return transpose(reshape(sum, {-1, out_d, ys[1], ys[2], ys[3]}), {0, 2, 1, 3, 4});
}

// ONNX ConvTranspose over 3 spatial dims: x [N, C, D, H, W], w [C, O/group, kD, kH, kW] ->
// [N, O, Do, Ho, Wo], Do = (D - 1) * stride + output_padding + (kD - 1) * dilation + 1 - pads.
// Per depth tap t one conv_transpose2d over [N*D, C, H, W]; its D planes land at depths
// z*stride + t*dilation of the unpadded output (zeros between them), the taps are summed, and
// the depth pads are cropped.
Tensor conv_transpose3d_by_depth(NodeContext& c, Tensor x, Tensor w, std::vector<int64_t> out_pad,
                                 const std::vector<int64_t>* output_shape) {
  std::vector<int64_t> k(w.shape().begin() + std::min<int64_t>(2, w.rank()), w.shape().end());
  DepthWindow dw = depth_window(c, k);
  int64_t ch = c.static_dim(0, 1), d = c.static_dim(0, 2), h = c.static_dim(0, 3), wd = c.static_dim(0, 4);
  int64_t span = (dw.kernel - 1) * dw.dilation + 1;
  int64_t full = (d - 1) * dw.stride + out_pad[0] + span;  // the depth before cropping pads
  // Depth pads from output_shape or auto_pad (ONNX ConvTranspose's formula); H and W as the 2-d op.
  auto pads_for = [&](int64_t out, bool upper) {
    int64_t total = full - out;
    if (total < 0) {
      out_pad[0] -= total;
      full -= total;
      total = 0;
    }
    dw.pad_before = upper ? total / 2 : total - total / 2;
    dw.pad_after = total - dw.pad_before;
  };
  std::vector<int64_t> hw_out_pad = {out_pad[1], out_pad[2]};
  if (output_shape != nullptr) {
    pads_for((*output_shape)[0], dw.hw.padding == Padding::same);
    for (size_t i = 0; i < 2; ++i) {
      int64_t in = i == 0 ? h : wd;
      int64_t total = dw.hw.strides[i] * (in - 1) + hw_out_pad[i] + (dw.hw.kernel[i] - 1) * dw.hw.dilations[i] +
                      1 - (*output_shape)[i + 1];
      if (total < 0) {
        hw_out_pad[i] -= total;
        total = 0;
      }
      int64_t first = dw.hw.padding == Padding::same ? total / 2 : total - total / 2;
      dw.hw.pads[2 * i] = first;
      dw.hw.pads[2 * i + 1] = total - first;
    }
    dw.hw.padding = Padding::explicit_padding;
  } else if (dw.hw.padding == Padding::valid) {
    dw.pad_before = dw.pad_after = 0;
  } else if (dw.hw.padding != Padding::explicit_padding) {
    pads_for(d * dw.stride, dw.hw.padding == Padding::same);
  }
  int64_t out_d = full - dw.pad_before - dw.pad_after;
  if (out_d < 1) {
    c.fail(ErrorCode::shape_mismatch, "pads {} and {} leave no output depth (input {})", dw.pad_before,
           dw.pad_after, str(x.shape()));
  }
  ConvTranspose2dDesc desc{
      .conv = {.strides = dw.hw.strides, .dilations = dw.hw.dilations, .padding = dw.hw.padding,
               .explicit_padding = dw.hw.pads, .groups = c.attr_int("group", 1),
               .data_layout = Layout::nchw, .weights_layout = Layout::oihw},
      .output_padding = hw_out_pad};
  Tensor xf = reshape(transpose(x, {0, 2, 1, 3, 4}), {-1, ch, h, wd});  // [N*D, C, H, W]
  Tensor sum;
  for (int64_t t = 0; t < dw.kernel; ++t) {
    Tensor wt = squeeze(slice(w, {.begin = {t}, .end = {t + 1}, .axes = {2}}), {2});
    Tensor y = conv_transpose2d(xf, wt, desc);  // [N*D, O, Ho, Wo]
    const Shape& ys = y.shape();
    Tensor z = reshape(y, {-1, d, ys[1], ys[2], ys[3]});  // [N, D, O, Ho, Wo]
    if (dw.stride > 1) {  // D planes stride apart: [N, D, stride, ...] with zeros, then flattened
      z = pad(expand_dims(z, 2), {.before = {0, 0, 0, 0, 0, 0}, .after = {0, 0, dw.stride - 1, 0, 0, 0}});
      z = reshape(z, {-1, d * dw.stride, ys[1], ys[2], ys[3]});
      z = slice(z, {.begin = {0}, .end = {(d - 1) * dw.stride + 1}, .axes = {1}});
    }
    int64_t before = t * dw.dilation, after = full - before - ((d - 1) * dw.stride + 1);
    z = pad(z, {.before = {0, before, 0, 0, 0}, .after = {0, after, 0, 0, 0}});
    sum = t == 0 ? z : sum + z;
  }
  sum = slice(sum, {.begin = {dw.pad_before}, .end = {dw.pad_before + out_d}, .axes = {1}});
  return transpose(sum, {0, 2, 1, 3, 4});
}

}  // namespace

Tensor conv_with_attrs(NodeContext& c, Tensor x, Tensor w) {
  int64_t spatial = x.rank() - 2;
  if (spatial == 3) return conv3d_by_depth(c, x, w);
  std::vector<int64_t> k(w.shape().begin() + std::min<int64_t>(2, w.rank()), w.shape().end());
  Window win = window(c, spatial, k);
  Conv2dDesc d{.strides = win.strides, .dilations = win.dilations, .padding = win.padding,
               .explicit_padding = win.pads, .groups = c.attr_int("group", 1),
               .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
  return from_2d(conv2d(to_2d(x, win), to_2d(w, win), d), win);
}

std::vector<Tensor> convert_conv(NodeContext& c) {
  Tensor y = conv_with_attrs(c, c.input(0), c.input(1));
  if (c.has_input(2)) y = y + channel_bias(c.input(2), y.rank());
  return {y};
}

std::vector<Tensor> convert_conv_transpose(NodeContext& c) {
  Tensor x = c.input(0), w = c.input(1);
  int64_t spatial = x.rank() - 2;
  std::vector<int64_t> out_pad = c.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  if (static_cast<int64_t>(out_pad.size()) != spatial) {
    c.fail(ErrorCode::invalid_argument, "output_padding must have {} entries", spatial);
  }
  if (spatial == 3) {
    std::vector<int64_t> shape;
    if (c.has_attr("output_shape")) {
      shape = c.attr_ints("output_shape");
      if (static_cast<int64_t>(shape.size()) == x.rank()) shape.erase(shape.begin(), shape.begin() + 2);
      if (shape.size() != 3) c.fail(ErrorCode::invalid_argument, "output_shape must have 3 entries");
    }
    Tensor y = conv_transpose3d_by_depth(c, x, w, out_pad, shape.empty() ? nullptr : &shape);
    if (c.has_input(2)) y = y + channel_bias(c.input(2), y.rank());
    return {y};
  }
  std::vector<int64_t> k(w.shape().begin() + std::min<int64_t>(2, w.rank()), w.shape().end());
  Window win = window(c, spatial, k);
  if (spatial == 1) out_pad = {0, out_pad[0]};
  if (c.has_attr("output_shape")) {
    // Pads chosen so the output has output_shape (ONNX ConvTranspose's formula).
    std::vector<int64_t> shape = c.attr_ints("output_shape");
    if (static_cast<int64_t>(shape.size()) == x.rank()) shape.erase(shape.begin(), shape.begin() + 2);
    if (static_cast<int64_t>(shape.size()) != spatial) {
      c.fail(ErrorCode::invalid_argument, "output_shape must have {} entries", spatial);
    }
    if (spatial == 1) shape.insert(shape.begin(), 1);
    bool upper = win.padding == Padding::same;
    std::vector<int64_t> in_sizes = spatial == 1
        ? std::vector<int64_t>{1, c.static_dim(0, 2)}
        : std::vector<int64_t>{c.static_dim(0, 2), c.static_dim(0, 3)};
    for (size_t i = 0; i < 2; ++i) {
      int64_t in = in_sizes[i];
      int64_t total = win.strides[i] * (in - 1) + out_pad[i] +
                      (win.kernel[i] - 1) * win.dilations[i] + 1 - shape[i];
      if (total < 0) {
        out_pad[i] -= total;
        total = 0;
      }
      int64_t first = upper ? total / 2 : total - total / 2;
      win.pads[2 * i] = first;
      win.pads[2 * i + 1] = total - first;
    }
    win.padding = Padding::explicit_padding;
  }
  ConvTranspose2dDesc d{
      .conv = {.strides = win.strides, .dilations = win.dilations, .padding = win.padding,
               .explicit_padding = win.pads, .groups = c.attr_int("group", 1),
               .data_layout = Layout::nchw, .weights_layout = Layout::oihw},
      .output_padding = out_pad};
  Tensor y = from_2d(conv_transpose2d(to_2d(x, win), to_2d(w, win), d), win);
  if (c.has_input(2)) y = y + channel_bias(c.input(2), y.rank());
  return {y};
}

std::vector<Tensor> convert_max_pool(NodeContext& c) {
  Tensor x = c.input(0);
  c.require_attr("kernel_shape");
  if (x.rank() == 5) {
    if (c.output_used(1)) c.fail(ErrorCode::unsupported, "the Indices output of 3-d pooling is not supported");
    return {pool3d(c, x, true, false)};
  }
  Window win = window(c, x.rank() - 2, {});
  Tensor y = from_2d(max_pool2d(to_2d(x, win), pool_desc(c, win)), win);
  if (!c.output_used(1)) return {y};
  return {y, from_2d(max_pool_indices(c, to_2d(x, win), win), win)};
}

std::vector<Tensor> convert_average_pool(NodeContext& c) {
  Tensor x = c.input(0);
  c.require_attr("kernel_shape");
  if (x.rank() == 5) return {pool3d(c, x, false, c.attr_int("count_include_pad", 0) != 0)};
  Window win = window(c, x.rank() - 2, {});
  return {from_2d(avg_pool2d(to_2d(x, win), pool_desc(c, win)), win)};
}

std::vector<Tensor> convert_lp_pool(NodeContext& c) {
  Tensor x = c.input(0);
  c.require_attr("kernel_shape");
  double p = static_cast<double>(c.attr_int("p", 2));
  // (sum over the window of |x|^p)^(1/p) = (mean * window size)^(1/p), padding counting as 0.
  Tensor xp = pow(abs(x), scalar_like(x, p));
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  double size = 1;
  for (int64_t v : k) size *= static_cast<double>(v);
  Tensor s;
  if (x.rank() == 5) {
    s = pool3d(c, xp, false, true) * size;
  } else {
    Window win = window(c, x.rank() - 2, {});
    Pool2dDesc d = pool_desc(c, win);
    d.count_include_pad = true;
    s = from_2d(avg_pool2d(to_2d(xp, win), d), win) * size;
  }
  return {pow(s, scalar_like(s, 1.0 / p))};
}

std::vector<Tensor> convert_global_average_pool(NodeContext& c) {
  Tensor x = c.input(0);
  return {reduce_mean(x, {.axes = spatial_axes(x.rank()), .keep_dims = true})};
}

std::vector<Tensor> convert_global_max_pool(NodeContext& c) {
  Tensor x = c.input(0);
  return {reduce_max(x, {.axes = spatial_axes(x.rank()), .keep_dims = true})};
}

std::vector<Tensor> convert_global_lp_pool(NodeContext& c) {
  Tensor x = c.input(0);
  double p = static_cast<double>(c.attr_int("p", 2));
  Tensor s = reduce_sum(pow(abs(x), scalar_like(x, p)),
                        {.axes = spatial_axes(x.rank()), .keep_dims = true});
  return {pow(s, scalar_like(s, 1.0 / p))};
}

}  // namespace tg::onnx

namespace tg::onnx {

// CausalConvWithState (opset 27), as its function body: a depthwise 1-d convolution of
// [past_state (or zeros), input] with weight [C, 1, K] (+ bias), an optional SiLU, and the last
// K - 1 steps of the padded input as present_state.
std::vector<Tensor> convert_causal_conv_with_state(NodeContext& c) {
  Tensor x = c.input(0), w = c.input(1);
  if (x.rank() != 3 || w.rank() != 3) {
    c.fail(ErrorCode::shape_mismatch, "input and weight must be 3-d, got {} and {}",
           str(x.shape()), str(w.shape()));
  }
  int64_t k = c.static_dim(1, 2), ch = c.static_dim(0, 1);
  Tensor past = c.has_input(3) ? c.input(3)
                               : fill(c.graph(), {c.static_dim(0, 0), ch, k - 1}, 0.0, x.dtype());
  Tensor padded = k > 1 || c.has_input(3) ? concat({past, x}, 2) : x;
  Conv2dDesc d{.groups = ch, .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
  Tensor y = squeeze(conv2d(expand_dims(padded, 2), expand_dims(w, 2), d), {2});
  if (c.has_input(2)) y = y + reshape(c.input(2), {1, -1, 1});
  std::string act = c.attr_string("activation", "none");
  if (act == "silu" || act == "swish") {
    Tensor yf = cast_to(y, DType::f32);
    y = cast_to(yf * sigmoid(yf), y.dtype());
  } else if (act != "none") {
    c.fail(ErrorCode::invalid_argument, "unknown activation '{}'", act);
  }
  int64_t len = padded.shape()[2];
  Tensor present = slice(padded, {.begin = {len - (k - 1)}, .end = {len}, .axes = {2}});
  return {y, present};
}

}  // namespace tg::onnx
