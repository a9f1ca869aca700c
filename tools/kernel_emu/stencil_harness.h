// Host harness of a generated tiled stencil kernel (tg_stencil_emu writes k<i>.cu and an h<i>.cpp
// including it and this file): runs the kernel under shim.h on random inputs and compares every
// output, bit for bit, with a plain evaluation of the stencil op's semantics in the same compute
// type (backends/cpu/stencil.cpp: taps in row-major order, the first starts the result, sum and
// product round after each step, min/max/arg keep the first of equal values, a NaN beats a number).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace tg_emu_stencil {

using tg_dev::i64;

template <class G>
struct Ref {
  typedef typename G::T T;
  typedef typename G::C C;
  static C value(const std::vector<T>& x, const tg_dev::StencilArgs& a, i64 b, const i64 o[4], const int t[4],
                 C boundary, bool& outside) {
    const int S[4] = {G::S0, G::SZ, G::SY, G::SX}, D[4] = {G::D0, G::DZ, G::DY, G::DX};
    i64 off = 0;
    outside = false;
    for (int i = 0; i < 4; ++i) {
      const i64 c = tg_dev::st_boundary_index<G::M>(o[i] * S[i] + t[i] * D[i] - a.before[i], a.in[i]);
      if (c < 0) outside = true;
      off = off * a.in[i] + (c < 0 ? 0 : c);
    }
    if (outside) return boundary;
    const i64 block = a.in[0] * a.in[1] * a.in[2] * a.in[3];
    return tg_dev::cv(x[static_cast<size_t>(b * block + off)]);
  }
};

/// The magic numbers of divisor d as the host computes them (backends/cuda/stencil_codegen.cpp).
inline void magic(long long d, unsigned& m, unsigned& s) {
  const unsigned long long u = static_cast<unsigned long long>(d < 1 ? 1 : d);
  unsigned sh = 0;
  while ((1ull << sh) < u) ++sh;
  m = static_cast<unsigned>((1ull << 32) * ((1ull << sh) - u) / u + 1);
  s = sh;
}

/// Runs config G on sizes `a` (tiles/total filled by the caller) with `blocks` blocks of
/// `threads`; returns the number of mismatching outputs (printing the first few). The tile
/// indices are split by the 32-bit magic divisions (the path every real launch takes), unless
/// TG_EMU_WIDE is set. `special`: every third weight a zero of alternating sign, and zeros of both
/// signs (a block of them: outputs whose kept taps are all -0), infs and NaNs among the source
/// values (what run-time zero-tap skipping and min/max folds without NaN checks must refold).
/// `star` (3x3x3 windows): every weight but the 7-point star's (taps 4, 10, 12, 13, 14, 16, 22) a
/// zero of alternating sign (the column march's run-time choice, device/stencil_column.cuh).
template <class G>
int run(tg_dev::StencilArgs a, unsigned blocks, unsigned threads, const char* name, unsigned seed,
        bool special = false, bool star = false) {
  a.small = std::getenv("TG_EMU_WIDE") == nullptr ? 1 : 0;
  const long long divisors[4] = {a.tiles[0], a.tiles[1], a.tiles[2], a.out[0]};
  for (int i = 0; i < 4; ++i) magic(divisors[i], a.div_m[i], a.div_s[i]);
  typedef typename G::T T;
  typedef typename G::C C;
  typedef typename G::Y Y;
  const i64 nin = a.batch * a.in[0] * a.in[1] * a.in[2] * a.in[3];
  const i64 nout = a.batch * a.out[0] * a.out[1] * a.out[2] * a.out[3];
  const int WIN = G::W0 * G::WZ * G::WY * G::WX;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<T> x(static_cast<size_t>(nin)), w(static_cast<size_t>(WIN));
  auto make = [&](double d) {
    // small integers for integer types, a few equal values for the arg reductions
    if (tg_dev::Num<C>::is_int) return tg_dev::st<T>(static_cast<C>(static_cast<int>(d * 3)));
    return tg_dev::st<T>(static_cast<C>(static_cast<int>(d * 8) / 4.0));
  };
  for (auto& v : x) v = make(u(rng));
  for (auto& v : w) v = make(u(rng));
  if (special && tg_dev::Num<C>::is_float) {
    for (size_t i = 0; i < w.size(); i += 3) w[i] = tg_dev::st<T>(static_cast<C>(i % 2 ? -0.0 : 0.0));
    for (size_t i = 0; i < x.size(); ++i) {
      if (i % 7 == 3 || (i >= 300 && i < 1500)) x[i] = tg_dev::st<T>(static_cast<C>(rng() % 2 ? -0.0 : 0.0));
      if (i % 1013 == 500) x[i] = tg_dev::st<T>(static_cast<C>(i % 2 ? -INFINITY : INFINITY));
      if (i % 1399 == 700) x[i] = tg_dev::st<T>(static_cast<C>(NAN));  // min/max fold without NaN checks
    }
  }
  if (star) {
    for (size_t i = 0; i < w.size(); ++i) {
      if (i != 4 && i != 10 && i != 12 && i != 13 && i != 14 && i != 16 && i != 22) {
        w[i] = tg_dev::st<T>(static_cast<C>(i % 2 ? -0.0 : 0.0));
      }
    }
  }
  std::vector<Y> y(static_cast<size_t>(nout));
  const T* xp = x.data();
  const T* wp = w.data();
  Y* yp = y.data();
  const tg_dev::StPtrs P{};
  tg_emu::launch(dim3(blocks), dim3(threads), [&] { tg_dev::stencil_kernel<G>(xp, wp, yp, P, a); });
  const C boundary = tg_dev::from_bits<C>(a.boundary);
  int bad = 0;
  i64 e = 0;
  for (i64 b = 0; b < a.batch; ++b) {
    i64 o[4];
    for (o[0] = 0; o[0] < a.out[0]; ++o[0])
      for (o[1] = 0; o[1] < a.out[1]; ++o[1])
        for (o[2] = 0; o[2] < a.out[2]; ++o[2])
          for (o[3] = 0; o[3] < a.out[3]; ++o[3], ++e) {
            C acc = C(0);
            int at = 0, n = 0;
            int t[4];
            for (t[0] = 0; t[0] < G::W0; ++t[0])
              for (t[1] = 0; t[1] < G::WZ; ++t[1])
                for (t[2] = 0; t[2] < G::WY; ++t[2])
                  for (t[3] = 0; t[3] < G::WX; ++t[3], ++n) {
                    bool outside;
                    C v = Ref<G>::value(x, a, b, o, t, boundary, outside);
                    if (!G::UNIT_W) {
                      v = tg_dev::st_mul(v, G::CONST_W ? G::weight(n) : tg_dev::cv(w[static_cast<size_t>(n)]));
                    }
                    tg_dev::st_fold<G::R>(acc, at, v, n);
                  }
            Y want;
            if constexpr (G::R >= 4) {
              want = static_cast<Y>(at);
            } else {
              want = tg_dev::st<Y>(acc);
            }
            // Bit for bit, except that any two NaNs are equal: the host compiler may swap the
            // operands of an addition, and x86 keeps the first operand's NaN (sign and payload).
            const Y got = y[static_cast<size_t>(e)];
            bool nans = false;
            if constexpr (G::R < 4 && tg_dev::Num<C>::is_float) {
              nans = tg_dev::cv(want) != tg_dev::cv(want) && tg_dev::cv(got) != tg_dev::cv(got);
            }
            if (!nans && std::memcmp(&want, &got, sizeof(Y)) != 0) {
              if (bad < 5) {
                std::printf("%s: output %lld differs: got %g want %g\n", name, static_cast<long long>(e),
                            static_cast<double>(tg_dev::cv(y[static_cast<size_t>(e)])),
                            static_cast<double>(tg_dev::cv(want)));
              }
              ++bad;
            }
          }
  }
  std::printf("%s: %lld outputs, %d mismatches\n", name, static_cast<long long>(nout), bad);
  return bad;
}

}  // namespace tg_emu_stencil
