// The body of every generated stencil kernel (backends/cuda/stencil_codegen.cpp writes a
// `struct tg_st_cfg` and a __global__ tg_stencil calling stencil_kernel<tg_st_cfg>): the column
// march (device/stencil_column.cuh) when G::COLUMN, else the tiles of device/stencil.cuh. Only the
// chosen one is instantiated, so the kernel holds only its shared memory.
#pragma once
#include "stencil.cuh"
#include "stencil_column.cuh"

namespace tg_dev {

template <class G>
TG_DEVICE_INLINE void stencil_kernel(const typename G::X* __restrict__ x, const typename G::T* __restrict__ w,
                                     typename G::O* __restrict__ y, const StPtrs& P, const StencilArgs& a) {
  if constexpr (G::COLUMN) {
    stencil_column<G>(x, w, y, P, a);
  } else {
    stencil_tiles<G>(x, w, y, P, a);
  }
}

}  // namespace tg_dev
