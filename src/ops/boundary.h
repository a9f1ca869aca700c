// Index mapping for reads outside a dim, shared by pad and stencil in every layer (the CPU
// kernels and the vector-Jacobian rules), so that forward and backward agree by construction.
#pragma once
#include <algorithm>
#include <cstdint>

#include "tg/ops.h"

namespace tg::ops {

/// a mod n with the sign of n (n > 0).
inline int64_t floor_mod(int64_t a, int64_t n) {
  int64_t r = a % n;
  return r < 0 ? r + n : r;
}

/// The source index that padded position p (relative to the dim's start, any distance outside
/// [0, n)) reads from a dim of size n >= 1, or -1 for the boundary constant (zero / constant).
/// Mirroring and wrapping repeat as numpy.pad does: reflect has period 2(n-1) (a dim of size 1
/// repeats its element), symmetric 2n, periodic n.
inline int64_t boundary_index(int64_t p, int64_t n, BoundaryMode mode) {
  if (p >= 0 && p < n) return p;
  switch (mode) {
    case BoundaryMode::zero:
    case BoundaryMode::constant:
      return -1;
    case BoundaryMode::clamp_to_edge:
      return p < 0 ? 0 : n - 1;
    case BoundaryMode::periodic:
      return floor_mod(p, n);
    case BoundaryMode::symmetric: {
      int64_t q = floor_mod(p, 2 * n);
      return q < n ? q : 2 * n - 1 - q;
    }
    case BoundaryMode::reflect: {
      if (n == 1) return 0;
      int64_t q = floor_mod(p, 2 * n - 2);
      return q < n ? q : 2 * n - 2 - q;
    }
  }
  return -1;
}

/// The BoundaryMode that reads like a PadMode (edge is clamp_to_edge).
inline BoundaryMode boundary_of(PadMode mode) {
  switch (mode) {
    case PadMode::constant: return BoundaryMode::constant;
    case PadMode::reflect: return BoundaryMode::reflect;
    case PadMode::symmetric: return BoundaryMode::symmetric;
    case PadMode::edge: return BoundaryMode::clamp_to_edge;
    case PadMode::periodic: return BoundaryMode::periodic;
  }
  return BoundaryMode::constant;
}

/// Padding before window dim i of a stencil whose source dim is `in`, output dim `out` and window
/// `win` (strides/dilations already filled in): explicit, none (valid), or half the total with
/// the extra element after (same, as TensorFlow SAME).
inline int64_t stencil_pad_before(const StencilDesc& d, size_t i, int64_t in, int64_t out, int64_t win) {
  switch (d.padding_style) {
    case PaddingStyle::explicit_padding:
      return d.explicit_padding.at(2 * i);
    case PaddingStyle::valid:
      return 0;
    case PaddingStyle::same: {
      int64_t extent = (win - 1) * d.dilations.at(i) + 1;
      return std::max<int64_t>((out - 1) * d.strides.at(i) + extent - in, 0) / 2;
    }
  }
  return 0;
}

}  // namespace tg::ops
