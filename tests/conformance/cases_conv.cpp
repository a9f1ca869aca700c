// Conformance cases of the conv family: conv2d, conv2d_backward_data, conv2d_backward_weights and
// the conv_transpose2d composite, in both data layouts and both weights layouts, with strides,
// dilations, groups (depthwise too), symmetric and asymmetric padding (same, same_lower,
// explicit), input rows no window covers, and empty batches; every floating dtype.
#include "conformance/harness.h"

namespace {

using tg::Conv2dDesc;
using tg::DType;
using tg::Layout;
using tg::Padding;
using tg::Shape;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;
using tg::conformance::Tolerance;

// Sums of tens to hundreds of products; cuDNN may pick FFT or Winograd algorithms.
const std::map<DType, Tolerance> kTol = {{DType::f32, {1e-4, 1e-4}},
                                         {DType::f16, {5e-3, 2e-3}},
                                         {DType::bf16, {2e-2, 1e-2}}};

OpCase two_inputs(std::string name, Shape a, Shape b, tg::conformance::BuildFn build) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(a)}, InputSpec{std::move(b)}};
  c.build = std::move(build);
  c.tolerance = kTol;
  return c;
}

OpCase conv(std::string name, Shape x, Shape w, Conv2dDesc d) {
  return two_inputs(std::move(name), std::move(x), std::move(w),
                    [d](tg::Graph&, const std::vector<tg::Tensor>& in) {
                      return std::vector<tg::Tensor>{tg::conv2d(in[0], in[1], d)};
                    });
}

OpCase backward_data(std::string name, Shape dy, Shape w, Shape x_shape, Conv2dDesc d) {
  return two_inputs(std::move(name), std::move(dy), std::move(w),
                    [d, x_shape](tg::Graph&, const std::vector<tg::Tensor>& in) {
                      return std::vector<tg::Tensor>{tg::conv2d_backward_data(in[0], in[1], x_shape, d)};
                    });
}

OpCase backward_weights(std::string name, Shape dy, Shape x, Shape w_shape, Conv2dDesc d) {
  return two_inputs(std::move(name), std::move(dy), std::move(x),
                    [d, w_shape](tg::Graph&, const std::vector<tg::Tensor>& in) {
                      return std::vector<tg::Tensor>{
                          tg::conv2d_backward_weights(in[0], in[1], w_shape, d)};
                    });
}

OpCase transposed(std::string name, Shape x, Shape w, tg::ConvTranspose2dDesc d) {
  return two_inputs(std::move(name), std::move(x), std::move(w),
                    [d](tg::Graph&, const std::vector<tg::Tensor>& in) {
                      return std::vector<tg::Tensor>{tg::conv_transpose2d(in[0], in[1], d)};
                    });
}

constexpr Layout nhwc = Layout::nhwc, nchw = Layout::nchw, hwio = Layout::hwio, oihw = Layout::oihw,
                 ohwi = Layout::ohwi;

}  // namespace

TG_CONFORMANCE_CASES(conv) {
  // Hand-computed: y[i, j] = x[i, j] + x[i + 1, j + 1].
  OpCase values = conv("conv2d_values", {1, 3, 3, 1}, {2, 2, 1, 1}, {});
  values.inputs[0].values = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  values.inputs[1].values = {1, 0, 0, 1};
  values.expected = {{6, 8, 12, 14}};
  cases.push_back(values);

  // ---- forward ----
  cases.push_back(conv("conv2d_nhwc_hwio_valid", {2, 7, 6, 3}, {3, 3, 3, 4}, {}));
  cases.push_back(conv("conv2d_nchw_oihw_pad1", {2, 3, 7, 6}, {4, 3, 3, 3},
                       {.padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1},
                        .data_layout = nchw, .weights_layout = oihw}));
  // same with stride 2: W needs pads 0/1 (asymmetric).
  cases.push_back(conv("conv2d_nhwc_oihw_same_stride2", {2, 9, 8, 3}, {5, 3, 3, 3},
                       {.strides = {2, 2}, .padding = Padding::same, .data_layout = nhwc,
                        .weights_layout = oihw}));
  // same_lower with an even window: H and W pads 1/0.
  cases.push_back(conv("conv2d_nchw_hwio_same_lower", {1, 4, 9, 8}, {2, 2, 4, 2},
                       {.padding = Padding::same_lower, .data_layout = nchw, .weights_layout = hwio}));
  cases.push_back(conv("conv2d_dilated_asymmetric", {1, 10, 9, 2}, {3, 2, 2, 3},
                       {.strides = {1, 2}, .dilations = {2, 1}, .padding = Padding::explicit_padding,
                        .explicit_padding = {2, 0, 1, 3}}));
  cases.push_back(conv("conv2d_groups", {2, 6, 6, 4}, {3, 3, 2, 6},
                       {.padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1},
                        .groups = 2}));
  cases.push_back(conv("conv2d_groups_nchw", {1, 6, 5, 5}, {4, 3, 3, 3},
                       {.groups = 2, .data_layout = nchw, .weights_layout = oihw}));
  cases.push_back(conv("conv2d_depthwise", {1, 5, 5, 3}, {3, 3, 1, 3},
                       {.padding = Padding::same, .groups = 3}));
  cases.push_back(conv("conv2d_1x1_stride2", {2, 8, 8, 16}, {1, 1, 16, 8}, {.strides = {2, 2}}));
  cases.push_back(conv("conv2d_wide", {2, 14, 14, 32}, {3, 3, 32, 64},
                       {.padding = Padding::explicit_padding, .explicit_padding = {1, 1, 1, 1}}));
  cases.push_back(conv("conv2d_large_pad", {1, 3, 4, 2}, {2, 2, 2, 2},
                       {.padding = Padding::explicit_padding, .explicit_padding = {3, 3, 0, 2}}));
  cases.push_back(conv("conv2d_empty_batch", {0, 5, 5, 3}, {3, 3, 3, 2}, {}));
  // OHWI weights (cuDNN's KRSC: read in place with NHWC data on CUDA), with both data layouts.
  cases.push_back(conv("conv2d_nhwc_ohwi_same_stride2", {2, 9, 8, 3}, {5, 3, 3, 3},
                       {.strides = {2, 2}, .padding = Padding::same, .data_layout = nhwc,
                        .weights_layout = ohwi}));
  cases.push_back(conv("conv2d_nchw_ohwi_groups", {1, 6, 5, 5}, {4, 3, 2, 3},
                       {.padding = Padding::explicit_padding, .explicit_padding = {1, 0, 0, 1},
                        .groups = 2, .data_layout = nchw, .weights_layout = ohwi}));
  cases.push_back(conv("conv2d_nhwc_ohwi_depthwise", {1, 5, 5, 3}, {3, 3, 3, 1},
                       {.padding = Padding::same, .groups = 3, .weights_layout = ohwi}));

  // ---- backward data ----
  cases.push_back(backward_data("conv2d_backward_data_same_stride2", {2, 5, 4, 5}, {3, 3, 3, 5},
                                {2, 9, 8, 3}, {.strides = {2, 2}, .padding = Padding::same}));
  // The last input row and column lie in no window: their gradient is 0.
  cases.push_back(backward_data("conv2d_backward_data_uncovered", {1, 3, 2, 2}, {3, 2, 3, 3},
                                {1, 2, 6, 6},
                                {.strides = {2, 2}, .data_layout = nchw, .weights_layout = oihw}));
  cases.push_back(backward_data("conv2d_backward_data_groups_dilated", {1, 6, 6, 6}, {2, 2, 2, 6},
                                {1, 7, 7, 4},
                                {.dilations = {2, 2}, .padding = Padding::explicit_padding,
                                 .explicit_padding = {1, 0, 0, 1}, .groups = 2}));
  cases.push_back(backward_data("conv2d_backward_data_same_lower", {1, 4, 5, 3}, {2, 3, 3, 4},
                                {1, 3, 5, 6},
                                {.strides = {1, 2}, .padding = Padding::same_lower,
                                 .data_layout = nchw, .weights_layout = hwio}));
  cases.push_back(backward_data("conv2d_backward_data_nhwc_ohwi", {2, 5, 4, 5}, {5, 3, 3, 3},
                                {2, 9, 8, 3},
                                {.strides = {2, 2}, .padding = Padding::same, .weights_layout = ohwi}));
  OpCase bd_empty = backward_data("conv2d_backward_data_empty_batch", {0, 3, 3, 2}, {3, 3, 3, 2},
                                  {0, 5, 5, 3}, {});
  cases.push_back(bd_empty);

  // ---- backward weights ----
  cases.push_back(backward_weights("conv2d_backward_weights_same_stride2", {2, 5, 4, 5},
                                   {2, 9, 8, 3}, {3, 3, 3, 5},
                                   {.strides = {2, 2}, .padding = Padding::same}));
  cases.push_back(backward_weights("conv2d_backward_weights_nchw_oihw", {2, 4, 7, 6}, {2, 3, 7, 6},
                                   {4, 3, 3, 3},
                                   {.padding = Padding::explicit_padding,
                                    .explicit_padding = {1, 1, 1, 1}, .data_layout = nchw,
                                    .weights_layout = oihw}));
  cases.push_back(backward_weights("conv2d_backward_weights_dilated_asymmetric", {1, 8, 6, 3},
                                   {1, 10, 9, 2}, {3, 2, 2, 3},
                                   {.strides = {1, 2}, .dilations = {2, 1},
                                    .padding = Padding::explicit_padding,
                                    .explicit_padding = {2, 0, 1, 3}}));
  cases.push_back(backward_weights("conv2d_backward_weights_depthwise", {2, 5, 5, 3}, {2, 5, 5, 3},
                                   {3, 3, 1, 3}, {.padding = Padding::same, .groups = 3}));
  cases.push_back(backward_weights("conv2d_backward_weights_groups_nchw_hwio", {1, 4, 3, 3},
                                   {1, 6, 5, 5}, {3, 3, 3, 4},
                                   {.groups = 2, .data_layout = nchw, .weights_layout = hwio}));
  cases.push_back(backward_weights("conv2d_backward_weights_nhwc_ohwi_groups", {1, 5, 5, 4},
                                   {1, 5, 5, 6}, {4, 3, 3, 3},
                                   {.padding = Padding::same, .groups = 2, .weights_layout = ohwi}));
  OpCase bw_empty = backward_weights("conv2d_backward_weights_empty_batch", {0, 3, 3, 2},
                                     {0, 5, 5, 3}, {3, 3, 3, 2}, {});
  bw_empty.expected = {std::vector<double>(54, 0.0)};  // an empty sum
  cases.push_back(bw_empty);

  // ---- conv_transpose2d (conv2d_backward_data in the graph) ----
  cases.push_back(transposed("conv_transpose2d_output_padding", {1, 4, 4, 3}, {3, 3, 2, 3},
                             {.conv = {.strides = {2, 2}, .padding = Padding::explicit_padding,
                                       .explicit_padding = {1, 1, 1, 1}},
                              .output_padding = {1, 1}}));
  cases.push_back(transposed("conv_transpose2d_same_nchw", {1, 3, 3, 4}, {3, 2, 2, 2},
                             {.conv = {.strides = {2, 2}, .padding = Padding::same,
                                       .data_layout = nchw, .weights_layout = oihw}}));
}
