// Generated tiled stencil kernels of the CUDA backend (NVRTC; device code in device/stencil.cuh),
// used by the stencil op (stencil.cpp) and by max pooling over the (H, W) plane (pool.cpp).
//
// A TiledStencil describes y[b, o...] = fold over the window taps n (row-major) of
// x[b, clamp(o * stride + t * dilation - before)] * w[n] for a window of rank 1..4 over the last
// dims of x, with the stencil op's semantics (backends/cpu/stencil.cpp): reductions sum, product,
// min, max, argmin, argmax (int32 tap index); boundary modes zero, constant, reflect, symmetric,
// clamp_to_edge, periodic; numeric dtypes; unit weights (no weights operand: every tap weighs
// exactly 1, folded into the code) or weights read at run time. One kernel is generated and
// compiled per (dtype, reduction, boundary mode, weights kind, window shape, strides, dilations,
// tile shape) and cached; sizes are launch arguments, so one kernel serves every size. The kernel
// allocates nothing and never waits on the host (CUDA graph capture safe).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/kernel.h"
#include "ir/attrs.h"
#include "tg/tensor_data.h"

namespace tg::cuda {

/// What the generated kernel is specialized on (window padded to 4 dims, index 0 outermost).
struct TiledStencilSpec {
  DType dtype = DType::f32;
  int reduction = 0;  ///< tg::StencilReduction numbering: sum, product, min, max, argmin, argmax
  int mode = 0;       ///< tg::BoundaryMode numbering: zero, constant, reflect, symmetric, clamp, periodic
  bool unit_weights = false;
  std::array<int, 4> win{1, 1, 1, 1}, stride{1, 1, 1, 1}, dilation{1, 1, 1, 1};
  int bx = 32, by = 8, ry = 1, rz = 1;  ///< threads (x, y) and outputs per thread along y and z
  int min_blocks = 3;  ///< resident blocks per SM the kernel is compiled for (__launch_bounds__)
  /// Planes in flight: 1 loads the next plane through registers while one is folded; 2..4 a
  /// cp.async ring of that many shared-memory planes (plain loads of 4- or 8-byte types only:
  /// no prologue). `vector`: ring copies of 16 bytes (rows widened to aligned copies; the source
  /// pointer 16-byte aligned and its rows a whole number of copies, else run_tiled_stencil uses
  /// single elements).
  int stages = 1;
  bool vector = false;
  /// Run-time zero-tap skipping (a sum of a floating type with weights read at run time, at most
  /// 64 taps): taps whose weight is +-0 are left out, exactly as with constant weights
  /// (device/stencil.cuh), decided per launch from the weights the kernel reads. Off unless
  /// TG_STENCIL_TILE asks for it (measured slower on the H200: stencil_codegen.cpp).
  bool zero_skip = false;
  /// Marching along z (windows with win[1] > 1, win[0] == 1, unit z stride and dilation, on the
  /// cp.async ring): a tile is TX x TY outputs of the (y, x) plane for a run of z outputs
  /// (`zchunk`, or chosen per launch when 0: tiled_stencil_launch); its input planes stream
  /// through the ring once each, and every plane is folded into the WZ outputs that read it, so a
  /// source element is read once a tile instead of (RZ + WZ - 1) / RZ times. rz is 1.
  bool march = false;
  int zchunk = 0;
  /// Column march (device/stencil_column.cuh): 3x3x3 sums of f32 (d0 window 1), unit strides and
  /// dilations, padding 1 on each side (one output a source element), rows of a multiple of 4,
  /// plain loads. A block of col_bx x col_by threads marches a tile of (4 col_bx) x (col_by col_ry)
  /// outputs (4 x col_ry a thread) along a run of z outputs (zchunk, or chosen per launch), 16-byte
  /// copies through a ring of col_inflight + 4 planes (+ 3 with col_flags 16), col_min_blocks blocks
  /// an SM. The other tile fields stay the plan without it (run_tiled_stencil takes it when the
  /// source or result is not 16-byte aligned).
  bool column = false;
  int col_bx = 32, col_by = 4, col_ry = 4, col_inflight = 1, col_min_blocks = 4;
  /// The column march's memory options (bits; device/stencil_column.cuh, tg_dev::ScStream...):
  /// 1 the outputs stored streaming (st.global.cs: evict-first in L2, the result is not read
  /// again), 2 the 16-byte copies with an L2 prefetch of 256 bytes, 4 the copies of the tile's inner
  /// rows (no neighbour's halo reads them) with an L2 evict-first policy, 8 the fold's x neighbours
  /// through warp shuffles instead of shared-memory reads, 16 each thread's checks of a plane
  /// (inf/NaN, for the taps left out) before the barrier that publishes it, so outputs are
  /// refolded and stored at once and the ring holds col_inflight + 3 planes instead of + 4 (room for
  /// taller tiles). Speed only: results are the same. Default: the early checks (128 x 16 tiles fit).
  int col_flags = 16;
  /// Constant weights (row-major over the window, floating dtypes, finite), folded into the code;
  /// with the sum reduction taps of weight 0 are skipped (device/stencil.cuh). Empty: weights
  /// read at run time (or unit_weights).
  std::vector<double> weights;
  /// Fusion (fused_stencil.cpp): device code defining what the kernel reads and writes. `load`
  /// is the body of `T load(const X* x, const tg_dev::StPtrs& P, i64 i)` giving source element i,
  /// `store` of `void store(O* y, const tg_dev::StPtrs& P, i64 o, Y v)` writing result o; the
  /// functions they call come in `prelude`; x_dtype and out_dtype are X and O. Empty load/store:
  /// x[i] and y[o] = v (X = T, O = Y). `fusion_key` stands for all of these in kernel caches.
  std::string prelude, load, store, fusion_key;
  DType x_dtype = DType::f32, out_dtype = DType::f32;
};

/// Sizes of one call (window dims padded to 4 like the spec).
struct TiledStencilSizes {
  int64_t batch = 1;
  std::array<int64_t, 4> in{1, 1, 1, 1}, out{1, 1, 1, 1}, before{0, 0, 0, 0};
  uint64_t boundary_bits = 0;  ///< the boundary value in the compute type (f32 for f16/bf16)
};

/// Chooses the tile shape for a window of rank `k` (1..4) and fills spec.bx/by/ry/rz/min_blocks
/// (TG_STENCIL_TILE overrides them for tuning: core/env.h); false when
/// the tiled kernel does not fit (window over 343 taps, tile over 40 KB of shared memory, a
/// window extent, stride or dilation over 4096): the caller then runs its generic kernel.
bool plan_tiled_stencil(TiledStencilSpec& spec, int k, const TiledStencilSizes& sizes);

/// The CUDA source of the kernel `tg_stencil` for `spec` (for tests and tools/kernel_emu).
std::string tiled_stencil_source(const TiledStencilSpec& spec);

/// Launch geometry of a call: the tiles, and as many blocks as run at once (`resident_blocks`,
/// from the occupancy of the compiled kernel), at most one a tile.
struct TiledStencilLaunch {
  int64_t tiles[3] = {1, 1, 1};
  int64_t zc = 1;  ///< z outputs a tile (spec.rz, or the march's run of z outputs)
  int64_t total_tiles = 0;
  unsigned blocks = 1, threads = 256;
};
TiledStencilLaunch tiled_stencil_launch(const TiledStencilSpec& spec, const TiledStencilSizes& sizes,
                                        int resident_blocks);

/// Runs the kernel on ctx's device and stream: x and y device pointers of spec.dtype (y int32
/// for argmin/argmax; X and O with fusion), w the weights (ignored with unit_weights or constant
/// weights), `extra` the fusion's other input pointers (at most 16, tg_dev::StPtrs). Raises
/// tg::Error(internal) naming ctx's op when compiling or launching fails.
void run_tiled_stencil(const backends::KernelContext& ctx, const TiledStencilSpec& spec,
                       const TiledStencilSizes& sizes, const void* x, const void* w, void* y,
                       const std::vector<const void*>& extra = {});

/// The stencil op's geometry for source shape xs, window ws and result ys under `desc` (the CPU's
/// Plan and its errors, raised naming `op`), as the tiled kernel's sizes and spec (reduction, mode,
/// window, strides, dilations, boundary value of `dtype`, tile shape). False when the tiled
/// kernel does not fit (see plan_tiled_stencil); `empty` is set when there is nothing to compute.
bool plan_stencil_op(const StencilDesc& desc, const Shape& xs, const Shape& ws, const Shape& ys, DType dtype,
                     const char* op, TiledStencilSpec& spec, TiledStencilSizes& sizes, bool& empty);

/// A fused_stencil node's kernel (fused_stencil.cpp): plan_stencil_op for its stencil on the
/// prologue's dtype, plus the prologue/epilogue device code and constant weights in `spec`, for
/// node inputs of types `inputs` and result `output`.
bool plan_fused_stencil(const ir::FusedStencilAttrs& a, std::span<const TensorType> inputs, const TensorType& output,
                        const char* op, TiledStencilSpec& spec, TiledStencilSizes& sizes, bool& empty);

}  // namespace tg::cuda
