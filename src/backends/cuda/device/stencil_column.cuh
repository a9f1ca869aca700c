// Column march of the generated stencil kernels (G::COLUMN; the host side is
// backends/cuda/stencil_codegen.cpp, which chooses it): 3x3x3 windows (d0 window 1) of float sums,
// unit strides and dilations, one output a source element (padding 1 on each side of z, y, x),
// rows of a multiple of 4 floats, plain loads (no fused prologue). The semantics are
// device/stencil.cuh's, bit for bit: each output folds its taps v = x * w in row-major window
// order (the first tap starts the result, every step rounded, no FMA contraction).
//
// A block owns a tile of TX x TY outputs of the (y, x) plane (TX = 4 BX, TY = BY RY: each thread 4
// consecutive x outputs of RY rows, 16-byte loads and stores) for a run of zc z outputs, and
// marches along z:
// the run's zc + 2 input planes, each with its one-element halo, come through a ring of NS
// shared-memory planes filled by cp.async (16-byte copies, NS - 4 planes in flight; each thread
// places its RY or RY + 1 copies once a tile, a plane costs their addresses), one barrier a plane,
// and output z is folded from planes z - 1, z, z + 1 of the ring. Copies that leave the source
// (the tiles at the borders) are mapped through the boundary mode, element by element, or filled
// with the boundary value; everything else of the kernel is the same for every tile.
//
// Taps left out: a sum with constant weights skips the taps of weight +-0; with weights read at
// run time, a block takes the 7-point star (the centre and its six face neighbours) when every
// other weight is +-0 (read at launch), else folds all 27 taps. Leaving out x * (+-0) changes a
// result only when some skipped tap reads an inf or NaN, or in the sign of a zero result (see
// device/stencil.cuh). So: (1) each thread checks the values of its copies of every plane (a
// non-finite value makes x * 0 NaN) and the block ORs the checks at the next plane's barrier
// (__syncthreads_or); an output is stored one plane after it is folded, and folded again over
// all 27 taps when one of its three planes held such a value; (2) an output whose fold is +-0 is
// folded again over all 27 taps at once. Both refolds read the ring, which keeps the planes of
// the output stored last. With the early checks (G::CFLAGS & ScEarly) each thread checks its copies
// of a plane before the barrier that publishes it (they are its own: cp.async.wait_group makes them
// visible to it), so the block knows at that barrier, and outputs are folded, refolded where needed
// and stored at once: the ring holds one plane less (room for taller tiles under the 48 KB of
// static shared memory). G::CFLAGS also holds hints that change no result (streaming stores, L2
// policies, warp shuffles for the x neighbours): see ScStream.
#pragma once
#include "stencil_tile.cuh"

namespace tg_dev {

/// Tap n (0..26) of a 3x3x3 window is one of the 7-point star: the centre and its face neighbours.
TG_DEVICE_INLINE constexpr bool sc_star(int n) {
  return n == 4 || n == 10 || n == 12 || n == 13 || n == 14 || n == 16 || n == 22;
}
constexpr unsigned ScAll = (1u << 27) - 1;
constexpr unsigned ScStar = (1u << 4) | (1u << 10) | (1u << 12) | (1u << 13) | (1u << 14) | (1u << 16) | (1u << 22);

typedef Pack<float, 4> ScV4;

/// Memory options of the march (G::CFLAGS bits; TiledStencilSpec::col_flags): outputs stored
/// streaming (evict-first in L2: the result is not read again, so the input planes keep L2), 16-byte
/// copies with a 256-byte L2 prefetch, the copies of a tile's inner rows (rows no neighbour's halo
/// reads) with an L2 evict-first policy, the fold's x neighbours through warp shuffles.
constexpr int ScStream = 1, ScPrefetch = 2, ScEvictInner = 4, ScShuffle = 8;
/// G::CFLAGS bit: the checks of a plane before its barrier, outputs stored at once, a ring of D + 3
/// planes (else D + 4: outputs stored one plane late).
constexpr int ScEarly = 16;

/// Stores 4 floats at y (16-byte aligned, global), streaming when STREAM (st.global.cs).
template <bool STREAM>
TG_DEVICE_INLINE void sc_put4(float* y, const ScV4& v) {
#ifndef TG_HOST_EMULATION
  if constexpr (STREAM) {
    asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(y), "f"(v.v[0]), "f"(v.v[1]), "f"(v.v[2]),
                 "f"(v.v[3])
                 : "memory");
    return;
  }
#endif
  *reinterpret_cast<ScV4*>(y) = v;
}

/// An L2 evict-first cache policy for sc_copy16 (0 under the host emulation).
TG_DEVICE_INLINE unsigned long long sc_evict_first_policy() {
  unsigned long long p = 0;
#ifndef TG_HOST_EMULATION
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
#endif
  return p;
}

/// A 16-byte cp.async of src into shared d (like st_cp_async<16>), with a 256-byte L2 prefetch when
/// F has ScPrefetch and under the L2 policy `pol` when `hint`.
template <int F>
TG_DEVICE_INLINE void sc_copy16(float* d, const float* src, bool hint, unsigned long long pol) {
#ifdef TG_HOST_EMULATION
  (void)hint, (void)pol;
  std::memcpy(d, src, 16);
#else
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(d));
  if constexpr ((F & ScPrefetch) != 0) {
    if ((F & ScEvictInner) != 0 && hint) {
      asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2;\n" ::"r"(a), "l"(src),
                   "l"(pol)
                   : "memory");
    } else {
      asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(a), "l"(src) : "memory");
    }
  } else {
    if ((F & ScEvictInner) != 0 && hint) {
      asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(a), "l"(src), "l"(pol)
                   : "memory");
    } else {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(src) : "memory");
    }
  }
#endif
}

/// Outputs x .. x + 3 of one row folded over the taps in MASK, in window order. p<dz> points at
/// the thread's first output column of row y - 1 of plane z - 1 + dz (row pitch PT); wr[n] is
/// weight n (read for the taps in MASK only). SHFL: the columns x - 1 and x + 4 come from the
/// neighbouring lanes' loads (warp shuffles; every lane of the warp calls this together) where
/// `lo` / `hi` say that lane - 1 / lane + 1 holds the thread's x neighbours, else from the plane.
template <unsigned MASK, int PT, bool SHFL = false, class W>
TG_DEVICE_INLINE ScV4 sc_fold(const float* p0, const float* p1, const float* p2, const W& wr, bool lo = false,
                              bool hi = false) {
  ScV4 acc;
  bool first = true;
#pragma unroll
  for (int n = 0; n < 27; ++n) {
    if (!((MASK >> n) & 1u)) continue;
    const int dz = n / 9, dy = n / 3 % 3, dx = n % 3;
    const float* q = (dz == 0 ? p0 : dz == 1 ? p1 : p2) + dy * PT;
    const ScV4 c = *reinterpret_cast<const ScV4*>(q);
    float v[4];
    if (dx == 1) {
      v[0] = c.v[0], v[1] = c.v[1], v[2] = c.v[2], v[3] = c.v[3];
    } else if (dx == 0) {
      float l;
      if constexpr (SHFL) {
        l = __shfl_up_sync(0xffffffffu, c.v[3], 1);
        if (!lo) l = q[-1];
      } else {
        l = q[-1];
      }
      v[0] = l, v[1] = c.v[0], v[2] = c.v[1], v[3] = c.v[2];
    } else {
      float r;
      if constexpr (SHFL) {
        r = __shfl_down_sync(0xffffffffu, c.v[0], 1);
        if (!hi) r = q[4];
      } else {
        r = q[4];
      }
      v[0] = c.v[1], v[1] = c.v[2], v[2] = c.v[3], v[3] = r;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float p = v[j] * wr[n];  // --fmad=false: rounded, then added
      acc.v[j] = first ? p : acc.v[j] + p;
    }
    first = false;
  }
  return acc;
}

/// The exact refolds (rare): outputs x .. x + 3 of one row (pointers as sc_fold's) over all 27 taps
/// in window order, weights ws[n] (shared memory), in loops that hold few registers.
template <int PT>
TG_DEVICE_INLINE ScV4 sc_fold_exact(const float* p0, const float* p1, const float* p2, const float* ws) {
  ScV4 acc;
#pragma unroll 1
  for (int n = 0; n < 27; ++n) {
    const int dz = n / 9, dy = n / 3 % 3, dx = n % 3;
    const float* q = (dz == 0 ? p0 : dz == 1 ? p1 : p2) + dy * PT + dx - 1;
    const float wn = ws[n];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float p = q[j] * wn;
      acc.v[j] = n == 0 ? p : acc.v[j] + p;
    }
  }
  return acc;
}

/// Whether one of v's values is inf or NaN (x * 0 is then NaN; finite values give +-0).
TG_DEVICE_INLINE bool sc_nonfinite(const ScV4& v) {
  const float t = fmaf(v.v[0], 0.f, fmaf(v.v[1], 0.f, fmaf(v.v[2], 0.f, v.v[3] * 0.f)));
  return !(t == 0.f);
}

/// One tile's march (see the top of the file) with the taps in MASK; `sm` the ring, wr the weights
/// (registers), ws the run-time weights (shared memory).
template <class G, unsigned MASK>
TG_DEVICE_INLINE void sc_march(const float* __restrict__ x, typename G::O* __restrict__ y, const StPtrs& P,
                               const StencilArgs& a, float* sm, const float (&wr)[27], const float* ws, i64 t) {
  constexpr int BX = G::CBX, BY = G::CBY, RY = G::CRY, TX = 4 * BX, TY = BY * RY, PT = TX + 8;
  constexpr int TILE = (TY + 2) * PT;
  constexpr bool EARLY = (G::CFLAGS & ScEarly) != 0;
  constexpr int NS = G::CNS, D = NS - (EARLY ? 3 : 4);  // ring planes, planes in flight
  constexpr int HALO = 2 * (BX + 2) + 2 * TY;  // copies of the halo: top and bottom rows, sides
  constexpr int NQ = RY + 1;                   // copies a thread: its RY rows, a piece of the halo
  constexpr bool CHK = MASK != ScAll;          // taps left out: checks and refolds
  static_assert(D >= 1 && BX * BY >= HALO, "a plane in flight at least; a halo copy a thread at most");
  constexpr int F = G::CFLAGS;
  const float boundary = from_bits<float>(a.boundary);
  const int tid = static_cast<int>(threadIdx.x), tx = tid % BX, ty = tid / BX;
  // Lanes tid - 1 / tid + 1 hold the thread's x neighbours (ScShuffle).
  const bool lo = (tid & 31) != 0 && tx != 0, hi = (tid & 31) != 31 && tx != BX - 1;
  const unsigned long long pol = (F & ScEvictInner) != 0 ? sc_evict_first_policy() : 0ull;
  const i64 nz = a.in[1], ny = a.in[2], nx = a.in[3];

  // Tile t: x tile, y tile, z run, and the (batch, d0) volume.
  const unsigned u = static_cast<unsigned>(t);
  const unsigned tiles0 = static_cast<unsigned>(a.tiles[0]), tiles1 = static_cast<unsigned>(a.tiles[1]),
                 tiles2 = static_cast<unsigned>(a.tiles[2]);
  const unsigned q0 = u / tiles0, q1 = q0 / tiles1, vol = q1 / tiles2;
  const i64 x0 = static_cast<i64>(u - q0 * tiles0) * TX, y0 = static_cast<i64>(q0 - q1 * tiles1) * TY;
  const i64 z0 = static_cast<i64>(q1 - vol * tiles2) * a.zc;
  const int zn = static_cast<int>(nz - z0 < a.zc ? nz - z0 : a.zc), np = zn + 2;
  const float* src = x + static_cast<i64>(vol) * nz * ny * nx;

  // This thread's copies (q < RY: its output rows; q == RY: a piece of the halo): the shared
  // offset, the source row (boundary-mapped; -1 the boundary value) and first column (the offset
  // in a plane for a whole copy), and the kind (2 bits each: 0 none, 1 a 16-byte copy, 2 element
  // by element, mapped, 3 the boundary value).
  int c_sm[NQ], c_row[NQ], c_col[NQ];
  unsigned kinds = 0, inner = 0;  // inner bit q: copy q is of a row no neighbour's halo reads
#pragma unroll
  for (int q = 0; q < NQ; ++q) {
    int r = 0, c = 0;  // shared row and column of the copy (column 4: the tile's first)
    bool has = true;
    if (q < RY) {
      r = ty * RY + q + 1, c = 4 + 4 * tx;
      if (r > 1 && r < TY) inner |= 1u << q;
    } else if (tid < BX + 2) {
      r = 0, c = 4 * tid;
    } else if (tid < 2 * (BX + 2)) {
      r = TY + 1, c = 4 * (tid - BX - 2);
    } else if (tid < HALO) {
      const int s = tid - 2 * (BX + 2);
      r = 1 + s % TY, c = s < TY ? 0 : 4 + TX;
    } else {
      has = false;
    }
    c_sm[q] = r * PT + c;
    const i64 gy = st_boundary_index<G::M>(y0 - 1 + r, ny), col = x0 - 4 + c;
    const unsigned kind = !has ? 0u : gy < 0 ? 3u : col >= 0 && col + 4 <= nx ? 1u : 2u;
    c_row[q] = static_cast<int>(gy);
    c_col[q] = static_cast<int>(kind == 1 ? gy * nx + col : col);
    kinds |= kind << (2 * q);
  }
  // Issues plane j of the run (source plane z0 - 1 + j) into ring slot `at`; one commit group a
  // plane (empty past the run).
  auto issue = [&](int j, int at) {
    if (j < np) {
      float* buf = sm + at * TILE;
      const i64 cz = st_boundary_index<G::M>(z0 - 1 + j, nz);
      const float* plane = src + (cz < 0 ? 0 : cz) * ny * nx;
#pragma unroll
      for (int q = 0; q < NQ; ++q) {
        const unsigned kind = (kinds >> (2 * q)) & 3u;
        float* d = buf + c_sm[q];
        if (kind == 0) continue;
        if (kind == 1 && cz >= 0) {
          sc_copy16<F>(d, plane + c_col[q], ((inner >> q) & 1u) != 0, pol);
        } else if (kind == 3 || cz < 0) {
          ScV4 b;
          b.v[0] = b.v[1] = b.v[2] = b.v[3] = boundary;
          *reinterpret_cast<ScV4*>(d) = b;
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const i64 gx = st_boundary_index<G::M>(c_col[q] + e, nx);
            if (gx < 0) {
              d[e] = boundary;
            } else {
              st_cp_async<4>(d + e, plane + static_cast<i64>(c_row[q]) * nx + gx);
            }
          }
        }
      }
    }
    st_cp_commit();
  };
  // The thread's outputs: rows y0 + ty RY + r, columns x0 + 4 tx ..; stored where inside the result.
  const bool cols_in = x0 + 4 * tx < nx;
  const i64 row0 = y0 + ty * RY;
  const int at = ty * RY * PT + 4 + 4 * tx;  // the thread's first column of row y - 1 in a plane
  i64 o = ((static_cast<i64>(vol) * nz + z0) * ny + row0) * nx + x0 + 4 * tx;
  const i64 plane_out = ny * nx;
  auto put = [&](const ScV4 (&v)[RY]) {
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      if (cols_in && row0 + r < ny) {
        if constexpr (G::PLAIN_STORE) {
          sc_put4<(F & ScStream) != 0>(reinterpret_cast<float*>(y + o + r * nx), v[r]);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) G::store(y, P, o + r * nx + e, v[r].v[e]);
        }
      }
    }
    o += plane_out;
  };
  // Output rows of planes (p0, p1, p2) (thread-relative pointers) folded over MASK; a zero result
  // folded again over every tap (its sign).
  auto fold = [&](ScV4 (&v)[RY], const float* p0, const float* p1, const float* p2) {
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      constexpr bool SH = (F & ScShuffle) != 0 && MASK != ScAll;  // every tap: 18 shuffles a row spill
      if constexpr (MASK == ScAll && !G::CONST_W && !G::UNIT_W) {
        // weights of no known pattern
        v[r] = sc_fold<ScAll, PT, SH>(p0 + r * PT, p1 + r * PT, p2 + r * PT, ws, lo, hi);
      } else {
        v[r] = sc_fold<MASK, PT, SH>(p0 + r * PT, p1 + r * PT, p2 + r * PT, wr, lo, hi);
      }
      if (CHK) {
        const float m = fminf(fminf(fabsf(v[r].v[0]), fabsf(v[r].v[1])), fminf(fabsf(v[r].v[2]), fabsf(v[r].v[3])));
        if (m == 0.f) v[r] = sc_fold_exact<PT>(p0 + r * PT, p1 + r * PT, p2 + r * PT, ws);
      }
    }
  };
  auto refold = [&](ScV4 (&v)[RY], const float* p0, const float* p1, const float* p2) {
#pragma unroll
    for (int r = 0; r < RY; ++r) v[r] = sc_fold_exact<PT>(p0 + r * PT, p1 + r * PT, p2 + r * PT, ws);
  };

  if constexpr (EARLY) {
    // Each thread checks its copies of plane j before the barrier that publishes the plane, so
    // output j - 2 is folded, refolded where needed and stored at once: a ring of D + 3 planes.
    // Slots of planes j - 2 .. j (s2 .. s0) and of plane j + D (sd).
    int s0 = 0, s1 = NS - 1, s2 = NS - 2, sd = D;
#pragma unroll
    for (int j = 0; j < D; ++j) issue(j, j);
    unsigned hist = 0;  // bit k: plane j - k held an inf or NaN (CHK)
#pragma unroll 1
    for (int j = 0; j < np; ++j) {
      st_cp_wait<D - 1>();  // this thread's copies (and boundary stores) of plane j landed
      int f = 0;
      if constexpr (CHK) {
        const float* own = sm + s0 * TILE + at;
        bool nf = false;
#pragma unroll
        for (int r = 0; r < RY; ++r) nf = nf || sc_nonfinite(*reinterpret_cast<const ScV4*>(own + (r + 1) * PT));
        if (((kinds >> (2 * RY)) & 3u) != 0) {
          nf = nf || sc_nonfinite(*reinterpret_cast<const ScV4*>(sm + s0 * TILE + c_sm[RY]));
        }
        f = __syncthreads_or(nf);  // everyone's copies landed, and their checks
      } else {
        __syncthreads();
      }
      hist = (hist << 1) | static_cast<unsigned>(f != 0);
      issue(j + D, sd);  // into the slot of plane j - 3, read for the last time before this barrier
      if (j >= 2) {      // output j - 2: planes j - 2 .. j
        ScV4 v[RY];
        const float *q2 = sm + s2 * TILE + at, *q1 = sm + s1 * TILE + at, *q0 = sm + s0 * TILE + at;
        fold(v, q2, q1, q0);
        if (CHK && (hist & 7u) != 0) refold(v, q2, q1, q0);
        put(v);
      }
      s2 = s1, s1 = s0;
      s0 = s0 + 1 == NS ? 0 : s0 + 1;
      sd = sd + 1 == NS ? 0 : sd + 1;
    }
    st_cp_wait<0>();
    __syncthreads();  // the ring is free for the next tile
    return;
  }
  // Ring slots of planes j - 3 .. j (s3 .. s0) and of plane j + D (sd), advanced a plane at a time.
  int s0 = 0, s1 = NS - 1, s2 = NS - 2, s3 = NS - 3, sd = D;
#pragma unroll
  for (int j = 0; j < D; ++j) issue(j, j);
  ScV4 pend[RY];       // output j - 3 of the loop below, folded one plane before it is stored
  unsigned hist = 0;   // bit k: plane j - 1 - k held an inf or NaN (CHK)
  bool nf = false;     // this thread's copies of the last plane held one
#pragma unroll 1
  for (int j = 0; j < np; ++j) {
    st_cp_wait<D - 1>();  // this thread's copies of plane j landed
    int f = 0;
    if constexpr (CHK) {
      f = __syncthreads_or(nf);  // everyone's landed; the checks of plane j - 1
    } else {
      __syncthreads();
    }
    hist = (hist << 1) | static_cast<unsigned>(f != 0);
    issue(j + D, sd);  // into the slot of plane j - 4, read for the last time before this barrier
    const float* p0 = sm + s0 * TILE + at;
    if constexpr (CHK) {  // the thread's copies of plane j (its rows as the fold below reads them)
      nf = false;
#pragma unroll
      for (int r = 0; r < RY; ++r) nf = nf || sc_nonfinite(*reinterpret_cast<const ScV4*>(p0 + (r + 1) * PT));
      if (((kinds >> (2 * RY)) & 3u) != 0) {
        nf = nf || sc_nonfinite(*reinterpret_cast<const ScV4*>(sm + s0 * TILE + c_sm[RY]));
      }
    }
    if (j >= 3) {  // output j - 3: planes j - 3 .. j - 1, their checks known
      if (CHK && (hist & 7u) != 0) refold(pend, sm + s3 * TILE + at, sm + s2 * TILE + at, sm + s1 * TILE + at);
      put(pend);
    }
    if (j >= 2) fold(pend, sm + s2 * TILE + at, sm + s1 * TILE + at, p0);  // output j - 2
    s3 = s2, s2 = s1, s1 = s0;
    s0 = s0 + 1 == NS ? 0 : s0 + 1;
    sd = sd + 1 == NS ? 0 : sd + 1;
  }
  // The last output (planes np - 3 .. np - 1, now in slots s3 .. s1).
  int f = 0;
  if constexpr (CHK) {
    f = __syncthreads_or(nf);
  }
  hist = (hist << 1) | static_cast<unsigned>(f != 0);
  if (CHK && (hist & 7u) != 0) refold(pend, sm + s3 * TILE + at, sm + s2 * TILE + at, sm + s1 * TILE + at);
  put(pend);
  st_cp_wait<0>();
  __syncthreads();  // the ring is free for the next tile
}

/// The column march's kernel body: tiles blockIdx.x, + gridDim.x, ... of the launch.
template <class G>
TG_DEVICE_INLINE void stencil_column(const typename G::X* __restrict__ x, const typename G::T* __restrict__ w,
                                     typename G::O* __restrict__ y, const StPtrs& P, const StencilArgs& a) {
  static_assert(G::W0 == 1 && G::WZ == 3 && G::WY == 3 && G::WX == 3 && G::R == 0, "3x3x3 sums");
  constexpr int TX = 4 * G::CBX, TY = G::CBY * G::CRY, PT = TX + 8, TILE = (TY + 2) * PT;
  alignas(16) __shared__ float sm[G::CNS * TILE];
  __shared__ float ws[27];  // the weights (read after the march's first barrier)
  const float* xs = reinterpret_cast<const float*>(x);
  float wr[27];
  if constexpr (G::CONST_W || G::UNIT_W) {
#pragma unroll
    for (int n = 0; n < 27; ++n) wr[n] = G::UNIT_W ? 1.f : static_cast<float>(G::weight(n));
    if (threadIdx.x < 27) ws[threadIdx.x] = G::UNIT_W ? 1.f : static_cast<float>(G::weight(threadIdx.x));
    constexpr unsigned M = G::UNIT_W || G::CMASK == 0 ? ScAll : G::CMASK;  // the non-zero weights
    for (i64 t = blockIdx.x; t < a.total_tiles; t += gridDim.x) sc_march<G, M>(xs, y, P, a, sm, wr, ws, t);
  } else {
    // Weights read at run time: the star when every other weight is +-0 (the same in every block).
    bool star = true;
#pragma unroll
    for (int n = 0; n < 27; ++n) {
      const float wn = cv(w[n]);
      if (sc_star(n)) wr[n] = wn;  // the star's weights in registers
      if (!sc_star(n)) star = star && wn == 0.f;
    }
    if (threadIdx.x < 27) ws[threadIdx.x] = cv(w[threadIdx.x]);
    for (i64 t = blockIdx.x; t < a.total_tiles; t += gridDim.x) {
      if (star) {
        sc_march<G, ScStar>(xs, y, P, a, sm, wr, ws, t);
      } else {
        sc_march<G, ScAll>(xs, y, P, a, sm, wr, ws, t);
      }
    }
  }
}

}  // namespace tg_dev
