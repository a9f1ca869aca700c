// Folds and stores of the generated stencil kernels' tiles (device/stencil.cuh describes the
// kernel and the exactness rules these follow): which plane values are taps of a thread's
// outputs, a plane folded into the accumulators (st_fold_plane, st_march_fold), and a tile's
// stores with the refolds of outputs whose skipped taps read a non-finite value (st_store_tile,
// st_store_march).
#pragma once
#include "stencil_tile.cuh"

namespace tg_dev {

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
  if constexpr (K::SEPMM) {
    // Min/max with unit weights, separably: each row's extreme (first wins on ties), then the
    // rows' extremes of each output in row order, two outputs sharing their common rows (unit y
    // stride and dilation). A first-wins extreme of a sequence is that of its pieces' first-wins
    // extremes in order, so this is the row-major fold, bit for bit (NaN: refolded, NANCHK).
    constexpr bool MAX = G::R == 3;
    auto fw = [](C& acc, C v) {
      if (MAX ? v > acc : v < acc) acc = v;
    };
    C h[K::ERY];
#pragma unroll
    for (int iy = 0; iy < K::ERY; ++iy) {
      h[iy] = C(0);
      if (!st_tap_at<G>(iy, iz)) continue;
      h[iy] = cv(base[iy * K::PITCH]);
#pragma unroll
      for (int jx = 1; jx < WX; ++jx) fw(h[iy], cv(base[iy * K::PITCH + jx * G::DX]));
    }
#pragma unroll
    for (int rz = 0; rz < G::RZ; ++rz) {
      const int dz = iz - rz * SZ;
      if (dz < 0 || dz % DZ != 0 || dz / DZ >= WZ) continue;
      const bool first = t0 == 0 && dz == 0;  // the plane of the output's tap 0
      if constexpr (SY == 1 && DY == 1 && WY >= 2) {
#pragma unroll
        for (int ry = 0; ry + 1 < G::RY; ry += 2) {
          C common = h[ry + 1];
#pragma unroll
          for (int ty = 2; ty < WY; ++ty) fw(common, h[ry + ty]);
          C a = h[ry];
          fw(a, common);
          fw(common, h[ry + WY]);
          if (first) {
            acc[rz][ry] = a, acc[rz][ry + 1] = common;
          } else {
            fw(acc[rz][ry], a), fw(acc[rz][ry + 1], common);
          }
        }
      }
#pragma unroll
      for (int ry = (SY == 1 && DY == 1 && WY >= 2) ? G::RY / 2 * 2 : 0; ry < G::RY; ++ry) {
        C a = h[ry * SY];
#pragma unroll
        for (int ty = 1; ty < WY; ++ty) fw(a, h[ry * SY + ty * DY]);
        if (first) {
          acc[rz][ry] = a;
        } else {
          fw(acc[rz][ry], a);
        }
      }
    }
    (void)at, (void)wr;
  } else {
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

/// Stores the thread's RY outputs of z output zr (from the tile's first) of march tile t
/// (accumulator slot `slot`): `o` is the output index of the thread's first row of that z output,
/// `rows` how many of its RY rows lie inside the result (0: its column does not). Those that need
/// it (st_needs_refold; `nf`: a plane the output read held such a value in the thread's
/// neighbourhood) are folded again over every tap after the stores (st_exact; the tile made again).
template <class G, class C>
TG_DEVICE_INLINE void st_store_march(typename G::O* __restrict__ y, const typename G::X* __restrict__ x,
                                     const typename G::T* __restrict__ w, const StPtrs& P, const StencilArgs& a,
                                     i64 t, i64 o, int rows, const C (&acc)[G::WZ][G::RY],
                                     const int (&at)[G::WZ][G::RY], int slot, int zr, bool nf, bool skipping,
                                     C boundary, int tx, int ty) {
  constexpr int RY = G::RY;
  const i64 outx = a.out[3];
  unsigned refold = 0;
#pragma unroll
  for (int ry = 0; ry < RY; ++ry) {
    if (ry < rows) {
      if (st_needs_refold<G>(acc[slot][ry], nf, skipping)) refold |= 1u << ry;
      st_put<G>(y, P, o + ry * outx, acc[slot][ry], at[slot][ry]);
    }
  }
  if constexpr (StGeo<G>::REFOLD) {
    static_assert(RY <= 32, "one refold bit an output");
    if (refold != 0) {
      const StTile g = st_tile<G>(a, t);
#pragma unroll 1
      for (int ry = 0; ry < RY; ++ry) {
        if (!((refold >> ry) & 1)) continue;
        int ex_at;
        const C r = st_exact<G>(x, w, P, a, g.b, g.o0, g.oz0 + zr, g.oy0 + ty * RY + ry, g.ox0 + tx, boundary, ex_at);
        st_put<G>(y, P, o + ry * outx, r, ex_at);
      }
    }
  } else {
    (void)w, (void)x, (void)boundary, (void)t, (void)zr, (void)tx, (void)ty;
  }
}

}  // namespace tg_dev
