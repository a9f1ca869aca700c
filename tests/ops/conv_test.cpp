// Value and error tests of the conv family: conv2d, conv2d_backward_data, conv2d_backward_weights
// and the composite conv_transpose2d. Small cases are computed by hand; larger ones (every layout,
// strides, dilations, groups incl. depthwise, every padding style) are compared with a naive
// float64 reference written here, independently of the kernels: it converts to NCHW/OIHW,
// materializes the zero-padded input, and computes the two adjoints by scattering.
#include <algorithm>
#include <array>
#include <cstdint>
#include <thread>
#include <vector>

#include "backends/cpu/conv_kernels.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::run1;
using L = Layout;
using P = Padding;

template <typename T = float>
Tensor make(Graph& g, const std::vector<double>& v, Shape shape) {
  return g.constant(
      TensorData::from_vector<T>(std::vector<T>(v.begin(), v.end()), std::move(shape)));
}

std::vector<double> values(const TensorData& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

// ---- the independent reference ----------------------------------------------------------------

// A problem in logical dims: x [n, c, h, w], weights [o, c / groups, kh, kw].
struct Problem {
  L dl = L::nhwc, wl = L::hwio;
  int64_t n = 2, c = 3, h = 7, w = 6, o = 4, kh = 3, kw = 2;
  Conv2dDesc desc = {};  // layouts are taken from dl / wl

  Conv2dDesc full_desc() const {
    Conv2dDesc d = desc;
    d.data_layout = dl;
    d.weights_layout = wl;
    return d;
  }
  Shape x_shape() const { return dl == L::nchw ? Shape{n, c, h, w} : Shape{n, h, w, c}; }
  Shape w_shape() const {
    if (wl == L::oihw) return {o, c / desc.groups, kh, kw};
    if (wl == L::ohwi) return {o, kh, kw, c / desc.groups};
    return {kh, kw, c / desc.groups, o};
  }
};

// (before, after) padding of one dim, straight from the documented rules.
std::array<int64_t, 2> pads_of(const Conv2dDesc& d, int dim, int64_t in, int64_t k) {
  const int64_t s = d.strides[dim], ext = (k - 1) * d.dilations[dim] + 1;
  if (d.padding == P::explicit_padding)
    return {d.explicit_padding[2 * dim], d.explicit_padding[2 * dim + 1]};
  if (d.padding == P::valid) return {0, 0};
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>(0, (out - 1) * s + ext - in);
  if (d.padding == P::same) return {total / 2, total - total / 2};
  return {total - total / 2, total / 2};
}

// Flat index of logical element (a, b, c, d) = (n, c, h, w) for data or (o, i, kh, kw) for weights.
int64_t data_index(L l, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H,
                   int64_t W) {
  return l == L::nchw ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}
int64_t weight_index(L l, int64_t o, int64_t i, int64_t kh, int64_t kw, int64_t O, int64_t I,
                     int64_t KH, int64_t KW) {
  if (l == L::oihw) return ((o * I + i) * KH + kh) * KW + kw;
  if (l == L::ohwi) return ((o * KH + kh) * KW + kw) * I + i;
  return ((kh * KW + kw) * I + i) * O + o;
}

// The forward output's shape, from the documented size formula.
Shape output_shape(const Problem& p) {
  const Conv2dDesc d = p.full_desc();
  const auto ph = pads_of(d, 0, p.h, p.kh), pw = pads_of(d, 1, p.w, p.kw);
  const int64_t oh = (p.h + ph[0] + ph[1] - (p.kh - 1) * d.dilations[0] - 1) / d.strides[0] + 1;
  const int64_t ow = (p.w + pw[0] + pw[1] - (p.kw - 1) * d.dilations[1] - 1) / d.strides[1] + 1;
  return p.dl == L::nchw ? Shape{p.n, p.o, oh, ow} : Shape{p.n, oh, ow, p.o};
}

struct Reference {
  int64_t oh = 0, ow = 0;
  std::vector<double> y, dx, dw;  // in the problem's layouts
};

// y = conv2d(x, w); dx, dw = the adjoints applied to dy (dy may be empty: then only y).
Reference reference(const Problem& p, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& dy) {
  const Conv2dDesc d = p.full_desc();
  const int64_t G = d.groups, I = p.c / G, OG = p.o / G;
  const auto ph = pads_of(d, 0, p.h, p.kh), pw = pads_of(d, 1, p.w, p.kw);
  const int64_t H = p.h + ph[0] + ph[1], W = p.w + pw[0] + pw[1];  // padded
  Reference r;
  r.oh = (H - (p.kh - 1) * d.dilations[0] - 1) / d.strides[0] + 1;
  r.ow = (W - (p.kw - 1) * d.dilations[1] - 1) / d.strides[1] + 1;
  // Zero-padded canonical input [n][c][H][W].
  std::vector<double> xp(static_cast<size_t>(p.n * p.c * H * W), 0.0), dxp(xp.size(), 0.0);
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t v) {
    return static_cast<size_t>(((n * p.c + c) * H + h) * W + v);
  };
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t h = 0; h < p.h; ++h)
        for (int64_t v = 0; v < p.w; ++v)
          xp[at(n, c, h + ph[0], v + pw[0])] = x[data_index(p.dl, n, c, h, v, p.c, p.h, p.w)];
  r.y.assign(static_cast<size_t>(p.n * p.o * r.oh * r.ow), 0.0);
  r.dw.assign(w.size(), 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.o; ++o)
      for (int64_t i = 0; i < r.oh; ++i)
        for (int64_t j = 0; j < r.ow; ++j) {
          const int64_t yi = data_index(p.dl, n, o, i, j, p.o, r.oh, r.ow);
          const double g = dy.empty() ? 0.0 : dy[yi];
          for (int64_t ci = 0; ci < I; ++ci)
            for (int64_t a = 0; a < p.kh; ++a)
              for (int64_t b = 0; b < p.kw; ++b) {
                const size_t xi = at(n, o / OG * I + ci, i * d.strides[0] + a * d.dilations[0],
                                     j * d.strides[1] + b * d.dilations[1]);
                const int64_t wi = weight_index(p.wl, o, ci, a, b, p.o, I, p.kh, p.kw);
                r.y[yi] += xp[xi] * w[wi];
                dxp[xi] += g * w[wi];
                r.dw[wi] += g * xp[xi];
              }
        }
  r.dx.assign(x.size(), 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t c = 0; c < p.c; ++c)
      for (int64_t h = 0; h < p.h; ++h)
        for (int64_t v = 0; v < p.w; ++v)
          r.dx[data_index(p.dl, n, c, h, v, p.c, p.h, p.w)] = dxp[at(n, c, h + ph[0], v + pw[0])];
  return r;
}

// Runs the three ops on random inputs of `dtype` and compares them with the reference.
void check_problem(const Problem& p, DType dtype, double tol, uint64_t seed) {
  SCOPED_TRACE(::testing::Message()
               << "x " << shape_to_string(p.x_shape()) << " w " << shape_to_string(p.w_shape())
               << " dtype " << dtype_name(dtype) << " seed " << seed);
  TensorData x = TensorData::random_uniform(p.x_shape(), -1, 1, seed, dtype);
  TensorData w = TensorData::random_uniform(p.w_shape(), -1, 1, seed + 1, dtype);
  const Conv2dDesc d = p.full_desc();
  const Shape y_shape = output_shape(p);
  TensorData dy = TensorData::random_uniform(y_shape, -1, 1, seed + 2, dtype);
  Reference r = reference(p, values(x), values(w), values(dy));
  Graph g;
  Tensor tx = g.constant(x), tw = g.constant(w), tdy = g.constant(dy);
  Tensor y = conv2d(tx, tw, d);
  ASSERT_EQ(y.shape(), y_shape);
  Tensor dx = conv2d_backward_data(tdy, tw, p.x_shape(), d);
  Tensor dw = conv2d_backward_weights(tdy, tx, p.w_shape(), d);
  std::vector<TensorData> out = testing::run_cpu(g, {y, dx, dw});
  expect_close(out[0], r.y, y_shape, tol, tol);
  expect_close(out[1], r.dx, p.x_shape(), tol, tol);
  expect_close(out[2], r.dw, p.w_shape(), tol, tol);
}

// Every layout pair, strides, dilations, groups (incl. depthwise) and padding styles; channel
// counts that are multiples of 16 reach oneDNN's blocked (jit/brgemm) kernels.
std::vector<Problem> problems() {
  std::vector<Problem> v;
  auto add = [&](L dl, L wl, std::array<int64_t, 7> dims, Conv2dDesc d) {
    v.push_back({dl, wl, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], d});
  };
  // n, c, h, w, o, kh, kw
  add(L::nhwc, L::hwio, {2, 3, 7, 6, 4, 3, 2}, {});
  add(L::nhwc, L::oihw, {2, 3, 7, 6, 4, 3, 3},
      {.strides = {2, 2}, .padding = P::explicit_padding, .explicit_padding = {1, 2, 0, 1}});
  add(L::nchw, L::hwio, {1, 2, 8, 7, 3, 3, 3}, {.dilations = {2, 1}, .padding = P::same});
  add(L::nchw, L::oihw, {2, 3, 8, 7, 2, 3, 3}, {.strides = {2, 3}, .padding = P::same_lower});
  // same with an odd total padding (in 8, stride 2, k 3: total 1, at the end), groups 2
  add(L::nhwc, L::hwio, {1, 4, 8, 8, 6, 3, 3},
      {.strides = {2, 2}, .padding = P::same, .groups = 2});
  add(L::nchw, L::oihw, {2, 4, 8, 8, 6, 3, 3},
      {.strides = {2, 2}, .padding = P::same_lower, .groups = 2});
  // depthwise (multiplier 2 and 1)
  add(L::nhwc, L::hwio, {2, 4, 6, 6, 8, 3, 3},
      {.padding = P::explicit_padding, .explicit_padding = {1, 1, 1, 1}, .groups = 4});
  add(L::nchw, L::oihw, {1, 4, 7, 7, 4, 3, 3},
      {.strides = {2, 2}, .padding = P::same_lower, .groups = 4});
  add(L::nhwc, L::oihw, {2, 16, 9, 9, 16, 3, 3}, {.padding = P::same, .groups = 16});
  // dilation with stride, padding wider than the window
  add(L::nhwc, L::hwio, {1, 3, 9, 8, 2, 2, 3},
      {.strides = {2, 2}, .dilations = {2, 2}, .padding = P::same});
  add(L::nchw, L::hwio, {1, 2, 4, 5, 3, 2, 2},
      {.padding = P::explicit_padding, .explicit_padding = {3, 2, 3, 4}});
  // oneDNN's blocked kernels: 1x1 with stride, 3x3 with many channels
  add(L::nhwc, L::hwio, {2, 16, 9, 9, 32, 1, 1}, {.strides = {2, 2}});
  add(L::nchw, L::oihw, {2, 16, 8, 8, 16, 3, 3}, {.padding = P::same});
  add(L::nhwc, L::hwio, {2, 32, 10, 10, 48, 3, 3}, {.padding = P::same});
  add(L::nchw, L::hwio, {2, 32, 9, 9, 32, 3, 3},
      {.strides = {2, 2}, .padding = P::same, .groups = 2});
  // a 7x7 stride-2 stem on 3 channels
  add(L::nhwc, L::hwio, {1, 3, 16, 16, 16, 7, 7},
      {.strides = {2, 2}, .padding = P::explicit_padding, .explicit_padding = {3, 3, 3, 3}});
  // OHWI weights (cuDNN's KRSC), with both data layouts, groups and depthwise
  add(L::nhwc, L::ohwi, {2, 3, 7, 6, 4, 3, 2},
      {.strides = {2, 1}, .padding = P::explicit_padding, .explicit_padding = {1, 0, 2, 1}});
  add(L::nchw, L::ohwi, {1, 4, 8, 8, 6, 3, 3}, {.strides = {2, 2}, .padding = P::same, .groups = 2});
  add(L::nhwc, L::ohwi, {2, 16, 9, 9, 16, 3, 3}, {.padding = P::same, .groups = 16});
  add(L::nhwc, L::ohwi, {2, 16, 9, 9, 32, 1, 1}, {.strides = {2, 2}});
  // large enough (> 2e7 flops) for the oneDNN path to time its format candidates
  add(L::nhwc, L::hwio, {2, 32, 24, 24, 32, 3, 3}, {.padding = P::same});
  return v;
}

TG_COVERS(value, conv2d);
TG_COVERS(value, conv2d_backward_data);
TG_COVERS(value, conv2d_backward_weights);

TEST(Conv, OneDnnF32MatchesReference) {
  uint64_t seed = 10;
  for (const Problem& p : problems()) check_problem(p, DType::f32, 1e-4, seed += 3);
}

TEST(Conv, F64MatchesReference) {
  uint64_t seed = 100;
  std::vector<Problem> all = problems();
  all.pop_back();  // the large one is there for the f32 path's timing
  for (const Problem& p : all) check_problem(p, DType::f64, 1e-12, seed += 3);
}

// Each of the f32 path's format candidates (see conv_onednn.cpp), called directly.
TEST(Conv, OneDnnEveryFormatCandidate) {
  const std::vector<Problem> all = problems();
  for (size_t k : {1, 5, 7, 11, 12, 15, 16, 17, 19}) {
    const Problem& p = all[k];
    cpu::ConvProblem cp;
    cp.g = ops::conv_geometry(p.x_shape(), p.w_shape(), p.full_desc());
    cp.data_layout = p.dl;
    cp.weights_layout = p.wl;
    TensorData x = TensorData::random_uniform(p.x_shape(), -1, 1, 40 + k, DType::f32);
    TensorData w = TensorData::random_uniform(p.w_shape(), -1, 1, 50 + k, DType::f32);
    const Shape y_shape = output_shape(p);
    TensorData dy = TensorData::random_uniform(y_shape, -1, 1, 60 + k, DType::f32);
    Reference r = reference(p, values(x), values(w), values(dy));
    for (int c = 0; c < 3; ++c) {
      SCOPED_TRACE(::testing::Message() << "problem " << k << " candidate " << c);
      TensorData y(y_shape, DType::f32), dx(p.x_shape(), DType::f32), dw(p.w_shape(), DType::f32);
      cp.pass = cpu::ConvPass::forward;
      cpu::conv_onednn_candidate(cp, c, x.data<float>(), w.data<float>(), y.data<float>());
      cp.pass = cpu::ConvPass::backward_data;
      cpu::conv_onednn_candidate(cp, c, dy.data<float>(), w.data<float>(), dx.data<float>());
      cp.pass = cpu::ConvPass::backward_weights;
      cpu::conv_onednn_candidate(cp, c, dy.data<float>(), x.data<float>(), dw.data<float>());
      expect_close(y, r.y, y_shape, 1e-4, 1e-4);
      expect_close(dx, r.dx, p.x_shape(), 1e-4, 1e-4);
      expect_close(dw, r.dw, p.w_shape(), 1e-4, 1e-4);
    }
  }
}

TEST(Conv, HalfPrecisionMatchesReference) {
  const std::vector<Problem> all = problems();
  // Inputs are exact in the reference; the error is the final rounding (bf16: 8 bits, f16: 11).
  // bf16 runs natively where the CPU has bf16 kernels, else in f32 like f16.
  check_problem(all[1], DType::bf16, 3e-2, 7);
  check_problem(all[4], DType::bf16, 3e-2, 8);
  check_problem(all[1], DType::f16, 4e-3, 10);
  check_problem(all[6], DType::f16, 4e-3, 11);
}

// Several threads running the same (tuned, cached) convolutions at once agree with one another.
TEST(Conv, ConcurrentRuns) {
  const Problem p = problems().back();
  const Conv2dDesc d = p.full_desc();
  TensorData x = TensorData::random_uniform(p.x_shape(), -1, 1, 70, DType::f32);
  TensorData w = TensorData::random_uniform(p.w_shape(), -1, 1, 71, DType::f32);
  TensorData dy = TensorData::random_uniform(output_shape(p), -1, 1, 72, DType::f32);
  auto run = [&] {
    Graph g;
    Tensor tx = g.constant(x), tw = g.constant(w), tdy = g.constant(dy);
    return testing::run_cpu(g, {conv2d(tx, tw, d), conv2d_backward_data(tdy, tw, p.x_shape(), d),
                                conv2d_backward_weights(tdy, tx, p.w_shape(), d)});
  };
  std::vector<std::vector<TensorData>> results(3);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      try {
        results[t] = run();
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 1; t < results.size(); ++t) {
    ASSERT_EQ(results[t].size(), 3u);
    ASSERT_EQ(results[0].size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      expect_close(results[t][i], values(results[0][i]), results[0][i].shape(), 1e-5, 1e-5);
    }
  }
}

// ---- hand-computed values --------------------------------------------------------------------

// x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]] (one channel in, one out).
const std::vector<double> kX = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<double> kW = {1, 2, 3, 4};

template <typename T>
void hand_computed_2x2() {
  Graph g;
  Tensor x = make<T>(g, kX, {1, 3, 3, 1}), w = make<T>(g, kW, {2, 2, 1, 1});
  // y[0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37, then 47, 67, 77.
  Tensor y = conv2d(x, w);
  EXPECT_EQ(y.type(), (TensorType{{1, 2, 2, 1}, dtype_of_v<T>}));
  expect_close(run1(g, y), {37, 47, 67, 77}, {1, 2, 2, 1});
  // dy = ones: dx[h, v] = sum of the weights that touch (h, v).
  Tensor ones = make<T>(g, {1, 1, 1, 1}, {1, 2, 2, 1});
  expect_close(run1(g, conv2d_backward_data(ones, w, {1, 3, 3, 1})), {1, 3, 2, 4, 10, 6, 3, 7, 4},
               {1, 3, 3, 1});
  // dw[a, b] = sum of the 2x2 block of x starting at (a, b).
  expect_close(run1(g, conv2d_backward_weights(ones, x, {2, 2, 1, 1})), {12, 16, 24, 28},
               {2, 2, 1, 1});
}

TEST(Conv, HandComputedF32) { hand_computed_2x2<float>(); }
TEST(Conv, HandComputedF64) { hand_computed_2x2<double>(); }

TEST(Conv, HandComputedStridedPadded) {
  // x = 1..16 as 4x4, w = 3x3 ones, stride 2, padding 1: sums of the windows' in-range parts.
  Graph g;
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = i + 1;
  Tensor y =
      conv2d(make(g, x, {1, 4, 4, 1}), make(g, std::vector<double>(9, 1.0), {3, 3, 1, 1}),
             {.strides = {2, 2}, .padding = P::explicit_padding, .explicit_padding = {1, 1, 1, 1}});
  expect_close(run1(g, y), {14, 30, 57, 99}, {1, 2, 2, 1});
}

TEST(Conv, HandComputedSamePaddingOddTotal) {
  // x = [1,2,3,4], w = [1,10]: same pads 0 before / 1 after, same_lower 1 before / 0 after.
  Graph g;
  Tensor x = make(g, {1, 2, 3, 4}, {1, 1, 4, 1}), w = make(g, {1, 10}, {1, 2, 1, 1});
  expect_close(run1(g, conv2d(x, w, {.padding = P::same})), {21, 32, 43, 4}, {1, 1, 4, 1});
  expect_close(run1(g, conv2d(x, w, {.padding = P::same_lower})), {10, 21, 32, 43}, {1, 1, 4, 1});
  // stride 2: out 2, total max((2-1)*2 + 2 - 4, 0) = 0.
  expect_close(run1(g, conv2d(x, w, {.strides = {1, 2}, .padding = P::same})), {21, 43},
               {1, 1, 2, 1});
}

TEST(Conv, HandComputedDilationAndGroups) {
  Graph g;
  // dilation 2: y[j] = x[j] + x[j + 2].
  Tensor y = conv2d(make(g, {1, 2, 3, 4, 5}, {1, 1, 5, 1}), make(g, {1, 1}, {1, 2, 1, 1}),
                    {.dilations = {1, 2}});
  expect_close(run1(g, y), {4, 6, 8}, {1, 1, 3, 1});
  // groups 2: channels (1,2) -> out 0 with w[:,0] = (1,3); channels (3,4) -> out 1 with w[:,1] =
  // (2,4).
  Tensor x = make(g, {1, 2, 3, 4}, {1, 1, 1, 4}), w = make(g, {1, 2, 3, 4}, {1, 1, 2, 2});
  expect_close(run1(g, conv2d(x, w, {.groups = 2})), {7, 22}, {1, 1, 1, 2});
  // The same in nchw / oihw: oihw [2, 2, 1, 1] holds w[o][i] = (1,3), (2,4).
  Tensor xc = make(g, {1, 2, 3, 4}, {1, 4, 1, 1}), wc = make(g, {1, 3, 2, 4}, {2, 2, 1, 1});
  expect_close(
      run1(g, conv2d(xc, wc, {.groups = 2, .data_layout = L::nchw, .weights_layout = L::oihw})),
      {7, 22}, {1, 2, 1, 1});
}

TEST(Conv, NchwOihwTwoChannels) {
  // Two input channels: x0 = kX, x1 = 10 * kX; w[0][0] = kW, w[0][1] = [[0,0],[0,1]]:
  // y = conv(x0, kW) + x1 shifted by (1, 1) = [37 + 50, 47 + 60, 67 + 80, 77 + 90].
  Graph g;
  std::vector<double> x = kX;
  for (double v : kX) x.push_back(10 * v);
  Tensor y = conv2d(make(g, x, {1, 2, 3, 3}), make(g, {1, 2, 3, 4, 0, 0, 0, 1}, {1, 2, 2, 2}),
                    {.data_layout = L::nchw, .weights_layout = L::oihw});
  expect_close(run1(g, y), {87, 107, 147, 167}, {1, 1, 2, 2});
}

// ---- dynamic batch and empty tensors -----------------------------------------------------------

TEST(Conv, DynamicBatch) {
  Problem p{.n = 3,
            .c = 3,
            .h = 5,
            .w = 5,
            .o = 4,
            .kh = 3,
            .kw = 3,
            .desc = {.strides = {2, 2}, .padding = P::same}};
  Graph g;
  const Conv2dDesc d = p.full_desc();
  Tensor x = g.placeholder({-1, 5, 5, 3}, DType::f32, "x");
  Tensor dy = g.placeholder({-1, 3, 3, 4}, DType::f32, "dy");
  TensorData wd = TensorData::random_uniform(p.w_shape(), -1, 1, 5, DType::f32);
  Tensor w = g.constant(wd);
  Tensor y = conv2d(x, w, d);
  EXPECT_EQ(y.shape(), (Shape{-1, 3, 3, 4}));
  Tensor dx = conv2d_backward_data(dy, w, {-1, 5, 5, 3}, d);
  EXPECT_EQ(dx.shape(), (Shape{-1, 5, 5, 3}));
  Tensor dw = conv2d_backward_weights(dy, x, p.w_shape(), d);
  EXPECT_EQ(dw.shape(), p.w_shape());
  for (int64_t n : {3, 1}) {
    p.n = n;
    TensorData xd = TensorData::random_uniform({n, 5, 5, 3}, -1, 1, 6 + n, DType::f32);
    TensorData dyd = TensorData::random_uniform({n, 3, 3, 4}, -1, 1, 8 + n, DType::f32);
    Reference r = reference(p, values(xd), values(wd), values(dyd));
    std::vector<TensorData> out = g.run({{x, xd}, {dy, dyd}}, {y, dx, dw}, {}, Device::cpu());
    expect_close(out[0], r.y, {n, 3, 3, 4}, 1e-4, 1e-4);
    expect_close(out[1], r.dx, {n, 5, 5, 3}, 1e-4, 1e-4);
    expect_close(out[2], r.dw, p.w_shape(), 1e-4, 1e-4);
  }
}

TEST(Conv, DynamicSpatialDims) {
  Graph g;
  Tensor x = g.placeholder({2, -1, -1, 3}, DType::f64, "x");
  Tensor w = g.constant(TensorData::full({3, 3, 3, 2}, DType::f64, 1.0));
  Tensor y = conv2d(x, w, {.strides = {2, 2}, .padding = P::same});
  EXPECT_EQ(y.shape(), (Shape{2, -1, -1, 2}));
  TensorData out =
      g.run({{x, TensorData::full({2, 5, 4, 3}, DType::f64, 1.0)}}, {y}, {}, Device::cpu())[0];
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2, 2}));
  // A window that does not fit the fed size fails when the graph is compiled for it.
  Tensor v = conv2d(x, w);
  EXPECT_TG_ERROR(
      g.run({{x, TensorData::full({2, 2, 4, 3}, DType::f64, 1.0)}}, {v}, {}, Device::cpu()),
      ErrorCode::invalid_argument, "[conv2d]");
}

TEST(Conv, EmptyBatch) {
  Graph g;
  Tensor x = g.placeholder({-1, 4, 4, 2}, DType::f32, "x");
  Tensor w = g.constant(TensorData::full({3, 3, 2, 5}, DType::f32, 1.0));
  Tensor y = conv2d(x, w, {.padding = P::same});
  Tensor dw = conv2d_backward_weights(y, x, {3, 3, 2, 5}, {.padding = P::same});
  std::vector<TensorData> out =
      g.run({{x, TensorData::zeros({0, 4, 4, 2})}}, {y, dw}, {}, Device::cpu());
  EXPECT_EQ(out[0].shape(), (Shape{0, 4, 4, 5}));
  expect_close(out[1], std::vector<double>(90, 0.0), {3, 3, 2, 5});
}

// ---- conv_transpose2d --------------------------------------------------------------------------

TEST(ConvTranspose, HandComputed) {
  // x = [1, 2], w = [1, 2, 3], stride 2: full output [1, 2, 3 + 2, 4, 6].
  Graph g;
  Tensor x = make(g, {1, 2}, {1, 1, 2, 1}), w = make(g, {1, 2, 3}, {1, 3, 1, 1});
  auto ct = [&](ConvTranspose2dDesc d) {
    d.conv.strides = {1, 2};
    return conv_transpose2d(x, w, d);
  };
  expect_close(run1(g, ct({})), {1, 2, 5, 4, 6}, {1, 1, 5, 1});
  // pads 1/1 crop one each side; output_padding 1 gives back the last one.
  Conv2dDesc pad11{.padding = P::explicit_padding, .explicit_padding = {0, 0, 1, 1}};
  expect_close(run1(g, ct({.conv = pad11})), {2, 5, 4}, {1, 1, 3, 1});
  expect_close(run1(g, ct({.conv = pad11, .output_padding = {0, 1}})), {2, 5, 4, 6}, {1, 1, 4, 1});
  // same: out = in * stride = 4, total 5 - 4 = 1: same crops the end, same_lower the beginning.
  expect_close(run1(g, ct({.conv = {.padding = P::same}})), {1, 2, 5, 4}, {1, 1, 4, 1});
  expect_close(run1(g, ct({.conv = {.padding = P::same_lower}})), {2, 5, 4, 6}, {1, 1, 4, 1});
}

TEST(ConvTranspose, ZeroExtension) {
  Graph g;
  Tensor x = make(g, {1, 2}, {1, 1, 2, 1}), w = make(g, {5}, {1, 1, 1, 1});
  // k 1, stride 3, same: out 6, total (1*3 + 1) - 6 = -2: one zero before and after [5, 0, 0, 10].
  expect_close(run1(g, conv_transpose2d(x, w, {.conv = {.strides = {1, 3}, .padding = P::same}})),
               {0, 5, 0, 0, 10, 0}, {1, 1, 6, 1});
  // output_padding 2 (< stride 3) appends two zeros to the full output [5, 0, 0, 10].
  expect_close(
      run1(g, conv_transpose2d(x, w, {.conv = {.strides = {1, 3}}, .output_padding = {0, 2}})),
      {5, 0, 0, 10, 0, 0}, {1, 1, 6, 1});
  // output_padding >= stride is allowed when below the dilation: k 2, dilation 3, stride 1.
  Tensor w2 = make(g, {1, 10}, {1, 2, 1, 1});
  expect_close(
      run1(g, conv_transpose2d(x, w2, {.conv = {.dilations = {1, 3}}, .output_padding = {0, 2}})),
      {1, 2, 0, 10, 20, 0, 0}, {1, 1, 7, 1});
}

// conv_transpose2d(x, w) is the adjoint of conv2d with weights w: <conv_t(x), u> = <x, conv(u)>,
// checked with the reference (PyTorch ConvTranspose2d layout: oihw weights [C_in, C_out / g, kh,
// kw]).
TEST(ConvTranspose, IsTheAdjointOfConv2d) {
  Problem p{.dl = L::nchw,
            .wl = L::oihw,
            .n = 2,
            .c = 4,
            .h = 7,
            .w = 6,
            .o = 6,
            .kh = 3,
            .kw = 3,
            .desc = {.strides = {2, 2},
                     .padding = P::explicit_padding,
                     .explicit_padding = {1, 1, 1, 1},
                     .groups = 2}};
  // Transposed input x ~ conv2d's output [2, 6, 4, 3]; output_padding {0, 1} gives [2, 4, 7, 6].
  TensorData x = TensorData::random_uniform({2, 6, 4, 3}, -1, 1, 3, DType::f64);
  TensorData w = TensorData::random_uniform(p.w_shape(), -1, 1, 4, DType::f64);
  Reference r = reference(p, std::vector<double>(2 * 4 * 7 * 6, 0.0), values(w), values(x));
  Graph g;
  Tensor y = conv_transpose2d(g.constant(x), g.constant(w),
                              {.conv = p.full_desc(), .output_padding = {0, 1}});
  ASSERT_EQ(y.shape(), (Shape{2, 4, 7, 6}));
  expect_close(run1(g, y), r.dx, {2, 4, 7, 6}, 1e-12, 1e-12);
}

// ---- errors ------------------------------------------------------------------------------------

TG_COVERS(error, conv2d);
TEST(ConvErrors, Conv2d) {
  Graph g;
  Tensor x = g.placeholder({8, 32, 32, 3}, DType::f32),
         w = g.placeholder({3, 3, 4, 16}, DType::f32);
  EXPECT_TG_ERROR(conv2d(x, w), ErrorCode::shape_mismatch,
                  "[conv2d] input channels 3 do not match weights' 4 (input [8,32,32,3], weights "
                  "[3,3,4,16], hwio)");
  Tensor w3 = g.placeholder({3, 3, 3, 16}, DType::f32);
  EXPECT_TG_ERROR(conv2d(g.placeholder({8, 32, 3}, DType::f32), w3), ErrorCode::shape_mismatch,
                  "[conv2d] input must have rank 4");
  EXPECT_TG_ERROR(conv2d(x, g.placeholder({3, 3, 16}, DType::f32)), ErrorCode::shape_mismatch,
                  "weights must have rank 4");
  EXPECT_TG_ERROR(conv2d(x, g.placeholder({3, 3, 3, 16}, DType::f64)), ErrorCode::dtype_mismatch,
                  "f32 and f64");
  EXPECT_TG_ERROR(
      conv2d(g.placeholder({8, 32, 32, 3}, DType::i32), g.placeholder({3, 3, 3, 16}, DType::i32)),
      ErrorCode::dtype_mismatch, "[conv2d] needs two inputs of one floating dtype");
  EXPECT_TG_ERROR(conv2d(x, w3, {.groups = 2}), ErrorCode::shape_mismatch,
                  "input channels 3 are not divisible by groups 2");
  EXPECT_TG_ERROR(conv2d(g.placeholder({1, 4, 4, 4}, DType::f32),
                         g.placeholder({1, 1, 2, 3}, DType::f32), {.groups = 2}),
                  ErrorCode::shape_mismatch, "output channels 3 are not divisible by groups 2");
  EXPECT_TG_ERROR(conv2d(g.placeholder({1, 4, 4, 4}, DType::f32),
                         g.placeholder({1, 1, 1, 4}, DType::f32), {.groups = 2}),
                  ErrorCode::shape_mismatch, "input channels 4 do not match weights' 1 x groups 2");
  EXPECT_TG_ERROR(conv2d(g.placeholder({8, 32, 32, -1}, DType::f32), w3),
                  ErrorCode::invalid_argument, "channel dim must be static");
  EXPECT_TG_ERROR(conv2d(x, g.placeholder({3, -1, 3, 16}, DType::f32)), ErrorCode::invalid_argument,
                  "weights dims must be static");
  EXPECT_TG_ERROR(
      conv2d(g.placeholder({1, 2, 9, 3}, DType::f32), w3), ErrorCode::invalid_argument,
      "[conv2d] the window's height 3 (kernel 3, dilation 1) is larger than the padded input 2");
  EXPECT_TG_ERROR(conv2d(g.placeholder({1, 9, 4, 3}, DType::f32), w3, {.dilations = {1, 2}}),
                  ErrorCode::invalid_argument, "the window's width 5");
}

TEST(ConvErrors, Attributes) {
  Graph g;
  Tensor x = g.placeholder({1, 8, 8, 3}, DType::f32), w = g.placeholder({3, 3, 3, 4}, DType::f32);
  auto expect_bad = [&](Conv2dDesc d, const char* what) {
    EXPECT_TG_ERROR(conv2d(x, w, d), ErrorCode::invalid_argument, what);
    EXPECT_TG_ERROR(conv2d(x, w, d), ErrorCode::invalid_argument, "[conv2d]");
  };
  expect_bad({.strides = {1}}, "strides [1] must have 2 entries");
  expect_bad({.strides = {1, 0}}, "strides [1,0] must be >= 1");
  expect_bad({.dilations = {0, 1}}, "dilations [0,1] must be >= 1");
  expect_bad({.padding = P::explicit_padding, .explicit_padding = {1, 1, 1}},
             "explicit_padding [1,1,1] must have 4 entries");
  expect_bad({.padding = P::explicit_padding, .explicit_padding = {1, -1, 1, 1}}, "must be >= 0");
  expect_bad({.padding = P::same, .explicit_padding = {1, -1, 1, 1}}, "must be >= 0");
  expect_bad({.padding = static_cast<Padding>(9)}, "unknown padding style");
  expect_bad({.groups = 0}, "groups 0 must be >= 1");
  expect_bad({.data_layout = L::hwio}, "data_layout must be nhwc or nchw, got hwio");
  expect_bad({.weights_layout = L::nchw}, "weights_layout must be hwio, oihw or ohwi, got nchw");
}

TG_COVERS(error, conv2d_backward_data);
TEST(ConvErrors, BackwardData) {
  Graph g;
  Tensor dy = g.placeholder({2, 4, 4, 8}, DType::f32), w = g.placeholder({3, 3, 3, 8}, DType::f32);
  EXPECT_NO_THROW(conv2d_backward_data(dy, w, {2, 6, 6, 3}));
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, 7, 6, 3}), ErrorCode::shape_mismatch,
                  "[conv2d_backward_data] input_shape gives a forward output of shape [2,5,4,8], "
                  "not dy's [2,4,4,8]");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {3, 6, 6, 3}), ErrorCode::shape_mismatch, "not dy's");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, 6, 6, 4}), ErrorCode::shape_mismatch,
                  "input channels 4 do not match weights' 3");
  EXPECT_TG_ERROR(conv2d_backward_data(g.placeholder({2, 4, 4, 5}, DType::f32), w, {2, 6, 6, 3}),
                  ErrorCode::shape_mismatch, "not dy's [2,4,4,5]");
  // A dynamic spatial dim of input_shape is recovered from dy's where the stride is 1 ...
  EXPECT_EQ(conv2d_backward_data(dy, w, {-1, -1, -1, 3}).shape(), (Shape{2, 6, 6, 3}));
  EXPECT_EQ(conv2d_backward_data(dy, w, {2, -1, 4, 3}, {.padding = P::same}).shape(),
            (Shape{2, 4, 4, 3}));
  EXPECT_EQ(conv2d_backward_data(dy, w, {2, -1, 6, 3},
                                 {.padding = P::explicit_padding, .explicit_padding = {2, 1, 0, 0}})
                .shape(),
            (Shape{2, 3, 6, 3}));
  // ... and an error where dy's does not determine it (9 or 10 give 4 with stride 2).
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, -1, 9, 3}, {.strides = {2, 2}}),
                  ErrorCode::invalid_argument,
                  "[conv2d_backward_data] input_shape's height is dynamic and dy's height 4 does "
                  "not determine it (stride 2)");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, 6, 6, -1}), ErrorCode::invalid_argument,
                  "input_shape's channel dim must be static");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, 6, -2, 3}), ErrorCode::invalid_argument,
                  "input_shape has a negative dim");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, 6, 3}), ErrorCode::shape_mismatch,
                  "input_shape must have rank 4");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, g.placeholder({3, 3, 3, 8}, DType::bf16), {2, 6, 6, 3}),
                  ErrorCode::dtype_mismatch, "[conv2d_backward_data]");
  EXPECT_TG_ERROR(conv2d_backward_data(dy, w, {2, 6, 6, 3}, {.strides = {}}),
                  ErrorCode::invalid_argument,
                  "[conv2d_backward_data] strides [] must have 2 entries");
}

TG_COVERS(error, conv2d_backward_weights);
TEST(ConvErrors, BackwardWeights) {
  Graph g;
  Tensor dy = g.placeholder({2, 4, 4, 8}, DType::f32), x = g.placeholder({2, 6, 6, 3}, DType::f32);
  EXPECT_NO_THROW(conv2d_backward_weights(dy, x, {3, 3, 3, 8}));
  EXPECT_TG_ERROR(conv2d_backward_weights(dy, x, {2, 3, 3, 8}), ErrorCode::shape_mismatch,
                  "[conv2d_backward_weights] the input gives a forward output of shape [2,5,4,8], "
                  "not dy's [2,4,4,8]");
  EXPECT_TG_ERROR(conv2d_backward_weights(dy, x, {3, 3, 3, 4}), ErrorCode::shape_mismatch,
                  "not dy's");
  EXPECT_TG_ERROR(conv2d_backward_weights(dy, x, {3, 3, 2, 8}), ErrorCode::shape_mismatch,
                  "input channels 3 do not match weights' 2");
  EXPECT_TG_ERROR(conv2d_backward_weights(dy, x, {3, -1, 3, 8}), ErrorCode::invalid_argument,
                  "weights dims must be static");
  EXPECT_TG_ERROR(conv2d_backward_weights(dy, g.placeholder({2, 6, 6}, DType::f32), {3, 3, 3, 8}),
                  ErrorCode::shape_mismatch, "input must have rank 4");
  EXPECT_TG_ERROR(
      conv2d_backward_weights(dy, g.placeholder({2, 6, 6, 3}, DType::f64), {3, 3, 3, 8}),
      ErrorCode::dtype_mismatch, "[conv2d_backward_weights]");
}

TEST(ConvErrors, ConvTranspose) {
  Graph g;
  Tensor x = g.placeholder({1, 4, 4, 8}, DType::f32), w = g.placeholder({3, 3, 3, 8}, DType::f32);
  EXPECT_EQ(conv_transpose2d(x, w).shape(), (Shape{1, 6, 6, 3}));
  EXPECT_TG_ERROR(conv_transpose2d(x, g.placeholder({3, 3, 3, 4}, DType::f32)),
                  ErrorCode::shape_mismatch,
                  "[conv_transpose2d] input channels 8 do not match weights' 4 (input [1,4,4,8], "
                  "weights [3,3,3,4], hwio)");
  EXPECT_TG_ERROR(conv_transpose2d(x, w, {.output_padding = {0, 1}}), ErrorCode::invalid_argument,
                  "[conv_transpose2d] output_padding [0,1] must be in [0, max(stride, dilation))");
  EXPECT_TG_ERROR(conv_transpose2d(x, w, {.output_padding = {0}}), ErrorCode::invalid_argument,
                  "must have 2 entries");
  EXPECT_TG_ERROR(conv_transpose2d(g.placeholder({1, -1, 4, 8}, DType::f32), w),
                  ErrorCode::invalid_argument, "spatial dims must be static");
  EXPECT_TG_ERROR(conv_transpose2d(x, w, {.conv = {.groups = 3}}), ErrorCode::shape_mismatch,
                  "not divisible by groups 3");
  EXPECT_TG_ERROR(
      conv_transpose2d(
          x, w, {.conv = {.padding = P::explicit_padding, .explicit_padding = {3, 3, 0, 0}}}),
      ErrorCode::invalid_argument,
      "[conv_transpose2d] the padding (3 + 3) crops the whole output height");
  EXPECT_TG_ERROR(conv_transpose2d(x, g.placeholder({3, 3, 3, 8}, DType::f64)),
                  ErrorCode::dtype_mismatch, "[conv_transpose2d]");
  EXPECT_TG_ERROR(conv_transpose2d(x, w, {.conv = {.strides = {0, 1}}}),
                  ErrorCode::invalid_argument, "[conv_transpose2d] strides");
  EXPECT_TG_ERROR(conv_transpose2d(x, Tensor{}), ErrorCode::invalid_argument, "[conv_transpose2d]");
}

}  // namespace
}  // namespace tg
