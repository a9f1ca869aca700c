// Device code of the generated stencil kernels (NVRTC; the host side is backends/cuda/stencil.cpp,
// which writes a `struct tg_st_cfg` of compile-time constants and instantiates tg_dev::stencil_tiles
// with it). Semantics are backends/cpu/stencil.cpp's, bit for bit: each output folds its window's
// taps v = x * w in row-major window order (the first tap starts the result; sum and product
// round after every step, no FMA contraction; min/max/argmin/argmax: a strictly better value
// replaces, a NaN beats a number, so ties keep the first tap); f16/bf16 compute in float and
// round once; integers wrap.
//
// Geometry: every window is padded to 4 dims (d0, z, y, x; leading dims of size 1); the source is
// [batch, in0, inz, iny, inx] and the result [batch, out0, outz, outy, outx]. A tile is TX x TY
// outputs of the (y, x) plane for RZ consecutive z outputs: for each tap of d0 and each input
// plane the z outputs need (EZ of them), the block loads the plane's (EY x EX) input tile with its
// halo into shared memory once (coalesced rows; the boundary mode is applied only while loading a
// tile that leaves the source, interior tiles read directly; the next plane's loads are in flight
// while the current one is folded), then each thread folds the taps of its RY outputs
// (consecutive y) of every z output that reads the plane, reusing each shared value it loads for
// all of them. A block walks several tiles (grid-stride), so the loads of the next tile overlap
// the fold of the current one. Window, strides, dilations, tile shape, reduction,
// boundary mode and dtype are compile-time constants (the loops unroll, tap conditions fold);
// sizes come at launch (one kernel serves every size). Unit weights (max pooling) skip the
// multiply: x * 1 == x exactly.
//
// Fusion (fused_stencil): every source element is read through G::load (a fused_stencil's
// prologue program on its inputs at that index; plain x[i] otherwise) and every result written
// through G::store (the epilogue program), so the stages' values never go through memory.
// Constant weights (G::CONST_W) come from G::weight(n). A sum with constant weights skips the taps
// of weight +-0 (G::zero_w) where that cannot change a result: a left fold of additions ends in -0
// exactly when every term is -0, and a finite source times 0 is a zero, so skipping changes
// nothing unless a skipped tap reads a non-finite value (the tile's planes are checked as they
// are staged: __syncthreads_or, one flag a plane; then every output of the tile is folded again
// over every tap, reading the source: st_exact) or the result is -0 (that output is folded
// again). The refolds run after the tile's stores, when the accumulators are dead.
#pragma once
#include "elementwise.cuh"

namespace tg_dev {

/// Pointers of a fused_stencil's other inputs (prologue inputs after the first, epilogue inputs),
/// read by the generated G::load / G::store.
struct StPtrs {
  const void* p[16];
};

/// Sizes of one launch (padded to 4 window dims, index 0 outermost, 3 = x).
struct StencilArgs {
  i64 batch;
  i64 in[4], out[4], before[4];
  i64 tiles[3];        ///< tiles along x, y and z (z: chunks of RZ outputs)
  i64 total_tiles;     ///< batch * out[0] * tiles[2] * tiles[1] * tiles[0]
  long long boundary;  ///< bits of the boundary value in the compute type (zero/constant modes)
  /// total_tiles < 2^31: tile indices are split by multiply-high and shift (div_m, div_s: the
  /// magic numbers of tiles[0], tiles[1], tiles[2], out[0]; Granlund-Montgomery round-up).
  int small;
  unsigned div_m[4], div_s[4];
};

/// n / d for 0 <= n, d < 2^31 by the magic numbers (m, s) of d: exact, no overflow.
TG_DEVICE_INLINE unsigned st_div(unsigned n, unsigned m, unsigned s) {
  return static_cast<unsigned>((static_cast<u64>(__umulhi(n, m)) + n) >> s);
}

/// ops::boundary_index for mode M (0 zero, 1 constant, 2 reflect, 3 symmetric, 4 clamp_to_edge,
/// 5 periodic): the source index that coordinate p reads, or -1 for the boundary value.
template <int M>
TG_DEVICE_INLINE i64 st_boundary_index(i64 p, i64 n) {
  if (p >= 0 && p < n) return p;
  if (M == 0 || M == 1) return -1;
  if (M == 4) return p < 0 ? 0 : n - 1;
  if (M == 5) {
    const i64 r = p % n;
    return r < 0 ? r + n : r;
  }
  if (M == 3) {
    i64 q = p % (2 * n);
    if (q < 0) q += 2 * n;
    return q < n ? q : 2 * n - 1 - q;
  }
  // reflect
  if (n == 1) return 0;
  i64 q = p % (2 * n - 2);
  if (q < 0) q += 2 * n - 2;
  return q < n ? q : 2 * n - 2 - q;
}

template <bool B>
struct st_bool {
  static constexpr bool value = B;
};

template <class C>
TG_DEVICE_INLINE bool st_signbit(C v) {
  if constexpr (Num<C>::is_float) {
    return C(1) / v < C(0);  // v is a zero here: 1 / -0 = -inf
  } else {
    return false;
  }
}

template <class C>
TG_DEVICE_INLINE C st_mul(C a, C b) {
  if constexpr (Num<C>::is_int) {
    return static_cast<C>(static_cast<u64>(a) * static_cast<u64>(b));
  } else {
    return a * b;  // no contraction (--fmad=false)
  }
}
template <class C>
TG_DEVICE_INLINE C st_add(C a, C b) {
  if constexpr (Num<C>::is_int) {
    return static_cast<C>(static_cast<u64>(a) + static_cast<u64>(b));
  } else {
    return a + b;
  }
}
template <bool kMax, class C>
TG_DEVICE_INLINE bool st_better(C v, C best) {
  const bool beats = kMax ? v > best : v < best;
  if (Num<C>::is_float) return beats || (v != v && best == best);
  return beats;
}

/// Folds tap value v (window tap n) into (acc, at) under reduction R (0 sum, 1 product, 2 min,
/// 3 max, 4 argmin, 5 argmax).
template <int R, class C>
TG_DEVICE_INLINE void st_fold(C& acc, int& at, C v, int n) {
  if (n == 0) {
    acc = v;
    at = 0;
  } else if (R == 0) {
    acc = st_add(acc, v);
  } else if (R == 1) {
    acc = st_mul(acc, v);
  } else {
    if (st_better<(R == 3 || R == 5)>(v, acc)) {
      acc = v;
      at = n;
    }
  }
}

/// Whether v is inf or NaN (a skipped zero-weight tap would have made the result NaN).
template <class C>
TG_DEVICE_INLINE bool st_nonfinite(C v) {
  if constexpr (Num<C>::is_float) {
    return !(v - v == C(0));
  } else {
    return false;
  }
}

/// Loads the (EY x EX) input tile at rows iy0.., columns ix0.. of plane (c0, cz) of the source
/// block starting at element `block` of x into `tile` (every thread of the block takes part);
/// returns whether this thread stored a non-finite value. Not inlined: the fold loops around it
/// unroll over the planes.
template <class G, class T, class C>
__noinline__ bool st_load_tile(T* tile, const typename G::X* __restrict__ x, const StPtrs& P, i64 block, i64 c0,
                               i64 cz, i64 inz, i64 iny, i64 inx, i64 iy0, i64 ix0, bool plane_inside, C boundary,
                               int tid) {
  constexpr int TX = G::BX, TY = G::BY * G::RY, NT = G::BX * G::BY;
  constexpr int EX = (TX - 1) * G::SX + (G::WX - 1) * G::DX + 1;
  constexpr int EY = (TY - 1) * G::SY + (G::WY - 1) * G::DY + 1;
  bool nf = false;
  if (c0 < 0 || cz < 0) {
    for (int e = tid; e < EY * EX; e += NT) tile[e] = st<T>(boundary);
    return st_nonfinite(boundary);
  }
  const i64 plane = block + (c0 * inz + cz) * iny * inx;
  if (plane_inside) {
    const i64 p0 = plane + iy0 * inx + ix0;
    for (int e = tid; e < EY * EX; e += NT) {
      const int r = e / EX, c = e - r * EX;
      tile[e] = G::load(x, P, p0 + r * inx + c);
      if (G::SKIP) nf = nf || st_nonfinite(cv(tile[e]));
    }
  } else {
    for (int e = tid; e < EY * EX; e += NT) {
      const int r = e / EX, c = e - r * EX;
      const i64 gy = st_boundary_index<G::M>(iy0 + r, iny);
      const i64 gx = st_boundary_index<G::M>(ix0 + c, inx);
      tile[e] = (gy < 0 || gx < 0) ? st<T>(boundary) : G::load(x, P, plane + gy * inx + gx);
      if (G::SKIP) nf = nf || st_nonfinite(cv(tile[e]));
    }
  }
  return nf;
}

/// Output (b, o0, oz, oy, ox) folded over every tap in order, reading the source through G::load
/// (the boundary mode applied per tap): the exact result where skipping zero-weight taps may not
/// be. Inlined (a call would make the caller spill its accumulators).
template <class G, class C>
TG_DEVICE_INLINE C st_exact(const typename G::X* __restrict__ x, const StPtrs& P, const StencilArgs& a, i64 b,
                            i64 o0, i64 oz, i64 oy, i64 ox, C boundary) {
  const i64 o[4] = {o0, oz, oy, ox};
  const int W[4] = {G::W0, G::WZ, G::WY, G::WX};
  const int S[4] = {G::S0, G::SZ, G::SY, G::SX}, D[4] = {G::D0, G::DZ, G::DY, G::DX};
  const i64 block = b * a.in[0] * a.in[1] * a.in[2] * a.in[3];
  C acc = C(0);
  int at = 0;
  constexpr int WIN = G::W0 * G::WZ * G::WY * G::WX;
#pragma unroll 1
  for (int n = 0; n < WIN; ++n) {
    int rest = n, t[4];
    for (int i = 3; i >= 0; --i) {
      t[i] = rest % W[i];
      rest /= W[i];
    }
    i64 off = 0;
    bool outside = false;
    for (int i = 0; i < 4; ++i) {
      const i64 c = st_boundary_index<G::M>(o[i] * S[i] + t[i] * D[i] - a.before[i], a.in[i]);
      outside = outside || c < 0;
      off = off * a.in[i] + (c < 0 ? 0 : c);
    }
    const C v = outside ? boundary : cv(G::load(x, P, block + off));
    st_fold<G::R>(acc, at, st_mul(v, G::weight(n)), n);
  }
  return acc;
}

/// Where tile t of a launch lies (see stencil_tiles).
struct StTile {
  i64 b, o0, ox0, oy0, oz0, ix0, iy0, iz0;
  bool inside;  ///< the (y, x) input tile lies inside the source plane
};

template <class G>
TG_DEVICE_INLINE StTile st_tile(const StencilArgs& a, i64 t) {
  constexpr int TX = G::BX, TY = G::BY * G::RY;
  constexpr int EX = (TX - 1) * G::SX + (G::WX - 1) * G::DX + 1;
  constexpr int EY = (TY - 1) * G::SY + (G::WY - 1) * G::DY + 1;
  StTile r;
  i64 tix, tiy, tiz;
  if (a.small) {  // 32-bit magic divisions (64-bit ones cost ~100 instructions each)
    const unsigned u = static_cast<unsigned>(t);
    const unsigned q0 = st_div(u, a.div_m[0], a.div_s[0]);
    const unsigned q1 = st_div(q0, a.div_m[1], a.div_s[1]);
    const unsigned q2 = st_div(q1, a.div_m[2], a.div_s[2]);
    const unsigned q3 = st_div(q2, a.div_m[3], a.div_s[3]);
    tix = u - q0 * static_cast<unsigned>(a.tiles[0]);
    tiy = q0 - q1 * static_cast<unsigned>(a.tiles[1]);
    tiz = q1 - q2 * static_cast<unsigned>(a.tiles[2]);
    r.o0 = q2 - q3 * static_cast<unsigned>(a.out[0]);
    r.b = q3;
  } else {
    tix = t % a.tiles[0];
    t /= a.tiles[0];
    tiy = t % a.tiles[1];
    t /= a.tiles[1];
    tiz = t % a.tiles[2];
    t /= a.tiles[2];
    r.o0 = t % a.out[0];
    r.b = t / a.out[0];
  }
  r.ox0 = tix * TX;
  r.oy0 = tiy * TY;
  r.oz0 = tiz * G::RZ;
  r.ix0 = r.ox0 * G::SX - a.before[3];
  r.iy0 = r.oy0 * G::SY - a.before[2];
  r.iz0 = r.oz0 * G::SZ - a.before[1];
  r.inside = r.ix0 >= 0 && r.ix0 + EX <= a.in[3] && r.iy0 >= 0 && r.iy0 + EY <= a.in[2];
  return r;
}

/// The kernel body (see the top). G: the configuration struct the host generates, with
/// T (source storage), C (compute), Y (the stencil's result storage: int for argmin/argmax),
/// X (storage of the kernel input x), O (of the output y), R, M, UNIT_W, CONST_W, SKIP,
/// W[4], S[4], D[4] (window, strides, dilations), BX, BY (threads: x, y), RY, RZ, and
/// load(x, P, i) (source element i), store(y, P, o, v) (result o), weight(n), zero_w(n).
///
/// A block walks its tiles (t = blockIdx.x, + gridDim.x, ...) and each tile's planes (tap t0 of
/// d0, input plane iz of the z chunk) as one stream through two shared buffers: while the block
/// folds plane q from one buffer, each thread's loads of plane q + 1 (the next tile's first plane
/// after a tile's last) are in flight into registers and then stored to the other buffer, one
/// barrier a plane. Planes whose tile leaves the source, or that read the boundary value, are
/// loaded by st_load_tile instead (mapped through the boundary mode).
template <class G>
TG_DEVICE_INLINE void stencil_tiles(const typename G::X* __restrict__ x,
                                    const typename G::T* __restrict__ w,
                                    typename G::O* __restrict__ y, const StPtrs& P, const StencilArgs& a) {
  typedef typename G::T T;
  typedef typename G::C C;
  constexpr int W0 = G::W0, WZ = G::WZ, WY = G::WY, WX = G::WX;
  constexpr int SZ = G::SZ, SY = G::SY, SX = G::SX;
  constexpr int DZ = G::DZ, DY = G::DY, DX = G::DX;
  constexpr int BX = G::BX, BY = G::BY, RY = G::RY, RZ = G::RZ;
  constexpr int TX = BX, TY = BY * RY, NT = BX * BY;
  constexpr int EX = (TX - 1) * SX + (WX - 1) * DX + 1;   // tile input columns
  constexpr int EY = (TY - 1) * SY + (WY - 1) * DY + 1;   // tile input rows
  constexpr int EZ = (RZ - 1) * SZ + (WZ - 1) * DZ + 1;   // input planes of one z chunk
  constexpr int ERY = (RY - 1) * SY + (WY - 1) * DY + 1;  // input rows of one thread
  constexpr int WIN = W0 * WZ * WY * WX;
  constexpr int TILE = EY * EX;
  constexpr int PER = (TILE + NT - 1) / NT;  // tile elements a thread loads
  __shared__ T tiles[2 * TILE];

  if (static_cast<i64>(blockIdx.x) >= a.total_tiles) return;
  const C boundary = from_bits<C>(a.boundary);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % BX, ty = tid / BX;

  // Weights in registers (compile-time indices after unrolling).
  C wr[WIN];
#pragma unroll
  for (int n = 0; n < WIN; ++n) wr[n] = G::UNIT_W ? C(1) : G::CONST_W ? G::weight(n) : cv(w[n]);

  const i64 in0 = a.in[0], inz = a.in[1], iny = a.in[2], inx = a.in[3];
  const i64 out0 = a.out[0], outz = a.out[1], outy = a.out[2], outx = a.out[3];
  const i64 block_in = in0 * inz * iny * inx;
  const i64 step = gridDim.x;

  // The source plane (c0, cz) of tap t0 / input plane iz of tile g, or -1 for the boundary.
  auto coords = [&](const StTile& g, int t0, int iz, i64& c0, i64& cz) {
    c0 = st_boundary_index<G::M>(g.o0 * G::S0 + t0 * G::D0 - a.before[0], in0);
    cz = st_boundary_index<G::M>(g.iz0 + iz, inz);
  };
  // Start of the tile's input rows in plane (c0, cz) (direct reads: an inside tile, c0, cz >= 0).
  auto origin = [&](const StTile& g, i64 c0, i64 cz) {
    return g.b * block_in + (c0 * inz + cz) * iny * inx + g.iy0 * inx + g.ix0;
  };
  // Loads plane (t0, iz) of tile g into buf synchronously (any plane); whether this thread stored
  // a non-finite value.
  auto load_now = [&](T* buf, const StTile& g, int t0, int iz) {
    i64 c0, cz;
    coords(g, t0, iz, c0, cz);
    return st_load_tile<G>(buf, x, P, g.b * block_in, c0, cz, inz, iny, inx, g.iy0, g.ix0, g.inside, boundary,
                           tid);
  };
  // One barrier a plane; with zero-tap skipping it also tells whether the staged plane holds a
  // non-finite value (then that plane folds every tap).
  auto barrier = [&](bool nf) {
    if constexpr (G::SKIP) {
      return __syncthreads_or(nf ? 1 : 0) != 0;
    } else {
      __syncthreads();
      return false;
    }
  };

  i64 t = blockIdx.x;
  StTile g = st_tile<G>(a, t);
  bool plane_nf = barrier(load_now(tiles, g, 0, 0));
  bool tile_nf = false;  // some plane of the current tile held an inf or NaN
  int cur = 0;
  for (; t < a.total_tiles; t += step) {
    const bool has_next_tile = t + step < a.total_tiles;
    StTile gn = g;  // the next tile (made at the tile's last plane)
    C acc[RZ][RY];
    int at[RZ][RY];
#pragma unroll
    for (int rz = 0; rz < RZ; ++rz) {
#pragma unroll
      for (int ry = 0; ry < RY; ++ry) {
        acc[rz][ry] = G::SKIP ? C(-0.0) : C(0);  // skipping sums add every tap to -0 (exact)
        at[rz][ry] = 0;
      }
    }
#pragma unroll
    for (int t0 = 0; t0 < W0; ++t0) {
#pragma unroll
      for (int iz = 0; iz < EZ; ++iz) {
        // The next plane of the stream.
        const bool last = t0 == W0 - 1 && iz == EZ - 1;
        const bool has_next = !last || has_next_tile;
        if (last && has_next_tile) gn = st_tile<G>(a, t + step);
        const StTile& nx = last ? gn : g;
        const int nt0 = last ? 0 : (iz == EZ - 1 ? t0 + 1 : t0), niz = last ? 0 : (iz == EZ - 1 ? 0 : iz + 1);
        i64 nc0 = -1, ncz = -1;
        if (has_next) coords(nx, nt0, niz, nc0, ncz);
        const bool direct = has_next && nx.inside && nc0 >= 0 && ncz >= 0;
        T pre[PER];
        if (direct) {
          const i64 p0 = origin(nx, nc0, ncz);
#pragma unroll
          for (int q = 0; q < PER; ++q) {
            const int e = tid + q * NT;
            if (e < TILE) {
              const int r = e / EX, c = e - r * EX;
              pre[q] = G::load(x, P, p0 + r * inx + c);
            }
          }
        }
        // Fold the current plane into every (rz, ry) output that reads it, taps in row-major
        // order (skipping sums leave out the taps of weight 0; see the top).
        tile_nf = tile_nf || plane_nf;
        const T* base = tiles + cur * TILE + (ty * RY * SY) * EX + tx * SX;
#pragma unroll
        for (int iy = 0; iy < ERY; ++iy) {
#pragma unroll
          for (int jx = 0; jx < WX; ++jx) {
            bool used = false;  // whether any output of this thread folds this value
#pragma unroll
            for (int rz = 0; rz < RZ; ++rz) {
              const int dz = iz - rz * SZ;
              if (dz < 0 || dz % DZ != 0 || dz / DZ >= WZ) continue;
#pragma unroll
              for (int ry = 0; ry < RY; ++ry) {
                const int dy = iy - ry * SY;
                if (dy < 0 || dy % DY != 0 || dy / DY >= WY) continue;
                used = used || !(G::SKIP && G::zero_w(((t0 * WZ + dz / DZ) * WY + dy / DY) * WX + jx));
              }
            }
            if (!used) continue;
            const C v = cv(base[iy * EX + jx * DX]);
#pragma unroll
            for (int rz = 0; rz < RZ; ++rz) {
              const int dz = iz - rz * SZ;
              if (dz < 0 || dz % DZ != 0 || dz / DZ >= WZ) continue;
              const int tz = dz / DZ;
#pragma unroll
              for (int ry = 0; ry < RY; ++ry) {
                const int dy = iy - ry * SY;
                if (dy < 0 || dy % DY != 0 || dy / DY >= WY) continue;
                const int n = ((t0 * WZ + tz) * WY + dy / DY) * WX + jx;
                if (G::SKIP && G::zero_w(n)) continue;
                const C p = G::UNIT_W ? v : st_mul(v, wr[n]);
                if (G::SKIP) {
                  acc[rz][ry] = st_add(acc[rz][ry], p);
                } else {
                  st_fold<G::R>(acc[rz][ry], at[rz][ry], p, n);
                }
              }
            }
          }
        }
        // Stage the next plane in the other buffer (nobody reads it: the barrier after the
        // previous plane's fold has passed).
        T* other = tiles + (cur ^ 1) * TILE;
        bool nf = false;
        if (direct) {
#pragma unroll
          for (int q = 0; q < PER; ++q) {
            const int e = tid + q * NT;
            if (e < TILE) {
              other[e] = pre[q];
              if (G::SKIP) nf = nf || st_nonfinite(cv(pre[q]));
            }
          }
        } else if (has_next) {
          nf = load_now(other, nx, nt0, niz);
        }
        plane_nf = barrier(nf);
        cur ^= 1;
      }
    }
    // Store. Skipping sums mark the outputs that came out -0 (bit rz * RY + ry) and fold them
    // again over every tap afterwards (all of the tile's outputs when a plane held an inf or NaN),
    // once the accumulators are dead.
    const i64 ox = g.ox0 + tx;
    unsigned long long refold = 0;
    if (ox < outx) {
#pragma unroll
      for (int rz = 0; rz < RZ; ++rz) {
        const i64 oz = g.oz0 + rz;
        if (oz >= outz) continue;
#pragma unroll
        for (int ry = 0; ry < RY; ++ry) {
          const i64 oy = g.oy0 + ty * RY + ry;
          if (oy >= outy) continue;
          const i64 o = (((g.b * out0 + g.o0) * outz + oz) * outy + oy) * outx + ox;
          if constexpr (G::R >= 4) {
            G::store(y, P, o, static_cast<typename G::Y>(at[rz][ry]));
          } else {
            const C r = acc[rz][ry];
            if constexpr (G::SKIP) {
              if (tile_nf || (r == C(0) && st_signbit(r))) refold |= 1ull << (rz * RY + ry);
            }
            G::store(y, P, o, st<typename G::Y>(r));
          }
        }
      }
    }
    if constexpr (G::SKIP) {
      static_assert(RZ * RY <= 64, "one refold bit an output");
      if (refold != 0) {
#pragma unroll 1
        for (int k = 0; k < RZ * RY; ++k) {
          if (!((refold >> k) & 1)) continue;
          const i64 oz = g.oz0 + k / RY, oy = g.oy0 + ty * RY + k % RY;
          const i64 o = (((g.b * out0 + g.o0) * outz + oz) * outy + oy) * outx + ox;
          G::store(y, P, o, st<typename G::Y>(st_exact<G>(x, P, a, g.b, g.o0, oz, oy, ox, boundary)));
        }
      }
      tile_nf = false;
    }
    g = gn;
  }
}

}  // namespace tg_dev
