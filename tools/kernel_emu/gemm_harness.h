// Host harness of the first-run GEMM and conv2d kernels (device/gemm.cuh, written by
// tg_gemm_emu): runs a generated kernel under shim.h on random operands in (-1, 1) and compares
// every output with a float64 evaluation of the op's definition (a matmul's batched product, a
// conv2d's sum over the padded, strided, dilated window of the output channel's group) on the
// same operands, rounded to bf16/f16 first when the kernel rounds (R). A result passes when it is
// within (K + 2) * 2^-23 * sum|a*b| (f32 accumulation by K fused multiply-adds) plus half an ulp
// of the output type of the exact value (f16: 2^-11, bf16: 2^-8 relative). Prints one line per
// case; returns 1 on a mismatch.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace tg_gemm_emu {

inline float to_f(float v) { return v; }
inline float to_f(tg_dev::f16 v) { return tg::f16_t::to_float(v.bits); }
inline float bf16_to_float(unsigned short bits) {
  const unsigned u = static_cast<unsigned>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float to_f(tg_dev::bf16 v) { return bf16_to_float(v.bits); }
template <class T> T from_f(float v);
template <> inline float from_f<float>(float v) { return v; }
template <> inline tg_dev::f16 from_f<tg_dev::f16>(float v) { return tg_dev::f16{tg::f16_t::from_float(v)}; }
template <> inline tg_dev::bf16 from_f<tg_dev::bf16>(float v) { return tg_dev::bf16{tg::bf16_t::from_float(v)}; }
template <class T> double out_eps() { return 0.0; }
template <> inline double out_eps<tg_dev::f16>() { return std::ldexp(1.0, -11); }
template <> inline double out_eps<tg_dev::bf16>() { return std::ldexp(1.0, -8); }

/// An operand value as the kernel multiplies it: rounded to bf16 (R 1) or f16 (R 2) first.
inline double operand(float v, int r) {
  if (r == 1) return bf16_to_float(tg::bf16_t::from_float(v));
  if (r == 2) return tg::f16_t::to_float(tg::f16_t::from_float(v));
  return v;
}

template <class T> std::vector<T> random_values(long long n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = from_f<T>(u(rng));
  return v;
}

/// Compares `got` with `ref` (exact values) given each output's sum of |products| `mag`.
template <class T>
int compare(const char* name, const std::vector<T>& got, const std::vector<double>& ref, const std::vector<double>& mag,
            long long k) {
  long long bad = 0, first = -1;
  double worst = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = to_f(got[i]);
    const double bound = static_cast<double>(k + 2) * std::ldexp(mag[i], -23) + out_eps<T>() * std::fabs(ref[i]) + 1e-30;
    const double err = std::fabs(g - ref[i]);
    if (!(err <= bound)) {
      if (first < 0) first = static_cast<long long>(i);
      ++bad;
    }
    worst = std::max(worst, err / bound);
  }
  if (bad) {
    std::printf("%s: %lld of %zu outputs differ (first at %lld: %.9g, expected %.9g)\n", name, bad, ref.size(), first,
                static_cast<double>(to_f(got[static_cast<size_t>(first)])), ref[static_cast<size_t>(first)]);
    return 1;
  }
  std::printf("%s: %zu outputs match the float64 reference (worst error %.3f of its bound)\n", name, ref.size(), worst);
  return 0;
}

/// A matmul case: `kernel` (tg_first_run_matmul) on `nblocks` blocks, then, when K is split,
/// `reduce` (tg_first_run_matmul_reduce) on `reduce_blocks`; A and B hold na and nb elements.
template <class T, int R, class K, class KR>
int run_matmul(const char* name, tg_dev::GemmArgs g, long long batches, long long nblocks, long long reduce_blocks,
               long long ws_floats, long long na, long long nb, K kernel, KR reduce) {
  const std::vector<T> a = random_values<T>(na, 1), b = random_values<T>(nb, 2);
  std::vector<T> c(static_cast<size_t>(batches * g.m * g.n), from_f<T>(12345.0f));
  std::vector<float> ws(static_cast<size_t>(ws_floats + 1), 777.0f);
  tg_emu::launch(dim3(static_cast<unsigned>(nblocks)), dim3(256),
                 [&] { kernel(a.data(), b.data(), c.data(), ws.data(), g); });
  if (g.splits > 1) {
    tg_emu::launch(dim3(static_cast<unsigned>(reduce_blocks)), dim3(256), [&] { reduce(ws.data(), c.data(), g, batches); });
  }
  std::vector<double> ref(c.size()), mag(c.size());
  for (long long bt = 0; bt < batches; ++bt) {
    long long rem = bt, ao = 0, bo = 0;
    for (long long d = g.batch_rank - 1; d >= 0; --d) {
      const long long i = rem % g.batch_dims[d];
      rem /= g.batch_dims[d];
      ao += i * g.batch_sa[d];
      bo += i * g.batch_sb[d];
    }
    for (long long m = 0; m < g.m; ++m) {
      for (long long n = 0; n < g.n; ++n) {
        double s = 0.0, sa = 0.0;
        for (long long k = 0; k < g.k; ++k) {
          const double x = operand(to_f(a[ao + (g.ta ? k * g.lda + m : m * g.lda + k)]), R);
          const double y = operand(to_f(b[bo + (g.tb ? n * g.ldb + k : k * g.ldb + n)]), R);
          s += x * y;
          sa += std::fabs(x * y);
        }
        ref[bt * g.m * g.n + m * g.n + n] = s;
        mag[bt * g.m * g.n + m * g.n + n] = sa;
      }
    }
  }
  return compare(name, c, ref, mag, g.k);
}

/// A conv2d case: `kernel` (tg_first_run_conv2d) on `nblocks` blocks (then `reduce` when K is
/// split), x, w, y contiguous in the layouts that g's strides describe.
template <class T, int R, class K, class KR>
int run_conv2d(const char* name, tg_dev::ConvArgs g, long long nblocks, long long reduce_blocks, long long ws_floats,
               K kernel, KR reduce) {
  const long long cg = g.c / g.groups, og = g.o / g.groups;
  const std::vector<T> x = random_values<T>(g.n * g.c * g.h * g.w, 3), w = random_values<T>(g.o * cg * g.kh * g.kw, 4);
  std::vector<T> y(static_cast<size_t>(g.n * g.o * g.oh * g.ow), from_f<T>(12345.0f));
  std::vector<float> ws(static_cast<size_t>(ws_floats + 1), 777.0f);
  tg_emu::launch(dim3(static_cast<unsigned>(nblocks)), dim3(256),
                 [&] { kernel(x.data(), w.data(), y.data(), ws.data(), g); });
  if (g.splits > 1) {
    tg_emu::launch(dim3(static_cast<unsigned>(reduce_blocks)), dim3(256), [&] { reduce(ws.data(), y.data(), g); });
  }
  std::vector<double> ref(y.size()), mag(y.size());
  for (long long n = 0; n < g.n; ++n) {
    for (long long o = 0; o < g.o; ++o) {
      const long long grp = o / og;
      for (long long oh = 0; oh < g.oh; ++oh) {
        for (long long ow = 0; ow < g.ow; ++ow) {
          double s = 0.0, sa = 0.0;
          for (long long i = 0; i < cg; ++i) {
            for (long long r = 0; r < g.kh; ++r) {
              for (long long q = 0; q < g.kw; ++q) {
                const long long ih = oh * g.stride_h - g.pad_top + r * g.dil_h;
                const long long iw = ow * g.stride_w - g.pad_left + q * g.dil_w;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const double xv = operand(to_f(x[n * g.xs[0] + (grp * cg + i) * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]]), R);
                const double wv = operand(to_f(w[o * g.ws[0] + i * g.ws[1] + r * g.ws[2] + q * g.ws[3]]), R);
                s += xv * wv;
                sa += std::fabs(xv * wv);
              }
            }
          }
          const long long at = n * g.ys[0] + o * g.ys[1] + oh * g.ys[2] + ow * g.ys[3];
          ref[static_cast<size_t>(at)] = s;
          mag[static_cast<size_t>(at)] = sa;
        }
      }
    }
  }
  return compare(name, y, ref, mag, cg * g.kh * g.kw);
}

}  // namespace tg_gemm_emu
