// Gradient checks (finite differences, float64) and hand-computed gradients of the pool family.
// Random inputs are distinct (uniform doubles), so every max window has a unique maximum and
// the finite differences see no kink.
#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using Xs = std::vector<Tensor>;

Pool2dDesc explicit_desc(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads,
                         bool ceil_mode = false, bool include_pad = false,
                         Layout layout = Layout::nhwc, std::vector<int64_t> dilations = {1, 1}) {
  return {.kernel_size = std::move(k),
          .strides = std::move(s),
          .dilations = std::move(dilations),
          .padding = Padding::explicit_padding,
          .explicit_padding = std::move(pads),
          .ceil_mode = ceil_mode,
          .count_include_pad = include_pad,
          .data_layout = layout};
}

// Overlapping windows (stride < kernel) with padding: ResNet's stem pool.
const Pool2dDesc kOverlap = explicit_desc({3, 3}, {2, 2}, {1, 1, 1, 1});
// ceil_mode windows reaching past the padded input, nchw.
const Pool2dDesc kCeilNchw = explicit_desc({3, 2}, {2, 2}, {1, 0, 1, 1}, true, true, Layout::nchw);
// Dilation with ceil_mode and asymmetric padding.
const Pool2dDesc kDilated =
    explicit_desc({2, 3}, {1, 2}, {1, 0, 2, 1}, true, false, Layout::nhwc, {2, 1});
const Pool2dDesc kSame{.kernel_size = {3, 3}, .strides = {2, 2}, .padding = Padding::same};
const Pool2dDesc kSameLowerInclude{.kernel_size = {2, 3},
                                   .strides = {2, 2},
                                   .padding = Padding::same_lower,
                                   .count_include_pad = true,
                                   .data_layout = Layout::nchw};

TG_GRAD_CASE({.name = "max_pool2d/overlap_padding",
              .op = "max_pool2d",
              .input_shapes = {{2, 5, 6, 3}},
              .fn = [](const Xs& x) { return max_pool2d(x[0], kOverlap); }});
TG_GRAD_CASE({.name = "max_pool2d/ceil_nchw",
              .op = "max_pool2d",
              .input_shapes = {{2, 3, 5, 4}},
              .fn = [](const Xs& x) { return max_pool2d(x[0], kCeilNchw); }});
TG_GRAD_CASE({.name = "max_pool2d/dilated",
              .op = "max_pool2d",
              .input_shapes = {{1, 6, 7, 2}},
              .fn = [](const Xs& x) { return max_pool2d(x[0], kDilated); }});
TG_GRAD_CASE({.name = "max_pool2d/same",
              .op = "max_pool2d",
              .input_shapes = {{1, 6, 5, 2}},
              .fn = [](const Xs& x) { return max_pool2d(x[0], kSame); }});

TG_GRAD_CASE({.name = "avg_pool2d/overlap_padding",
              .op = "avg_pool2d",
              .input_shapes = {{2, 5, 6, 3}},
              .fn = [](const Xs& x) { return avg_pool2d(x[0], kOverlap); }});
TG_GRAD_CASE({.name = "avg_pool2d/ceil_include_pad_nchw",
              .op = "avg_pool2d",
              .input_shapes = {{2, 3, 5, 4}},
              .fn = [](const Xs& x) { return avg_pool2d(x[0], kCeilNchw); }});
TG_GRAD_CASE({.name = "avg_pool2d/dilated",
              .op = "avg_pool2d",
              .input_shapes = {{1, 6, 7, 2}},
              .fn = [](const Xs& x) { return avg_pool2d(x[0], kDilated); }});
TG_GRAD_CASE({.name = "avg_pool2d/same_lower_include_pad",
              .op = "avg_pool2d",
              .input_shapes = {{1, 2, 5, 6}},
              .fn = [](const Xs& x) { return avg_pool2d(x[0], kSameLowerInclude); }});

// avg_pool2d_backward is linear in dy; x only gives the shape (not differentiated).
TG_GRAD_CASE({.name = "avg_pool2d_backward/overlap_padding",
              .op = "avg_pool2d_backward",
              .input_shapes = {{2, 3, 3, 3}, {2, 5, 6, 3}},
              .fn = [](const Xs& x) { return avg_pool2d_backward(x[0], x[1], kOverlap); },
              .wrt = {0}});
TG_GRAD_CASE({.name = "avg_pool2d_backward/ceil_include_pad_nchw",
              .op = "avg_pool2d_backward",
              .input_shapes = {{2, 3, 3, 3}, {2, 3, 5, 4}},
              .fn = [](const Xs& x) { return avg_pool2d_backward(x[0], x[1], kCeilNchw); },
              .wrt = {0}});

// Second order through the pool: d/dx of sum(avg_pool2d_backward(avg_pool2d(x)^2)).
TG_GRAD_CASE({.name = "avg_pool2d_backward/second_order",
              .op = "avg_pool2d_backward",
              .input_shapes = {{1, 5, 5, 2}},
              .fn = [](const Xs& x) {
                Tensor y = avg_pool2d(x[0], kOverlap);
                return avg_pool2d_backward(y * y, x[0], kOverlap);
              }});

TEST(PoolGradients, MaxTiesGoToTheFirstMaximum) {
  // All elements equal: each of the four overlapping 3x3 windows sends its cotangent (1) to its
  // top-left element.
  Graph g;
  Tensor x = g.constant(TensorData::full({1, 4, 4, 1}, DType::f64, 2.0));
  Tensor y = max_pool2d(x, {.kernel_size = {3, 3}, .strides = {1, 1}});
  std::vector<Tensor> dx = gradients(reduce_sum(y), {x});
  expect_close(testing::run1(g, dx[0]), {1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
               {1, 4, 4, 1});
}

TEST(PoolGradients, GlobalAvgPoolSpreadsEvenly) {
  Graph g;
  Tensor x = g.placeholder({2, 2, 3, 1}, DType::f64, "x");
  std::vector<Tensor> dx = gradients(reduce_sum(global_avg_pool2d(x)), {x});
  Feeds feeds{{x, TensorData::full({2, 2, 3, 1}, DType::f64, 1.0)}};
  expect_close(testing::run1(g, dx[0], feeds), std::vector<double>(12, 1.0 / 6), {2, 2, 3, 1});
}

TEST(PoolGradients, DynamicBatch) {
  // The rules build ops that accept unknown dims: the gradient graph runs for any batch.
  Graph g;
  Tensor x = g.placeholder({-1, 4, 4, 1}, DType::f32, "x");
  std::vector<Tensor> dx = gradients(reduce_sum(avg_pool2d(x) + max_pool2d(x)), {x});
  EXPECT_EQ(dx[0].shape(), (Shape{-1, 4, 4, 1}));
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>(i);
  Feeds feeds{{x, TensorData::from_vector<float>(v, {2, 4, 4, 1})}};
  // avg: 1/4 everywhere; max: +1 at the bottom-right element of each 2x2 window.
  std::vector<double> expected(32, 0.25);
  for (int n = 0; n < 2; ++n)
    for (int r : {1, 3})
      for (int c : {1, 3}) expected[n * 16 + r * 4 + c] += 1;
  expect_close(testing::run1(g, dx[0], feeds), expected, {2, 4, 4, 1});
}

}  // namespace
}  // namespace tg
