// Sliding-window geometry shared by conv2d and pooling: padding resolution (explicit, valid,
// same, same_lower) and output sizes, for type inference, CPU kernels and gradient rules alike.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/dim_expr.h"
#include "tg/ops.h"

namespace tg::ops {

/// One spatial dim of a window op, resolved.
struct WindowDim {
  int64_t pad_before = 0;
  int64_t pad_after = 0;
  int64_t out = 0;  ///< output size; -1 when `in` is dynamic (-1), derived when it is a symbol
};

/// Floor division for possibly negative numerators (denominator > 0).
inline int64_t floor_div_pos(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Resolves one dim: input size `in` (-1 = dynamic), window `k`, `stride`, `dilation`, the padding
/// style and, for explicit padding, `before`/`after`. same/same_lower need a static `in` to split
/// the padding; with a dynamic `in` the pads stay 0 and out is -1 (re-resolved at compile time).
/// ceil_mode (pooling) rounds the output size up, dropping a last window that would start in the
/// bottom/right padding (PyTorch/ONNX). out may be <= 0 when the window does not fit: callers
/// raise their op's error.
inline WindowDim resolve_window_dim(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                                    Padding padding, int64_t before, int64_t after,
                                    bool ceil_mode = false) {
  WindowDim d;
  const int64_t extent = dilation * (k - 1) + 1;
  if (padding == Padding::explicit_padding) {
    d.pad_before = before;
    d.pad_after = after;
  }
  if (in < 0) {  // -1, or a symbol: the derived symbol of the output size (core/dim_expr.h)
    if (padding == Padding::same || padding == Padding::same_lower) {
      d.out = core::affine_dim(in, 1, stride - 1, stride);  // ceil(in / stride)
    } else if (!ceil_mode) {  // floor(span / stride) + 1 while the window fits (span >= 0)
      d.out = core::affine_dim(in, 1, d.pad_before + d.pad_after - extent + stride, stride,
                               std::max<int64_t>(0, extent - d.pad_before - d.pad_after));
    } else {
      d.out = -1;
    }
    return d;
  }
  if (padding == Padding::same || padding == Padding::same_lower) {
    const int64_t out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((out - 1) * stride + extent - in, 0);
    const int64_t small = total / 2, large = total - small;
    d.pad_before = padding == Padding::same ? small : large;
    d.pad_after = padding == Padding::same ? large : small;
    d.out = out;
    return d;
  }
  const int64_t span = in + d.pad_before + d.pad_after - extent;
  if (span < 0) {
    d.out = 0;
    return d;
  }
  if (!ceil_mode) {
    d.out = span / stride + 1;
  } else {
    d.out = (span + stride - 1) / stride + 1;
    if ((d.out - 1) * stride >= in + d.pad_before) --d.out;
  }
  return d;
}

}  // namespace tg::ops
