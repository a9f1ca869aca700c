// Host-side geometry shared by the CPU and CUDA stencil kernels (backends/<backend>/stencil.cpp).
#pragma once
#include <cstdint>

#include "core/error_util.h"
#include "tg/shape.h"

namespace tg::backends {

/// Fills the batch/window geometry of a stencil plan `p` (either backend's plan struct: members
/// k, batch, in_block, out_block, window and per-window-dim arrays src_stride, out, win) for
/// source x [lead..., in...], weights w [win...] and result y [lead..., out...]: k = rank of w,
/// batch = product of the lead dims, src_stride = element strides of the window dims in a
/// source block, in_block/out_block/window = elements of one source block / output block /
/// window. Raises tg::Error(internal) when k is not in [1, max_rank] or the ranks disagree.
template <class Plan>
void stencil_geometry(Plan& p, const Shape& xs, const Shape& ws, const Shape& ys, int max_rank) {
  p.k = static_cast<int>(ws.size());
  TG_CHECK_INTERNAL(p.k >= 1 && p.k <= max_rank && xs.size() >= ws.size() && ys.size() == xs.size(),
                    "stencil kernel: bad ranks");
  const size_t lead = xs.size() - ws.size();
  for (size_t i = 0; i < lead; ++i) p.batch *= xs[i];
  int64_t stride = 1;
  for (int i = p.k - 1; i >= 0; --i) {
    p.src_stride[i] = stride;
    stride *= xs[lead + static_cast<size_t>(i)];
  }
  p.in_block = stride;
  for (int i = 0; i < p.k; ++i) {
    p.out[i] = ys[lead + static_cast<size_t>(i)];
    p.win[i] = ws[static_cast<size_t>(i)];
    p.out_block *= p.out[i];
    p.window *= p.win[i];
  }
}

}  // namespace tg::backends
