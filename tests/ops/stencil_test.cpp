// Value and error tests of the stencil op (hand-computed expectations, plus a cross-check
// against a naive reference written independently of the kernel).
#include <cmath>
#include <limits>

#include "ir/attrs.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;
using R = StencilReduction;
using B = BoundaryMode;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor vec(Graph& g, std::vector<float> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return g.constant(TensorData::from_vector<float>(v, {n}));
}

StencilDesc explicit_pad(std::vector<int64_t> pads, B mode = B::zero, double constant = 0) {
  StencilDesc d;
  d.explicit_padding = std::move(pads);
  d.boundary_mode = mode;
  d.padding_constant = constant;
  return d;
}

StencilDesc with_reduction(R r, StencilDesc d = {}) {
  d.reduction = r;
  return d;
}

TG_COVERS(value, stencil);
TEST(Stencil, SumWithZeroPadding) {
  Graph g;
  Tensor y = stencil(vec(g, {1, 2, 3, 4}), vec(g, {1, 2, 1}), explicit_pad({1, 1}));
  EXPECT_EQ(y.type(), (TensorType{{4}, DType::f32}));
  // padded [0,1,2,3,4,0]
  expect_equal(run1(g, y), {4, 8, 12, 11}, {4});
  // Default descriptor: sum, no padding.
  expect_equal(run1(g, stencil(vec(g, {1, 2, 3, 4}), vec(g, {1, 2, 1}))), {8, 12}, {2});
}

// A one-element window with weight 1 returns the padded sequence itself.
std::vector<float> padded(std::vector<float> x, int64_t pad, B mode, double constant = 0) {
  Graph g;
  auto n = static_cast<int64_t>(x.size());
  TensorData t = run1(g, stencil(vec(g, x), vec(g, {1}), explicit_pad({pad, pad}, mode, constant)));
  EXPECT_EQ(t.shape(), Shape{n + 2 * pad});
  return t.to_vector<float>();
}

TEST(Stencil, BoundaryModes) {
  using V = std::vector<float>;
  EXPECT_EQ(padded({1, 2, 3}, 2, B::zero), (V{0, 0, 1, 2, 3, 0, 0}));
  EXPECT_EQ(padded({1, 2, 3}, 2, B::constant, -1.5), (V{-1.5, -1.5, 1, 2, 3, -1.5, -1.5}));
  EXPECT_EQ(padded({1, 2, 3}, 2, B::reflect), (V{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(padded({1, 2, 3}, 2, B::symmetric), (V{2, 1, 1, 2, 3, 3, 2}));
  EXPECT_EQ(padded({1, 2, 3}, 2, B::clamp_to_edge), (V{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(padded({1, 2, 3}, 2, B::periodic), (V{2, 3, 1, 2, 3, 1, 2}));
}

TEST(Stencil, BoundaryModesFarOutside) {
  // Padding wider than the input keeps mirroring / wrapping (positions -5..7).
  using V = std::vector<float>;
  EXPECT_EQ(padded({1, 2, 3}, 5, B::reflect), (V{2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(padded({1, 2, 3}, 5, B::symmetric), (V{2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2}));
  EXPECT_EQ(padded({1, 2, 3}, 5, B::periodic), (V{2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(padded({1, 2, 3}, 5, B::clamp_to_edge), (V{1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3}));
  // A single element: reflect (no edge to mirror around) repeats it, like the other modes.
  EXPECT_EQ(padded({7}, 2, B::reflect), (V{7, 7, 7, 7, 7}));
  EXPECT_EQ(padded({7}, 2, B::symmetric), (V{7, 7, 7, 7, 7}));
  EXPECT_EQ(padded({7}, 2, B::periodic), (V{7, 7, 7, 7, 7}));
}

TEST(Stencil, ConstantBoundaryIsMultipliedByTheWeight) {
  Graph g;
  // padded [10,1,2,3]; windows (10,1), (1,2), (2,3) with weights (1,2).
  Tensor y = stencil(vec(g, {1, 2, 3}), vec(g, {1, 2}), explicit_pad({1, 0}, B::constant, 10));
  expect_equal(run1(g, y), {12, 5, 8}, {3});
}

TEST(Stencil, TwoDimensionalWindowOverABatch) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>(
      {1, 2, 3, 4, 5, 6, 7, 8, 9, /* image 1 */ 9, 8, 7, 6, 5, 4, 3, 2, 1}, {2, 3, 3}));
  Tensor w = g.constant(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  StencilDesc valid;
  valid.padding_style = PaddingStyle::valid;
  expect_equal(run1(g, stencil(x, w, valid)), {37, 47, 67, 77, 63, 53, 33, 23}, {2, 2, 2});
  // same: total pad 1 per dim, all of it after (zero boundary).
  StencilDesc same;
  same.padding_style = PaddingStyle::same;
  expect_equal(run1(g, stencil(x, w, same)),
               {37, 47, 21, 67, 77, 33, 23, 26, 9,  // image 0
                63, 53, 19, 33, 23, 7, 7, 4, 1},    // image 1
               {2, 3, 3});
  // Two batch dims.
  Tensor x4 = reshape(x, {2, 1, 3, 3});
  expect_equal(run1(g, stencil(x4, w, valid)), {37, 47, 67, 77, 63, 53, 33, 23}, {2, 1, 2, 2});
}

TEST(Stencil, StridesAndDilations) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}));
  StencilDesc d;
  d.strides = {3};
  d.dilations = {2};
  // Windows read x[0,2,4] and x[3,5,7].
  expect_equal(run1(g, stencil(x, vec(g, {1, 1, 1}), d)), {6, 15}, {2});

  // x[r, c] = 5r + c; y[i, j] = x[2i, j] + x[2i, j+2] + x[2i+1, j] + x[2i+1, j+2] = 40i + 4j + 14.
  std::vector<float> v(20);
  for (int i = 0; i < 20; ++i) v[i] = static_cast<float>(i);
  Tensor x2 = g.constant(TensorData::from_vector<float>(v, {4, 5}));
  Tensor ones = g.constant(TensorData::full({2, 2}, DType::f32, 1));
  StencilDesc d2;
  d2.strides = {2, 1};
  d2.dilations = {1, 2};
  expect_equal(run1(g, stencil(x2, ones, d2)), {14, 18, 22, 54, 58, 62}, {2, 3});
}

TEST(Stencil, OutputShapes) {
  Graph g;
  Tensor x = g.placeholder({7}, DType::f32);
  Tensor w3 = g.placeholder({3}, DType::f32);
  auto shape_of = [&](PaddingStyle style, int64_t stride, int64_t dilation,
                      std::vector<int64_t> pads = {}) {
    StencilDesc d;
    d.padding_style = style;
    d.strides = {stride};
    d.dilations = {dilation};
    d.explicit_padding = std::move(pads);
    return stencil(x, w3, d).shape();
  };
  EXPECT_EQ(shape_of(PaddingStyle::valid, 1, 1), Shape{5});
  EXPECT_EQ(shape_of(PaddingStyle::valid, 2, 1), Shape{3});  // floor(4/2)+1
  EXPECT_EQ(shape_of(PaddingStyle::valid, 2, 2), Shape{2});  // extent 5: floor(2/2)+1
  EXPECT_EQ(shape_of(PaddingStyle::valid, 5, 1), Shape{1});  // floor(4/5)+1
  EXPECT_EQ(shape_of(PaddingStyle::same, 1, 1), Shape{7});
  EXPECT_EQ(shape_of(PaddingStyle::same, 2, 1), Shape{4});                      // ceil(7/2)
  EXPECT_EQ(shape_of(PaddingStyle::same, 3, 3), Shape{3});                      // ceil(7/3)
  EXPECT_EQ(shape_of(PaddingStyle::explicit_padding, 2, 1, {1, 2}), Shape{4});  // floor(7/2)+1
  // Explicit padding is ignored by valid / same.
  EXPECT_EQ(shape_of(PaddingStyle::valid, 1, 1, {4, 4}), Shape{5});
  // Batch dims are kept; dynamic dims propagate.
  Tensor xd = g.placeholder({-1, 2, -1}, DType::f32);
  Tensor w2 = g.placeholder({1, 2}, DType::f32);
  EXPECT_EQ(stencil(xd, w2).shape(), (Shape{-1, 2, -1}));
  Tensor wd = g.placeholder({-1}, DType::f32);
  EXPECT_EQ(stencil(x, wd).shape(), Shape{-1});
}

TEST(Stencil, SamePaddingPutsTheExtraAtTheEnd) {
  Graph g;
  StencilDesc same;
  same.padding_style = PaddingStyle::same;
  // total pad 1: before 0, after 1 -> [1,2,3,4,0].
  expect_equal(run1(g, stencil(vec(g, {1, 2, 3, 4}), vec(g, {1, 1}), same)), {3, 5, 7, 4}, {4});
  // total pad 3: before 1, after 2 -> [0,1,2,3,4,0,0].
  expect_equal(run1(g, stencil(vec(g, {1, 2, 3, 4}), vec(g, {1, 1, 1, 1}), same)), {6, 10, 9, 7},
               {4});
  // stride 2: out 3, total pad (3-1)*2+3-5 = 2 -> [0,1,2,3,4,5,0].
  same.strides = {2};
  expect_equal(run1(g, stencil(vec(g, {1, 2, 3, 4, 5}), vec(g, {1, 1, 1}), same)), {3, 9, 9}, {3});
}

TEST(Stencil, ProductMinMaxArgMinArgMax) {
  Graph g;
  Tensor x = vec(g, {2, -1, 3, 0.5f, -4});
  Tensor w = vec(g, {1, 2});
  // x*w per window: (2,-2), (-1,6), (3,1), (0.5,-8).
  expect_equal(run1(g, stencil(x, w, with_reduction(R::sum))), {0, 5, 4, -7.5}, {4});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::product))), {-4, -6, 3, -4}, {4});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::min))), {-2, -1, 1, -8}, {4});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::max))), {2, 6, 3, 0.5}, {4});
  Tensor amin = stencil(x, w, with_reduction(R::argmin));
  Tensor amax = stencil(x, w, with_reduction(R::argmax));
  EXPECT_EQ(amin.dtype(), DType::i32);
  EXPECT_EQ(amax.type(), (TensorType{{4}, DType::i32}));
  expect_equal(run1(g, amin), {1, 0, 1, 1}, {4});
  expect_equal(run1(g, amax), {0, 1, 0, 0}, {4});
}

TEST(Stencil, ArgReductionsTiesAndRowMajorIndex) {
  Graph g;
  Tensor x = vec(g, {1, 1, 2, 2, 0});
  Tensor w = vec(g, {1, 1, 1});
  // Windows (1,1,2), (1,2,2), (2,2,0): ties resolve to the first offset.
  expect_equal(run1(g, stencil(x, w, with_reduction(R::argmax))), {2, 1, 0}, {3});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::argmin))), {0, 0, 2}, {3});
  // 2-D: the index is the row-major offset within the 2x2 window.
  Tensor img = g.constant(TensorData::from_vector<float>({1, 5, 2, 7, 3, 9, 4, 8, 6}, {3, 3}));
  Tensor ones = g.constant(TensorData::full({2, 2}, DType::f32, 1));
  expect_equal(run1(g, stencil(img, ones, with_reduction(R::argmax))), {2, 3, 3, 1}, {2, 2});
  expect_equal(run1(g, stencil(img, ones, with_reduction(R::argmin))), {0, 1, 1, 0}, {2, 2});
  // Padded offsets count: padded [0,-1,-2,0].
  Tensor neg = vec(g, {-1, -2});
  expect_equal(run1(g, stencil(neg, w, with_reduction(R::argmax, explicit_pad({1, 1})))), {0, 2},
               {2});
  expect_equal(run1(g, stencil(neg, w, with_reduction(R::argmin, explicit_pad({1, 1})))), {2, 1},
               {2});
}

TEST(Stencil, NaNPropagates) {
  Graph g;
  Tensor x = vec(g, {1, NAN, 3, 4});
  Tensor w = vec(g, {1, 1});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::max))), {kNaN, kNaN, 4}, {3});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::min))), {kNaN, kNaN, 3}, {3});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::sum))), {kNaN, kNaN, 7}, {3});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::argmax))), {1, 0, 1}, {3});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::argmin))), {1, 0, 0}, {3});
}

TEST(Stencil, ThreeAndFourDimensionalWindows) {
  Graph g;
  // x[a,b,c] = 6a+3b+c (2x2x3), w[a,b,c] = 4a+2b+c+1: y[j] = 242 + 36 j.
  std::vector<float> xv(12), wv(8);
  for (int i = 0; i < 12; ++i) xv[i] = static_cast<float>(i);
  for (int i = 0; i < 8; ++i) wv[i] = static_cast<float>(i + 1);
  Tensor x = g.constant(TensorData::from_vector<float>(xv, {1, 2, 2, 3}));
  Tensor w = g.constant(TensorData::from_vector<float>(wv, {2, 2, 2}));
  expect_equal(run1(g, stencil(x, w)), {242, 278}, {1, 1, 1, 2});
  // 4-D: all-ones 2x2x2x2 window over 0..23 shaped 2x2x2x3: 16 * 11 + 16 j.
  std::vector<float> x4(24);
  for (int i = 0; i < 24; ++i) x4[i] = static_cast<float>(i);
  Tensor s4 = g.constant(TensorData::from_vector<float>(x4, {2, 2, 2, 3}));
  Tensor w4 = g.constant(TensorData::full({2, 2, 2, 2}, DType::f32, 1));
  expect_equal(run1(g, stencil(s4, w4)), {176, 192}, {1, 1, 1, 2});
  // 4-D with periodic padding 1 before in the last dim: column -1 wraps to column 2.
  StencilDesc p = explicit_pad({0, 0, 0, 0, 0, 0, 1, 0}, B::periodic);
  // y[0] = sum of x[a,b,c,2] + x[a,b,c,0] = 16*(6+3+1.5) + 8*2 = 184.
  expect_equal(run1(g, stencil(s4, w4, p)), {184, 176, 192}, {1, 1, 1, 3});
}

TEST(Stencil, LargeWindow) {
  // 501-wide window over 20000 ones, same padding (250 each side).
  Graph g;
  Tensor x = g.constant(TensorData::full({20000}, DType::f32, 1));
  Tensor w = g.constant(TensorData::full({501}, DType::f32, 1));
  StencilDesc d{.padding_style = PaddingStyle::same, .boundary_mode = B::reflect};
  std::vector<double> all(20000, 501.0), counted(20000);
  expect_equal(run1(g, stencil(x, w, d)), all, {20000});
  // Zero boundary: output i counts the in-range positions [i - 250, i + 250].
  for (int64_t i = 0; i < 20000; ++i) {
    counted[i] =
        static_cast<double>(std::min<int64_t>(i + 250, 19999) - std::max<int64_t>(i - 250, 0) + 1);
  }
  d.boundary_mode = B::zero;
  expect_equal(run1(g, stencil(x, w, d)), counted, {20000});
}

TEST(Stencil, Float64AndHalf) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<double>({1 + 1e-12, 1, 0.1, 0.2}, {4}));
  Tensor w = g.constant(TensorData::from_vector<double>({1, -1}, {2}));
  // f32 would lose the 1e-12 difference entirely.
  expect_close(run1(g, stencil(x, w)), {1.000088900582341e-12, 0.9, -0.1}, {3}, 1e-14, 0);
  Tensor h = cast(vec(g, {1, 2, 3}), DType::f16);
  Tensor hw = cast(vec(g, {0.5f, 0.25f}), DType::f16);
  Tensor y = stencil(h, hw);
  EXPECT_EQ(y.dtype(), DType::f16);
  expect_equal(run1(g, y), {1, 1.75}, {2});
}

TEST(Stencil, Integers) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<int32_t>({1, 2, 3, 4}, {4}));
  Tensor w = g.constant(TensorData::from_vector<int32_t>({1, 2, 1}, {3}));
  // padded [5,1,2,3,4,5]
  Tensor y = stencil(x, w, explicit_pad({1, 1}, B::constant, 5));
  EXPECT_EQ(y.dtype(), DType::i32);
  expect_equal(run1(g, y), {9, 8, 12, 16}, {4});
  // x*w per window: (1,4,3), (2,6,4).
  expect_equal(run1(g, stencil(x, w, with_reduction(R::max))), {4, 6}, {2});
  expect_equal(run1(g, stencil(x, w, with_reduction(R::argmax))), {1, 1}, {2});
  // i8 arithmetic wraps: 100 * 2 = 200 -> -56.
  Tensor b = g.constant(TensorData::from_vector<int8_t>({100}, {1}));
  Tensor bw = g.constant(TensorData::from_vector<int8_t>({2}, {1}));
  expect_equal(run1(g, stencil(b, bw)), {-56}, {1});
}

TEST(Stencil, EmptyShapes) {
  Graph g;
  // Empty batch: empty output.
  Tensor x = g.constant(TensorData::zeros({0, 4}));
  expect_equal(run1(g, stencil(x, vec(g, {1, 1}))), {}, {0, 3});
  // An empty window dim padded with zeros reads only the boundary.
  Tensor e = g.constant(TensorData::zeros({0}));
  expect_equal(run1(g, stencil(e, vec(g, {1}), explicit_pad({1, 1}, B::constant, 3))), {3, 3}, {2});
  StencilDesc same;
  same.padding_style = PaddingStyle::same;
  EXPECT_EQ(stencil(e, vec(g, {1, 1}), same).shape(), Shape{0});
}

TEST(Stencil, DynamicShapesResolvedAtRunTime) {
  Graph g;
  Tensor x = g.placeholder({-1, -1}, DType::f32);
  Tensor y = stencil(x, vec(g, {1, 2, 1}), explicit_pad({1, 1}, B::clamp_to_edge));
  EXPECT_EQ(y.shape(), (Shape{-1, -1}));
  // Rows [1,2,3,4] and [4,3,2,1]; clamp pads [1,1,2,3,4,4] and [4,4,3,2,1,1].
  TensorData v = TensorData::from_vector<float>({1, 2, 3, 4, 4, 3, 2, 1}, {2, 4});
  expect_equal(g.run({{x, v}}, {y})[0], {5, 8, 12, 15, 15, 12, 8, 5}, {2, 4});
}

// ---- Cross-check against a naive reference (iterative mirroring, no modular arithmetic) ----

int64_t ref_coord(int64_t p, int64_t n, B mode) {
  while (p < 0 || p >= n) {
    switch (mode) {
      case B::zero:
      case B::constant:
        return -1;
      case B::clamp_to_edge:
        return p < 0 ? 0 : n - 1;
      case B::periodic:
        p += p < 0 ? n : -n;
        break;
      case B::symmetric:
        p = p < 0 ? -p - 1 : 2 * n - 1 - p;
        break;
      case B::reflect:
        if (n == 1) return 0;
        p = p < 0 ? -p : 2 * (n - 1) - p;
        break;
    }
  }
  return p;
}

struct Case2d {
  int64_t batch, h, w, kh, kw;
  StencilDesc d;
};

std::vector<double> reference(const Case2d& c, const std::vector<double>& x,
                              const std::vector<double>& w, const Shape& out) {
  int64_t oh = out[1], ow = out[2], pad_h = 0, pad_w = 0;
  auto same_before = [](int64_t in, int64_t o, int64_t k, int64_t s, int64_t dil) {
    int64_t total = (o - 1) * s + (k - 1) * dil + 1 - in;
    return total > 0 ? total / 2 : 0;
  };
  if (c.d.padding_style == PaddingStyle::explicit_padding) {
    pad_h = c.d.explicit_padding[0];
    pad_w = c.d.explicit_padding[2];
  } else if (c.d.padding_style == PaddingStyle::same) {
    pad_h = same_before(c.h, oh, c.kh, c.d.strides[0], c.d.dilations[0]);
    pad_w = same_before(c.w, ow, c.kw, c.d.strides[1], c.d.dilations[1]);
  }
  std::vector<double> y;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        std::vector<double> v;
        for (int64_t a = 0; a < c.kh; ++a) {
          for (int64_t e = 0; e < c.kw; ++e) {
            int64_t r = ref_coord(i * c.d.strides[0] + a * c.d.dilations[0] - pad_h, c.h,
                                  c.d.boundary_mode);
            int64_t q = ref_coord(j * c.d.strides[1] + e * c.d.dilations[1] - pad_w, c.w,
                                  c.d.boundary_mode);
            double xv = (r < 0 || q < 0) ? c.d.padding_constant * (c.d.boundary_mode == B::constant)
                                         : x[(b * c.h + r) * c.w + q];
            v.push_back(xv * w[a * c.kw + e]);
          }
        }
        double acc = c.d.reduction == R::product ? 1 : 0;
        size_t best = 0;
        for (size_t k = 0; k < v.size(); ++k) {
          if (c.d.reduction == R::sum) acc += v[k];
          if (c.d.reduction == R::product) acc *= v[k];
          if ((c.d.reduction == R::max || c.d.reduction == R::argmax) && v[k] > v[best]) best = k;
          if ((c.d.reduction == R::min || c.d.reduction == R::argmin) && v[k] < v[best]) best = k;
        }
        if (c.d.reduction == R::min || c.d.reduction == R::max) acc = v[best];
        if (c.d.reduction == R::argmin || c.d.reduction == R::argmax)
          acc = static_cast<double>(best);
        y.push_back(acc);
      }
    }
  }
  return y;
}

// Runs every (style, mode, reduction) in `descs` on c.batch images and compares with reference.
void check_against_reference(Case2d c, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<StencilDesc>& descs) {
  Graph g;
  std::vector<double> xb(x.begin(), x.begin() + c.batch * c.h * c.w);
  Tensor xt = g.constant(TensorData::from_vector<double>(xb, {c.batch, c.h, c.w}));
  Tensor wt = g.constant(TensorData::from_vector<double>(w, {c.kh, c.kw}));
  std::vector<Tensor> ys;
  for (const StencilDesc& d : descs) ys.push_back(stencil(xt, wt, d));
  std::vector<TensorData> got = testing::run_cpu(g, ys);
  for (size_t i = 0; i < ys.size(); ++i) {
    SCOPED_TRACE(ir::attrs_to_string(descs[i]));
    c.d = descs[i];
    std::vector<double> want = reference(c, x, w, ys[i].shape());
    ASSERT_EQ(got[i].shape(), ys[i].shape());
    int mismatches = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      mismatches += got[i].element_as_double(static_cast<int64_t>(k)) != want[k];
    }
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(Stencil, MatchesNaiveReference) {
  // Small integers keep every f64 result exact. Padding 45 > width 41 mirrors/wraps repeatedly.
  Case2d c{4, 37, 41, 3, 4, {}};
  std::vector<double> x(static_cast<size_t>(c.batch * c.h * c.w));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 7) - 3;
  std::vector<double> w = {1, -2, 3, -1, 2, 1, -3, 2, 1, -1, 2, -2};
  std::vector<StencilDesc> all;
  for (PaddingStyle style :
       {PaddingStyle::explicit_padding, PaddingStyle::same, PaddingStyle::valid}) {
    for (B mode : {B::zero, B::constant, B::reflect, B::symmetric, B::clamp_to_edge, B::periodic}) {
      for (R r : {R::sum, R::product, R::min, R::max, R::argmin, R::argmax}) {
        all.push_back(StencilDesc{r, {2, 1}, {1, 2}, {4, 3, 45, 2}, style, mode, 2});
      }
    }
  }
  c.batch = 1;
  check_against_reference(c, x, w, all);
  // Four images: enough outputs to be split over threads (chunks start mid-row).
  c.batch = 4;
  check_against_reference(c, x, w, {all[6 * 5 + 0], all[36 + 6 * 2 + 5]});
}

TG_COVERS(error, stencil);
TEST(Stencil, ShapeAndDtypeErrors) {
  Graph g;
  Tensor x = g.placeholder({4, 4}, DType::f32);
  EXPECT_TG_ERROR(stencil(x, g.constant(1.0, DType::f32)), ErrorCode::shape_mismatch,
                  "[stencil] weights rank 0");
  Tensor x5 = g.placeholder({2, 2, 2, 2, 2}, DType::f32);
  EXPECT_TG_ERROR(stencil(x5, g.placeholder({1, 1, 1, 1, 1}, DType::f32)),
                  ErrorCode::shape_mismatch, "[stencil] weights rank 5");
  EXPECT_TG_ERROR(stencil(vec(g, {1, 2}), g.placeholder({1, 1}, DType::f32)),
                  ErrorCode::shape_mismatch, "[stencil] source rank 1");
  EXPECT_TG_ERROR(stencil(x, g.placeholder({0, 1}, DType::f32)), ErrorCode::shape_mismatch,
                  "[stencil]");
  EXPECT_TG_ERROR(stencil(x, g.placeholder({2}, DType::f64)), ErrorCode::dtype_mismatch,
                  "[stencil]");
  Tensor b = g.placeholder({4}, DType::bool_);
  EXPECT_TG_ERROR(stencil(b, g.placeholder({2}, DType::bool_)), ErrorCode::dtype_mismatch,
                  "[stencil]");
  EXPECT_TG_ERROR(stencil(x, Tensor()), ErrorCode::invalid_argument, "[stencil]");
}

TEST(Stencil, AttributeErrors) {
  Graph g;
  Tensor x = g.placeholder({3, 5}, DType::f32);
  Tensor w = g.placeholder({2, 2}, DType::f32);
  auto expect_invalid = [&](StencilDesc d, const char* what) {
    EXPECT_TG_ERROR(stencil(x, w, d), ErrorCode::invalid_argument, what);
  };
  expect_invalid(StencilDesc{.strides = {1}}, "[stencil] strides [1] must have 2 entries");
  expect_invalid(StencilDesc{.dilations = {1, 1, 1}}, "[stencil] dilations");
  expect_invalid(StencilDesc{.strides = {1, 0}}, "[stencil] strides [1,0] must all be >= 1");
  expect_invalid(StencilDesc{.dilations = {0, 1}}, "[stencil] dilations");
  expect_invalid(StencilDesc{.explicit_padding = {1, 1}},
                 "[stencil] explicit_padding [1,1] must have 4");
  expect_invalid(StencilDesc{.explicit_padding = {0, 0, -1, 0}}, "[stencil] explicit_padding");
  // Window larger than the input (valid, or dilated past the padded input).
  StencilDesc valid{.padding_style = PaddingStyle::valid};
  EXPECT_TG_ERROR(stencil(vec(g, {1, 2, 3}), vec(g, {1, 1, 1, 1}), valid),
                  ErrorCode::invalid_argument, "[stencil] window dim 0 spans 4 elements");
  EXPECT_TG_ERROR(stencil(vec(g, {1, 2, 3}), vec(g, {1, 1}), StencilDesc{.dilations = {3}}),
                  ErrorCode::invalid_argument, "[stencil]");
  // Sizes that overflow int64.
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_TG_ERROR(stencil(vec(g, {1, 2, 3}), vec(g, {1, 1, 1}), StencilDesc{.dilations = {huge}}),
                  ErrorCode::invalid_argument, "[stencil] window dim 0: size, stride");
  EXPECT_TG_ERROR(stencil(vec(g, {1, 2, 3}), vec(g, {1}), explicit_pad({huge, huge})),
                  ErrorCode::invalid_argument, "overflow");
  StencilDesc big_stride{.strides = {huge}, .padding_style = PaddingStyle::same};
  EXPECT_EQ(stencil(vec(g, {1, 2, 3}), vec(g, {1, 1}), big_stride).shape(), Shape{1});
  // Integer constant that the dtype cannot hold.
  Tensor xi = g.placeholder({4}, DType::i32);
  Tensor wi = g.placeholder({2}, DType::i32);
  StencilDesc c{.boundary_mode = B::constant, .padding_constant = 0.5};
  EXPECT_TG_ERROR(stencil(xi, wi, c), ErrorCode::invalid_argument,
                  "[stencil] padding_constant 0.5");
  // Mirror modes need a source element to read.
  Tensor e = g.constant(TensorData::zeros({0}));
  EXPECT_TG_ERROR(stencil(e, vec(g, {1}), explicit_pad({1, 1}, B::reflect)),
                  ErrorCode::invalid_argument, "[stencil]");
}

TEST(Stencil, ErrorsFoundWhenDynamicDimsResolve) {
  Graph g;
  Tensor x = g.placeholder({-1}, DType::f32);
  Tensor y = stencil(x, vec(g, {1, 1, 1}), StencilDesc{.padding_style = PaddingStyle::valid});
  EXPECT_EQ(y.shape(), Shape{-1});
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2})}}, {y}), ErrorCode::invalid_argument,
                  "[stencil] window dim 0");
}

}  // namespace
}  // namespace tg
