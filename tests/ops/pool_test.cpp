// Value and error tests of the pool family (max_pool2d, avg_pool2d, their backward ops and the
// global_avg_pool2d composite): hand-computed small cases for every option, and a cross-check of
// the float32 path (oneDNN or the own loops) against a naive float64 reference written here,
// independently of the library's window geometry.
#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
using V = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor constant(Graph& g, const V& v, Shape shape, DType dtype = DType::f32) {
  Tensor t = g.constant(TensorData::from_vector<double>(v, shape));
  return dtype == DType::f64 ? t : cast(t, dtype);
}

// 1..16 as a [1, 4, 4, 1] nhwc image (row r, column c holds 4r + c + 1).
Tensor image4(Graph& g, DType dtype = DType::f32) {
  V v(16);
  for (int i = 0; i < 16; ++i) v[i] = i + 1;
  return constant(g, v, {1, 4, 4, 1}, dtype);
}

Pool2dDesc k3s2p1(bool ceil_mode = false, bool include_pad = false) {
  return {.kernel_size = {3, 3},
          .strides = {2, 2},
          .padding = Padding::explicit_padding,
          .explicit_padding = {1, 1, 1, 1},
          .ceil_mode = ceil_mode,
          .count_include_pad = include_pad};
}

// ---- max_pool2d / avg_pool2d: hand-computed ----------------------------------------------------

TG_COVERS(value, max_pool2d);
TG_COVERS(value, avg_pool2d);

TEST(Pool, DefaultWindowIsTwoByTwoWithStrideEqualToKernel) {
  Graph g;
  Tensor y = max_pool2d(image4(g));
  EXPECT_EQ(y.type(), (TensorType{{1, 2, 2, 1}, DType::f32}));
  expect_equal(run1(g, y), {6, 8, 14, 16}, {1, 2, 2, 1});
  expect_equal(run1(g, avg_pool2d(image4(g))), {3.5, 5.5, 11.5, 13.5}, {1, 2, 2, 1});
}

TEST(Pool, OverlappingWindows) {
  Graph g;  // kernel 3, stride 1: windows rows/cols {0..2} and {1..3}
  Pool2dDesc d{.kernel_size = {3, 3}, .strides = {1, 1}};
  expect_equal(run1(g, max_pool2d(image4(g), d)), {11, 12, 15, 16}, {1, 2, 2, 1});
  expect_equal(run1(g, avg_pool2d(image4(g), d)), {6, 7, 10, 11}, {1, 2, 2, 1});
}

TEST(Pool, RectangularKernelAndStrides) {
  Graph g;  // kernel 1x3, strides 3x1: rows 0 and 3, column windows {0..2}, {1..3}
  Pool2dDesc d{.kernel_size = {1, 3}, .strides = {3, 1}};
  expect_equal(run1(g, max_pool2d(image4(g), d)), {3, 4, 15, 16}, {1, 2, 2, 1});
  expect_equal(run1(g, avg_pool2d(image4(g), d)), {2, 3, 14, 15}, {1, 2, 2, 1});
}

TEST(Pool, ExplicitPaddingCountIncludePad) {
  Graph g;  // kernel 3, stride 2, pad 1: windows rows/cols {-1..1}, {1..3}
  expect_equal(run1(g, max_pool2d(image4(g), k3s2p1())), {6, 8, 14, 16}, {1, 2, 2, 1});
  // Divided by the input elements: 14/4, 30/6, 57/6, 99/9.
  expect_close(run1(g, avg_pool2d(image4(g), k3s2p1())), {3.5, 5, 9.5, 11}, {1, 2, 2, 1});
  // Divided by the whole window (the padding inside it counts).
  expect_close(run1(g, avg_pool2d(image4(g), k3s2p1(false, true))),
               {14.0 / 9, 30.0 / 9, 57.0 / 9, 11}, {1, 2, 2, 1});
}

TEST(Pool, PaddingNeverWinsTheMaximum) {
  Graph g;
  Tensor x = constant(g, {-5, -2, -3, -4}, {1, 2, 2, 1});
  Pool2dDesc d{.kernel_size = {2, 2},
               .strides = {1, 1},
               .padding = Padding::explicit_padding,
               .explicit_padding = {1, 1, 1, 1}};
  expect_equal(run1(g, max_pool2d(x, d)), {-5, -2, -2, -3, -2, -2, -3, -3, -4}, {1, 3, 3, 1});
}

TEST(Pool, Dilation) {
  Graph g;  // kernel 2, dilation 2 (taps 0 and 2), stride 1
  Pool2dDesc d{.kernel_size = {2, 2}, .strides = {1, 1}, .dilations = {2, 2}};
  expect_equal(run1(g, max_pool2d(image4(g), d)), {11, 12, 15, 16}, {1, 2, 2, 1});
  expect_equal(run1(g, avg_pool2d(image4(g), d)), {6, 7, 10, 11}, {1, 2, 2, 1});
}

TEST(Pool, DilatedWindowWithoutInputElements) {
  // H: one row, kernel 2 with dilation 3 and pads 1/2 reads rows -1 and 2, both padding.
  Graph g;
  Pool2dDesc d{.kernel_size = {2, 1},
               .strides = {1, 1},
               .dilations = {3, 1},
               .padding = Padding::explicit_padding,
               .explicit_padding = {1, 2, 0, 0}};
  Tensor x = constant(g, {7, 8}, {1, 1, 1, 2});
  expect_equal(run1(g, max_pool2d(x, d)), {-kInf, -kInf}, {1, 1, 1, 2});
  expect_equal(run1(g, avg_pool2d(x, d)), {0, 0}, {1, 1, 1, 2});
  d.count_include_pad = true;
  expect_equal(run1(g, avg_pool2d(x, d)), {0, 0}, {1, 1, 1, 2});
  expect_equal(run1(g, max_pool2d(constant(g, {7, 8}, {1, 1, 1, 2}, DType::i32), d)),
               {-2147483648.0, -2147483648.0}, {1, 1, 1, 2});
  // An empty input with padding: rows (0 + 2 + 2 - 3) / 3 + 1 = 1 window, all padding.
  Tensor empty = g.constant(TensorData::zeros({1, 0, 3, 1}));
  const Pool2dDesc pads{.kernel_size = {3, 3},
                        .padding = Padding::explicit_padding,
                        .explicit_padding = {2, 2, 0, 0}};
  expect_equal(run1(g, max_pool2d(empty, pads)), {-kInf}, {1, 1, 1, 1});
  expect_equal(run1(g, avg_pool2d(empty, pads)), {0}, {1, 1, 1, 1});
}

TEST(Pool, SamePadding) {
  Graph g;  // 3x3 input 1..9, kernel 2, stride 2: out 2, total padding 1
  Tensor x = constant(g, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Pool2dDesc d{.padding = Padding::same};  // pads 0 before, 1 after: {0,1}, {2}
  EXPECT_EQ(max_pool2d(x, d).shape(), (Shape{1, 2, 2, 1}));
  expect_equal(run1(g, max_pool2d(x, d)), {5, 6, 8, 9}, {1, 2, 2, 1});
  expect_close(run1(g, avg_pool2d(x, d)), {3, 4.5, 7.5, 9}, {1, 2, 2, 1});
  d.count_include_pad = true;
  expect_close(run1(g, avg_pool2d(x, d)), {3, 2.25, 3.75, 2.25}, {1, 2, 2, 1});
  d = {.padding = Padding::same_lower};  // pads 1 before, 0 after: {0}, {1,2}
  expect_equal(run1(g, max_pool2d(x, d)), {1, 3, 7, 9}, {1, 2, 2, 1});
  expect_close(run1(g, avg_pool2d(x, d)), {1, 2.5, 5.5, 7}, {1, 2, 2, 1});
  d.count_include_pad = true;
  expect_close(run1(g, avg_pool2d(x, d)), {0.25, 1.25, 2.75, 7}, {1, 2, 2, 1});
}

TEST(Pool, CeilModeWithoutPadding) {
  Graph g;  // 3x3 input, kernel 2, stride 2: floor 1 window, ceil 2 (the last clipped to {2})
  Tensor x = constant(g, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Pool2dDesc d{.ceil_mode = false};
  expect_equal(run1(g, max_pool2d(x, d)), {5}, {1, 1, 1, 1});
  d.ceil_mode = true;
  expect_equal(run1(g, max_pool2d(x, d)), {5, 6, 8, 9}, {1, 2, 2, 1});
  expect_close(run1(g, avg_pool2d(x, d)), {3, 4.5, 7.5, 9}, {1, 2, 2, 1});
  // PyTorch: the part of a window past the padded input never counts, even with
  // count_include_pad (the divisor of the last window is 2, not 4).
  d.count_include_pad = true;
  expect_close(run1(g, avg_pool2d(x, d)), {3, 4.5, 7.5, 9}, {1, 2, 2, 1});
}

TEST(Pool, CeilModeWithPadding) {
  // 4x4, kernel 3, stride 2, pad 1, ceil: 3 windows per dim, rows {0,1}, {1,2,3}, {3}; the
  // padded window sizes are 3, 3, 2 (the last reaches one past the padded input).
  Graph g;
  Tensor y = max_pool2d(image4(g), k3s2p1(true));
  EXPECT_EQ(y.shape(), (Shape{1, 3, 3, 1}));
  expect_equal(run1(g, y), {6, 8, 8, 14, 16, 16, 14, 16, 16}, {1, 3, 3, 1});
  expect_close(run1(g, avg_pool2d(image4(g), k3s2p1(true))), {3.5, 5, 6, 9.5, 11, 12, 13.5, 15, 16},
               {1, 3, 3, 1});
  expect_close(run1(g, avg_pool2d(image4(g), k3s2p1(true, true))),
               {14.0 / 9, 30.0 / 9, 2, 57.0 / 9, 11, 6, 4.5, 7.5, 4}, {1, 3, 3, 1}, 1e-6);
}

TEST(Pool, CeilModeDropsAWindowStartingInThePadding) {
  // 5 rows, kernel 2, stride 2, pad 1: floor gives 3 windows, ceil would give 4 but the 4th
  // starts at row 5 (bottom padding) and is dropped.
  Graph g;
  Tensor x = constant(g, {1, 2, 3, 4, 5}, {1, 5, 1, 1});
  Pool2dDesc d{.kernel_size = {2, 1},
               .strides = {2, 1},
               .padding = Padding::explicit_padding,
               .explicit_padding = {1, 1, 0, 0},
               .ceil_mode = true};
  expect_equal(run1(g, max_pool2d(x, d)), {1, 3, 5}, {1, 3, 1, 1});
  // Without padding, 5 rows, kernel 2, stride 2: ceil keeps a 3rd window on row 4.
  d.explicit_padding = {0, 0, 0, 0};
  expect_equal(run1(g, max_pool2d(x, d)), {2, 4, 5}, {1, 3, 1, 1});
}

TEST(Pool, NchwLayoutAndChannels) {
  Graph g;  // channel 0 = 1..16, channel 1 = -(1..16)
  V v(32);
  for (int i = 0; i < 16; ++i) {
    v[i] = i + 1;
    v[16 + i] = -(i + 1);
  }
  Tensor x = constant(g, v, {1, 2, 4, 4});
  Pool2dDesc d{.data_layout = Layout::nchw};
  Tensor y = max_pool2d(x, d);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  expect_equal(run1(g, y), {6, 8, 14, 16, -1, -3, -9, -11}, {1, 2, 2, 2});
  expect_close(run1(g, avg_pool2d(x, d)), {3.5, 5.5, 11.5, 13.5, -3.5, -5.5, -11.5, -13.5},
               {1, 2, 2, 2});
  // The same image in nhwc: channels interleaved.
  V w(32);
  for (int i = 0; i < 16; ++i) {
    w[2 * i] = i + 1;
    w[2 * i + 1] = -(i + 1);
  }
  expect_equal(run1(g, max_pool2d(constant(g, w, {1, 4, 4, 2}))), {6, -1, 8, -3, 14, -9, 16, -11},
               {1, 2, 2, 2});
}

TEST(Pool, MaxPropagatesNaNAndKeepsMinusInfinity) {
  for (DType t : {DType::f32, DType::f64, DType::f16}) {
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      Graph g;  // one channel: windows {nan, 1, 2, 3}, {-inf x 4}
      Tensor x = constant(g, {1, kNaN, -kInf, -kInf, 2, 3, -kInf, -kInf}, {1, 1, 2, 4}, t);
      if (layout == Layout::nhwc) x = reshape(x, {1, 2, 4, 1});
      Tensor y = max_pool2d(x, {.data_layout = layout});
      expect_equal(run1(g, y), {kNaN, -kInf}, y.shape());
    }
  }
}

TEST(Pool, IntegerMaxPool) {
  for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64}) {
    Graph g;
    Tensor x = constant(g, {1, 100, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}, t);
    Tensor y = max_pool2d(x, {.strides = {1, 1}});
    EXPECT_EQ(y.dtype(), t);
    expect_equal(run1(g, y), {100, 100, 8, 9}, {1, 2, 2, 1});
  }
}

TEST(Pool, HalfPrecision) {
  for (DType t : {DType::f16, DType::bf16}) {
    Graph g;
    expect_equal(run1(g, max_pool2d(image4(g, t))), {6, 8, 14, 16}, {1, 2, 2, 1});
    expect_equal(run1(g, avg_pool2d(image4(g, t))), {3.5, 5.5, 11.5, 13.5}, {1, 2, 2, 1});
  }
}

TEST(Pool, EmptyBatch) {
  Graph g;
  Tensor x = g.constant(TensorData::zeros({0, 4, 4, 3}));
  EXPECT_EQ(run1(g, max_pool2d(x)).shape(), (Shape{0, 2, 2, 3}));
  EXPECT_EQ(run1(g, avg_pool2d_backward(g.constant(TensorData::zeros({0, 2, 2, 3})), x)).shape(),
            (Shape{0, 4, 4, 3}));
}

// ---- backward ops: hand-computed ---------------------------------------------------------------

TG_COVERS(value, max_pool2d_backward);
TG_COVERS(value, avg_pool2d_backward);

TEST(PoolBackward, MaxRoutesToTheFirstMaximumAndAccumulates) {
  Graph g;
  Pool2dDesc d{.kernel_size = {3, 3}, .strides = {1, 1}};
  Tensor dy = constant(g, {1, 2, 3, 4}, {1, 2, 2, 1});
  // All equal: every window's first (top-left) element.
  Tensor same = constant(g, V(16, 5.0), {1, 4, 4, 1});
  expect_equal(run1(g, max_pool2d_backward(dy, same, d)),
               {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 4, 4, 1});
  // One element is the maximum of all four overlapping windows: it gets 1 + 2 + 3 + 4.
  V v(16, 0.0);
  v[5] = 100;
  expect_equal(run1(g, max_pool2d_backward(dy, constant(g, v, {1, 4, 4, 1}), d)),
               {0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 4, 4, 1});
}

TEST(PoolBackward, MaxNaNWinsAndPaddingIsSkipped) {
  for (DType t : {DType::f32, DType::f64}) {
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      Graph g;  // windows (2x2, stride 2): {1, nan, 9, 9}, {-inf, -inf, -inf, -inf}
      Tensor x = constant(g, {1, kNaN, -kInf, -kInf, 9, 9, -kInf, -kInf}, {1, 1, 2, 4}, t);
      Tensor dy = constant(g, {10, 20}, {1, 1, 1, 2}, t);
      Shape xs = layout == Layout::nhwc ? Shape{1, 2, 4, 1} : Shape{1, 1, 2, 4};
      Shape ys = layout == Layout::nhwc ? Shape{1, 1, 2, 1} : Shape{1, 1, 1, 2};
      Tensor dx = max_pool2d_backward(reshape(dy, ys), reshape(x, xs), {.data_layout = layout});
      expect_equal(run1(g, dx), {0, 10, 20, 0, 0, 0, 0, 0}, xs);
    }
  }
  Graph g;  // pad 1, kernel 2, stride 2 on [-3, -1]: windows {pad, -3}, {-1, pad}
  Tensor x = constant(g, {-3, -1}, {1, 1, 2, 1});
  Pool2dDesc d{.padding = Padding::explicit_padding, .explicit_padding = {0, 0, 1, 1}};
  d.kernel_size = {1, 2};
  d.strides = {1, 2};
  expect_equal(run1(g, max_pool2d_backward(constant(g, {5, 7}, {1, 1, 2, 1}), x, d)), {5, 7},
               {1, 1, 2, 1});
}

TEST(PoolBackward, AvgSpreadsOverTheDivisor) {
  Graph g;
  Tensor dy = constant(g, {4, 8, 12, 16}, {1, 2, 2, 1});
  Tensor x = constant(g, V(16, 0.0), {1, 4, 4, 1});
  expect_equal(run1(g, avg_pool2d_backward(dy, x)),
               {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 4, 4, 1});
}

// dx[r][c] = a[r] * a[c] for dy = 1 in the ceil_mode case of Pool.CeilModeWithPadding.
V outer(const V& a) {
  V r;
  for (double u : a)
    for (double v : a) r.push_back(u * v);
  return r;
}

TEST(PoolBackward, AvgCeilModeDivisors) {
  Graph g;
  Tensor x = image4(g);
  Tensor dy = constant(g, V(9, 1.0), {1, 3, 3, 1});
  // Exclude padding: windows of 2, 3, 1 input rows: a = [1/2, 1/2 + 1/3, 1/3, 1/3 + 1].
  expect_close(run1(g, avg_pool2d_backward(dy, x, k3s2p1(true))),
               outer({0.5, 5.0 / 6, 1.0 / 3, 4.0 / 3}), {1, 4, 4, 1});
  // Include padding: padded window sizes 3, 3, 2: a = [1/3, 2/3, 1/3, 1/3 + 1/2].
  expect_close(run1(g, avg_pool2d_backward(dy, x, k3s2p1(true, true))),
               outer({1.0 / 3, 2.0 / 3, 1.0 / 3, 5.0 / 6}), {1, 4, 4, 1});
}

TEST(PoolBackward, HalfPrecisionAccumulates) {
  for (DType t : {DType::f16, DType::bf16}) {
    Graph g;
    Tensor dy = constant(g, {1, 2, 3, 4}, {1, 2, 2, 1}, t);
    V v(16, 0.0);
    v[5] = 100;
    Pool2dDesc d{.kernel_size = {3, 3}, .strides = {1, 1}};
    TensorData dx = run1(g, max_pool2d_backward(dy, constant(g, v, {1, 4, 4, 1}, t), d));
    EXPECT_EQ(dx.dtype(), t);
    expect_equal(dx, {0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 4, 4, 1});
  }
}

// ---- float32 (oneDNN or own loops) and float64 against a naive reference ------------------

// One resolved spatial dim, by PyTorch's pooling_output_shape and ONNX's auto_pad rules.
struct RefDim {
  int64_t in, k, s, d, before = 0, after = 0, out = 0;
};

RefDim ref_dim(int64_t in, int64_t k, int64_t s, int64_t d, const Pool2dDesc& desc, int i) {
  RefDim r{in, k, s, d};
  const int64_t extent = d * (k - 1) + 1;
  if (desc.padding == Padding::same || desc.padding == Padding::same_lower) {
    r.out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>((r.out - 1) * s + extent - in, 0);
    r.before = desc.padding == Padding::same ? total / 2 : total - total / 2;
    r.after = total - r.before;
    return r;
  }
  if (desc.padding == Padding::explicit_padding) {
    r.before = desc.explicit_padding[2 * i];
    r.after = desc.explicit_padding[2 * i + 1];
  }
  const double q = static_cast<double>(in + r.before + r.after - extent) / static_cast<double>(s);
  r.out = static_cast<int64_t>(desc.ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (desc.ceil_mode && (r.out - 1) * s >= in + r.before) --r.out;  // starts in the padding
  return r;
}

struct RefImage {
  int64_t n, c, h, w;
  bool nhwc;
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return nhwc ? ((in * h + ih) * w + iw) * c + ic : ((in * c + ic) * h + ih) * w + iw;
  }
  Shape shape() const { return nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w}; }
};

// The taps of one output: flat input indices of the elements inside the input, in row-major
// window order, and the number of taps inside the padded input.
struct RefWindow {
  std::vector<int64_t> inputs;
  int64_t padded = 0;
};

struct RefPool {
  RefImage x, y;
  RefDim h, w;
  Pool2dDesc desc;

  RefPool(Shape xs, const Pool2dDesc& d) : desc(d) {
    const bool nhwc = d.data_layout == Layout::nhwc;
    x = nhwc ? RefImage{xs[0], xs[3], xs[1], xs[2], true}
             : RefImage{xs[0], xs[1], xs[2], xs[3], false};
    const auto& st = d.strides.empty() ? d.kernel_size : d.strides;
    h = ref_dim(x.h, d.kernel_size[0], st[0], d.dilations[0], d, 0);
    w = ref_dim(x.w, d.kernel_size[1], st[1], d.dilations[1], d, 1);
    y = {x.n, x.c, h.out, w.out, nhwc};
  }

  RefWindow window(int64_t n, int64_t c, int64_t oh, int64_t ow) const {
    RefWindow r;
    for (int64_t i = 0; i < h.k; ++i) {
      for (int64_t j = 0; j < w.k; ++j) {
        const int64_t ih = oh * h.s - h.before + i * h.d, iw = ow * w.s - w.before + j * w.d;
        r.padded +=
            ih >= -h.before && ih < h.in + h.after && iw >= -w.before && iw < w.in + w.after;
        if (ih >= 0 && ih < h.in && iw >= 0 && iw < w.in) r.inputs.push_back(x.at(n, c, ih, iw));
      }
    }
    return r;
  }

  double divisor(const RefWindow& r) const {
    return desc.count_include_pad ? static_cast<double>(r.padded)
                                  : static_cast<double>(r.inputs.size());
  }

  template <typename F>
  void each_output(F f) const {
    for (int64_t n = 0; n < y.n; ++n)
      for (int64_t c = 0; c < y.c; ++c)
        for (int64_t oh = 0; oh < y.h; ++oh)
          for (int64_t ow = 0; ow < y.w; ++ow) f(y.at(n, c, oh, ow), window(n, c, oh, ow));
  }

  V forward(const V& xv, bool is_max) const {
    V out(static_cast<size_t>(num_elements(y.shape())));
    each_output([&](int64_t o, const RefWindow& r) {
      double acc = is_max ? -kInf : 0;
      for (int64_t i : r.inputs) acc = is_max ? std::max(acc, xv[i]) : acc + xv[i];
      out[o] = is_max ? acc : (divisor(r) > 0 ? acc / divisor(r) : 0);
    });
    return out;
  }

  V backward(const V& dy, const V& xv, bool is_max) const {
    V dx(xv.size(), 0.0);
    each_output([&](int64_t o, const RefWindow& r) {
      if (r.inputs.empty()) return;
      if (is_max) {
        int64_t best = r.inputs[0];
        for (int64_t i : r.inputs)
          if (xv[i] > xv[best]) best = i;
        dx[best] += dy[o];
      } else {
        for (int64_t i : r.inputs) dx[i] += dy[o] / divisor(r);
      }
    });
    return dx;
  }
};

// Uniform values in [-1, 1), rounded to float (so every dtype sees the same numbers).
V random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  V v(static_cast<size_t>(n));
  for (double& e : v) e = u(rng);
  return v;
}

struct RefCase {
  Pool2dDesc desc;
  int64_t h, w;
};

std::vector<RefCase> reference_cases() {
  using P = Padding;
  auto ex = [](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads, bool ceil,
               bool include, std::vector<int64_t> dil = {1, 1}) {
    return Pool2dDesc{.kernel_size = k,
                      .strides = s,
                      .dilations = dil,
                      .padding = P::explicit_padding,
                      .explicit_padding = pads,
                      .ceil_mode = ceil,
                      .count_include_pad = include};
  };
  return {
      {{}, 8, 8},
      {ex({3, 3}, {2, 2}, {1, 1, 1, 1}, false, false), 9, 8},  // ResNet's stem pool
      {ex({3, 3}, {1, 1}, {1, 1, 1, 1}, false, true), 7, 6},
      {ex({3, 3}, {2, 2}, {1, 1, 1, 1}, true, false), 8, 8},
      {ex({3, 3}, {2, 2}, {1, 1, 1, 1}, true, true), 8, 7},  // windows past the padded input
      {ex({2, 2}, {2, 2}, {0, 0, 0, 0}, true, true), 7, 7},
      {ex({3, 2}, {2, 1}, {1, 0, 1, 1}, false, true), 8, 6},
      {ex({2, 2}, {1, 1}, {0, 0, 0, 0}, false, false, {2, 2}), 7, 8},
      {ex({3, 3}, {2, 2}, {2, 2, 2, 2}, true, true, {2, 2}), 9, 9},
      {ex({3, 2}, {3, 3}, {2, 1, 0, 1}, true, false, {1, 3}), 8, 8},
      {ex({2, 3}, {2, 2}, {1, 0, 2, 1}, true, true, {3, 1}), 6, 7},
      {{.kernel_size = {3, 3}, .strides = {2, 2}, .padding = P::same}, 7, 8},
      {{.kernel_size = {4, 3},
        .strides = {3, 2},
        .padding = P::same_lower,
        .count_include_pad = true},
       8,
       7},
      {{.kernel_size = {2, 2}, .strides = {1, 1}, .padding = P::same, .count_include_pad = true},
       5,
       6},
      {{.kernel_size = {5, 4}, .strides = {3, 3}, .ceil_mode = true}, 9, 10},
  };
}

// Runs pool / pool backward on `dtype` for every case and layout and compares with RefPool.
// `batch` images of 19 (nhwc: vector loops with a tail) or 3 (nchw) channels, unless `channels`.
void check_against_reference(DType dtype, double tol, const std::vector<RefCase>& cases,
                             int64_t batch = 2, int64_t channels = 0) {
  unsigned seed = 1;
  for (const RefCase& rc : cases) {
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      Pool2dDesc d = rc.desc;
      d.data_layout = layout;
      const int64_t ch = channels > 0 ? channels : layout == Layout::nhwc ? 19 : 3;
      const Shape xs =
          layout == Layout::nhwc ? Shape{batch, rc.h, rc.w, ch} : Shape{batch, ch, rc.h, rc.w};
      const RefPool ref(xs, d);
      V xv = random_values(num_elements(xs), seed++);
      V dyv = random_values(num_elements(ref.y.shape()), seed++);
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " case " << seed << " layout "
                                        << (layout == Layout::nhwc ? "nhwc" : "nchw"));
      Graph g;
      Tensor x = constant(g, xv, xs, dtype), dy = constant(g, dyv, ref.y.shape(), dtype);
      // The reference sees the values rounded to dtype (bf16 rounding makes ties, which the
      // reference breaks by the same first-maximum rule).
      xv = run1(g, cast(x, DType::f64)).to_vector<double>();
      dyv = run1(g, cast(dy, DType::f64)).to_vector<double>();
      for (bool is_max : {true, false}) {
        SCOPED_TRACE(is_max ? "max" : "avg");
        Tensor y = is_max ? max_pool2d(x, d) : avg_pool2d(x, d);
        ASSERT_EQ(y.shape(), ref.y.shape());
        expect_close(run1(g, y), ref.forward(xv, is_max), ref.y.shape(), tol, tol);
        Tensor dx = is_max ? max_pool2d_backward(dy, x, d) : avg_pool2d_backward(dy, x, d);
        expect_close(run1(g, dx), ref.backward(dyv, xv, is_max), xs, tol, tol);
      }
    }
  }
}

TEST(PoolReference, Float32) { check_against_reference(DType::f32, 1e-5, reference_cases()); }
TEST(PoolReference, Float64) { check_against_reference(DType::f64, 1e-12, reference_cases()); }
TEST(PoolReference, BFloat16) { check_against_reference(DType::bf16, 2e-2, reference_cases()); }

TEST(PoolReference, InputsLargeEnoughToRunOnSeveralThreads) {
  // Big enough that the loops split the work (per batch element and channel block, or plane).
  const Pool2dDesc overlap{.kernel_size = {3, 3},
                           .strides = {2, 2},
                           .padding = Padding::explicit_padding,
                           .explicit_padding = {1, 1, 1, 1},
                           .ceil_mode = true,
                           .count_include_pad = true};
  const std::vector<RefCase> cases{{overlap, 20, 19}};
  check_against_reference(DType::f32, 1e-5, cases, 2, 32);
  check_against_reference(DType::f64, 1e-12, cases, 2, 32);
}

TEST(PoolReference, DynamicBatchFedAtRunTime) {
  Graph g;
  Tensor x = g.placeholder({-1, 6, 5, 3}, DType::f32, "x");
  Tensor dy = g.placeholder({-1, 4, 3, 3}, DType::f32, "dy");
  const Pool2dDesc d = k3s2p1(true, true);  // rows: ceil(5 / 2) + 1 = 4, columns 3
  Tensor y = avg_pool2d(x, d);
  EXPECT_EQ(y.shape(), (Shape{-1, 4, 3, 3}));
  Tensor dx = max_pool2d_backward(dy, x, d);
  EXPECT_EQ(dx.shape(), (Shape{-1, 6, 5, 3}));
  const RefPool ref({4, 6, 5, 3}, d);
  const V xv = random_values(4 * 6 * 5 * 3, 91), dyv = random_values(4 * 4 * 3 * 3, 92);
  const Feeds feeds{
      {x, TensorData::from_vector<float>(std::vector<float>(xv.begin(), xv.end()), {4, 6, 5, 3})},
      {dy,
       TensorData::from_vector<float>(std::vector<float>(dyv.begin(), dyv.end()), {4, 4, 3, 3})}};
  expect_close(run1(g, y, feeds), ref.forward(xv, false), {4, 4, 3, 3}, 1e-5, 1e-5);
  expect_close(run1(g, dx, feeds), ref.backward(dyv, xv, true), {4, 6, 5, 3}, 1e-5, 1e-5);
}

TEST(PoolReference, DynamicSpatialDimsWithSamePadding) {
  Graph g;
  Tensor x = g.placeholder({1, -1, -1, 2}, DType::f32, "x");
  const Pool2dDesc d{.kernel_size = {3, 3}, .strides = {2, 2}, .padding = Padding::same};
  Tensor y = max_pool2d(x, d);
  EXPECT_EQ(y.shape(), (Shape{1, -1, -1, 2}));
  const RefPool ref({1, 5, 8, 2}, d);
  const V xv = random_values(80, 93);
  const Feeds feeds{
      {x, TensorData::from_vector<float>(std::vector<float>(xv.begin(), xv.end()), {1, 5, 8, 2})}};
  expect_close(run1(g, y, feeds), ref.forward(xv, true), {1, 3, 4, 2}, 0, 0);
}

// ---- global_avg_pool2d -------------------------------------------------------------------------

TEST(GlobalAvgPool, MeanOverTheSpatialDims) {
  Graph g;  // nhwc [1, 2, 2, 2]: channel 0 = 1, 2, 3, 4; channel 1 = 10, 20, 30, 40
  Tensor x = constant(g, {1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2});
  expect_close(run1(g, global_avg_pool2d(x)), {2.5, 25}, {1, 2});
  expect_close(run1(g, global_avg_pool2d(x, Layout::nhwc, true)), {2.5, 25}, {1, 1, 1, 2});
  // The same numbers read as nchw [1, 2, 2, 2]: channel 0 = 1, 10, 2, 20; channel 1 = 3, ...
  expect_close(run1(g, global_avg_pool2d(x, Layout::nchw)), {8.25, 19.25}, {1, 2});
  expect_close(run1(g, global_avg_pool2d(x, Layout::nchw, true)), {8.25, 19.25}, {1, 2, 1, 1});
  Tensor dyn = g.placeholder({-1, 3, 3, 4}, DType::f64, "dyn");
  EXPECT_EQ(global_avg_pool2d(dyn).shape(), (Shape{-1, 4}));
}

TEST(GlobalAvgPool, Errors) {
  Graph g;
  Tensor x3 = g.placeholder({2, 3, 4}, DType::f32, "x3");
  Tensor x = g.placeholder({2, 3, 4, 5}, DType::f32, "x");
  EXPECT_TG_ERROR(global_avg_pool2d(x3), ErrorCode::shape_mismatch, "[global_avg_pool2d]");
  EXPECT_TG_ERROR(global_avg_pool2d(x, Layout::hwio), ErrorCode::invalid_argument,
                  "[global_avg_pool2d]");
  EXPECT_TG_ERROR(global_avg_pool2d(g.placeholder({2, 3, 4, 5}, DType::i32, "i")),
                  ErrorCode::dtype_mismatch, "[global_avg_pool2d]");
  EXPECT_TG_ERROR(global_avg_pool2d(Tensor{}), ErrorCode::invalid_argument, "[global_avg_pool2d]");
}

// ---- errors ------------------------------------------------------------------------------------

TG_COVERS(error, max_pool2d);
TG_COVERS(error, avg_pool2d);
TG_COVERS(error, max_pool2d_backward);
TG_COVERS(error, avg_pool2d_backward);

// Every attribute error, for the forward op `f` named `op`.
template <typename F>
void expect_attribute_errors(F f, const std::string& op) {
  Graph g;
  Tensor x = g.placeholder({2, 6, 6, 3}, DType::f32, "x");
  const std::string tag = "[" + op + "]";
  const auto invalid = ErrorCode::invalid_argument;
  EXPECT_TG_ERROR(f(g.placeholder({6, 6, 3}, DType::f32, "r3"), Pool2dDesc{}),
                  ErrorCode::shape_mismatch, tag);
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.data_layout = Layout::hwio}), invalid, "data_layout");
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.kernel_size = {2}}), invalid, "kernel_size [2]");
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.kernel_size = {0, 2}}), invalid, tag);
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.strides = {1, 0}}), invalid, "strides [1,0]");
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.strides = {1, 1, 1}}), invalid, tag);
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.dilations = {0, 1}}), invalid, "dilations");
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.kernel_size = {1LL << 40, 2}}), invalid, tag);
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.kernel_size = {70000, 2}, .dilations = {70000, 1}}), invalid,
                  "dilated window");
  Pool2dDesc pad{.padding = Padding::explicit_padding, .explicit_padding = {0, -1, 0, 0}};
  EXPECT_TG_ERROR(f(x, pad), invalid, "explicit_padding [0,-1,0,0]");
  pad.explicit_padding = {0, 0, 0};
  EXPECT_TG_ERROR(f(x, pad), invalid, "explicit_padding");
  // Validated with every padding style (as conv2d does), used only with explicit_padding.
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.padding = Padding::same, .explicit_padding = {1, 1, -1, 1}}),
                  invalid, "explicit_padding [1,1,-1,1]");
  EXPECT_EQ(f(x, Pool2dDesc{.padding = Padding::valid, .explicit_padding = {1, 1, 1, 1}}).shape(),
            (Shape{2, 3, 3, 3}));
  pad.explicit_padding = {0, 0, 2, 0};  // a pad as large as the window (2)
  EXPECT_TG_ERROR(f(x, pad), invalid, "smaller than the (dilated) window 2 (input [2,6,6,3])");
  pad.dilations = {1, 3};  // window extent 4: a pad of 3 is fine; (6 + 3 - 4) / 2 + 1 = 3
  pad.explicit_padding = {0, 0, 3, 0};
  EXPECT_EQ(f(x, pad).shape(), (Shape{2, 3, 3, 3}));
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.kernel_size = {7, 2}}), invalid, "padded input has 6");
  EXPECT_TG_ERROR(f(x, Pool2dDesc{.kernel_size = {2, 2}, .dilations = {1, 6}}), invalid,
                  "the window spans 7 elements along w");
  // Dynamic dims skip the checks that need them.
  Tensor dyn = g.placeholder({-1, -1, 6, 3}, DType::f32, "dyn");
  EXPECT_EQ(f(dyn, Pool2dDesc{.kernel_size = {7, 2}}).shape(), (Shape{-1, -1, 3, 3}));
  EXPECT_TG_ERROR(f(dyn, Pool2dDesc{.kernel_size = {2, 7}}), invalid, tag);
}

TEST(PoolErrors, Attributes) {
  expect_attribute_errors([](Tensor x, Pool2dDesc d) { return max_pool2d(x, d); }, "max_pool2d");
  expect_attribute_errors([](Tensor x, Pool2dDesc d) { return avg_pool2d(x, d); }, "avg_pool2d");
}

TEST(PoolErrors, Dtypes) {
  Graph g;
  Tensor b = g.placeholder({1, 4, 4, 1}, DType::bool_, "b");
  Tensor i = g.placeholder({1, 4, 4, 1}, DType::i32, "i");
  EXPECT_TG_ERROR(max_pool2d(b), ErrorCode::dtype_mismatch, "[max_pool2d] needs a numeric input");
  EXPECT_TG_ERROR(avg_pool2d(i), ErrorCode::dtype_mismatch, "[avg_pool2d] needs a floating input");
}

TEST(PoolErrors, BackwardOps) {
  Graph g;
  Tensor x = g.placeholder({2, 6, 6, 3}, DType::f32, "x");
  Tensor dy = g.placeholder({2, 3, 3, 3}, DType::f32, "dy");
  const auto shape = ErrorCode::shape_mismatch;
  for (bool is_max : {true, false}) {
    auto f = [&](Tensor a, Tensor b, Pool2dDesc d = {}) {
      return is_max ? max_pool2d_backward(a, b, d) : avg_pool2d_backward(a, b, d);
    };
    const std::string tag = is_max ? "[max_pool2d_backward]" : "[avg_pool2d_backward]";
    EXPECT_TG_ERROR(f(dy, x, {.kernel_size = {3, 3}, .strides = {2, 2}}), shape,
                    tag + " dy [2,3,3,3] must have the forward output shape [2,2,2,3]");
    EXPECT_TG_ERROR(f(g.placeholder({2, 3, 3}, DType::f32, "r3"), x, {.kernel_size = {2, 2}}),
                    shape, tag);
    EXPECT_TG_ERROR(f(g.placeholder({2, 3, 3, 3}, DType::f64, "d64"), x, {.kernel_size = {2, 2}}),
                    ErrorCode::dtype_mismatch, tag);
    EXPECT_TG_ERROR(f(g.placeholder({1, 3, 3, 3}, DType::i32, "di"),
                      g.placeholder({1, 6, 6, 3}, DType::i32, "xi")),
                    ErrorCode::dtype_mismatch, tag);
    EXPECT_TG_ERROR(f(dy, x, {.kernel_size = {2, 0}}), ErrorCode::invalid_argument, tag);
    // dy with unknown dims is accepted; a dim unknown in x is taken from dy.
    Tensor xd = g.placeholder({-1, 6, 6, -1}, DType::f32, "xd");
    EXPECT_EQ(f(g.placeholder({-1, 3, 3, 3}, DType::f32, "dd"), x, {.kernel_size = {2, 2}}).shape(),
              (Shape{2, 6, 6, 3}));
    EXPECT_EQ(f(dy, xd, {.kernel_size = {2, 2}}).shape(), (Shape{2, 6, 6, 3}));
  }
}

}  // namespace
}  // namespace tg
