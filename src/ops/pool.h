// Geometry of the pool op family (max_pool2d, avg_pool2d and their backward ops): attribute
// validation and the resolved window per spatial dim, shared by type inference, the CPU kernels
// and the gradient rules.
#pragma once
#include <cstdint>
#include <string_view>

#include "ops/window.h"
#include "tg/ops.h"

namespace tg::ops {

/// One spatial dim of a pooling window, resolved against the input size.
struct PoolDim {
  int64_t in = 0;  ///< input size (-1 = dynamic)
  int64_t k = 1;   ///< window taps
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_before = 0;  ///< as resolved (explicit, same, same_lower); 0 for valid
  int64_t pad_after = 0;
  int64_t out = 0;  ///< output size (-1 when `in` is dynamic)

  /// Input coordinate of tap t of output o (may lie in the padding: < 0 or >= in).
  int64_t coord(int64_t o, int64_t t) const { return o * stride - pad_before + t * dilation; }
  /// Taps of output o inside [lo, hi): the half-open tap range [*first, *last).
  void taps_within(int64_t o, int64_t lo, int64_t hi, int64_t* first, int64_t* last) const;
  /// Taps of output o inside the input (what max and avg without count_include_pad read).
  void input_taps(int64_t o, int64_t* first, int64_t* last) const {
    taps_within(o, 0, in, first, last);
  }
  /// Taps of output o inside the padded input [-pad_before, in + pad_after): the window clipped
  /// to the padded input (the divisor of avg with count_include_pad; a ceil_mode window may
  /// reach past it).
  int64_t padded_tap_count(int64_t o) const;
};

/// A pooling op's geometry: the input dims in logical order and the two window dims.
struct PoolGeometry {
  bool nhwc = true;
  int64_t n = 0, c = 0;  ///< batch and channels (-1 = dynamic)
  PoolDim h, w;
  /// The output shape in the data layout.
  Shape output_shape() const;
  /// Shape [N, C, H, W] / [N, H, W, C] of x for these dims (used in messages).
  Shape input_shape() const;
};

/// Validates `desc` for input shape `x` (rank 4, nhwc/nchw, kernel/strides/dilations of two
/// entries in [1, 2^31), explicit pads >= 0 and smaller than the dilated window, a window that
/// fits the padded input) and resolves it. `x` may have -1 dims: the output dims that depend on
/// them are -1 and the checks that need them are skipped. Raises tg::Error "[op] ... (input
/// [..])": shape_mismatch for the rank, invalid_argument for the rest.
PoolGeometry pool_geometry(const Pool2dDesc& desc, const Shape& x, std::string_view op);

}  // namespace tg::ops
