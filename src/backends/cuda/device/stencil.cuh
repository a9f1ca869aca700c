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
// the fold of the current one. Windows along z can march instead (G::MARCH): a tile is a run of
// z outputs, its planes streamed once each through the ring and each folded into the WZ outputs
// that read it (the accumulators of WZ outputs rotate), so every source element is read once a
// tile. With plain loads of 4- and 8-byte types (no prologue) the planes
// come through a ring of NS shared-memory buffers filled by cp.async (16-byte copies of aligned
// row pieces where the rows allow, CW elements each), NS - 1 planes in flight while one is folded
// and no registers held for them. Window, strides, dilations, tile shape, reduction,
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
// nothing unless a skipped tap reads a non-finite value (each thread sums the values of a plane
// that its outputs' taps read, skipped ones included, and checks the sum: an inf or NaN there,
// or a finite overflow, folds every output of the thread again over every tap, reading the
// source: st_exact) or the result is -0 (that output is folded again). The refolds run after the tile's stores, when the accumulators are dead. Sums of a
// floating type with weights read at run time do the same (G::RSKIP): which weights are +-0 is
// read at launch (zmask, the same in every thread), each tap is a block-uniform branch, and the
// same checks and refolds keep the results exact (a 7-point stencil in a 3x3x3 window folds 7 taps,
// not 27).
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
  i64 zc;  ///< z outputs a tile (G::MARCH; else G::RZ)
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

/// The sign bit of v (C: float or double; a bit test, not a division).
template <class C>
TG_DEVICE_INLINE bool st_signbit(C v) {
  if constexpr (sizeof(C) == 8 && Num<C>::is_float) {
    return __double_as_longlong(static_cast<double>(v)) < 0;
  } else if constexpr (Num<C>::is_float) {
    return (__float_as_uint(static_cast<float>(v)) >> 31) != 0;
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
/// 3 max, 4 argmin, 5 argmax). NONAN: the caller knows that no value is NaN (min/max/argmin/argmax
/// then compare only: st_better without its NaN term).
template <int R, bool NONAN = false, class C>
TG_DEVICE_INLINE void st_fold(C& acc, int& at, C v, int n) {
  if (n == 0) {
    acc = v;
    at = 0;
  } else if (R == 0) {
    acc = st_add(acc, v);
  } else if (R == 1) {
    acc = st_mul(acc, v);
  } else {
    if (NONAN ? ((R == 3 || R == 5) ? v > acc : v < acc) : st_better<(R == 3 || R == 5)>(v, acc)) {
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

#ifndef TG_ST_LOAD_BATCH
#define TG_ST_LOAD_BATCH 4
#endif
/// Loads of a tile st_load_tile keeps in flight a thread (more makes the fold around it spill).
constexpr int StLoadBatch = TG_ST_LOAD_BATCH;

/// Loads the (EY x EX) input tile at rows iy0.., columns ix0.. of plane (c0, cz) of the source
/// block starting at element `block` of x into `tile` (element (r, c) at tile[r * PITCH + sh + c];
/// every thread of the block takes part). Not inlined: the fold loops around it unroll over the planes.
template <class G, int PITCH, class T, class C>
__noinline__ void st_load_tile(T* tile, const typename G::X* __restrict__ x, const StPtrs& P, i64 block, i64 c0,
                               i64 cz, i64 inz, i64 iny, i64 inx, i64 iy0, i64 ix0, bool plane_inside, C boundary,
                               int tid, int sh) {
  constexpr int TX = G::BX, TY = G::BY * G::RY, NT = G::BX * G::BY;
  constexpr int EX = (TX - 1) * G::SX + (G::WX - 1) * G::DX + 1;
  constexpr int EY = (TY - 1) * G::SY + (G::WY - 1) * G::DY + 1;
  if (c0 < 0 || cz < 0) {
    for (int e = tid; e < EY * EX; e += NT) {
      const int r = e / EX, c = e - r * EX;
      tile[r * PITCH + sh + c] = st<T>(boundary);
    }
    return;
  }
  const i64 plane = block + (c0 * inz + cz) * iny * inx;
  // In batches of B a thread, every load of a batch in flight before the first store.
  constexpr int B = StLoadBatch;
  for (int e0 = tid; e0 < EY * EX; e0 += B * NT) {
    T v[B];
#pragma unroll
    for (int k = 0; k < B; ++k) {
      const int e = e0 + k * NT;
      if (e < EY * EX) {
        const int r = e / EX, c = e - r * EX;
        if (plane_inside) {
          v[k] = G::load(x, P, plane + (iy0 + r) * inx + ix0 + c);
        } else {
          const i64 gy = st_boundary_index<G::M>(iy0 + r, iny);
          const i64 gx = st_boundary_index<G::M>(ix0 + c, inx);
          v[k] = (gy < 0 || gx < 0) ? st<T>(boundary) : G::load(x, P, plane + gy * inx + gx);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < B; ++k) {
      const int e = e0 + k * NT;
      if (e < EY * EX) {
        const int r = e / EX, c = e - r * EX;
        tile[r * PITCH + sh + c] = v[k];
      }
    }
  }
}

/// Asynchronous copies global -> shared of B bytes (4, 8 or 16; both addresses aligned to B), in
/// commit groups (cp.async, sm_80+). Host emulation copies at once.
template <int B>
TG_DEVICE_INLINE void st_cp_async(void* dst, const void* src) {
#ifdef TG_HOST_EMULATION
  std::memcpy(dst, src, B);
#else
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (B == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(B) : "memory");
  }
#endif
}
TG_DEVICE_INLINE void st_cp_commit() {
#ifndef TG_HOST_EMULATION
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most N of this thread's latest commit groups are pending.
template <int N>
TG_DEVICE_INLINE void st_cp_wait() {
#ifndef TG_HOST_EMULATION
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/// Output (b, o0, oz, oy, ox) folded over every tap in order, reading the source through G::load
/// (the boundary mode applied per tap): the exact result where skipping zero-weight taps may not
/// be, or where min/max folds compared without NaN checks (its tap index in `at`). Inlined (a call
/// would make the caller spill its accumulators).
template <class G, class C>
TG_DEVICE_INLINE C st_exact(const typename G::X* __restrict__ x, const typename G::T* __restrict__ w, const StPtrs& P,
                            const StencilArgs& a, i64 b, i64 o0, i64 oz, i64 oy, i64 ox, C boundary, int& at) {
  const i64 o[4] = {o0, oz, oy, ox};
  const int W[4] = {G::W0, G::WZ, G::WY, G::WX};
  const int S[4] = {G::S0, G::SZ, G::SY, G::SX}, D[4] = {G::D0, G::DZ, G::DY, G::DX};
  const i64 block = b * a.in[0] * a.in[1] * a.in[2] * a.in[3];
  C acc = C(0);
  at = 0;
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
    st_fold<G::R>(acc, at, G::UNIT_W ? v : st_mul(v, G::CONST_W ? G::weight(n) : cv(w[n])), n);
  }
  return acc;
}

/// Where tile t of a launch lies (see stencil_tiles).
struct StTile {
  i64 b, o0, ox0, oy0, oz0, ix0, iy0, iz0;
  bool inside;    ///< the (y, x) input tile lies inside the source plane
  bool inside_a;  ///< so do its rows widened to whole copies (ix0 - sh .., up to a multiple of CW)
  int sh;         ///< ix0 mod CW: where column ix0 sits in the first copy of a row
};

/// Tile geometry of config G (see stencil_tiles). The shared tile of a plane holds EY rows of
/// PITCH elements; input column ix0 + c of row r at [r * PITCH + sh + c]. With the cp.async ring
/// (G::NS >= 2) rows are copied in whole copies of CW elements from column ix0 - sh (aligned).
template <class G>
struct StGeo {
  static constexpr int TX = G::BX, TY = G::BY * G::RY, NT = G::BX * G::BY;
  static constexpr int EX = (TX - 1) * G::SX + (G::WX - 1) * G::DX + 1;       // tile input columns
  static constexpr int EY = (TY - 1) * G::SY + (G::WY - 1) * G::DY + 1;       // tile input rows
  static constexpr int EZ = (G::RZ - 1) * G::SZ + (G::WZ - 1) * G::DZ + 1;    // planes of a z chunk
  static constexpr int ERY = (G::RY - 1) * G::SY + (G::WY - 1) * G::DY + 1;   // input rows a thread
  static constexpr int WIN = G::W0 * G::WZ * G::WY * G::WX;
  static constexpr int CW = G::CW;
  static constexpr int PITCH = CW == 1 ? EX : (EX + 2 * CW - 2) / CW * CW;  // round_up(EX + CW - 1, CW)
  static constexpr int TILE = EY * PITCH;
  static constexpr int NB = G::NS < 2 ? 2 : G::NS;  // shared buffers
  /// Min/max/argmin/argmax of a floating type with unit or constant (finite) weights fold by
  /// plain comparisons: each thread checks the values its taps read (one sum a plane) and folds its
  /// outputs again exactly (st_exact) when one is NaN, or with weights also inf (inf * 0 is NaN).
  /// Weights read at run time may be inf or NaN themselves: those folds keep st_better.
  static constexpr bool NANCHK = G::R >= 2 && Num<typename G::C>::is_float && (G::UNIT_W || G::CONST_W);
  /// Whether some outputs may need st_exact: zero-tap skipping or NANCHK.
  static constexpr bool REFOLD = G::SKIP || G::RSKIP || NANCHK;
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
  r.oz0 = tiz * (G::MARCH ? a.zc : static_cast<i64>(G::RZ));
  r.ix0 = r.ox0 * G::SX - a.before[3];
  r.iy0 = r.oy0 * G::SY - a.before[2];
  r.iz0 = r.oz0 * G::SZ - a.before[1];
  r.inside = r.ix0 >= 0 && r.ix0 + EX <= a.in[3] && r.iy0 >= 0 && r.iy0 + EY <= a.in[2];
  r.sh = static_cast<int>(r.ix0 & (G::CW - 1));
  r.inside_a = r.inside && (r.ix0 + EX + G::CW - 1) / G::CW * G::CW <= a.in[3];
  return r;
}

/// Whether value (iy, jx) of a plane (rows from the thread's first) is a tap of some output
/// (rz, ry) of the thread that reads the plane as plane iz of the z chunk (whatever its weight).
template <class G>
TG_DEVICE_INLINE constexpr bool st_tap_at(int iy, int iz) {
  for (int rz = 0; rz < G::RZ; ++rz) {
    const int dz = iz - rz * G::SZ;
    if (dz < 0 || dz % G::DZ != 0 || dz / G::DZ >= G::WZ) continue;
    for (int ry = 0; ry < G::RY; ++ry) {
      const int dy = iy - ry * G::SY;
      if (dy >= 0 && dy % G::DY == 0 && dy / G::DY < G::WY) return true;
    }
  }
  return false;
}

/// Folds shared plane `base` (the thread's first value; row pitch PITCH) into every (rz, ry) output
/// of the thread that reads it, as plane iz of the z chunk for tap t0 of d0: taps in row-major
/// order (skipping sums leave out the taps of weight 0; see the top). t0 and iz are constants after
/// unrolling. Skipping sums (`skipping`) return whether a value of the plane that one of the
/// thread's taps reads (also a skipped one) is inf or NaN: one sum over those values (inf, NaN, or
/// a finite overflow, which only costs a refold), so each thread checks its own outputs and no
/// block-wide flag is needed.
template <class G, class C>
TG_DEVICE_INLINE bool st_fold_plane(C (&acc)[G::RZ][G::RY], int (&at)[G::RZ][G::RY], const typename G::T* base,
                                    const C (&wr)[StGeo<G>::WIN], const C* wsm, unsigned long long zmask,
                                    bool skipping, int t0, int iz) {
  typedef StGeo<G> K;
  constexpr int WZ = G::WZ, WY = G::WY, WX = G::WX, SZ = G::SZ, SY = G::SY, DZ = G::DZ, DY = G::DY;
  bool nf = false;
  if constexpr (K::REFOLD) {
    if (skipping || K::NANCHK) {
      C sum = C(0);
#pragma unroll
      for (int iy = 0; iy < K::ERY; ++iy) {
        if (!st_tap_at<G>(iy, iz)) continue;
#pragma unroll
        for (int jx = 0; jx < WX; ++jx) sum = st_add(sum, cv(base[iy * K::PITCH + jx * G::DX]));
      }
      // unit weights: a NaN among the values (inf - inf is NaN too); else also an inf
      nf = K::NANCHK && G::UNIT_W ? sum != sum : st_nonfinite(sum);
    }
  } else {
    (void)skipping;
  }
  if constexpr (G::RSKIP) {
    // Run-time weights, sum: tap by tap (row-major within the plane), each a block-uniform branch
    // over the taps of weight 0 (bit n of zmask), the thread's RY outputs inside it; the weights
    // from shared memory (wsm: registers would spill).
#pragma unroll
    for (int rz = 0; rz < G::RZ; ++rz) {
      const int dz = iz - rz * SZ;
      if (dz < 0 || dz % DZ != 0 || dz / DZ >= WZ) continue;
#pragma unroll
      for (int ty = 0; ty < WY; ++ty) {
#pragma unroll
        for (int jx = 0; jx < WX; ++jx) {
          const int n = ((t0 * WZ + dz / DZ) * WY + ty) * WX + jx;
          if ((zmask >> n) & 1) continue;
          const C wn = wsm[n];
#pragma unroll
          for (int ry = 0; ry < G::RY; ++ry) {
            const C v = cv(base[(ry * SY + ty * DY) * K::PITCH + jx * G::DX]);
            acc[rz][ry] = st_add(acc[rz][ry], st_mul(v, wn));
          }
        }
      }
    }
    (void)at, (void)wr;
    return nf;
  }
  (void)zmask, (void)wsm;
#pragma unroll
  for (int iy = 0; iy < K::ERY; ++iy) {
#pragma unroll
    for (int jx = 0; jx < WX; ++jx) {
      bool used = false;  // whether any output of this thread folds this value
#pragma unroll
      for (int rz = 0; rz < G::RZ; ++rz) {
        const int dz = iz - rz * SZ;
        if (dz < 0 || dz % DZ != 0 || dz / DZ >= WZ) continue;
#pragma unroll
        for (int ry = 0; ry < G::RY; ++ry) {
          const int dy = iy - ry * SY;
          if (dy < 0 || dy % DY != 0 || dy / DY >= WY) continue;
          used = used || !(G::SKIP && G::zero_w(((t0 * WZ + dz / DZ) * WY + dy / DY) * WX + jx));
        }
      }
      if (!used) continue;
      const C v = cv(base[iy * K::PITCH + jx * G::DX]);
#pragma unroll
      for (int rz = 0; rz < G::RZ; ++rz) {
        const int dz = iz - rz * SZ;
        if (dz < 0 || dz % DZ != 0 || dz / DZ >= WZ) continue;
        const int tz = dz / DZ;
#pragma unroll
        for (int ry = 0; ry < G::RY; ++ry) {
          const int dy = iy - ry * SY;
          if (dy < 0 || dy % DY != 0 || dy / DY >= WY) continue;
          const int n = ((t0 * WZ + tz) * WY + dy / DY) * WX + jx;
          if (G::SKIP && G::zero_w(n)) continue;
          const C p = G::UNIT_W ? v : st_mul(v, wr[n]);
          if (G::SKIP) {
            acc[rz][ry] = st_add(acc[rz][ry], p);
          } else {
            st_fold<G::R, K::NANCHK>(acc[rz][ry], at[rz][ry], p, n);
          }
        }
      }
    }
  }
  return nf;
}

/// Stores output o of the stencil: its tap index for argmin/argmax, else its value.
template <class G, class C>
TG_DEVICE_INLINE void st_put(typename G::O* __restrict__ y, const StPtrs& P, i64 o, C r, int at) {
  if constexpr (G::R >= 4) {
    G::store(y, P, o, static_cast<typename G::Y>(at));
  } else {
    (void)at;
    G::store(y, P, o, st<typename G::Y>(r));
  }
}

/// Whether output value r of the thread must be folded again exactly (K::REFOLD): `nf` (a value
/// its taps read was non-finite for skipping sums, NaN for NANCHK), or a skipping sum's -0.
template <class G, class C>
TG_DEVICE_INLINE bool st_needs_refold(C r, bool nf, bool skipping) {
  typedef StGeo<G> K;
  if constexpr (K::NANCHK) {
    (void)r, (void)skipping;
    return nf;
  } else if constexpr (G::SKIP || G::RSKIP) {
    return skipping && (nf || (r == C(0) && st_signbit(r)));
  } else {
    (void)r, (void)nf, (void)skipping;
    return false;
  }
}

/// Stores the thread's outputs of tile g. Outputs that need it (st_needs_refold; tile_nf: a plane
/// of the tile held a value the thread's taps read that was non-finite, or NaN) are marked (bit
/// rz * RY + ry) and folded again over every tap afterwards, once the accumulators are dead.
template <class G, class C>
TG_DEVICE_INLINE void st_store_tile(typename G::O* __restrict__ y, const typename G::X* __restrict__ x,
                                    const typename G::T* __restrict__ w, const StPtrs& P, const StencilArgs& a,
                                    const StTile& g, const C (&acc)[G::RZ][G::RY], const int (&at)[G::RZ][G::RY],
                                    bool tile_nf, bool skipping, C boundary, int tx, int ty) {
  constexpr int RY = G::RY, RZ = G::RZ;
  const i64 out0 = a.out[0], outz = a.out[1], outy = a.out[2], outx = a.out[3];
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
        if (st_needs_refold<G>(acc[rz][ry], tile_nf, skipping)) refold |= 1ull << (rz * RY + ry);
        st_put<G>(y, P, o, acc[rz][ry], at[rz][ry]);
      }
    }
  }
  if constexpr (StGeo<G>::REFOLD) {
    static_assert(RZ * RY <= 64, "one refold bit an output");
    if (refold != 0) {
#pragma unroll 1
      for (int k = 0; k < RZ * RY; ++k) {
        if (!((refold >> k) & 1)) continue;
        const i64 oz = g.oz0 + k / RY, oy = g.oy0 + ty * RY + k % RY;
        const i64 o = (((g.b * out0 + g.o0) * outz + oz) * outy + oy) * outx + ox;
        int ex_at;
        const C r = st_exact<G>(x, w, P, a, g.b, g.o0, oz, oy, ox, boundary, ex_at);
        st_put<G>(y, P, o, r, ex_at);
      }
    }
  } else {
    (void)w, (void)x, (void)boundary;
  }
}

/// Marching along z (G::MARCH: W0 == 1, SZ == DZ == 1): folds plane iz of the march (iz % WZ ==
/// k, a constant after unrolling) into the WZ outputs that read it: output iz - tz takes the plane
/// as its window plane tz, in accumulator slot (iz - tz) % WZ. Each value of the thread's
/// neighbourhood (ERY rows x WX columns: every tap position of its RY outputs) is read from shared
/// memory once for all of them. Per output the taps come in row-major order (planes tz ascending,
/// then rows, then columns), as the CPU folds them. Skipping sums start the output of tz == 0 at
/// -0 and leave out the taps of weight 0 (G::SKIP: constant; G::RSKIP: bit n of zmask, a
/// block-uniform branch a tap); they return whether a value of the neighbourhood (also one only a
/// skipped tap reads) is inf or NaN (one sum over the values: inf, NaN, or a finite overflow, which
/// only costs a refold).
template <class G, class C>
TG_DEVICE_INLINE bool st_march_fold(C (&acc)[G::WZ][G::RY], int (&at)[G::WZ][G::RY], const typename G::T* base,
                                    const C (&wr)[StGeo<G>::WIN], const C* wsm, unsigned long long zmask,
                                    bool skipping, int k) {
  typedef StGeo<G> K;
  constexpr int WZ = G::WZ, WY = G::WY, WX = G::WX, SY = G::SY, DY = G::DY, RY = G::RY, ERY = K::ERY;
  constexpr bool SKIPPING = G::SKIP || G::RSKIP;
  auto tap_row = [](int iy) {
    for (int ry = 0; ry < RY; ++ry) {
      const int dy = iy - ry * SY;
      if (dy >= 0 && dy % DY == 0 && dy / DY < WY) return true;
    }
    return false;
  };
  C v[ERY][WX];
#pragma unroll
  for (int iy = 0; iy < ERY; ++iy) {
#pragma unroll
    for (int jx = 0; jx < WX; ++jx) v[iy][jx] = tap_row(iy) ? cv(base[iy * K::PITCH + jx * G::DX]) : C(0);
  }
  bool nf = false;
  if constexpr (K::REFOLD) {
    if (skipping || K::NANCHK) {
      C sum = C(0);
#pragma unroll
      for (int iy = 0; iy < ERY; ++iy) {
#pragma unroll
        for (int jx = 0; jx < WX; ++jx) {
          if (tap_row(iy)) sum = st_add(sum, v[iy][jx]);
        }
      }
      nf = K::NANCHK && G::UNIT_W ? sum != sum : st_nonfinite(sum);
    }
  }
  if constexpr (SKIPPING) {
#pragma unroll
    for (int ry = 0; ry < RY; ++ry) acc[k][ry] = C(-0.0);  // output iz starts (tz == 0)
  }
  (void)zmask, (void)wsm, (void)wr;
#pragma unroll
  for (int tz = 0; tz < WZ; ++tz) {
    const int slot = (k - tz + WZ) % WZ;
#pragma unroll
    for (int ty = 0; ty < WY; ++ty) {
#pragma unroll
      for (int tx = 0; tx < WX; ++tx) {
        const int n = (tz * WY + ty) * WX + tx;
        if (G::SKIP && G::zero_w(n)) continue;
        C wn;
        if constexpr (G::RSKIP) {
          if ((zmask >> n) & 1) continue;
          wn = wsm[n];
        } else {
          wn = wr[n];
        }
#pragma unroll
        for (int ry = 0; ry < RY; ++ry) {
          const C x = v[ry * SY + ty * DY][tx];
          const C p = G::UNIT_W ? x : st_mul(x, wn);
          if (SKIPPING) {
            acc[slot][ry] = st_add(acc[slot][ry], p);
          } else {
            st_fold<G::R, K::NANCHK>(acc[slot][ry], at[slot][ry], p, n);
          }
        }
      }
    }
  }
  return nf;
}

/// Stores the thread's RY outputs of z output oz of tile g (accumulator slot `slot` of the march);
/// those that need it (st_needs_refold; `nf`: a plane the output read held such a value in the
/// thread's neighbourhood) are folded again over every tap after the stores (st_exact).
template <class G, class C>
TG_DEVICE_INLINE void st_store_march(typename G::O* __restrict__ y, const typename G::X* __restrict__ x,
                                     const typename G::T* __restrict__ w, const StPtrs& P, const StencilArgs& a,
                                     const StTile& g, const C (&acc)[G::WZ][G::RY], const int (&at)[G::WZ][G::RY],
                                     int slot, i64 oz, bool nf, bool skipping, C boundary, int tx, int ty) {
  constexpr int RY = G::RY;
  const i64 outy = a.out[2], outx = a.out[3];
  const i64 ox = g.ox0 + tx;
  if (ox >= outx) return;
  const i64 row0 = ((g.b * a.out[0] + g.o0) * a.out[1] + oz) * outy;
  unsigned refold = 0;
#pragma unroll
  for (int ry = 0; ry < RY; ++ry) {
    const i64 oy = g.oy0 + ty * RY + ry;
    if (oy >= outy) continue;
    if (st_needs_refold<G>(acc[slot][ry], nf, skipping)) refold |= 1u << ry;
    st_put<G>(y, P, (row0 + oy) * outx + ox, acc[slot][ry], at[slot][ry]);
  }
  if constexpr (StGeo<G>::REFOLD) {
    static_assert(RY <= 32, "one refold bit an output");
    if (refold != 0) {
#pragma unroll 1
      for (int ry = 0; ry < RY; ++ry) {
        if (!((refold >> ry) & 1)) continue;
        const i64 oy = g.oy0 + ty * RY + ry;
        int ex_at;
        const C r = st_exact<G>(x, w, P, a, g.b, g.o0, oz, oy, ox, boundary, ex_at);
        st_put<G>(y, P, (row0 + oy) * outx + ox, r, ex_at);
      }
    }
  } else {
    (void)w, (void)x, (void)boundary;
  }
}

/// The kernel body (see the top). G: the configuration struct the host generates, with
/// T (source storage), C (compute), Y (the stencil's result storage: int for argmin/argmax),
/// X (storage of the kernel input x), O (of the output y), R, M, UNIT_W, CONST_W, SKIP, RSKIP,
/// W[4], S[4], D[4] (window, strides, dilations), BX, BY (threads: x, y), RY, RZ, NS (planes in
/// flight), CW (elements a copy), and load(x, P, i) (source element i), store(y, P, o, v)
/// (result o), weight(n), zero_w(n).
///
/// A block walks its tiles (t = blockIdx.x, + gridDim.x, ...) and each tile's planes (tap t0 of
/// d0, input plane iz of the z chunk) as one stream of planes. NS == 1: through two shared
/// buffers; while the block folds plane q from one buffer, each thread's loads of plane q + 1
/// (the next tile's first plane after a tile's last) are in flight into registers and then stored
/// to the other buffer, one barrier a plane. NS >= 2 (plain loads: X == T, 4- or 8-byte T): a ring
/// of NS shared buffers filled by cp.async copies of CW elements (16 bytes when CW > 1), NS - 1
/// planes in flight while one is folded, no registers held, one barrier a plane. Planes whose
/// tile leaves the source, or that read the boundary value, are loaded by st_load_tile instead
/// (mapped through the boundary mode).
template <class G>
TG_DEVICE_INLINE void stencil_tiles(const typename G::X* __restrict__ x,
                                    const typename G::T* __restrict__ w,
                                    typename G::O* __restrict__ y, const StPtrs& P, const StencilArgs& a) {
  typedef typename G::T T;
  typedef typename G::C C;
  typedef StGeo<G> K;
  constexpr int W0 = G::W0, RY = G::RY, RZ = G::RZ, BX = G::BX, NT = K::NT, EX = K::EX, EZ = K::EZ;
  constexpr int TILE = K::TILE, PITCH = K::PITCH, CW = K::CW, NS = G::NS;
  constexpr int PER = (K::EY * EX + NT - 1) / NT;  // tile elements a thread loads (NS == 1)
  static_assert(NS == 1 || NS == 2 || NS == 3 || NS == 4, "1..4 planes in flight");
  static_assert(CW == 1 || (NS >= 2 && CW * sizeof(T) == 16), "whole copies: 16 bytes, ring only");
  alignas(16) __shared__ T tiles[K::NB * TILE];  // 16-byte copies land in it

  if (static_cast<i64>(blockIdx.x) >= a.total_tiles) return;
  const C boundary = from_bits<C>(a.boundary);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % BX, ty = tid / BX;

  // Weights in registers (compile-time indices after unrolling; in shared memory with G::RSKIP).
  C wr[K::WIN];  // unused with G::RSKIP
  __shared__ C wsm[G::RSKIP ? K::WIN : 1];
  // Run-time zero-tap skipping (G::RSKIP): bit n set when weight n is +-0 (the same in every thread).
  unsigned long long zmask = 0;
  if constexpr (G::RSKIP) {
    static_assert(K::WIN <= 64, "one skip bit a tap");
    for (int n = 0; n < K::WIN; ++n) {
      const C wn = cv(w[n]);
      zmask |= (wn == C(0) ? 1ull : 0ull) << n;
      if (tid == n) wsm[n] = wn;  // read after the first plane's barrier
    }
  } else {
#pragma unroll
    for (int n = 0; n < K::WIN; ++n) wr[n] = G::UNIT_W ? C(1) : G::CONST_W ? G::weight(n) : cv(w[n]);
  }
  const bool skipping = G::SKIP || zmask != 0;  // some tap may be left out: refold where needed

  const i64 in0 = a.in[0], inz = a.in[1], iny = a.in[2], inx = a.in[3];
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
  // Loads plane (t0, iz) of tile g into buf synchronously (any plane).
  auto load_now = [&](T* buf, const StTile& g, int t0, int iz) {
    i64 c0, cz;
    coords(g, t0, iz, c0, cz);
    st_load_tile<G, PITCH>(buf, x, P, g.b * block_in, c0, cz, inz, iny, inx, g.iy0, g.ix0, g.inside, boundary, tid,
                           g.sh);
  };
  auto zero_acc = [&](C (&acc)[RZ][RY], int (&at)[RZ][RY]) {
#pragma unroll
    for (int rz = 0; rz < RZ; ++rz) {
#pragma unroll
      for (int ry = 0; ry < RY; ++ry) {
        acc[rz][ry] = (G::SKIP || G::RSKIP) ? C(-0.0) : C(0);  // skipping sums add every tap to -0 (exact)
        at[rz][ry] = 0;
      }
    }
  };
  const int thread_at = (ty * RY * G::SY) * PITCH + tx * G::SX;  // the thread's first value in a tile

  i64 t = blockIdx.x;
  StTile g = st_tile<G>(a, t);
  if constexpr (NS >= 2) {
    // The ring. The issue position (tile gi, plane it0/iiz) runs NS - 1 planes ahead of the fold.
    constexpr int CPR = PITCH / CW;  // copies a row at most (a row needs (sh + EX) / CW rounded up)
    constexpr int COPIES = K::EY * CPR;
    constexpr int TE = K::EY * EX, PER_E = (TE + NT - 1) / NT;  // tile elements (mapped copies)
    // Planes of tile g when marching: its z outputs (zc, fewer at the end) plus the window's halo.
    auto march_planes = [&](const StTile& gm) {
      const i64 nz = a.out[1] - gm.oz0;
      return static_cast<int>(nz < a.zc ? nz : a.zc) + G::WZ - 1;
    };
    (void)march_planes;
    i64 ti = t;  // (its tile is made again at each issue: registers are short)
    int it0 = 0, iiz = 0, slot_in = 0;
    auto issue = [&]() {
      if (ti < a.total_tiles) {
        const StTile gi = st_tile<G>(a, ti);
        T* buf = tiles + slot_in * TILE;
        i64 c0, cz;
        coords(gi, it0, iiz, c0, cz);
        if (c0 < 0 || cz < 0) {  // the boundary value (zero and constant modes)
          for (int e = tid; e < TE; e += NT) {
            const int r = e / EX, c = e - r * EX;
            buf[r * PITCH + gi.sh + c] = st<T>(boundary);
          }
        } else if (gi.inside_a) {  // whole copies of the rows' aligned span
          const T* src = reinterpret_cast<const T*>(x) + origin(gi, c0, cz) - gi.sh;
          const int cpr = (gi.sh + EX + CW - 1) / CW;
#pragma unroll
          for (int q = 0; q < (COPIES + NT - 1) / NT; ++q) {
            const int e = tid + q * NT;
            const int r = e / CPR, c = e - r * CPR;
            if (e < COPIES && c < cpr) {
              st_cp_async<CW * sizeof(T)>(buf + r * PITCH + c * CW, src + r * inx + c * CW);
            }
          }
        } else if constexpr (CW > 1) {
          // A tile leaving the source, rows of whole copies: copy by copy, each row mapped through
          // the boundary mode; a copy inside the source row moves CW elements at once, one that
          // leaves it (at most one at each end of a row) element by element, mapped.
          const T* plane = reinterpret_cast<const T*>(x) + gi.b * block_in + (c0 * inz + cz) * iny * inx;
          const i64 col0 = gi.ix0 - gi.sh;  // the source column of a row's first copy (aligned)
          const int cpr = (gi.sh + EX + CW - 1) / CW;
#pragma unroll
          for (int q = 0; q < (COPIES + NT - 1) / NT; ++q) {
            const int e = tid + q * NT;
            const int r = e / CPR, c = e - r * CPR;
            if (e < COPIES && c < cpr) {
              const i64 gy = st_boundary_index<G::M>(gi.iy0 + r, iny);
              const i64 col = col0 + c * CW;
              T* d = buf + r * PITCH + c * CW;
              if (gy >= 0 && col >= 0 && col + CW <= inx) {
                st_cp_async<CW * sizeof(T)>(d, plane + gy * inx + col);
              } else {
#pragma unroll
                for (int j = 0; j < CW; ++j) {
                  const int tc = c * CW + j - gi.sh;  // tile column
                  if (tc < 0 || tc >= EX) continue;
                  const i64 gx = st_boundary_index<G::M>(col + j, inx);
                  if (gy < 0 || gx < 0) {
                    d[j] = st<T>(boundary);
                  } else {
                    st_cp_async<sizeof(T)>(d + j, plane + gy * inx + gx);
                  }
                }
              }
            }
          }
        } else {  // a tile leaving the source: element copies mapped through the boundary mode
          const T* plane = reinterpret_cast<const T*>(x) + gi.b * block_in + (c0 * inz + cz) * iny * inx;
#pragma unroll
          for (int q = 0; q < PER_E; ++q) {
            const int e = tid + q * NT;
            if (e < TE) {
              const int r = e / EX, c = e - r * EX;
              const i64 gy = st_boundary_index<G::M>(gi.iy0 + r, iny);
              const i64 gx = st_boundary_index<G::M>(gi.ix0 + c, inx);
              T* d = buf + r * PITCH + gi.sh + c;
              if (gy < 0 || gx < 0) {
                *d = st<T>(boundary);
              } else {
                st_cp_async<sizeof(T)>(d, plane + gy * inx + gx);
              }
            }
          }
        }
        if (++iiz == (G::MARCH ? march_planes(gi) : EZ)) {
          iiz = 0;
          if (++it0 == W0) {
            it0 = 0;
            ti += step;
          }
        }
      }
      st_cp_commit();
      slot_in = slot_in + 1 == NS ? 0 : slot_in + 1;
    };
#pragma unroll
    for (int k = 0; k < NS - 1; ++k) issue();
    int cur = 0;
    if constexpr (G::MARCH) {
      // March along z: tile g's planes iz = 0 .. np - 1 in order; after plane iz, output
      // iz - (WZ - 1) has all its taps and is stored. Loops unrolled by WZ keep the accumulator
      // slots constant. Non-finite values are found per thread (st_march_fold): no block-wide flag.
      constexpr int WZ = G::WZ;
      static_assert(G::W0 == 1 && G::SZ == 1 && G::DZ == 1 && WZ <= 16, "marching: W0 1, SZ and DZ 1");
      for (; t < a.total_tiles; t += step) {
        const int np = march_planes(g);
        C acc[WZ][RY];
        int at[WZ][RY];
#pragma unroll
        for (int s = 0; s < WZ; ++s) {
#pragma unroll
          for (int ry = 0; ry < RY; ++ry) {
            acc[s][ry] = C(0);
            at[s][ry] = 0;
          }
        }
        unsigned hist = 0;  // bit j: plane iz - j held a non-finite value (skipping sums)
        for (int iz0 = 0; iz0 < np; iz0 += WZ) {
#pragma unroll
          for (int k = 0; k < WZ; ++k) {
            const int iz = iz0 + k;
            if (iz >= np) break;
            st_cp_wait<NS - 2>();  // this thread's copies of plane `cur` landed
            __syncthreads();       // everyone's landed; everyone folded the previous plane
            issue();               // into the previous plane's slot
            const bool nf = st_march_fold<G>(acc, at, tiles + cur * TILE + g.sh + thread_at, wr, wsm, zmask,
                                             skipping, k);
            hist = (hist << 1) | (nf ? 1u : 0u);
            cur = cur + 1 == NS ? 0 : cur + 1;
            if (iz >= WZ - 1) {
              st_store_march<G>(y, x, w, P, a, g, acc, at, (k + 1) % WZ, g.oz0 + iz - (WZ - 1),
                                (hist & ((1u << WZ) - 1)) != 0, skipping, boundary, tx, ty);
            }
          }
        }
        if (t + step < a.total_tiles) g = st_tile<G>(a, t + step);
      }
    } else {
      for (; t < a.total_tiles; t += step) {
        C acc[RZ][RY];
        int at[RZ][RY];
        zero_acc(acc, at);
        bool tile_nf = false;
#pragma unroll
        for (int t0 = 0; t0 < W0; ++t0) {
#pragma unroll
          for (int iz = 0; iz < EZ; ++iz) {
            st_cp_wait<NS - 2>();  // this thread's copies of plane `cur` landed
            __syncthreads();       // everyone's landed; everyone folded the previous plane
            issue();               // into the previous plane's slot
            tile_nf = st_fold_plane<G>(acc, at, tiles + cur * TILE + g.sh + thread_at, wr, wsm, zmask, skipping,
                                       t0, iz) || tile_nf;
            cur = cur + 1 == NS ? 0 : cur + 1;
          }
        }
        st_store_tile<G>(y, x, w, P, a, g, acc, at, tile_nf, skipping, boundary, tx, ty);
        if (t + step < a.total_tiles) g = st_tile<G>(a, t + step);
      }
    }
    st_cp_wait<0>();
  } else {
    load_now(tiles, g, 0, 0);
    __syncthreads();
    int cur = 0;
    for (; t < a.total_tiles; t += step) {
      const bool has_next_tile = t + step < a.total_tiles;
      StTile gn = g;  // the next tile (made at the tile's last plane)
      C acc[RZ][RY];
      int at[RZ][RY];
      zero_acc(acc, at);
      bool tile_nf = false;  // some plane of the current tile held an inf or NaN
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
              if (e < K::EY * EX) {
                const int r = e / EX, c = e - r * EX;
                pre[q] = G::load(x, P, p0 + r * inx + c);
              }
            }
          }
          tile_nf = st_fold_plane<G>(acc, at, tiles + cur * TILE + thread_at, wr, wsm, zmask, skipping, t0, iz) ||
                    tile_nf;
          // Stage the next plane in the other buffer (nobody reads it: the barrier after the
          // previous plane's fold has passed).
          T* other = tiles + (cur ^ 1) * TILE;
          if (direct) {
#pragma unroll
            for (int q = 0; q < PER; ++q) {
              const int e = tid + q * NT;
              if (e < K::EY * EX) {
                other[e] = pre[q];
              }
            }
          } else if (has_next) {
            load_now(other, nx, nt0, niz);
          }
          __syncthreads();
          cur ^= 1;
        }
      }
      st_store_tile<G>(y, x, w, P, a, g, acc, at, tile_nf, skipping, boundary, tx, ty);
      g = gn;
    }
  }
}

}  // namespace tg_dev
