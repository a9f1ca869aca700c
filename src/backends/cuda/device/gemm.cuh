// Device code of TensorGraph's own "first-run" GEMM and implicit-GEMM convolution (docs/design/
// 0011-first-run-kernels.md): the kernels a loaded saved executable's first runs use while
// cuDNN and cuBLASLt initialize on background threads. Shared by the run-time generated programs
// (backends/cuda/first_run_matmul.cpp, first_run_conv.cpp; NVRTC sees this file embedded as text)
// and the host emulation of tools/kernel_emu (shim.h).
//
// One tiled SIMT GEMM: C[M, N] = A[M, K] B[K, N] per batch, a 64 x 64 tile of C a block of 256
// threads, each thread a 4 x 4 register block, K in steps of 16 through shared memory, products
// accumulated in f32 with fmaf (explicit FMA: the programs are compiled with --fmad=false), in
// ascending k, and rounded once to the output type. Operands are read through loaders (plain
// matrices, or the convolution's implicit im2col view), converted to f32 (f16/bf16 exactly) and,
// for an f32 problem at precision bf16/f16, rounded to bf16/f16 first (as the library paths'
// cast kernels do). Blocks are numbered along x only: (batch or group, M tile, N tile).
// No tensor cores: the same code runs under the host emulation, and the first run's arithmetic
// is ~1-10 GFLOP (ResNet-50, BERT-base at batch 1).
#pragma once
#include "elementwise.cuh"

namespace tg_dev {

constexpr int kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 16, kGemmThreads = 256;

/// Rounding of f32 operands before the products: 0 none, 1 to bf16, 2 to f16 (nearest even).
template <int R> TG_DEVICE_INLINE float gemm_round(float v) {
  if (R == 1) return bf16_bits_to_float(float_to_bf16_bits(v));
  if (R == 2) return f16_bits_to_float(float_to_f16_bits(v));
  return v;
}

/// A matmul (backends/cuda/matmul.cpp's Problem): row-major A [m, k] (or [k, m] stored when ta)
/// with row stride lda, B [k, n] (or [n, k] when tb) with row stride ldb, C [m, n] contiguous per
/// batch; up to 4 coalesced batch dims (outermost first) with A's and B's element strides (0:
/// broadcast). Every field is a long long, so the host mirror (first_run.h) has the same layout.
/// Split K (splits > 1, chosen by the host when there are few tiles): split s sums k in
/// [s * k_chunk, (s + 1) * k_chunk) into f32 partials ws[((batch * splits + s) * m + i) * n + j],
/// and the reduce kernel adds them in split order (deterministic) and rounds once.
struct GemmArgs {
  long long m, n, k, lda, ldb, ta, tb;
  long long batch_rank, tiles_m, tiles_n, splits, k_chunk;
  long long batch_dims[4], batch_sa[4], batch_sb[4];
};

/// A conv2d forward (ops/conv_geometry.h): x [n, c, h, w], w [o, c/groups, kh, kw], y [n, o, oh,
/// ow] in logical axis order, each with its element strides (so every layout is one kernel);
/// padding before (top, left); stride and dilation. The GEMM of group g: M = n*oh*ow, N = o/groups,
/// K = kh*kw*(c/groups) with k = (r*kw + s)*cg + ci.
struct ConvArgs {
  long long n, c, h, w, o, kh, kw, oh, ow, groups;
  long long stride_h, stride_w, pad_top, pad_left, dil_h, dil_w;
  long long xs[4], ws[4], ys[4];
  long long tiles_m, tiles_n, splits, k_chunk;
};

/// The tile (m0, n0) of a problem M x N, summed over k in [kbeg, K). Loaders give f32 operand values in two steps, so that
/// index arithmetic is hoisted out of the K loop: `la.line(m)` (a row of A: once per thread and
/// tile), `la.kpos(k)` (once per k the thread loads) and `la.at(line, kpos)`; likewise `lb` with
/// columns n of B. They are called only inside the problem. `out(m, n, v)` stores a result.
template <class LA, class LB, class Out>
TG_DEVICE_INLINE void gemm_tile(const LA& la, const LB& lb, const Out& out, long long M, long long N, long long kbeg,
                                long long K, long long m0, long long n0) {
  __shared__ float as[kGemmTileK][kGemmTileM + 4];  // k-major: a column of A per k
  __shared__ float bs[kGemmTileK][kGemmTileN + 4];
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % 16, ty = tid / 16;  // this thread's rows ty*4.., columns tx*4..
  // Loads: A rows ty + 16 i (i < 4) at k0 + tx (consecutive threads: consecutive k); B rows
  // k0 + tid / 64 + 4 i at column n0 + tid % 64 (consecutive threads: consecutive n).
  typename LA::Line arow[4];
  bool aok[4];
  for (int i = 0; i < 4; ++i) {
    const long long m = m0 + ty + 16 * i;
    aok[i] = m < M;
    arow[i] = la.line(aok[i] ? m : 0);
  }
  const long long bn = n0 + tid % 64;
  const bool bok = bn < N;
  const typename LB::Line bcol = lb.line(bok ? bn : 0);
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (long long k0 = kbeg; k0 < K; k0 += kGemmTileK) {
    const long long ka = k0 + tx;
    if (ka < K) {
      const typename LA::KPos kp = la.kpos(ka);
      for (int i = 0; i < 4; ++i) as[tx][ty + 16 * i] = aok[i] ? la.at(arow[i], kp) : 0.0f;
    } else {
      for (int i = 0; i < 4; ++i) as[tx][ty + 16 * i] = 0.0f;
    }
    for (int i = 0; i < 4; ++i) {
      const int r = tid / 64 + 4 * i;
      const long long kb = k0 + r;
      bs[r][tid % 64] = bok && kb < K ? lb.at(bcol, lb.kpos(kb)) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kGemmTileK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = as[kk][ty * 4 + i];
      for (int j = 0; j < 4; ++j) b[j] = bs[kk][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const long long m = m0 + ty * 4 + i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const long long n = n0 + tx * 4 + j;
      if (n < N) out(m, n, acc[i][j]);
    }
  }
}

// ---- matmul ------------------------------------------------------------------------------------

/// An operand of a matmul: element (line, k) at p[line * line_stride + k * k_stride].
template <class T, int R> struct GemmLoad {
  typedef long long Line;
  typedef long long KPos;
  const T* p;
  long long line_stride, k_stride;
  TG_DEVICE_INLINE Line line(long long i) const { return i * line_stride; }
  TG_DEVICE_INLINE KPos kpos(long long k) const { return k * k_stride; }
  TG_DEVICE_INLINE float at(Line l, KPos k) const { return gemm_round<R>(static_cast<float>(cv(p[l + k]))); }
};
template <class T> struct GemmStore {
  T* p;
  long long ld;
  TG_DEVICE_INLINE void operator()(long long m, long long n, float v) const { p[m * ld + n] = st<T>(v); }
};

/// f32 partial sums of a split (split K): [m, n] row-major.
struct GemmPartial {
  float* p;
  long long ld;
  TG_DEVICE_INLINE void operator()(long long m, long long n, float v) const { p[m * ld + n] = v; }
};

/// Block `blk`'s place: N tile, M tile, split and batch (or group), fastest first.
struct GemmBlock {
  long long tn, tm, split, batch;
};
TG_DEVICE_INLINE GemmBlock gemm_block(long long blk, long long tiles_m, long long tiles_n, long long splits) {
  GemmBlock b;
  b.tn = blk % tiles_n;
  blk /= tiles_n;
  b.tm = blk % tiles_m;
  blk /= tiles_m;
  b.split = blk % splits;
  b.batch = blk / splits;
  return b;
}

/// The tile `tm`, `tn` of the block's batch, summed over its split's k range: into the output (one
/// split) or into its f32 partials.
template <class LA, class LB, class Out>
TG_DEVICE_INLINE void gemm_split_tile(const LA& la, const LB& lb, const Out& out, float* ws, const GemmBlock& b,
                                      long long M, long long N, long long K, long long splits, long long k_chunk) {
  const long long kbeg = b.split * k_chunk, kend = splits > 1 && kbeg + k_chunk < K ? kbeg + k_chunk : K;
  if (splits > 1) {
    const GemmPartial part{ws + (b.batch * splits + b.split) * M * N, N};
    gemm_tile(la, lb, part, M, N, kbeg, kend, b.tm * kGemmTileM, b.tn * kGemmTileN);
  } else {
    gemm_tile(la, lb, out, M, N, kbeg, kend, b.tm * kGemmTileM, b.tn * kGemmTileN);
  }
}

/// Output `i` of `count` (batch-major [batches, M, N]) of a split problem: its partials added in split
/// order and stored by `out_of(batch)`. One thread an output.
template <class OutOf>
TG_DEVICE_INLINE void gemm_reduce(const float* ws, long long M, long long N, long long splits, long long count,
                                  const OutOf& out_of) {
  const long long i = static_cast<long long>(blockIdx.x) * kGemmThreads + threadIdx.x;
  if (i >= count) return;
  const long long n = i % N, t = i / N, m = t % M, batch = t / M;
  const float* p = ws + batch * splits * M * N + m * N + n;
  float v = 0.0f;
  for (long long s = 0; s < splits; ++s) v += p[s * M * N];
  out_of(batch)(m, n, v);
}

/// A's and B's offsets of batch `batch`.
TG_DEVICE_INLINE void gemm_batch_offsets(const GemmArgs& g, long long batch, long long* a_off, long long* b_off) {
  *a_off = 0;
  *b_off = 0;
  for (int d = static_cast<int>(g.batch_rank) - 1; d >= 0; --d) {  // innermost last
    const long long i = batch % g.batch_dims[d];
    batch /= g.batch_dims[d];
    *a_off += i * g.batch_sa[d];
    *b_off += i * g.batch_sb[d];
  }
}

/// The block's tile of a (batched) matmul of storage type T, A/B rounded per R.
template <class T, int R>
TG_DEVICE_INLINE void gemm_matmul(const T* a, const T* b, T* c, float* ws, const GemmArgs& g) {
  const GemmBlock blk = gemm_block(static_cast<long long>(blockIdx.x), g.tiles_m, g.tiles_n, g.splits);
  long long a_off = 0, b_off = 0;
  gemm_batch_offsets(g, blk.batch, &a_off, &b_off);
  // A (m, k): [m, k] stored, or [k, m] when ta. B (k, n) read by column n: [k, n] or [n, k] when tb.
  const GemmLoad<T, R> la{a + a_off, g.ta ? 1 : g.lda, g.ta ? g.lda : 1};
  const GemmLoad<T, R> lb{b + b_off, g.tb ? g.ldb : 1, g.tb ? 1 : g.ldb};
  const GemmStore<T> out{c + blk.batch * g.m * g.n, g.n};
  gemm_split_tile(la, lb, out, ws, blk, g.m, g.n, g.k, g.splits, g.k_chunk);
}

template <class T> struct GemmStoreOf {
  T* c;
  long long m, n;
  TG_DEVICE_INLINE GemmStore<T> operator()(long long batch) const { return GemmStore<T>{c + batch * m * n, n}; }
};

/// The split-K reduction of a matmul: blocks of 256 threads over its batches x m x n outputs.
template <class T> TG_DEVICE_INLINE void gemm_matmul_reduce(const float* ws, T* c, const GemmArgs& g, long long batches) {
  gemm_reduce(ws, g.m, g.n, g.splits, batches * g.m * g.n, GemmStoreOf<T>{c, g.m, g.n});
}

// ---- conv2d forward (implicit GEMM) ------------------------------------------------------------

/// A position k = (r*kw + s)*cg + ci of the window (32-bit divisions: K < 2^31, checked by the host).
struct ConvKPos {
  int ci, r, s;
};
TG_DEVICE_INLINE ConvKPos conv_kpos(long long k, const ConvArgs* g) {
  const unsigned cg = static_cast<unsigned>(g->c / g->groups), kw = static_cast<unsigned>(g->kw);
  const unsigned kk = static_cast<unsigned>(k), t = kk / cg;
  ConvKPos p;
  p.ci = static_cast<int>(kk - t * cg);
  p.r = static_cast<int>(t / kw);
  p.s = static_cast<int>(t - static_cast<unsigned>(p.r) * kw);
  return p;
}

/// x read as the implicit im2col matrix: row m = (nb, oh, ow) of the output, column k.
template <class T, int R> struct ConvLoadX {
  struct Line {
    long long base;  // x's offset of (nb, the group's first channel, 0, 0)
    long long ih0, iw0;
  };
  typedef ConvKPos KPos;
  const T* x;
  const ConvArgs* g;
  long long c0;  // the group's first input channel
  TG_DEVICE_INLINE Line line(long long m) const {
    const long long ow = m % g->ow, t = m / g->ow, oh = t % g->oh, nb = t / g->oh;
    Line l;
    l.base = nb * g->xs[0] + c0 * g->xs[1];
    l.ih0 = oh * g->stride_h - g->pad_top;
    l.iw0 = ow * g->stride_w - g->pad_left;
    return l;
  }
  TG_DEVICE_INLINE KPos kpos(long long k) const { return conv_kpos(k, g); }
  TG_DEVICE_INLINE float at(const Line& l, const KPos& p) const {
    const long long ih = l.ih0 + p.r * g->dil_h, iw = l.iw0 + p.s * g->dil_w;
    if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) return 0.0f;  // zero padding
    return gemm_round<R>(static_cast<float>(cv(x[l.base + p.ci * g->xs[1] + ih * g->xs[2] + iw * g->xs[3]])));
  }
};
/// w read by output channel n of the group (a column of the GEMM's B), at window position k.
template <class T, int R> struct ConvLoadW {
  typedef long long Line;
  typedef ConvKPos KPos;
  const T* w;
  const ConvArgs* g;
  long long o0;  // the group's first output channel
  TG_DEVICE_INLINE Line line(long long n) const { return (o0 + n) * g->ws[0]; }
  TG_DEVICE_INLINE KPos kpos(long long k) const { return conv_kpos(k, g); }
  TG_DEVICE_INLINE float at(Line l, const KPos& p) const {
    return gemm_round<R>(static_cast<float>(cv(w[l + p.ci * g->ws[1] + p.r * g->ws[2] + p.s * g->ws[3]])));
  }
};
template <class T> struct ConvStoreY {
  T* y;
  const ConvArgs* g;
  long long o0;
  TG_DEVICE_INLINE void operator()(long long m, long long n, float v) const {
    const long long ow = m % g->ow, t = m / g->ow, oh = t % g->oh, nb = t / g->oh;
    y[nb * g->ys[0] + (o0 + n) * g->ys[1] + oh * g->ys[2] + ow * g->ys[3]] = st<T>(v);
  }
};

/// The block's tile of a conv2d forward of storage type T, x and w rounded per R.
template <class T, int R>
TG_DEVICE_INLINE void gemm_conv2d(const T* x, const T* w, T* y, float* ws, const ConvArgs& g) {
  const GemmBlock blk = gemm_block(static_cast<long long>(blockIdx.x), g.tiles_m, g.tiles_n, g.splits);
  const long long og = g.o / g.groups;
  const ConvLoadX<T, R> lx{x, &g, blk.batch * (g.c / g.groups)};
  const ConvLoadW<T, R> lw{w, &g, blk.batch * og};
  const ConvStoreY<T> out{y, &g, blk.batch * og};
  gemm_split_tile(lx, lw, out, ws, blk, g.n * g.oh * g.ow, og, g.kh * g.kw * (g.c / g.groups), g.splits, g.k_chunk);
}

template <class T> struct ConvStoreOf {
  T* y;
  const ConvArgs* g;
  TG_DEVICE_INLINE ConvStoreY<T> operator()(long long group) const {
    return ConvStoreY<T>{y, g, group * (g->o / g->groups)};
  }
};

/// The split-K reduction of a conv2d: blocks of 256 threads over its groups x (n*oh*ow) x o/groups.
template <class T> TG_DEVICE_INLINE void gemm_conv2d_reduce(const float* ws, T* y, const ConvArgs& g) {
  const long long m = g.n * g.oh * g.ow, og = g.o / g.groups;
  gemm_reduce(ws, m, og, g.splits, g.groups * m * og, ConvStoreOf<T>{y, &g});
}

}  // namespace tg_dev
