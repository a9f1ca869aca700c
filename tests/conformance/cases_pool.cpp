// Conformance cases of the pool family: max_pool2d, avg_pool2d and their backward ops in both
// layouts, with strides, dilations, explicit/same padding, ceil_mode (windows reaching past the
// padded input), count_include_pad, windows holding no input element, NaN and -inf, ties (the
// first maximal element gets the gradient), integer max pooling, and empty tensors.
#include <limits>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::Layout;
using tg::Padding;
using tg::Pool2dDesc;
using tg::Shape;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;
using tg::conformance::Tolerance;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Averages of up to 9 values (and gradients summing a few shares).
const std::map<DType, Tolerance> kTol = {{DType::f32, {2e-5, 2e-6}},
                                         {DType::f16, {3e-3, 2e-4}},
                                         {DType::bf16, {1.5e-2, 2e-3}}};

OpCase forward(std::string name, bool is_max, Shape x, Pool2dDesc d, DType dtype = DType::f32,
               double low = -1, double high = 1) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(x), dtype, low, high}};
  c.build = [is_max, d](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{is_max ? tg::max_pool2d(in[0], d) : tg::avg_pool2d(in[0], d)};
  };
  c.tolerance = kTol;
  return c;
}

// dy (the forward output's shape) and x.
OpCase backward(std::string name, bool is_max, Shape dy, Shape x, Pool2dDesc d) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(dy)}, InputSpec{std::move(x)}};
  c.build = [is_max, d](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{is_max ? tg::max_pool2d_backward(in[0], in[1], d)
                                          : tg::avg_pool2d_backward(in[0], in[1], d)};
  };
  c.tolerance = kTol;
  return c;
}

constexpr Layout nchw = Layout::nchw;

}  // namespace

TG_CONFORMANCE_CASES(pool) {
  // ---- hand-computed ----
  OpCase avg_values = forward("avg_pool2d_values", false, {1, 1, 3, 3},
                              {.kernel_size = {2, 2}, .strides = {1, 1}, .data_layout = nchw});
  avg_values.inputs[0].values = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  avg_values.expected = {{3, 4, 6, 7}};
  cases.push_back(avg_values);

  // pads 1: corner windows hold 1 input element (divisor 1) or, with count_include_pad, 4.
  OpCase avg_pad = forward("avg_pool2d_include_pad_values", false, {1, 2, 2, 1},
                           {.kernel_size = {2, 2}, .strides = {2, 2},
                            .padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1},
                            .count_include_pad = true});
  avg_pad.inputs[0].values = {4, 8, 12, 16};
  avg_pad.expected = {{1, 2, 3, 4}};
  cases.push_back(avg_pad);

  OpCase max_nan = forward("max_pool2d_nan", true, {1, 1, 4, 1},
                           {.kernel_size = {1, 2}, .strides = {1, 2}});
  max_nan.inputs[0].values = {1, kNaN, 3, 2};
  max_nan.expected = {{kNaN, 3}};
  cases.push_back(max_nan);

  OpCase max_inf = forward("max_pool2d_neg_inf", true, {1, 1, 1, 4},
                           {.kernel_size = {1, 2}, .strides = {1, 2}, .data_layout = nchw});
  max_inf.inputs[0].values = {-kInf, -kInf, -kInf, 5};
  max_inf.expected = {{-kInf, 5}};
  cases.push_back(max_inf);

  OpCase max_i32 = forward("max_pool2d_i32", true, {1, 2, 2, 1}, {.kernel_size = {2, 2}}, DType::i32);
  max_i32.inputs[0].values = {3, -7, 5, 1};
  max_i32.expected = {{5}};
  cases.push_back(max_i32);

  // ---- forward, random ----
  cases.push_back(forward("max_pool2d_nhwc_overlap", true, {2, 7, 7, 3},
                          {.kernel_size = {3, 3}, .strides = {2, 2},
                           .padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1}}));
  cases.push_back(forward("max_pool2d_nchw_ceil", true, {1, 2, 7, 8},
                          {.kernel_size = {2, 3}, .strides = {2, 2}, .ceil_mode = true,
                           .data_layout = nchw}));
  cases.push_back(forward("max_pool2d_dilated_same", true, {1, 9, 9, 2},
                          {.kernel_size = {3, 3}, .strides = {1, 1}, .dilations = {2, 2},
                           .padding = Padding::same}));
  // Dilation 3 and pads 2/3 around one row: the window's taps (-2 and 1) miss it.
  OpCase max_empty = forward("max_pool2d_empty_windows", true, {1, 1, 2, 1},
                             {.kernel_size = {2, 1}, .strides = {3, 1}, .dilations = {3, 1},
                              .padding = Padding::explicit_padding,
                              .explicit_padding = {2, 3, 0, 0}});
  max_empty.expected = {{-kInf, -kInf}};
  cases.push_back(max_empty);
  cases.push_back(forward("max_pool2d_u8", true, {2, 5, 6, 3}, {.kernel_size = {2, 2}}, DType::u8,
                          0, 256));
  cases.push_back(forward("max_pool2d_i64_nchw", true, {1, 3, 5, 5},
                          {.kernel_size = {3, 3}, .strides = {2, 2}, .data_layout = nchw},
                          DType::i64, -1e12, 1e12));
  cases.push_back(forward("max_pool2d_i8_pad", true, {1, 4, 4, 2},
                          {.kernel_size = {3, 3}, .strides = {1, 1},
                           .padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1}},
                          DType::i8, -128, 128));
  cases.push_back(forward("avg_pool2d_nhwc_include_pad", false, {1, 5, 5, 2},
                          {.kernel_size = {3, 3}, .strides = {2, 2},
                           .padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1},
                           .count_include_pad = true}));
  cases.push_back(forward("avg_pool2d_nchw_ceil_exclude_pad", false, {2, 3, 6, 7},
                          {.kernel_size = {3, 3}, .strides = {2, 2},
                           .padding = Padding::explicit_padding, .explicit_padding = {1, 0, 1, 1},
                           .ceil_mode = true, .data_layout = nchw}));
  // ceil_mode windows reaching past the padded input: the divisor counts only its part inside.
  cases.push_back(forward("avg_pool2d_ceil_include_pad_overhang", false, {1, 1, 6, 6},
                          {.kernel_size = {3, 3}, .strides = {2, 2}, .ceil_mode = true,
                           .count_include_pad = true, .data_layout = nchw}));
  cases.push_back(forward("avg_pool2d_same_dilated", false, {2, 6, 5, 4},
                          {.kernel_size = {2, 3}, .strides = {2, 1}, .dilations = {1, 2},
                           .padding = Padding::same}));
  OpCase avg_empty = forward("avg_pool2d_empty_windows", false, {1, 1, 2, 1},
                             {.kernel_size = {2, 1}, .strides = {3, 1}, .dilations = {3, 1},
                              .padding = Padding::explicit_padding,
                              .explicit_padding = {2, 3, 0, 0}});
  avg_empty.expected = {{0, 0}};
  cases.push_back(avg_empty);
  cases.push_back(forward("avg_pool2d_large", false, {4, 16, 16, 8},
                          {.kernel_size = {2, 2}}));
  cases.push_back(forward("max_pool2d_empty_batch", true, {0, 4, 4, 3}, {.kernel_size = {2, 2}}));

  // ---- backward, hand-computed ----
  // Ties: the first maximal element of each window gets the gradient; windows overlap.
  OpCase ties = backward("max_pool2d_backward_ties", true, {1, 1, 1, 2}, {1, 1, 1, 3},
                         {.kernel_size = {1, 2}, .strides = {1, 1}, .data_layout = nchw});
  ties.inputs[0].values = {1, 10};
  ties.inputs[1].values = {2, 2, 1};
  ties.expected = {{1, 10, 0}};
  cases.push_back(ties);
  // NaN wins (the first NaN); a window of -inf routes to its first element.
  OpCase nan_bw = backward("max_pool2d_backward_nan", true, {1, 1, 1, 5}, {1, 1, 1, 6},
                           {.kernel_size = {1, 2}, .strides = {1, 1}, .data_layout = nchw});
  nan_bw.inputs[0].values = {1, 2, 4, 8, 16};
  nan_bw.inputs[1].values = {1, kNaN, 3, kNaN, 7, 0};
  // windows [1,NaN]->1, [NaN,3]->1, [3,NaN]->3, [NaN,7]->3, [7,0]->4.
  nan_bw.expected = {{0, 3, 0, 12, 16, 0}};
  cases.push_back(nan_bw);
  OpCase inf_bw = backward("max_pool2d_backward_neg_inf", true, {1, 1, 1, 1}, {1, 1, 1, 2},
                           {.kernel_size = {1, 2}, .data_layout = nchw});
  inf_bw.inputs[0].values = {3};
  inf_bw.inputs[1].values = {-kInf, -kInf};
  inf_bw.expected = {{3, 0}};
  cases.push_back(inf_bw);
  OpCase avg_bw = backward("avg_pool2d_backward_values", false, {1, 1, 2, 2}, {1, 1, 3, 3},
                           {.kernel_size = {2, 2}, .strides = {1, 1}, .data_layout = nchw});
  avg_bw.inputs[0].values = {4, 8, 12, 16};
  avg_bw.expected = {{1, 3, 2, 4, 10, 6, 3, 7, 4}};
  cases.push_back(avg_bw);

  // ---- backward, random ----
  cases.push_back(backward("max_pool2d_backward_nhwc_overlap", true, {2, 4, 4, 3}, {2, 7, 7, 3},
                           {.kernel_size = {3, 3}, .strides = {2, 2},
                            .padding = Padding::explicit_padding,
                            .explicit_padding = {1, 1, 1, 1}}));
  cases.push_back(backward("max_pool2d_backward_nchw_ceil", true, {1, 2, 4, 4}, {1, 2, 7, 8},
                           {.kernel_size = {2, 3}, .strides = {2, 2}, .ceil_mode = true,
                            .data_layout = nchw}));
  cases.push_back(backward("max_pool2d_backward_dilated_same", true, {1, 9, 9, 2}, {1, 9, 9, 2},
                           {.kernel_size = {3, 3}, .strides = {1, 1}, .dilations = {2, 2},
                            .padding = Padding::same}));
  cases.push_back(backward("avg_pool2d_backward_include_pad", false, {1, 3, 3, 2}, {1, 5, 5, 2},
                           {.kernel_size = {3, 3}, .strides = {2, 2},
                            .padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1},
                            .count_include_pad = true}));
  cases.push_back(backward("avg_pool2d_backward_nchw_ceil", false, {2, 3, 3, 4}, {2, 3, 6, 7},
                           {.kernel_size = {3, 3}, .strides = {2, 2},
                            .padding = Padding::explicit_padding, .explicit_padding = {1, 0, 1, 1},
                            .ceil_mode = true, .data_layout = nchw}));
  cases.push_back(backward("avg_pool2d_backward_overhang", false, {1, 1, 3, 3}, {1, 1, 6, 6},
                           {.kernel_size = {3, 3}, .strides = {2, 2}, .ceil_mode = true,
                            .count_include_pad = true, .data_layout = nchw}));
  cases.push_back(backward("avg_pool2d_backward_strided_gaps", false, {1, 2, 2, 1}, {1, 7, 7, 1},
                           {.kernel_size = {2, 2}, .strides = {3, 3}}));
}
