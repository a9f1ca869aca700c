// Gradient checks (finite differences) and hand-computed gradients of the stencil op.
#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using Xs = std::vector<Tensor>;
using BM = BoundaryMode;
using SR = StencilReduction;

// ---- finite-difference checks ------------------------------------------------------------------

// A 2-D window [2, 3] over a batch of 2 sources [4, 5] with strides, dilations and explicit
// padding wider than the mirrored distance: output [2, 3, 5].
StencilDesc windowed(BM mode, SR reduction = SR::sum) {
  return {.reduction = reduction,
          .strides = {2, 1},
          .dilations = {1, 2},
          .explicit_padding = {1, 2, 3, 1},
          .boundary_mode = mode,
          .padding_constant = 1.5};
}

TG_GRAD_CASE({.name = "stencil/sum_2d_batch_zero",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::zero)); }});
TG_GRAD_CASE({.name = "stencil/sum_2d_batch_constant",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::constant)); }});
TG_GRAD_CASE({.name = "stencil/sum_2d_batch_reflect",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::reflect)); }});
TG_GRAD_CASE({.name = "stencil/sum_2d_batch_symmetric",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::symmetric)); }});
TG_GRAD_CASE({.name = "stencil/sum_2d_batch_clamp_to_edge",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::clamp_to_edge)); }});
TG_GRAD_CASE({.name = "stencil/sum_2d_batch_periodic",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::periodic)); }});

// Unit strides: the transposed-stencil rule (dx a stencil of the cotangent with the flipped
// window, then pad's adjoint; dw a reduction a tap). Dilations, padding wider than the dim on one
// side and none on the other, every boundary mode, a 1-D window over a batch, 'same' padding.
StencilDesc unit_strides(BM mode) {
  return {.reduction = SR::sum,
          .strides = {1, 1},
          .dilations = {2, 1},
          .explicit_padding = {5, 0, 1, 2},
          .boundary_mode = mode,
          .padding_constant = 1.5};
}
TG_GRAD_CASE({.name = "stencil/transposed_zero",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], unit_strides(BM::zero)); }});
TG_GRAD_CASE({.name = "stencil/transposed_constant",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], unit_strides(BM::constant)); }});
TG_GRAD_CASE({.name = "stencil/transposed_reflect",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], unit_strides(BM::reflect)); }});
TG_GRAD_CASE({.name = "stencil/transposed_symmetric",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], unit_strides(BM::symmetric)); }});
TG_GRAD_CASE({.name = "stencil/transposed_clamp_to_edge",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], unit_strides(BM::clamp_to_edge)); }});
TG_GRAD_CASE({.name = "stencil/transposed_periodic",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], unit_strides(BM::periodic)); }});
TG_GRAD_CASE({.name = "stencil/transposed_same_3d",
              .op = "stencil",
              .input_shapes = {{3, 4, 5}, {2, 3, 2}},
              .fn = [](const Xs& x) {
                return stencil(x[0], x[1],
                               {.padding_style = PaddingStyle::same, .boundary_mode = BM::reflect});
              }});
TG_GRAD_CASE({.name = "stencil/transposed_1d_batch_valid",
              .op = "stencil",
              .input_shapes = {{3, 9}, {4}},
              .fn = [](const Xs& x) {
                return stencil(x[0], x[1], {.dilations = {2}, .padding_style = PaddingStyle::valid});
              }});

TG_GRAD_CASE(
    {.name = "stencil/product_2d_symmetric",
     .op = "stencil",
     .input_shapes = {{2, 4, 5}, {2, 3}},
     .fn = [](const Xs& x) { return stencil(x[0], x[1], windowed(BM::symmetric, SR::product)); },
     .low = 0.5,
     .high = 1.5});
TG_GRAD_CASE({.name = "stencil/product_constant_boundary",
              .op = "stencil",
              .input_shapes = {{3, 4}, {3}},
              .fn =
                  [](const Xs& x) {
                    return stencil(x[0], x[1],
                                   {.reduction = SR::product,
                                    .explicit_padding = {2, 1},
                                    .boundary_mode = BM::constant,
                                    .padding_constant = -0.75});
                  },
              .low = -1.5,
              .high = 1.5});
// Windows with one and with two zero factors (the zero-safe product of the others).
TG_GRAD_CASE({.name = "stencil/product_zeros",
              .op = "stencil",
              .input_shapes = {{7}, {3}},
              .fn = [](const Xs& x) { return stencil(x[0], x[1], {.reduction = SR::product}); },
              .values = {{1, 0.5, 0, 0, 2, -1, 0.7}, {1.2, -0.8, 1.1}}});

TG_GRAD_CASE({.name = "stencil/max_2d_reflect",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) {
                return stencil(x[0], x[1], windowed(BM::reflect, SR::max));
              }});
TG_GRAD_CASE({.name = "stencil/min_2d_periodic",
              .op = "stencil",
              .input_shapes = {{2, 4, 5}, {2, 3}},
              .fn = [](const Xs& x) {
                return stencil(x[0], x[1], windowed(BM::periodic, SR::min));
              }});
TG_GRAD_CASE({.name = "stencil/max_constant_boundary",
              .op = "stencil",
              .input_shapes = {{2, 5}, {3}},
              .fn = [](const Xs& x) {
                return stencil(x[0], x[1],
                               {.reduction = SR::max,
                                .explicit_padding = {2, 2},
                                .boundary_mode = BM::constant,
                                .padding_constant = 0.3});
              }});

TG_GRAD_CASE({.name = "stencil/same_strided_clamp",
              .op = "stencil",
              .input_shapes = {{1, 5, 4}, {3, 2}},
              .fn = [](const Xs& x) {
                return stencil(x[0], x[1],
                               {.strides = {2, 2},
                                .padding_style = PaddingStyle::same,
                                .boundary_mode = BM::clamp_to_edge});
              }});
TG_GRAD_CASE({.name = "stencil/valid_dilated_1d",
              .op = "stencil",
              .input_shapes = {{3, 9}, {3}},
              .fn = [](const Xs& x) {
                return stencil(
                    x[0], x[1],
                    {.strides = {2}, .dilations = {3}, .padding_style = PaddingStyle::valid});
              }});
TG_GRAD_CASE({.name = "stencil/3d_window_reflect",
              .op = "stencil",
              .input_shapes = {{2, 3, 3, 2}, {2, 2, 2}},
              .fn = [](const Xs& x) {
                return stencil(
                    x[0], x[1],
                    {.explicit_padding = {1, 1, 0, 2, 2, 0}, .boundary_mode = BM::reflect});
              }});
TG_GRAD_CASE({.name = "stencil/wrt_weights_only",
              .op = "stencil",
              .input_shapes = {{4, 4}, {2, 2}},
              .fn =
                  [](const Xs& x) {
                    return stencil(
                        x[0] * x[0], x[1],
                        {.explicit_padding = {1, 0, 0, 1}, .boundary_mode = BM::symmetric});
                  },
              .wrt = {1}});

// ---- hand-computed gradients -------------------------------------------------------------------

TensorData f64(std::vector<double> v, Shape s) {
  return TensorData::from_vector<double>(std::move(v), std::move(s));
}

// Gradients of stencil(x, w, desc) with output cotangent `ct`: {dx, dw}.
std::vector<TensorData> stencil_vjp(const TensorData& x, const TensorData& w, StencilDesc desc,
                                    const TensorData& ct) {
  Graph g;
  Tensor xt = g.constant(x), wt = g.constant(w);
  Tensor y = stencil(xt, wt, std::move(desc));
  return testing::run_cpu(g, vjp({y}, {xt, wt}, {g.constant(ct)}));
}

TEST(StencilRules, UnitStridesTransposeTheStencil) {
  // The gradient of a unit-stride sum is a stencil of the cotangent (the transposed stencil), not
  // a gather of the window values and a scatter into the source.
  Graph g;
  Tensor x = g.placeholder({2, 16, 17}, DType::f32, "x");
  Tensor w = g.placeholder({3, 3}, DType::f32, "w");
  Tensor ct = g.placeholder({2, 16, 17}, DType::f32, "ct");
  Tensor y = stencil(x, w, {.explicit_padding = {1, 1, 1, 1}});
  std::vector<Tensor> grads = vjp({y}, {x}, {ct});
  Executable exe = g.compile(Device::cpu(), {{x, x.type()}, {w, w.type()}, {ct, ct.type()}}, grads);
  const std::string ir = exe.to_string();
  EXPECT_EQ(testing::count_occurrences(ir, "gather"), 0) << ir;
  EXPECT_EQ(testing::count_occurrences(ir, "scatter"), 0) << ir;
  EXPECT_EQ(testing::count_occurrences(ir, "stencil("), 1) << ir;
}

TEST(StencilRules, SumZeroBoundary) {
  // y = [0*1 + 1*2, 1*1 + 2*2, 2*1 + 3*2]
  auto grads = stencil_vjp(f64({1, 2, 3}, {3}), f64({1, 2}, {2}), {.explicit_padding = {1, 0}},
                           f64({1, 1, 1}, {3}));
  expect_close(grads[0], {3, 3, 2}, {3});
  expect_close(grads[1], {3, 6}, {2});
}

TEST(StencilRules, ConstantBoundaryFeedsTheWeights) {
  // y = [10*1 + 1*2, 1*1 + 2*2, 2*1 + 3*2] = [12, 5, 8]
  auto grads = stencil_vjp(
      f64({1, 2, 3}, {3}), f64({1, 2}, {2}),
      {.explicit_padding = {1, 0}, .boundary_mode = BM::constant, .padding_constant = 10},
      f64({1, 1, 1}, {3}));
  expect_close(grads[0], {3, 3, 2}, {3});
  expect_close(grads[1], {13, 6}, {2});
}

TEST(StencilRules, BoundaryReadsAccumulateIntoTheSource) {
  // A 1-element window over [1, 2, 3] padded by 2 on each side reads, per mode, the source
  // coordinates listed; output cotangent [1..7]; dw = sum(ct * y).
  struct Case {
    BM mode;
    std::vector<double> dx;
    double dw;
  };
  const std::vector<Case> cases = {
      {BM::zero, {3, 4, 5}, 26},            // -, -, 0, 1, 2, -, -
      {BM::constant, {3, 4, 5}, 26 + 48},   // c = 3 at 1, 2, 6, 7
      {BM::reflect, {10, 12, 6}, 52},       // 2, 1, 0, 1, 2, 1, 0
      {BM::symmetric, {5, 12, 11}, 62},     // 1, 0, 0, 1, 2, 2, 1
      {BM::clamp_to_edge, {6, 4, 18}, 68},  // 0, 0, 0, 1, 2, 2, 2
      {BM::periodic, {9, 12, 7}, 54},       // 1, 2, 0, 1, 2, 0, 1
  };
  for (const Case& c : cases) {
    auto grads =
        stencil_vjp(f64({1, 2, 3}, {3}), f64({2}, {1}),
                    {.explicit_padding = {2, 2}, .boundary_mode = c.mode, .padding_constant = 3},
                    f64({1, 2, 3, 4, 5, 6, 7}, {7}));
    SCOPED_TRACE(static_cast<int>(c.mode));
    expect_close(grads[0], {2 * c.dx[0], 2 * c.dx[1], 2 * c.dx[2]}, {3});
    expect_close(grads[1], {c.dw}, {1});
  }
}

TEST(StencilRules, ProductWithAZero) {
  // y = [(0*1)(2*1), (2*1)(3*1)]
  auto grads = stencil_vjp(f64({0, 2, 3}, {3}), f64({1, 1}, {2}), {.reduction = SR::product},
                           f64({1, 1}, {2}));
  expect_close(grads[0], {2, 3, 2}, {3});
  expect_close(grads[1], {6, 6}, {2});
}

TEST(StencilRules, MaxGoesToTheFirstArgIndex) {
  auto grads =
      stencil_vjp(f64({1, 3, 2}, {3}), f64({1, 1}, {2}), {.reduction = SR::max}, f64({1, 1}, {2}));
  expect_close(grads[0], {0, 2, 0}, {3});
  expect_close(grads[1], {3, 3}, {2});
  auto tie = stencil_vjp(f64({2, 2}, {2}), f64({1, 1}, {2}), {.reduction = SR::min}, f64({1}, {1}));
  expect_close(tie[0], {1, 0}, {2});
  expect_close(tie[1], {2, 0}, {2});
}

TEST(StencilRules, EmptySourceConstantBoundary) {
  // Every read is the constant 2: y = [2*w, 2*w].
  auto grads = stencil_vjp(
      f64({}, {0}), f64({5}, {1}),
      {.explicit_padding = {1, 1}, .boundary_mode = BM::constant, .padding_constant = 2},
      f64({1, 2}, {2}));
  EXPECT_EQ(grads[0].shape(), Shape{0});
  expect_close(grads[1], {6}, {1});
}

TEST(StencilRules, Float32) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  Tensor w = g.constant(TensorData::from_vector<float>({1, -1}, {1, 2}));
  Tensor y = stencil(x, w, {.explicit_padding = {0, 0, 0, 1}, .boundary_mode = BM::periodic});
  // y[r] = [x[r,0] - x[r,1], x[r,1] - x[r,0]]: every element gets 1 - 1.
  auto grads = testing::run_cpu(g, gradients(y, {x, w}));
  EXPECT_EQ(grads[0].dtype(), DType::f32);
  expect_close(grads[0], {0, 0, 0, 0}, {2, 2});
  expect_close(grads[1], {10, 10}, {1, 2});
}

TEST(StencilRules, Float16) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<double>({1, 2, 3}, {3}));
  Tensor w = g.constant(TensorData::from_vector<double>({1, 2}, {2}));
  Tensor xh = cast(x, DType::f16), wh = cast(w, DType::f16);
  Tensor y = stencil(xh, wh, {.explicit_padding = {1, 0}, .boundary_mode = BM::clamp_to_edge});
  // The windows read (x0, x0), (x0, x1), (x1, x2): y = [1 + 2, 1 + 4, 2 + 6].
  auto grads = testing::run_cpu(g, gradients(y, {xh, wh}));
  EXPECT_EQ(grads[0].dtype(), DType::f16);
  expect_close(grads[0], {4, 3, 2}, {3});
  expect_close(grads[1], {4, 6}, {2});
}

TEST(StencilRules, DynamicShapesAreUnsupported) {
  Graph g;
  Tensor x = g.placeholder({-1, 4}, DType::f64, "x");
  Tensor w = g.constant(f64({1, 2}, {2}));
  Tensor y = stencil(x, w);
  EXPECT_TG_ERROR(gradients(y, {x}), ErrorCode::unsupported, "[gradients] stencil needs static");
}

}  // namespace
}  // namespace tg
