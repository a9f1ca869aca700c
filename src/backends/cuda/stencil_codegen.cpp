// Generated tiled stencil kernels (see stencil_codegen.h; device code in device/stencil.cuh).
#include "backends/cuda/stencil_codegen.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/env.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

/// Host copy of tg_dev::StencilArgs (device/stencil_tile.cuh): same members, same order.
struct StencilArgs {
  long long batch;
  long long in[4], out[4], before[4];
  long long tiles[3];
  long long total_tiles;
  long long boundary;
  int small;
  unsigned div_m[4], div_s[4];
  long long zc;
};

/// Host copy of tg_dev::StPtrs.
struct StPtrs {
  const void* p[16];
};

/// Magic numbers (m, s) of a divisor 1 <= d < 2^31 for tg_dev::st_div: s = ceil(log2 d),
/// m = 2^32 (2^s - d) / d + 1 (as kernels/pool.cu's Divider).
void magic(int64_t d, unsigned& m, unsigned& s) {
  const uint64_t u = static_cast<uint64_t>(std::max<int64_t>(d, 1));
  unsigned sh = 0;
  while ((uint64_t{1} << sh) < u) ++sh;
  m = static_cast<unsigned>((uint64_t{1} << 32) * ((uint64_t{1} << sh) - u) / u + 1);
  s = sh;
}

constexpr int kMaxTaps = 343;             // 7 x 7 x 7
constexpr int kMaxUnrolledFolds = 1024;   // taps x outputs per thread
constexpr size_t kMaxTileBytes = 40 * 1024;
constexpr size_t kMaxRingBytes = 46 * 1024;  // under the 48 KB of static shared memory a block
/// Shared-memory planes of the cp.async ring by default: 3 (2 in flight while one is folded; a tall
/// tile's plane is 10 KB). H200, session 18d: the Laplacian 0.2258 ms with 3, 0.2465 with 2 (max
/// pool 0.2372, 0.2465), 4 stages at 5 blocks an SM 0.2451 (max pool).
constexpr int kRingStages = 3;

const char* compute_type(DType t) {
  return (t == DType::f16 || t == DType::bf16) ? "float" : device_type(t);
}

int64_t extent(int tiles, int stride, int win, int dilation) {
  return static_cast<int64_t>(tiles - 1) * stride + static_cast<int64_t>(win - 1) * dilation + 1;
}

/// Elements a ring copy moves (device/stencil_tile.cuh's CW).
int copy_elements(const TiledStencilSpec& s) {
  return s.stages >= 2 && s.vector ? static_cast<int>(16 / dtype_size(s.dtype)) : 1;
}

/// Shared memory of the kernel's plane buffers (device/stencil_tile.cuh's StGeo).
size_t tile_bytes(const TiledStencilSpec& s) {
  const int64_t ex = extent(s.bx, s.stride[3], s.win[3], s.dilation[3]);
  const int64_t ey = extent(s.by * s.ry, s.stride[2], s.win[2], s.dilation[2]);
  const int64_t cw = copy_elements(s);
  const int64_t pitch = cw == 1 ? ex : (ex + 2 * cw - 2) / cw * cw;
  return static_cast<size_t>(std::max(s.stages, 2)) * static_cast<size_t>(pitch * ey) * dtype_size(s.dtype);
}

/// Whether run-time zero-tap skipping applies: a sum of a floating type, weights read at run time,
/// at most 64 taps.
bool zero_skip_fits(const TiledStencilSpec& s) {
  const bool floating = s.dtype == DType::f32 || s.dtype == DType::f64 || s.dtype == DType::f16 ||
                        s.dtype == DType::bf16;
  return s.reduction == 0 && floating && !s.unit_weights && s.weights.empty() &&
         s.win[0] * s.win[1] * s.win[2] * s.win[3] <= 64;
}

/// Whether the cp.async ring can take the kernel: plain loads (no prologue) of 4- or 8-byte types.
bool ring_fits(const TiledStencilSpec& s) {
  return s.load.empty() && (dtype_size(s.dtype) == 4 || dtype_size(s.dtype) == 8);
}

/// Planes of the column march's ring: those in flight, plus 3 (the fold's) with the early checks
/// (col_flags 16), else 4 (the outputs stored one plane late).
int column_planes(const TiledStencilSpec& s) { return s.col_inflight + ((s.col_flags & 16) != 0 ? 3 : 4); }

/// Shared memory of the column march's ring (device/stencil_column.cuh).
size_t column_bytes(const TiledStencilSpec& s) {
  const size_t plane = static_cast<size_t>((s.col_by * s.col_ry + 2) * (4 * s.col_bx + 8)) * 4;
  return static_cast<size_t>(column_planes(s)) * plane;
}

/// Whether the column march takes the kernel (see TiledStencilSpec::column): its window, reduction,
/// dtype and sizes, and its tile (a halo copy a thread at most; 1..4 planes in flight).
bool column_fits(const TiledStencilSpec& s, int k, const TiledStencilSizes& z) {
  if (k < 3 || s.dtype != DType::f32 || s.reduction != 0 || !s.load.empty()) return false;
  if (s.win != std::array<int, 4>{1, 3, 3, 3} || s.stride != std::array<int, 4>{1, 1, 1, 1} ||
      s.dilation != std::array<int, 4>{1, 1, 1, 1}) {
    return false;
  }
  if (z.before[0] != 0 || z.out[0] != z.in[0]) return false;
  for (int i = 1; i < 4; ++i) {
    if (z.before[i] != 1 || z.out[i] != z.in[i] || z.in[i] < 1) return false;
  }
  const int64_t tx = 4 * s.col_bx, ty = s.col_by * s.col_ry;
  const int64_t tiles = z.batch * z.in[0] * ((z.in[3] + tx - 1) / tx) * ((z.in[2] + ty - 1) / ty) * z.in[1];
  const int threads = s.col_bx * s.col_by;
  return z.in[3] % 4 == 0 && z.in[2] * z.in[3] < (int64_t{1} << 31) && tiles < (int64_t{1} << 31) &&
         s.col_bx >= 1 && s.col_by >= 1 && s.col_ry >= 1 && s.col_ry <= 8 && threads <= 1024 &&
         threads >= 2 * (s.col_bx + 2) + 2 * ty &&
         s.col_inflight >= 1 && s.col_inflight <= 4 && column_bytes(s) <= kMaxRingBytes;
}

}  // namespace

bool plan_tiled_stencil(TiledStencilSpec& s, int k, const TiledStencilSizes& sizes) {
  int window = 1;
  for (int i = 0; i < 4; ++i) {
    if (s.win[i] < 1 || s.win[i] > 4096 || s.stride[i] < 1 || s.stride[i] > 4096 || s.dilation[i] < 1 ||
        s.dilation[i] > 4096) {
      return false;
    }
    window *= s.win[i];
    if (window > kMaxTaps) return false;
  }
  s.min_blocks = dtype_size(s.dtype) == 8 ? 2 : 3;
  // Taps the unrolled fold code has: a sum with constant weights skips its zero taps.
  if (!s.weights.empty() && s.reduction == 0) {
    window = std::max<int>(1, static_cast<int>(std::count_if(s.weights.begin(), s.weights.end(),
                                                             [](double w) { return w != 0; })));
  }
  if (k <= 1) {
    s.bx = 256, s.by = 1, s.ry = 1, s.rz = 1;
  } else {
    s.bx = 32, s.by = 8;
    // Register blocking where the outputs are many (small problems keep the kernel small: less
    // to compile).
    s.ry = sizes.out[2] >= 64 ? 4 : 1;
    s.rz = (k >= 3 && s.win[1] > 1 && sizes.out[1] >= 8) ? 4 : 1;
    while (s.rz > 1 && s.rz * s.ry * window > kMaxUnrolledFolds) s.rz /= 2;
    while (s.ry > 1 && s.rz * s.ry * window > kMaxUnrolledFolds) s.ry /= 2;
    if (s.rz > 1 && s.rz > sizes.out[1]) s.rz = static_cast<int>(std::max<int64_t>(sizes.out[1], 1));
    if (tile_bytes(s) > kMaxTileBytes) s.by = 4;
    if (tile_bytes(s) > kMaxTileBytes) s.ry = 1;
    if (tile_bytes(s) > kMaxTileBytes) s.by = 1;
    // Unit-stride 2-D windows over tall planes: 4 x 16 outputs a thread (tiles of 32 x 64) when
    // that fits. Measured on the H200 (bench_stencil_cuda, TG_STENCIL_TILE; session 17): the
    // 8192^2 Laplacian 0.377 ms with 8 x 4 (3 blocks an SM) -> 0.264 ms, the 3x3 max pool 0.405
    // -> 0.282 ms; the kernel was bound by issue (ncu: 70% SM throughput, 80 registers, 37.5%
    // occupancy), and taller per-thread columns reuse each shared-memory value for more outputs.
    // Strided windows were not measured and keep the plan above.
    if (k == 2 && sizes.out[2] >= 128 && s.stride[2] == 1 && s.stride[3] == 1) {
      TiledStencilSpec tall = s;
      tall.by = 4, tall.ry = 16;
      tall.min_blocks = dtype_size(s.dtype) == 8 ? 2 : 4;
      // Max pooling windows up to 3x3 (unit weights, no multiplies): 6 blocks an SM, 80 registers
      // without spills (ptxas). H200, session 18c (bench_stencil_cuda --tiles, same call): the
      // 8192^2 3x3 max pool 0.2823 ms with 4 blocks -> 0.2608 ms with 6; the Laplacian's kernel
      // spills at 80 registers and keeps 4.
      if (s.unit_weights && window <= 9 && dtype_size(s.dtype) <= 4) tall.min_blocks = 6;
      if (tall.ry * window <= kMaxUnrolledFolds && tile_bytes(tall) <= kMaxTileBytes) s = tall;
    }
    // Run-time zero-tap skipping stays off unless asked for (TG_STENCIL_TILE's skip field): H200,
    // session 18d (same call), the 8192^2 Laplacian 0.226 ms without it and 0.34 with it, the 512^3
    // 7-point stencil 1.10 and 1.49 (each tap a branch, no register reuse of shared values).
    s.zero_skip = false;
    // Plain loads of 4- and 8-byte types: the cp.async ring, 16-byte copies (see kRingStages).
    // H200, session 18d (bench_stencil_cuda): the 8192^2 Laplacian 0.2258 ms (0.2648 on registers in
    // session 18c's call), the 3x3 max pool 0.2373 (0.2612 on registers, same call). Tiles of
    // several z outputs keep the register path: the 512^3 7-point stencil took 1.19 ms on the ring
    // (4 stages), 1.06 on registers, before border tiles were copied asynchronously (not measured
    // since).
    if (ring_fits(s) && s.rz == 1) {
      TiledStencilSpec ring = s;
      ring.stages = kRingStages;
      ring.vector = sizes.in[3] % static_cast<int64_t>(16 / dtype_size(s.dtype)) == 0;
      // Tall 2-D tiles of small windows: the ring holds no loads in registers, so every such
      // kernel fits 80 registers (ptxas: the Laplacian's, no spills) and runs 6 blocks an SM.
      if (s.ry == 16 && s.rz == 1 && window <= 9 && dtype_size(s.dtype) == 4) ring.min_blocks = 6;
      // ... in tiles of 64 x 32 (64 x 2 threads): H200, session 18e (bench_stencil_cuda --tiles,
      // same call), the 8192^2 Laplacian 0.1950 ms against 0.2045 with 32 x 64 tiles (128 x 16:
      // 0.1999), the 3x3 max pool 0.2070 against 0.2106 (0.2078).
      if (s.ry == 16 && s.by == 4 && s.bx == 32 && dtype_size(s.dtype) == 4) ring.bx = 64, ring.by = 2;
      while (ring.stages > 2 && tile_bytes(ring) > kMaxRingBytes) --ring.stages;
      if (tile_bytes(ring) <= kMaxRingBytes) s = ring;
    }
    // Windows along z (3-D and 4-D with d0 window 1, unit z stride and dilation) march along z on
    // the ring (device/stencil.cuh, G::MARCH): a tile is a run of z outputs, its input planes read
    // once each. Before (tiles of 4 z outputs, 6 input planes each, on registers), the 512^3
    // 7-point stencil took 1.03 ms on the H200 (session 18d); marching in 32 x 32 tiles, 0.8715
    // (run-time weights) and 0.7769 (constant), session 18e; 64 x 32 below.
    const TiledStencilSpec plain = s;
    TiledStencilSpec march = s;
    bool can_march = false;
    if (k >= 3 && s.win[1] > 1 && s.win[1] <= 16 && s.win[0] == 1 && s.stride[1] == 1 && s.dilation[1] == 1 &&
        ring_fits(s)) {
      march.march = true;
      // 4-byte types: tiles of 64 x 32 outputs, 8 a thread along y (64 x 4 threads). H200, session
      // 18e (bench_stencil_cuda --tiles, same call): the 512^3 7-point stencil with constant
      // weights 0.6217 ms against 0.7769 with 32 x 32 tiles of 4 a thread (128 x 16 tiles of 8:
      // 0.6375; 128 x 8 of 4: 0.8134); run-time weights measured only with 32 x 32 (0.8715).
      // 8-byte types and min/max/argmin/argmax keep 32 x 32 (not measured; ptxas: the 3x3x3 max
      // spills 24 bytes in 64 x 32 tiles at 80 registers, none in 32 x 32).
      march.bx = 32, march.by = 8, march.ry = 4, march.rz = 1;
      if (dtype_size(s.dtype) == 4 && s.reduction <= 1) march.bx = 64, march.by = 4, march.ry = 8;
      while (march.ry > 1 && march.ry * window > kMaxUnrolledFolds) march.ry /= 2;
      march.stages = 4;
      march.vector = sizes.in[3] % static_cast<int64_t>(16 / dtype_size(s.dtype)) == 0;
      // 3 blocks an SM (80 registers) or 2 (8-byte types; argmin/argmax, whose kernels spill at 80).
      // ptxas, session 21: no spills for sums of f32 with run-time weights; 168 bytes for the 7-point
      // stencil with constant weights (its zero-tap checks), which still ran faster at 3 (H200, same
      // call: 0.4734 ms against 0.5263 at 2, no spills).
      march.min_blocks = dtype_size(s.dtype) == 8 || s.reduction >= 4 ? 2 : 3;
      // Run-time zero-tap skipping stays off here too: H200, session 21 (bench_stencil_cuda --tiles,
      // same call, the march's copies and stores as now), the 512^3 7-point stencil with run-time
      // weights 0.5429 ms without skipping at 3 blocks an SM, 0.5982 at 2; with skipping 0.7242 at 3
      // (ptxas: 330 bytes of spills) and 0.7659 at 2 (128 registers; ncu: 343M instructions at 2.08
      // IPC and 23% occupancy against 27 taps' multiplies and adds).
      while (march.stages > 2 && tile_bytes(march) > kMaxRingBytes) --march.stages;
      if (tile_bytes(march) > kMaxRingBytes) march.by = 4;
      can_march = tile_bytes(march) <= kMaxRingBytes;
      if (can_march && sizes.out[1] >= 8) s = march;
    }
    // Tuning (TG_STENCIL_TILE="by,ry,rz,min_blocks,stages,vector,skip,march,bx,col"; 0 keeps the choice
    // above, and so does an override the limits refuse; with marching rz is the run of z outputs a
    // tile; bx in units of 32 threads).
    const std::array<int, 10> o = env::stencil_tile_override();
    if (o[7] == 1 && s.march) s = plain;
    if (o[7] == 2 && can_march) s = march;
    const TiledStencilSpec chosen = s;
    if (o[8] > 0) s.bx = 32 * o[8];
    if (o[0] > 0) s.by = o[0];
    if (o[1] > 0 && s.ry > 1) s.ry = o[1];
    if (o[2] > 0 && s.rz > 1) s.rz = std::min<int64_t>(o[2], sizes.out[1]);
    if (o[2] > 0 && s.march) s.zchunk = o[2];
    if (o[3] > 0) s.min_blocks = o[3];
    if (o[4] > 0 && o[4] <= 4 && (o[4] == 1 || ring_fits(s)) && !(s.march && o[4] == 1)) s.stages = o[4];
    if (o[5] > 0) s.vector = o[5] == 2 && sizes.in[3] % static_cast<int64_t>(16 / dtype_size(s.dtype)) == 0;
    if (s.stages < 2) s.vector = false;
    if (o[6] > 0) s.zero_skip = o[6] == 2 && zero_skip_fits(s);
    const size_t limit = s.stages >= 2 ? kMaxRingBytes : kMaxTileBytes;
    if (s.rz * s.ry * window > kMaxUnrolledFolds || tile_bytes(s) > limit || s.bx * s.by > 1024) s = chosen;
    // 3x3x3 sums of f32 march in columns (device/stencil_column.cuh) where they fit, unless
    // TG_STENCIL_TILE's march field asks for the plain tiles (1) or the ring march (2); with 3 or
    // none, its fields by, ry, rz, min_blocks, stages, bx and col are the column's col_by, col_ry, run
    // of z outputs, col_min_blocks, col_inflight, col_bx / 8 and col_flags + 1. H200, session 22 (bench_stencil_cuda
    // --tiles, same call), the 512^3 7-point stencil with run-time / constant weights: the ring march
    // 0.5376 / 0.4700 ms; the column march in 64 x 16 tiles, 2 rows a thread, 5 blocks an SM, 1 plane
    // in flight 0.3269 / 0.3284, 2 in flight 0.3506 / 0.3485, 3 in flight 0.3724 / 0.3653; 4 blocks
    // an SM and 2 in flight 0.3394 / 0.3335; 1 row a thread (256 threads) 0.3449 / 0.3380 at best.
    // The lead's final call: 128 x 8 tiles (32 x 4 threads; longer DRAM rows), 1 in flight, 5 blocks
    // an SM 0.3205 / 0.3176 (the defaults), at 4 blocks 0.3358 / 0.3349; 64 x 16 0.3269 / 0.3285.
    // Session 23 (ncu: L2 82.6% busy, DRAM 68.6%, DRAM bytes within 1.4% of the minimum, so fewer
    // halo reads through L2): in one call, the defaults of then 0.3185-0.3192 ms (run-time weights);
    // hints (col_flags) streaming stores 0.3205, shuffles 0.3200, streaming + 256-byte prefetch
    // 0.3221, streaming + evict-first inner rows 0.3514 (the x neighbours' halo reads of those rows
    // then miss L2), all four 0.3595; 2 planes in flight with streaming stores 0.3679, at 4 blocks
    // 0.3498. In a second call, against 0.3224 / 0.3210 for those defaults: the early checks
    // (col_flags 16) in 128 x 8 tiles 0.3271 / 0.3281; with them 128 x 16 tiles (18 rows read a
    // 16-row tile instead of 10 for 8), 4 x 4 a thread, 4 blocks an SM 0.3087 / 0.3073 (the defaults
    // since), at 5 blocks (spills) 0.4012 / 0.3673, 4 x 2 a thread (256 threads, 2 blocks) 0.3655.
    // docs/cuda.md has the table.
    if (o[7] != 1 && o[7] != 2 && column_fits(s, k, sizes)) {
      TiledStencilSpec c = s;
      c.column = true;
      c.zchunk = 0;
      if (o[0] > 0) c.col_by = o[0];
      if (o[1] > 0) c.col_ry = o[1];
      if (o[2] > 0) c.zchunk = o[2];
      if (o[3] > 0) c.col_min_blocks = o[3];
      if (o[4] > 0) c.col_inflight = o[4];
      if (o[8] > 0) c.col_bx = 8 * o[8];
      if (o[9] > 0) c.col_flags = (o[9] - 1) & 31;
      if (!column_fits(c, k, sizes)) c = s, c.column = true, c.zchunk = 0;  // the defaults
      if (column_fits(c, k, sizes)) s = c;
    }
  }
  return tile_bytes(s) <= (s.stages >= 2 ? kMaxRingBytes : kMaxTileBytes);
}

std::string tiled_stencil_source(const TiledStencilSpec& s) {
  const bool arg = s.reduction >= 4;
  const bool fused = !s.load.empty() || !s.store.empty();
  const std::string y_type = arg ? "int" : device_type(s.dtype);
  std::string src = "#include \"stencil_kernel.cuh\"\n" + s.prelude + "struct tg_st_cfg {\n";
  src += fmt::format("  typedef {} T;\n  typedef {} C;\n  typedef {} Y;\n", device_type(s.dtype),
                     compute_type(s.dtype), y_type);
  src += fmt::format("  typedef {} X;\n  typedef {} O;\n", s.load.empty() ? device_type(s.dtype) : device_type(s.x_dtype),
                     s.store.empty() ? y_type : device_type(s.out_dtype));
  const bool const_w = !s.weights.empty();
  bool zero = false;
  std::string weight = "    switch (n) {\n", zero_w = "    return false";
  for (size_t n = 0; n < s.weights.size(); ++n) {
    weight += fmt::format("      case {}: return C({:a});\n", n, s.weights[n]);
    if (s.weights[n] == 0) {
      zero = true;
      zero_w += fmt::format(" || n == {}", n);
    }
  }
  weight += "    }\n    return C(0);\n";
  src += fmt::format("  static constexpr int R = {}, M = {};\n"
                     "  static constexpr bool UNIT_W = {}, CONST_W = {}, SKIP = {}, RSKIP = {};\n",
                     s.reduction, s.mode, s.unit_weights ? "true" : "false", const_w ? "true" : "false",
                     const_w && zero && s.reduction == 0 ? "true" : "false",
                     !const_w && s.zero_skip && zero_skip_fits(s) ? "true" : "false");
  src += "  static TG_DEVICE_INLINE C weight(int n) {\n" + weight + "  }\n";
  src += "  static TG_DEVICE_INLINE constexpr bool zero_w(int n) {\n" + zero_w + ";\n  }\n";
  src += "  static TG_DEVICE_INLINE T load(const X* __restrict__ x, const tg_dev::StPtrs& P, tg_dev::i64 i) {\n"
         "    (void)P;\n" + (s.load.empty() ? std::string("    return x[i];\n") : s.load) + "  }\n";
  src += "  static TG_DEVICE_INLINE void store(O* __restrict__ y, const tg_dev::StPtrs& P, tg_dev::i64 o, Y v) {\n"
         "    (void)P;\n" + (s.store.empty() ? std::string("    y[o] = v;\n") : s.store) + "  }\n";
  (void)fused;
  src += fmt::format("  static constexpr int W0 = {}, WZ = {}, WY = {}, WX = {};\n", s.win[0], s.win[1], s.win[2],
                     s.win[3]);
  src += fmt::format("  static constexpr int S0 = {}, SZ = {}, SY = {}, SX = {};\n", s.stride[0], s.stride[1],
                     s.stride[2], s.stride[3]);
  src += fmt::format("  static constexpr int D0 = {}, DZ = {}, DY = {}, DX = {};\n", s.dilation[0], s.dilation[1],
                     s.dilation[2], s.dilation[3]);
  src += fmt::format("  static constexpr int BX = {}, BY = {}, RY = {}, RZ = {}, NS = {}, CW = {};\n", s.bx, s.by,
                     s.ry, s.rz, std::max(s.stages, 1), copy_elements(s));
  src += fmt::format("  static constexpr bool MARCH = {};\n", s.march && s.stages >= 2 ? "true" : "false");
  // The column march (device/stencil_column.cuh): its tile, plain stores, the taps constant weights fold.
  unsigned cmask = 0;
  for (size_t n = 0; n < s.weights.size() && n < 32; ++n) cmask |= (s.weights[n] != 0 ? 1u : 0u) << n;
  src += fmt::format("  static constexpr bool COLUMN = {}, PLAIN_STORE = {};\n", s.column ? "true" : "false",
                     s.store.empty() ? "true" : "false");
  src += fmt::format("  static constexpr unsigned CMASK = {}u;\n", cmask);
  if (s.column) {
    src += fmt::format("  static constexpr int CBX = {}, CBY = {}, CRY = {}, CNS = {}, CFLAGS = {};\n", s.col_bx,
                       s.col_by, s.col_ry, column_planes(s), s.col_flags);
  }
  src += "};\n";
  // min_blocks resident blocks of 256 threads (3: <= 85 registers; 2 for 8-byte types): enough
  // warps and loads in flight per SM.
  src += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}, {}) tg_stencil(const tg_st_cfg::X* __restrict__ x, "
      "const tg_st_cfg::T* __restrict__ w, tg_st_cfg::O* __restrict__ y, tg_dev::StPtrs p, tg_dev::StencilArgs a) {{\n"
      "  tg_dev::stencil_kernel<tg_st_cfg>(x, w, y, p, a);\n}}\n",
      s.column ? s.col_bx * s.col_by : s.bx * s.by, std::max(s.column ? s.col_min_blocks : s.min_blocks, 1));
  return src;
}

TiledStencilLaunch tiled_stencil_launch(const TiledStencilSpec& s, const TiledStencilSizes& z, int resident_blocks) {
  TiledStencilLaunch l;
  const int64_t tx = s.column ? 4 * s.col_bx : s.bx;
  const int64_t ty = s.column ? static_cast<int64_t>(s.col_by) * s.col_ry : static_cast<int64_t>(s.by) * s.ry;
  l.tiles[0] = (z.out[3] + tx - 1) / tx;
  l.tiles[1] = (z.out[2] + ty - 1) / ty;
  l.zc = s.rz;
  if (s.march || s.column) {
    // The run of z outputs a tile: spec.zchunk, or the one that keeps every resident block busy
    // for the fewest plane times. A tile of c outputs streams c + WZ - 1 planes; with n runs the
    // P * n tiles (P of the (y, x) plane and batch) take ceil(P * n / resident) rounds.
    const int64_t outz = std::max<int64_t>(z.out[1], 1), halo = s.column ? 2 : s.win[1] - 1;
    const int64_t plane_tiles = std::max<int64_t>(z.batch * z.out[0] * l.tiles[0] * l.tiles[1], 1);
    const int64_t resident = std::max(resident_blocks, 1);
    if (s.zchunk > 0) {
      l.zc = std::min<int64_t>(s.zchunk, outz);
    } else {
      int64_t best = -1;
      for (int64_t runs = 1; runs <= std::min<int64_t>(outz, 1024); ++runs) {
        const int64_t c = (outz + runs - 1) / runs, n = (outz + c - 1) / c;
        const int64_t rounds = (plane_tiles * n + resident - 1) / resident;
        const int64_t cost = rounds * (c + halo);
        if (best < 0 || cost < best) best = cost, l.zc = c;
      }
    }
  }
  l.tiles[2] = (z.out[1] + l.zc - 1) / l.zc;
  l.total_tiles = z.batch * z.out[0] * l.tiles[2] * l.tiles[1] * l.tiles[0];
  // As many blocks as run at once (each walks several tiles, overlapping the loads of the next
  // with the fold of the current), at most one a tile.
  l.blocks = static_cast<unsigned>(std::clamp<int64_t>(l.total_tiles, 1, std::max(resident_blocks, 1)));
  l.threads = static_cast<unsigned>(s.column ? s.col_bx * s.col_by : s.bx * s.by);
  return l;
}

void run_tiled_stencil(const backends::KernelContext& ctx, const TiledStencilSpec& planned,
                       const TiledStencilSizes& z, const void* x, const void* w, void* y,
                       const std::vector<const void*>& extra) {
  const char* op = ctx.op_name();
  // 16-byte ring copies need an aligned source whose rows are whole copies; else single elements.
  const TiledStencilSpec* sp = &planned;
  TiledStencilSpec narrow;
  if (copy_elements(planned) > 1) {
    const int64_t cw = copy_elements(planned);
    if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || z.in[3] % cw != 0) {
      narrow = planned;
      narrow.vector = false;
      sp = &narrow;
    }
  }
  // The column march copies and stores 16 bytes at a time: an aligned source and result, else the plan
  // without it.
  if (planned.column && (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(y) % 16 != 0)) {
    narrow = *sp;
    narrow.column = false;
    sp = &narrow;
  }
  const TiledStencilSpec& s = *sp;
  DeviceContext& dc = context_of(ctx);
  // Kernel cache: (device, spec) -> kernel.
  const std::string key =
      fmt::format("{}|{}|{}|{}|{}|{},{},{},{}|{},{},{},{}|{},{},{},{}|{},{},{},{},{}", ctx.device.index,
                  static_cast<int>(s.dtype), s.reduction, s.mode, s.unit_weights, s.win[0], s.win[1], s.win[2],
                  s.win[3], s.stride[0], s.stride[1], s.stride[2], s.stride[3], s.dilation[0], s.dilation[1],
                  s.dilation[2], s.dilation[3], s.bx, s.by, s.ry, s.rz, s.min_blocks) +
      fmt::format("|{},{},{},{}", s.stages, s.vector, s.zero_skip, s.march) +
      fmt::format("|{},{},{},{},{},{},{}", s.column, s.col_bx, s.col_by, s.col_ry, s.col_inflight, s.col_min_blocks,
                  s.col_flags) +
      fmt::format("|{:a}|{}", fmt::join(s.weights, ","), s.fusion_key);
  struct Entry {
    std::shared_ptr<const nvrtc::Program> program;
    cudaKernel_t kernel = nullptr;
    int resident_blocks = 0;  ///< blocks of the kernel running at once on the device
  };
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, Entry>();
  cudaKernel_t kernel = nullptr;
  int resident = 0;
  {
    std::lock_guard lock(mu);
    if (auto it = cache->find(key); it != cache->end()) {
      nvrtc::note_use(*it->second.program);  // saved executables store the kernels they use
      kernel = it->second.kernel;
      resident = it->second.resident_blocks;
    }
  }
  if (kernel == nullptr) {
    Entry e;
    e.program = nvrtc::compile(tiled_stencil_source(s), ctx.device.index, op);
    e.kernel = e.program->kernel("tg_stencil", op);
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(e.kernel),
                                                      static_cast<int>(tiled_stencil_launch(s, z, 1).threads),
                                                      0) != cudaSuccess ||
        per_sm < 1) {
      (void)cudaGetLastError();  // not sticky; a guess instead
      per_sm = 2;
    }
    e.resident_blocks = per_sm * std::max(dc.sm_count, 1);
    kernel = e.kernel;
    resident = e.resident_blocks;
    std::lock_guard lock(mu);
    cache->emplace(key, std::move(e));
  }
  const TiledStencilLaunch l = tiled_stencil_launch(s, z, resident);
  if (l.total_tiles == 0) return;
  StencilArgs a{};
  a.batch = z.batch;
  for (int i = 0; i < 4; ++i) {
    a.in[i] = z.in[static_cast<size_t>(i)];
    a.out[i] = z.out[static_cast<size_t>(i)];
    a.before[i] = z.before[static_cast<size_t>(i)];
  }
  for (int i = 0; i < 3; ++i) a.tiles[i] = l.tiles[i];
  a.zc = l.zc;
  a.total_tiles = l.total_tiles;
  a.boundary = static_cast<long long>(z.boundary_bits);
  a.small = l.total_tiles < (int64_t{1} << 31) ? 1 : 0;
  const int64_t divisors[4] = {l.tiles[0], l.tiles[1], l.tiles[2], z.out[0]};
  for (int i = 0; i < 4; ++i) magic(divisors[i], a.div_m[i], a.div_s[i]);
  StPtrs pointers{};
  if (extra.size() > std::size(pointers.p)) fail(ErrorCode::internal, op, "{} fused inputs; at most 16", extra.size());
  std::copy(extra.begin(), extra.end(), pointers.p);
  const void* xp = x;
  const void* wp = w;
  void* yp = y;
  void* args[] = {&xp, &wp, &yp, &pointers, &a};
  nvrtc::launch(kernel, dim3(l.blocks), dim3(l.threads), args, stream_of(ctx), op);
}

}  // namespace tg::cuda
