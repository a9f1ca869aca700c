// Building blocks of the generated stencil kernels (device/stencil.cuh, which describes them):
// launch sizes, boundary indices, the folds of the reductions, cp.async copies, the exact refold
// of one output (st_exact), and the tile geometry (StGeo, st_tile).
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
  /// Min/max with unit weights fold separably (st_fold_plane): rows first, then across rows.
  /// Floating types need NANCHK (plain comparisons); tap indices (argmin/argmax) keep the tap loop.
  static constexpr bool SEPMM = (G::R == 2 || G::R == 3) && G::UNIT_W && (NANCHK || !Num<typename G::C>::is_float);
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

}  // namespace tg_dev
