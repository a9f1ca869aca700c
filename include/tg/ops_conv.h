// Convolution and pooling ops (NHWC or NCHW data, HWIO, OIHW or OHWI weights). Part of the op API of
// include/tg/ops.h (included from there); semantics in detail: docs/ops.md (conv, pool).
#pragma once
#include <cstdint>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

/// Memory layouts. Data: nhwc ([N, H, W, C], channels last) or nchw ([N, C, H, W]). Weights:
/// hwio ([kH, kW, C_in/groups, C_out], TensorFlow), oihw ([C_out, C_in/groups, kH, kW],
/// PyTorch/ONNX) or ohwi ([C_out, kH, kW, C_in/groups]: cuDNN's KRSC filters for NHWC data, the
/// memory order of PyTorch's channels_last weights; the CUDA backend reads it without a permute).
enum class Layout { nhwc, nchw, hwio, oihw, ohwi };

/// How the spatial padding of conv and pooling is chosen.
///  - explicit_padding: the `explicit_padding` field, {top, bottom, left, right};
///  - valid: no padding;
///  - same: output size ceil(in / stride); the total padding
///    max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) is split with the extra element at
///    the end (bottom/right), as TensorFlow SAME and ONNX SAME_UPPER;
///  - same_lower: the same total with the extra element at the beginning (ONNX SAME_LOWER).
enum class Padding { explicit_padding, valid, same, same_lower };

/// 2-D convolution (cross-correlation, as every framework computes it), PyTorch's Conv2d and
/// ONNX Conv semantics. Output spatial size per dim:
/// floor((in + pad_before + pad_after - dilation * (k - 1) - 1) / stride) + 1.
struct Conv2dDesc {
  std::vector<int64_t> strides = {1, 1};    ///< {stride_h, stride_w}, each >= 1
  std::vector<int64_t> dilations = {1, 1};  ///< {dilation_h, dilation_w}, each >= 1
  Padding padding = Padding::valid;
  std::vector<int64_t> explicit_padding = {0, 0, 0, 0};  ///< {top, bottom, left, right}, >= 0
  int64_t groups = 1;  ///< C_in and C_out divisible by groups; groups == C_in is depthwise
  Layout data_layout = Layout::nhwc;     ///< nhwc or nchw (x, y and their gradients)
  Layout weights_layout = Layout::hwio;  ///< hwio, oihw or ohwi
};

/// y = conv2d(x, w): x [N, H, W, C_in] (nhwc) or [N, C_in, H, W] (nchw); w [kH, kW, C_in/groups,
/// C_out] (hwio), [C_out, C_in/groups, kH, kW] (oihw) or [C_out, kH, kW, C_in/groups] (ohwi);
/// y [N, H_out, W_out, C_out] (or nchw).
/// x and w share one floating dtype (f32 runs on oneDNN; f16/bf16 computed in f32; f64 on a plain
/// reference loop). Dims may be -1 (dynamic) except the weights' and the channel dims.
/// Errors (at build time, tg::Error naming "[conv2d]" and both shapes): rank != 4, channel
/// mismatch or channels not divisible by groups (shape_mismatch), different or non-floating
/// dtypes (dtype_mismatch), bad strides/dilations/padding/groups/layouts or a window larger than
/// the padded input (invalid_argument).
TG_API Tensor conv2d(Tensor x, Tensor w, Conv2dDesc desc = {});

/// The gradient of conv2d with respect to its input (the transposed convolution): dy has
/// conv2d's output shape, w is the forward weights, `input_shape` is the forward input's shape
/// in desc.data_layout (a -1 batch dim is taken from dy; a -1 spatial dim is recovered from dy's
/// when that dim's stride is 1, and is an error when the stride is larger and dy's dim is known,
/// since the input size is then ambiguous). Returns dx of input_shape.
/// Errors "[conv2d_backward_data]" as conv2d, plus an input_shape whose forward output shape is
/// not dy's (shape_mismatch).
TG_API Tensor conv2d_backward_data(Tensor dy, Tensor w, Shape input_shape, Conv2dDesc desc = {});

/// The gradient of conv2d with respect to its weights: dy has conv2d's output shape, x is the
/// forward input, `weights_shape` the forward weights' shape in desc.weights_layout. Returns dw.
/// Errors "[conv2d_backward_weights]" as conv2d_backward_data.
TG_API Tensor conv2d_backward_weights(Tensor dy, Tensor x, Shape weights_shape, Conv2dDesc desc = {});

/// Transposed convolution (PyTorch ConvTranspose2d, ONNX ConvTranspose): the adjoint of a conv2d
/// whose weights are `w` in desc.weights_layout, where the forward conv's C_out is this op's
/// input channels: w is [kH, kW, C_out/groups, C_in] (hwio) or [C_in, C_out/groups, kH, kW]
/// (oihw, exactly PyTorch's ConvTranspose2d weight). Output spatial size per dim:
/// (in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + output_padding + 1.
/// Padding::same/same_lower give out = in * stride (padding split as ONNX auto_pad).
struct ConvTranspose2dDesc {
  Conv2dDesc conv = {};
  std::vector<int64_t> output_padding = {0, 0};  ///< each in [0, max(stride, dilation))
};
TG_API Tensor conv_transpose2d(Tensor x, Tensor w, ConvTranspose2dDesc desc = {});

/// 2-D pooling window (PyTorch MaxPool2d/AvgPool2d, ONNX MaxPool/AveragePool).
/// Output spatial size per dim: floor_or_ceil((in + pad_before + pad_after - dilation*(k-1) - 1)
/// / stride) + 1; with ceil_mode the last window must start inside the input or the top/left
/// padding (else it is dropped, as PyTorch and ONNX do).
struct Pool2dDesc {
  std::vector<int64_t> kernel_size = {2, 2};  ///< {kH, kW}, each >= 1
  std::vector<int64_t> strides = {};          ///< {stride_h, stride_w}; empty = kernel_size
  std::vector<int64_t> dilations = {1, 1};
  Padding padding = Padding::valid;
  std::vector<int64_t> explicit_padding = {0, 0, 0, 0};  ///< {top, bottom, left, right}
  bool ceil_mode = false;
  /// avg only: divide by the whole window clipped to the padded input (true) or by the number
  /// of input elements in it (false, also what windows clipped by ceil_mode use).
  bool count_include_pad = false;
  Layout data_layout = Layout::nhwc;  ///< nhwc or nchw
};
/// Maximum over each window; padding never wins (it counts as -inf); NaN propagates. Any numeric
/// dtype except bool (f32 on oneDNN). Errors "[max_pool2d]": rank != 4 (shape_mismatch), a bool
/// dtype (dtype_mismatch), bad window/strides/padding (a pad >= the dilated window included) or
/// a window larger than the padded input (invalid_argument).
TG_API Tensor max_pool2d(Tensor x, Pool2dDesc desc = {});
/// Mean over each window (floating dtypes; others raise dtype_mismatch). Errors "[avg_pool2d]"
/// as max_pool2d.
TG_API Tensor avg_pool2d(Tensor x, Pool2dDesc desc = {});
/// Gradient of max_pool2d: routes each dy element to the first maximal element of its window in
/// x (row-major within the window); overlapping windows accumulate. Returns dx with x's shape.
TG_API Tensor max_pool2d_backward(Tensor dy, Tensor x, Pool2dDesc desc = {});
/// Gradient of avg_pool2d: spreads each dy element evenly over its window's divisor. `x` gives
/// the forward input's shape (its values are not read). Returns dx with x's shape.
TG_API Tensor avg_pool2d_backward(Tensor dy, Tensor x, Pool2dDesc desc = {});
/// Mean over H and W: [N, H, W, C] -> [N, C] (nhwc) or [N, C, H, W] -> [N, C] (nchw); with
/// keep_dims the reduced dims stay as 1. Floating dtypes. Errors "[global_avg_pool2d]".
TG_API Tensor global_avg_pool2d(Tensor x, Layout data_layout = Layout::nhwc, bool keep_dims = false);

}  // namespace tg
