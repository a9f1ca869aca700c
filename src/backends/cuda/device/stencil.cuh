// Device code of the generated stencil kernels (NVRTC; the host side is
// backends/cuda/stencil_codegen.cpp, which writes a `struct tg_st_cfg` of compile-time constants and
// instantiates tg_dev::stencil_tiles with it through device/stencil_kernel.cuh; 3x3x3 float sums
// take device/stencil_column.cuh). Semantics are backends/cpu/stencil.cpp's, bit for bit: each
// output folds its window's taps v = x * w in row-major window order (the first tap starts the
// result; sum and product round after every step, no FMA contraction; min/max/argmin/argmax: a
// strictly better value replaces, a NaN beats a number, so ties keep the first tap); f16/bf16
// compute in float and round once; integers wrap.
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
// and no registers held for them; a march with 16-byte copies places each thread's copies once a
// tile (source row through the boundary mode, whole or element by element) and keeps a tile's
// output index and rows in a few registers, so a plane costs its copies' addresses, its fold and
// its stores (H200, session 21: 730 instructions a thread and plane for the 512^3 7-point
// stencil with constant weights before, made again from the tile index each plane; ncu). Window,
// strides, dilations, tile shape, reduction, boundary mode and dtype are compile-time constants
// (the loops unroll, tap conditions fold); sizes come at launch (one kernel serves every size).
// Unit weights (max pooling) skip the multiply: x * 1 == x exactly; min/max with unit weights fold
// each row first, then across rows (st_fold_plane: the same first-wins result, fewer compares).
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
#include "stencil_fold.cuh"

namespace tg_dev {

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
    // Marching with 16-byte copies (issue_march): the issue tile's copies are placed once a tile
    // (enter_tile), so that a plane's copies cost an address each. Copy q of this thread (element
    // tid + q * NT of the tile's copies, row r and copy c of the row) reads source row q_row[q]
    // (boundary-mapped; -1: the boundary value) from column m_col0 + c * CW; 2 bits of q_kind: 0
    // none, 1 a whole copy inside the row, 2 element by element (mapped through the boundary mode).
    constexpr bool MCOPY = G::MARCH && CW > 1;
    constexpr int QN = MCOPY ? (COPIES + NT - 1) / NT : 1;
    int q_row[QN];
    unsigned q_kind = 0;
    const T* m_block = nullptr;  // the issue tile's (batch, d0) block of the source; null: the boundary
    i64 m_col0 = 0;              // the source column of its rows' first copies
    int m_iz0 = 0;               // its first input plane (> -2^31: the window's halo before it)
    int m_np = 0, m_sh = 0;      // its planes, and its first column's place in a copy
    auto enter_tile = [&]() {
      const StTile gi = st_tile<G>(a, ti);
      const i64 c0 = st_boundary_index<G::M>(gi.o0 * G::S0 - a.before[0], in0);
      m_block = c0 < 0 ? nullptr : reinterpret_cast<const T*>(x) + gi.b * block_in + c0 * inz * iny * inx;
      m_iz0 = static_cast<int>(gi.iz0);
      m_np = march_planes(gi);
      m_sh = gi.sh;
      const int cpr = (gi.sh + EX + CW - 1) / CW;
      const i64 col0 = gi.ix0 - gi.sh;
      m_col0 = col0;
      q_kind = 0;
#pragma unroll
      for (int q = 0; q < QN; ++q) {
        const int e = tid + q * NT;
        const int r = e / CPR, c = e - r * CPR;
        q_row[q] = 0;
        if (e < COPIES && c < cpr) {
          const i64 gy = st_boundary_index<G::M>(gi.iy0 + r, iny), col = col0 + c * CW;
          q_row[q] = static_cast<int>(gy);
          q_kind |= (gy >= 0 && col >= 0 && col + CW <= inx ? 1u : 2u) << (2 * q);
        }
      }
    };
    auto issue_march = [&]() {
      if (ti < a.total_tiles) {
        if (iiz == 0) enter_tile();
        T* buf = tiles + slot_in * TILE;
        const i64 cz = st_boundary_index<G::M>(m_iz0 + iiz, inz);
        if (m_block == nullptr || cz < 0) {  // the boundary value (zero and constant modes)
          for (int e = tid; e < TE; e += NT) {
            const int r = e / EX, c = e - r * EX;
            buf[r * PITCH + m_sh + c] = st<T>(boundary);
          }
        } else {
          const T* plane = m_block + cz * iny * inx;
#pragma unroll
          for (int q = 0; q < QN; ++q) {
            const int e = tid + q * NT;
            const int r = e / CPR, c = e - r * CPR;
            T* d = buf + r * PITCH + c * CW;
            const unsigned kind = (q_kind >> (2 * q)) & 3u;
            const i64 col = m_col0 + c * CW;
            if (kind == 1) {
              st_cp_async<CW * sizeof(T)>(d, plane + static_cast<i64>(q_row[q]) * inx + col);
            } else if (kind == 2) {  // leaving the source row: element by element, mapped
#pragma unroll
              for (int j = 0; j < CW; ++j) {
                const int tc = c * CW + j - m_sh;  // tile column
                if (tc < 0 || tc >= EX) continue;
                const i64 gx = st_boundary_index<G::M>(col + j, inx);
                if (q_row[q] < 0 || gx < 0) {
                  d[j] = st<T>(boundary);
                } else {
                  st_cp_async<sizeof(T)>(d + j, plane + static_cast<i64>(q_row[q]) * inx + gx);
                }
              }
            }
          }
        }
        if (++iiz == m_np) {
          iiz = 0;
          ti += step;
        }
      }
      st_cp_commit();
      slot_in = slot_in + 1 == NS ? 0 : slot_in + 1;
    };
    (void)issue_march, (void)enter_tile;
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
    for (int k = 0; k < NS - 1; ++k) {
      if constexpr (MCOPY) {
        issue_march();
      } else {
        issue();
      }
    }
    int cur = 0;
    if constexpr (G::MARCH) {
      // March along z: tile g's planes iz = 0 .. np - 1 in order; after plane iz, output
      // iz - (WZ - 1) has all its taps and is stored. Loops unrolled by WZ keep the accumulator
      // slots constant. Non-finite values are found per thread (st_march_fold): no block-wide flag.
      constexpr int WZ = G::WZ;
      static_assert(G::W0 == 1 && G::SZ == 1 && G::DZ == 1 && WZ <= 16, "marching: W0 1, SZ and DZ 1");
      const i64 out_plane = a.out[2] * a.out[3];
      for (; t < a.total_tiles; t += step) {
        // The tile in a few registers: its planes, where the thread's values start in a plane
        // buffer, its first output index and rows inside the result (see st_store_march).
        const int np = march_planes(g);
        const int at_tile = g.sh + thread_at;
        const i64 ox = g.ox0 + tx, oy0 = g.oy0 + ty * RY, left = a.out[2] - oy0;
        const int rows = ox >= a.out[3] ? 0 : left < RY ? static_cast<int>(left) : RY;
        i64 o_first = (((g.b * a.out[0] + g.o0) * a.out[1] + g.oz0) * a.out[2] + oy0) * a.out[3] + ox;
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
            if constexpr (MCOPY) {  // into the previous plane's slot
              issue_march();
            } else {
              issue();
            }
            const bool nf = st_march_fold<G>(acc, at, tiles + cur * TILE + at_tile, wr, wsm, zmask, skipping, k);
            hist = (hist << 1) | (nf ? 1u : 0u);
            cur = cur + 1 == NS ? 0 : cur + 1;
            if (iz >= WZ - 1) {
              st_store_march<G>(y, x, w, P, a, t, o_first, rows, acc, at, (k + 1) % WZ, iz - (WZ - 1),
                                (hist & ((1u << WZ) - 1)) != 0, skipping, boundary, tx, ty);
              o_first += out_plane;
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
