// Conformance cases of the stencil op: window ranks 1..4, batch dims, strides, dilations,
// explicit / valid / same padding, every boundary mode (also padding wider than the dim), the
// reductions sum/product/min/max/argmin/argmax, NaN, and integer dtypes.
#include <cmath>
#include <limits>
#include <utility>

#include "conformance/harness.h"

namespace {

using tg::BoundaryMode;
using tg::DType;
using tg::PaddingStyle;
using tg::Shape;
using tg::StencilDesc;
using tg::StencilReduction;
using tg::Tensor;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

OpCase st(std::string name, Shape xs, Shape ws, StencilDesc d, DType dtype = DType::f32,
          std::vector<double> x = {}, std::vector<double> w = {}, std::vector<double> expected = {},
          double low = -2, double high = 2) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(xs), dtype, low, high, std::move(x)},
              InputSpec{std::move(ws), dtype, low, high, std::move(w)}};
  c.build = [d](tg::Graph&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{tg::stencil(in[0], in[1], d)};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  // Sums of products of values in [-2, 2): the f16/bf16 rounding of the inputs is exact in the
  // reference, the accumulation error is bounded by the window's magnitude.
  c.tolerance = {
      {DType::f16, {4e-3, 4e-3}}, {DType::bf16, {2e-2, 2e-2}}, {DType::f32, {1e-5, 1e-5}}};
  return c;
}

StencilDesc desc(StencilReduction r, std::vector<int64_t> pads = {},
                 BoundaryMode mode = BoundaryMode::zero, double constant = 0) {
  StencilDesc d;
  d.reduction = r;
  d.explicit_padding = std::move(pads);
  d.boundary_mode = mode;
  d.padding_constant = constant;
  return d;
}

}  // namespace

TG_CONFORMANCE_CASES(stencil) {
  using R = StencilReduction;
  using B = BoundaryMode;
  // Hand-computed.
  cases.push_back(st("stencil_sum_zero_pad", {4}, {3}, desc(R::sum, {1, 1}), DType::f32,
                     {1, 2, 3, 4}, {1, 2, 1}, {4, 8, 12, 11}));
  cases.push_back(st("stencil_sum_constant", {3}, {2}, desc(R::sum, {1, 0}, B::constant, 10),
                     DType::f32, {1, 2, 3}, {1, 2}, {12, 5, 8}));
  cases.push_back(st("stencil_dilated_strided", {10}, {3},
                     [] {
                       StencilDesc d;
                       d.strides = {3};
                       d.dilations = {2};
                       return d;
                     }(),
                     DType::f32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 1}, {6, 15}));
  cases.push_back(st("stencil_argmax_values", {5}, {3}, desc(R::argmax, {1, 1}), DType::f32,
                     {1, 5, 5, kNaN, 0}, {1, 1, 1}, {2, 1, 2, 1, 0}));
  // Every boundary mode, with padding wider than the dim.
  for (auto [name, mode] :
       {std::pair{"zero", B::zero}, std::pair{"constant", B::constant},
        std::pair{"reflect", B::reflect}, std::pair{"symmetric", B::symmetric},
        std::pair{"clamp", B::clamp_to_edge}, std::pair{"periodic", B::periodic}}) {
    cases.push_back(
        st(std::string("stencil_1d_") + name, {2, 5}, {4}, desc(R::sum, {7, 6}, mode, 1.5)));
    cases.push_back(st(std::string("stencil_2d_") + name, {3, 6, 7}, {3, 2},
                       desc(R::max, {2, 1, 1, 3}, mode, -1)));
  }
  // Padding styles, strides, dilations, ranks 2..4.
  {
    StencilDesc d = desc(R::sum);
    d.padding_style = PaddingStyle::same;
    d.strides = {2, 3};
    cases.push_back(st("stencil_same_strided", {2, 9, 11}, {3, 3}, d));
    d.padding_style = PaddingStyle::valid;
    d.strides = {1, 2};
    d.dilations = {2, 1};
    cases.push_back(st("stencil_valid_dilated", {12, 10}, {3, 4}, d));
  }
  {
    StencilDesc d = desc(R::sum, {1, 1, 0, 2, 2, 0}, B::reflect);
    d.strides = {1, 2, 1};
    cases.push_back(st("stencil_3d", {2, 5, 6, 7}, {2, 3, 3}, d));
    StencilDesc d4 = desc(R::min, {0, 1, 1, 0, 0, 0, 1, 1}, B::periodic);
    cases.push_back(st("stencil_4d_min", {3, 4, 3, 5}, {2, 2, 1, 3}, d4));
  }
  // Reductions.
  cases.push_back(st("stencil_product", {3, 8}, {3}, desc(R::product, {1, 1}, B::clamp_to_edge),
                     DType::f32, {}, {}, {}, 0.5, 1.5));
  cases.push_back(st("stencil_min", {4, 9}, {2, 3}, desc(R::min, {1, 0, 1, 1}, B::symmetric)));
  cases.push_back(
      st("stencil_argmin", {4, 9}, {2, 3}, desc(R::argmin, {0, 1, 2, 0}, B::constant, 0.25)));
  cases.push_back(st("stencil_argmax", {2, 3, 8}, {3}, desc(R::argmax, {1, 1}, B::reflect)));
  // Integers (exact, wrap-around).
  cases.push_back(st("stencil_i32_sum", {5, 6}, {2, 2}, desc(R::sum, {1, 1, 0, 1}, B::constant, 3),
                     DType::i32, {}, {}, {}, -100, 100));
  cases.push_back(st("stencil_i8_product_wrap", {3}, {2}, desc(R::product, {0, 1}, B::constant, 2),
                     DType::i8, {16, 16, 3}, {1, 1}, {0, 48, 6}));
  cases.push_back(st("stencil_u8_argmax", {4, 7}, {3}, desc(R::argmax, {1, 1}, B::periodic),
                     DType::u8, {}, {}, {}, 0, 255));
  cases.push_back(
      st("stencil_i64_max", {6, 6}, {2, 2}, desc(R::max), DType::i64, {}, {}, {}, -1000, 1000));
  // Empty batch.
  cases.push_back(st("stencil_empty_batch", {0, 5}, {2}, desc(R::sum)));
  // Shapes large enough for the CUDA kernel's several tiles and its register blocking (several
  // outputs a thread along y and z), with boundaries on every side; f32 besides f64 (each dtype
  // is one more generated kernel to compile).
  {
    OpCase lap = st("stencil_tiled_2d_reflect", {2, 70, 75}, {3, 3}, desc(R::sum, {1, 1, 1, 1}, B::reflect));
    lap.float_dtypes = {DType::f32};
    cases.push_back(lap);
    OpCase z = st("stencil_tiled_3d_periodic", {20, 66, 35}, {3, 3, 3},
                  desc(R::sum, {1, 1, 1, 1, 1, 1}, B::periodic));
    z.float_dtypes = {DType::f32};
    cases.push_back(z);
    StencilDesc d = desc(R::argmax, {2, 2, 0, 1}, B::symmetric);
    d.strides = {1, 2};
    d.dilations = {2, 1};
    OpCase am = st("stencil_tiled_argmax_strided", {90, 100}, {3, 2}, d);
    am.float_dtypes = {DType::f32};
    cases.push_back(am);
  }
}
