// The f64 convolution path: direct loops over the definition of conv2d and its two adjoints,
// written as gathers (each output element accumulates its own sum, in a fixed order) so the
// threads never write to the same element. Tests use this path as their float64 reference.
//
// With logical dims x [N, C, H, W], w [O, C/G, kH, kW], y [N, O, OH, OW] (any layout, by strides):
//   y[n, o, oh, ow]   = sum_{i, kh, kw} x[n, g*C/G + i, oh*sh + kh*dh - pt, ow*sw + kw*dw - pl]
//                                        * w[o, i, kh, kw],            g = o / (O/G)
//   dx[n, c, h, v]    = sum over (o in c's group, kh, kw) with h = oh*sh + kh*dh - pt and
//                       v = ow*sw + kw*dw - pl for some in-range oh, ow: dy[n, o, oh, ow] * w[o, i,
//                       kh, kw]
//   dw[o, i, kh, kw]  = sum_{n, oh, ow} dy[n, o, oh, ow] * x[n, g*C/G + i, oh*sh + kh*dh - pt, ...]
#include <algorithm>

#include "backends/cpu/conv_kernels.h"
#include "backends/cpu/parallel.h"

namespace tg::cpu {
namespace {

using ops::ConvGeometry;

// Element strides of x (or dx), y (or dy) and w (or dw), in logical order.
struct Strides {
  std::array<int64_t, 4> x, y, w;
};

Strides strides_of(const ConvProblem& p) {
  return {ops::data_strides(p.g.x, p.data_layout), ops::data_strides(p.g.y, p.data_layout),
          ops::weight_strides(p.g.w, p.weights_layout)};
}

// Rows per parallel chunk so that each chunk does about kGrain multiply-adds.
int64_t grain_for(int64_t work_per_unit) {
  return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work_per_unit));
}

void forward(const ConvProblem& p, const double* x, const double* w, double* y) {
  const ConvGeometry& g = p.g;
  const Strides s = strides_of(p);
  const int64_t ocg = g.w.o / g.groups, icg = g.w.i;
  const int64_t row_work = g.y.w * g.y.c * icg * g.w.kh * g.w.kw;
  parallel_for(g.y.n * g.y.h, grain_for(row_work), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t n = row / g.y.h, oh = row % g.y.h;
      for (int64_t ow = 0; ow < g.y.w; ++ow) {
        for (int64_t o = 0; o < g.y.c; ++o) {
          const int64_t c0 = o / ocg * icg;
          double acc = 0;
          for (int64_t kh = 0; kh < g.w.kh; ++kh) {
            const int64_t ih = oh * g.stride_h + kh * g.dilation_h - g.pad_top;
            if (ih < 0 || ih >= g.x.h) continue;
            for (int64_t kw = 0; kw < g.w.kw; ++kw) {
              const int64_t iw = ow * g.stride_w + kw * g.dilation_w - g.pad_left;
              if (iw < 0 || iw >= g.x.w) continue;
              const double* xp = x + n * s.x[0] + c0 * s.x[1] + ih * s.x[2] + iw * s.x[3];
              const double* wp = w + o * s.w[0] + kh * s.w[2] + kw * s.w[3];
              for (int64_t i = 0; i < icg; ++i) acc += xp[i * s.x[1]] * wp[i * s.w[1]];
            }
          }
          y[n * s.y[0] + o * s.y[1] + oh * s.y[2] + ow * s.y[3]] = acc;
        }
      }
    }
  });
}

// The output position along one dim that reads input position `in` at window offset k, or -1.
int64_t source_of(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t pad,
                  int64_t out_size) {
  const int64_t t = in + pad - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < out_size ? o : -1;
}

void backward_data(const ConvProblem& p, const double* dy, const double* w, double* dx) {
  const ConvGeometry& g = p.g;
  const Strides s = strides_of(p);
  const int64_t ocg = g.w.o / g.groups, icg = g.w.i;
  const int64_t row_work = g.x.w * g.x.c * ocg * g.w.kh * g.w.kw;
  parallel_for(g.x.n * g.x.h, grain_for(row_work), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t n = row / g.x.h, ih = row % g.x.h;
      for (int64_t iw = 0; iw < g.x.w; ++iw) {
        for (int64_t c = 0; c < g.x.c; ++c) {
          const int64_t o0 = c / icg * ocg, i = c % icg;
          double acc = 0;
          for (int64_t kh = 0; kh < g.w.kh; ++kh) {
            const int64_t oh = source_of(ih, kh, g.stride_h, g.dilation_h, g.pad_top, g.y.h);
            if (oh < 0) continue;
            for (int64_t kw = 0; kw < g.w.kw; ++kw) {
              const int64_t ow = source_of(iw, kw, g.stride_w, g.dilation_w, g.pad_left, g.y.w);
              if (ow < 0) continue;
              const double* dyp = dy + n * s.y[0] + o0 * s.y[1] + oh * s.y[2] + ow * s.y[3];
              const double* wp = w + o0 * s.w[0] + i * s.w[1] + kh * s.w[2] + kw * s.w[3];
              for (int64_t o = 0; o < ocg; ++o) acc += dyp[o * s.y[1]] * wp[o * s.w[0]];
            }
          }
          dx[n * s.x[0] + c * s.x[1] + ih * s.x[2] + iw * s.x[3]] = acc;
        }
      }
    }
  });
}

void backward_weights(const ConvProblem& p, const double* dy, const double* x, double* dw) {
  const ConvGeometry& g = p.g;
  const Strides s = strides_of(p);
  const int64_t ocg = g.w.o / g.groups, icg = g.w.i;
  const int64_t per_kernel = g.w.kh * g.w.kw, total = g.w.o * icg * per_kernel;
  parallel_for(total, grain_for(g.y.n * g.y.h * g.y.w), [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo; e < hi; ++e) {
      const int64_t o = e / (icg * per_kernel), i = e / per_kernel % icg;
      const int64_t kh = e % per_kernel / g.w.kw, kw = e % g.w.kw;
      const int64_t c = o / ocg * icg + i;
      double acc = 0;
      for (int64_t n = 0; n < g.y.n; ++n) {
        for (int64_t oh = 0; oh < g.y.h; ++oh) {
          const int64_t ih = oh * g.stride_h + kh * g.dilation_h - g.pad_top;
          if (ih < 0 || ih >= g.x.h) continue;
          for (int64_t ow = 0; ow < g.y.w; ++ow) {
            const int64_t iw = ow * g.stride_w + kw * g.dilation_w - g.pad_left;
            if (iw < 0 || iw >= g.x.w) continue;
            acc += dy[n * s.y[0] + o * s.y[1] + oh * s.y[2] + ow * s.y[3]] *
                   x[n * s.x[0] + c * s.x[1] + ih * s.x[2] + iw * s.x[3]];
          }
        }
      }
      dw[o * s.w[0] + i * s.w[1] + kh * s.w[2] + kw * s.w[3]] = acc;
    }
  });
}

}  // namespace

void conv_reference_f64(const ConvProblem& p, const double* a, const double* b, double* out) {
  switch (p.pass) {
    case ConvPass::forward:
      forward(p, a, b, out);
      break;
    case ConvPass::backward_data:
      backward_data(p, a, b, out);
      break;
    case ConvPass::backward_weights:
      backward_weights(p, a, b, out);
      break;
  }
}

}  // namespace tg::cpu
