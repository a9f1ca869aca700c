// Gradient checks (central finite differences in float64) of the conv family's rules: conv2d and,
// since their rules are the second-order ops, conv2d_backward_data and conv2d_backward_weights
// themselves; several layouts, strides, dilations, groups (incl. depthwise) and padding styles.
#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using Xs = std::vector<Tensor>;
using L = Layout;
using P = Padding;

// ---- conv2d -------------------------------------------------------------------------------------

TG_GRAD_CASE({.name = "conv2d/nhwc_hwio_valid",
              .op = "conv2d",
              .input_shapes = {{2, 4, 4, 3}, {3, 2, 3, 2}},
              .fn = [](const Xs& x) { return conv2d(x[0], x[1]); }});
TG_GRAD_CASE({.name = "conv2d/nchw_oihw_stride_dilation_explicit",
              .op = "conv2d",
              .input_shapes = {{1, 2, 6, 7}, {3, 2, 2, 2}},
              .fn = [](const Xs& x) {
                return conv2d(x[0], x[1],
                              {.strides = {2, 2},
                               .dilations = {1, 2},
                               .padding = P::explicit_padding,
                               .explicit_padding = {1, 0, 2, 1},
                               .data_layout = L::nchw,
                               .weights_layout = L::oihw});
              }});
TG_GRAD_CASE({.name = "conv2d/nhwc_oihw_groups_same",
              .op = "conv2d",
              .input_shapes = {{1, 5, 5, 4}, {4, 2, 3, 3}},
              .fn = [](const Xs& x) {
                return conv2d(x[0], x[1],
                              {.padding = P::same, .groups = 2, .weights_layout = L::oihw});
              }});
TG_GRAD_CASE({.name = "conv2d/nchw_hwio_depthwise_same_lower_stride2",
              .op = "conv2d",
              .input_shapes = {{1, 3, 5, 6}, {3, 3, 1, 3}},
              .fn = [](const Xs& x) {
                return conv2d(x[0], x[1],
                              {.strides = {2, 2},
                               .padding = P::same_lower,
                               .groups = 3,
                               .data_layout = L::nchw});
              }});
// Double backward: the gradient of a conv2d's loss differentiated again.
TG_GRAD_CASE({.name = "conv2d/double_backward",
              .op = "conv2d",
              .input_shapes = {{1, 4, 4, 2}, {2, 2, 2, 2}},
              .fn = [](const Xs& x) {
                Tensor y = conv2d(x[0], x[1], {.strides = {2, 1}, .padding = P::same});
                std::vector<Tensor> g = gradients(reduce_sum(y * y), {x[1]});
                return g[0];
              }});

// ---- conv2d_backward_data (linear in dy and in w) ----------------------------------------------

TG_GRAD_CASE({.name = "conv2d_backward_data/nhwc_hwio_stride2_same",
              .op = "conv2d_backward_data",
              .input_shapes = {{1, 3, 3, 3}, {3, 3, 2, 3}},
              .fn = [](const Xs& x) {
                return conv2d_backward_data(x[0], x[1], {1, 5, 5, 2},
                                            {.strides = {2, 2}, .padding = P::same});
              }});
TG_GRAD_CASE({.name = "conv2d_backward_data/nchw_oihw_groups_dilation_explicit",
              .op = "conv2d_backward_data",
              .input_shapes = {{1, 2, 5, 6}, {2, 2, 2, 2}},
              .fn = [](const Xs& x) {
                return conv2d_backward_data(x[0], x[1], {1, 4, 6, 6},
                                            {.dilations = {2, 2},
                                             .padding = P::explicit_padding,
                                             .explicit_padding = {1, 0, 0, 2},
                                             .groups = 2,
                                             .data_layout = L::nchw,
                                             .weights_layout = L::oihw});
              }});
TG_GRAD_CASE({.name = "conv2d_backward_data/nhwc_oihw_depthwise_same_lower",
              .op = "conv2d_backward_data",
              .input_shapes = {{1, 3, 4, 4}, {4, 1, 2, 2}},
              .fn = [](const Xs& x) {
                return conv2d_backward_data(x[0], x[1], {1, 5, 4, 2},
                                            {.strides = {2, 1},
                                             .padding = P::same_lower,
                                             .groups = 2,
                                             .weights_layout = L::oihw});
              }});
// conv_transpose2d is conv2d_backward_data with a cropped / zero-extended output.
TG_GRAD_CASE({.name = "conv2d_backward_data/conv_transpose2d_same_output_padding",
              .op = "conv2d_backward_data",
              .input_shapes = {{1, 3, 3, 2}, {3, 3, 3, 2}},
              .fn = [](const Xs& x) {
                return conv_transpose2d(
                    x[0], x[1],
                    {.conv = {.strides = {2, 3}, .padding = P::same}, .output_padding = {1, 0}});
              }});

// ---- conv2d_backward_weights (linear in dy and in x) -------------------------------------------

TG_GRAD_CASE({.name = "conv2d_backward_weights/nhwc_hwio_stride2_same",
              .op = "conv2d_backward_weights",
              .input_shapes = {{1, 3, 3, 3}, {1, 5, 5, 2}},
              .fn = [](const Xs& x) {
                return conv2d_backward_weights(x[0], x[1], {3, 3, 2, 3},
                                               {.strides = {2, 2}, .padding = P::same});
              }});
TG_GRAD_CASE({.name = "conv2d_backward_weights/nchw_oihw_groups_dilation_explicit",
              .op = "conv2d_backward_weights",
              .input_shapes = {{1, 2, 4, 6}, {1, 4, 5, 5}},
              .fn = [](const Xs& x) {
                return conv2d_backward_weights(x[0], x[1], {2, 2, 2, 2},
                                               {.dilations = {2, 1},
                                                .padding = P::explicit_padding,
                                                .explicit_padding = {1, 0, 1, 1},
                                                .groups = 2,
                                                .data_layout = L::nchw,
                                                .weights_layout = L::oihw});
              }});
TG_GRAD_CASE({.name = "conv2d_backward_weights/nchw_hwio_depthwise_stride2_same",
              .op = "conv2d_backward_weights",
              .input_shapes = {{1, 3, 3, 3}, {1, 3, 5, 5}},
              .fn = [](const Xs& x) {
                return conv2d_backward_weights(
                    x[0], x[1], {3, 3, 1, 3},
                    {.strides = {2, 2}, .padding = P::same, .groups = 3, .data_layout = L::nchw});
              }});

// ---- dynamic batch -----------------------------------------------------------------------------

// Gradients through a conv2d whose batch is dynamic equal those of the same graph with a static
// batch (whose values the finite-difference cases above check).
TEST(ConvRules, DynamicBatchGradients) {
  const Conv2dDesc d{.strides = {2, 2}, .padding = P::same, .groups = 2};
  TensorData xd = TensorData::random_uniform({3, 5, 5, 4}, -1, 1, 1, DType::f64);
  TensorData wd = TensorData::random_uniform({3, 3, 2, 6}, -1, 1, 2, DType::f64);
  auto grads = [&](Shape x_shape) {
    Graph g;
    Tensor x = g.placeholder(x_shape, DType::f64, "x"),
           w = g.placeholder({3, 3, 2, 6}, DType::f64, "w");
    Tensor y = conv2d(x, w, d);
    std::vector<Tensor> gr = gradients(reduce_sum(y * y), {x, w});
    EXPECT_EQ(gr[0].shape(), x_shape);
    return g.run({{x, xd}, {w, wd}}, gr, {}, Device::cpu());
  };
  std::vector<TensorData> dynamic = grads({-1, 5, 5, 4}), fixed = grads({3, 5, 5, 4});
  expect_close(dynamic[0], fixed[0].to_vector<double>(), {3, 5, 5, 4}, 1e-12, 1e-12);
  expect_close(dynamic[1], fixed[1].to_vector<double>(), {3, 3, 2, 6}, 1e-12, 1e-12);
}

// A conv2d whose input's spatial dims are dynamic: with stride 1 its input gradient's size is
// recovered from dy's when the graph is compiled; with stride 2 the weights' gradient still works
// and asking for the input's fails when compiled, naming the op.
TEST(ConvRules, DynamicSpatialGradients) {
  TensorData xd = TensorData::random_uniform({2, 5, 6, 3}, -1, 1, 3, DType::f64);
  TensorData wd = TensorData::random_uniform({3, 3, 3, 4}, -1, 1, 4, DType::f64);
  auto grads = [&](Shape x_shape, Conv2dDesc d, bool wrt_x) {
    Graph g;
    Tensor x = g.placeholder(x_shape, DType::f64, "x"),
           w = g.placeholder({3, 3, 3, 4}, DType::f64, "w");
    Tensor y = conv2d(x, w, d);
    std::vector<Tensor> gr = gradients(reduce_sum(y * y), {x, w});
    if (!wrt_x) gr.erase(gr.begin());
    return g.run({{x, xd}, {w, wd}}, gr, {}, Device::cpu());
  };
  const Conv2dDesc same{.padding = P::same};
  std::vector<TensorData> dynamic = grads({2, -1, -1, 3}, same, true);
  std::vector<TensorData> fixed = grads({2, 5, 6, 3}, same, true);
  expect_close(dynamic[0], fixed[0].to_vector<double>(), {2, 5, 6, 3}, 1e-12, 1e-12);
  expect_close(dynamic[1], fixed[1].to_vector<double>(), {3, 3, 3, 4}, 1e-12, 1e-12);

  const Conv2dDesc strided{.strides = {2, 2}, .padding = P::same};
  std::vector<TensorData> dw = grads({2, -1, -1, 3}, strided, false);
  expect_close(dw[0], grads({2, 5, 6, 3}, strided, false)[0].to_vector<double>(), {3, 3, 3, 4},
               1e-12, 1e-12);
  EXPECT_TG_ERROR(grads({2, -1, -1, 3}, strided, true), ErrorCode::invalid_argument,
                  "[conv2d_backward_data] input_shape's height is dynamic");
}

}  // namespace
}  // namespace tg
