// Geometry of conv2d and its backward ops, shared by type inference (src/ops/conv.cpp), the CPU
// kernels (src/backends/cpu/conv*.cpp) and the gradient rules: logical dims of the data and
// weights tensors in each layout, their element strides, and the resolved padding and output size.
#pragma once
#include <array>
#include <cstdint>

#include "ops/window.h"
#include "tg/ops.h"

namespace tg::ops {

/// Data tensor dims in logical order, whatever the layout.
struct DataDims {
  int64_t n = 0, c = 0, h = 0, w = 0;
};

/// Weights dims in logical order: o = C_out, i = C_in / groups, a kh x kw kernel.
struct WeightDims {
  int64_t o = 0, i = 0, kh = 0, kw = 0;
};

inline bool is_data_layout(Layout l) { return l == Layout::nhwc || l == Layout::nchw; }
inline bool is_weights_layout(Layout l) { return l == Layout::hwio || l == Layout::oihw || l == Layout::ohwi; }

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::nhwc:
      return "nhwc";
    case Layout::nchw:
      return "nchw";
    case Layout::hwio:
      return "hwio";
    case Layout::oihw:
      return "oihw";
    case Layout::ohwi:
      return "ohwi";
  }
  return "?";
}

/// Axis of the channel / first spatial dim of a data tensor in layout l.
inline int64_t channel_axis(Layout l) { return l == Layout::nchw ? 1 : 3; }
inline int64_t height_axis(Layout l) { return l == Layout::nchw ? 2 : 1; }

/// s must have rank 4.
inline DataDims data_dims(const Shape& s, Layout l) {
  if (l == Layout::nchw) return {s[0], s[1], s[2], s[3]};
  return {s[0], s[3], s[1], s[2]};
}
inline Shape data_shape(const DataDims& d, Layout l) {
  if (l == Layout::nchw) return {d.n, d.c, d.h, d.w};
  return {d.n, d.h, d.w, d.c};
}
/// s must have rank 4.
inline WeightDims weight_dims(const Shape& s, Layout l) {
  if (l == Layout::oihw) return {s[0], s[1], s[2], s[3]};
  if (l == Layout::ohwi) return {s[0], s[3], s[1], s[2]};
  return {s[3], s[2], s[0], s[1]};
}
inline Shape weight_shape(const WeightDims& d, Layout l) {
  if (l == Layout::oihw) return {d.o, d.i, d.kh, d.kw};
  if (l == Layout::ohwi) return {d.o, d.kh, d.kw, d.i};
  return {d.kh, d.kw, d.i, d.o};
}

/// Element strides of a contiguous data tensor, in logical (n, c, h, w) order.
inline std::array<int64_t, 4> data_strides(const DataDims& d, Layout l) {
  if (l == Layout::nchw) return {d.c * d.h * d.w, d.h * d.w, d.w, 1};
  return {d.h * d.w * d.c, 1, d.w * d.c, d.c};
}
/// Element strides of a contiguous weights tensor, in logical (o, i, kh, kw) order.
inline std::array<int64_t, 4> weight_strides(const WeightDims& d, Layout l) {
  if (l == Layout::oihw) return {d.i * d.kh * d.kw, d.kh * d.kw, d.kw, 1};
  if (l == Layout::ohwi) return {d.kh * d.kw * d.i, 1, d.kw * d.i, d.i};
  return {1, d.o, d.kw * d.i * d.o, d.i * d.o};
}

/// A convolution resolved for given shapes: the forward input x, the weights w, the forward
/// output y, and the padding actually applied (same/same_lower resolved).
struct ConvGeometry {
  DataDims x, y;
  WeightDims w;
  int64_t groups = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

/// Resolves conv2d's geometry for x's and w's shapes (rank 4, in desc's layouts; desc already
/// validated). y.h / y.w are -1 when x's are dynamic and may be <= 0 when the window does not
/// fit; y.n is x.n, y.c is w.o.
inline ConvGeometry conv_geometry(const Shape& x, const Shape& w, const Conv2dDesc& d) {
  ConvGeometry g;
  g.x = data_dims(x, d.data_layout);
  g.w = weight_dims(w, d.weights_layout);
  g.groups = d.groups;
  g.stride_h = d.strides[0];
  g.stride_w = d.strides[1];
  g.dilation_h = d.dilations[0];
  g.dilation_w = d.dilations[1];
  const auto& p = d.explicit_padding;
  WindowDim h = resolve_window_dim(g.x.h, g.w.kh, g.stride_h, g.dilation_h, d.padding, p[0], p[1]);
  WindowDim v = resolve_window_dim(g.x.w, g.w.kw, g.stride_w, g.dilation_w, d.padding, p[2], p[3]);
  g.pad_top = h.pad_before;
  g.pad_bottom = h.pad_after;
  g.pad_left = v.pad_before;
  g.pad_right = v.pad_after;
  g.y = {g.x.n, g.w.o, h.out, v.out};
  return g;
}

}  // namespace tg::ops
