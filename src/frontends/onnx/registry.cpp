// The one converter table: (domain, op type, opset range) -> converter. Ranges follow the ONNX
// operator changelog: a new row starts where an op's semantics or signature changed (e.g.
// attributes that became inputs); versions that only added data types share a row.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "frontends/onnx/converters.h"
#include "tg/onnx.h"

namespace tg::onnx {
namespace {

constexpr int kMax = static_cast<int>(kMaxOpset);

const ConverterRow kTable[] = {
    // convert_elementwise.cpp (and direct op-API calls)
    {"", "Abs", 1, kMax, unary<&tg::abs>, ""},
    {"", "Neg", 1, kMax, unary<&tg::neg>, ""},
    {"", "Sign", 9, kMax, unary<&tg::sign>, ""},
    {"", "Exp", 1, kMax, unary<&tg::exp>, ""},
    {"", "Log", 1, kMax, unary<&tg::log>, ""},
    {"", "Sqrt", 1, kMax, unary<&tg::sqrt>, ""},
    {"", "Reciprocal", 1, kMax, unary<&tg::reciprocal>, ""},
    {"", "Sin", 7, kMax, unary<&tg::sin>, ""},
    {"", "Cos", 7, kMax, unary<&tg::cos>, ""},
    {"", "Tan", 7, kMax, unary<&tg::tan>, ""},
    {"", "Asin", 7, kMax, convert_asin, ""},
    {"", "Acos", 7, kMax, convert_acos, ""},
    {"", "Atan", 7, kMax, convert_atan, ""},
    {"", "Sinh", 9, kMax, convert_sinh, ""},
    {"", "Cosh", 9, kMax, convert_cosh, ""},
    {"", "Asinh", 9, kMax, convert_asinh, ""},
    {"", "Acosh", 9, kMax, convert_acosh, ""},
    {"", "Atanh", 9, kMax, convert_atanh, ""},
    {"", "Tanh", 1, kMax, unary<&tg::tanh>, ""},
    {"", "Sigmoid", 1, kMax, unary<&tg::sigmoid>, ""},
    {"", "Erf", 9, kMax, unary<&tg::erf>, ""},
    {"", "Floor", 1, kMax, unary<&tg::floor>, ""},
    {"", "Ceil", 1, kMax, unary<&tg::ceil>, ""},
    {"", "Round", 11, kMax, unary<&tg::round>, ""},
    {"", "IsNaN", 9, kMax, unary<&tg::is_nan>, ""},
    {"", "IsInf", 10, kMax, convert_is_inf, ""},
    {"", "Not", 1, kMax, unary<&tg::logical_not>, ""},
    {"", "Add", 7, kMax, binary<&tg::add>, ""},
    {"", "Sub", 7, kMax, binary<&tg::sub>, ""},
    {"", "Mul", 7, kMax, binary<&tg::mul>, ""},
    {"", "Div", 7, kMax, binary<&tg::div>, "integer division truncates toward zero"},
    {"", "Pow", 7, kMax, convert_pow, "integer bases computed in float64"},
    {"", "Mod", 10, kMax, convert_mod, ""},
    {"", "Equal", 7, kMax, binary<&tg::equal>, ""},
    {"", "Less", 7, kMax, binary<&tg::less>, ""},
    {"", "Greater", 7, kMax, binary<&tg::greater>, ""},
    {"", "LessOrEqual", 12, kMax, binary<&tg::less_equal>, ""},
    {"", "GreaterOrEqual", 12, kMax, binary<&tg::greater_equal>, ""},
    {"", "And", 7, kMax, binary<&tg::logical_and>, ""},
    {"", "Or", 7, kMax, binary<&tg::logical_or>, ""},
    {"", "Xor", 7, kMax, binary<&tg::logical_xor>, ""},
    {"", "Where", 9, kMax, convert_where, ""},
    {"", "Max", 8, kMax, convert_max, ""},
    {"", "Min", 8, kMax, convert_min, ""},
    {"", "Sum", 8, kMax, convert_sum, ""},
    {"", "Mean", 8, kMax, convert_mean, ""},
    {"", "Clip", 6, 10, convert_clip, ""},
    {"", "Clip", 11, kMax, convert_clip, ""},
    {"", "Cast", 6, kMax, convert_cast, "no string or 8/4-bit float types"},
    {"", "CastLike", 15, kMax, convert_cast_like, ""},
    {"", "Identity", 1, kMax, convert_identity, "tensors only"},
    {"", "Relu", 1, kMax, convert_relu, ""},
    {"", "LeakyRelu", 1, kMax, convert_leaky_relu, ""},
    {"", "PRelu", 7, kMax, convert_prelu, ""},
    {"", "Elu", 1, kMax, convert_elu, ""},
    {"", "Selu", 1, kMax, convert_selu, ""},
    {"", "Celu", 12, kMax, convert_celu, ""},
    {"", "ThresholdedRelu", 10, kMax, convert_thresholded_relu, ""},
    {"", "HardSigmoid", 1, kMax, convert_hard_sigmoid, ""},
    {"", "HardSwish", 14, kMax, convert_hard_swish, ""},
    {"", "Shrink", 9, kMax, convert_shrink, ""},
    {"", "Softplus", 1, kMax, convert_softplus, ""},
    {"", "Softsign", 1, kMax, convert_softsign, ""},
    {"", "Mish", 18, kMax, convert_mish, ""},
    {"", "Swish", 24, kMax, convert_swish, ""},
    {"", "Gelu", 20, kMax, convert_gelu, ""},
    {"", "SwiGLU", 28, kMax, convert_swiglu, ""},
    {"", "BitShift", 11, kMax, convert_bit_shift, "uint8 only"},
    {"", "BitwiseAnd", 18, kMax, convert_bitwise_and, "by bit decomposition"},
    {"", "BitwiseOr", 18, kMax, convert_bitwise_or, "by bit decomposition"},
    {"", "BitwiseXor", 18, kMax, convert_bitwise_xor, "by bit decomposition"},
    {"", "BitwiseNot", 18, kMax, convert_bitwise_not, ""},
    // convert_shape.cpp
    {"", "Reshape", 1, 4, convert_reshape, ""},
    {"", "Reshape", 5, kMax, convert_reshape, ""},
    {"", "Flatten", 1, kMax, convert_flatten, ""},
    {"", "Transpose", 1, kMax, convert_transpose, ""},
    {"", "Squeeze", 1, 12, convert_squeeze, ""},
    {"", "Squeeze", 13, kMax, convert_squeeze, ""},
    {"", "Unsqueeze", 1, 12, convert_unsqueeze, ""},
    {"", "Unsqueeze", 13, kMax, convert_unsqueeze, ""},
    {"", "Concat", 4, kMax, convert_concat, ""},
    {"", "Split", 2, 12, convert_split, ""},
    {"", "Split", 13, 17, convert_split, ""},
    {"", "Split", 18, kMax, convert_split, ""},
    {"", "Slice", 1, 9, convert_slice, ""},
    {"", "Slice", 10, kMax, convert_slice, ""},
    {"", "Expand", 8, kMax, convert_expand, ""},
    {"", "Tile", 6, kMax, convert_tile, ""},
    {"", "Pad", 1, 10, convert_pad, ""},
    {"", "Pad", 11, 17, convert_pad, ""},
    {"", "Pad", 18, kMax, convert_pad, ""},
    {"", "Shape", 1, 14, convert_shape, "static dims only"},
    {"", "Shape", 15, kMax, convert_shape, "static dims only"},
    {"", "Size", 1, kMax, convert_size, "static dims only"},
    {"", "DepthToSpace", 1, kMax, convert_depth_to_space, ""},
    {"", "SpaceToDepth", 1, kMax, convert_space_to_depth, ""},
    {"", "Compress", 9, kMax, convert_compress, "condition known at import"},
    {"", "CenterCropPad", 18, kMax, convert_center_crop_pad, ""},
    // convert_generator.cpp
    {"", "Constant", 1, kMax, convert_constant, "no string or sparse values"},
    {"", "ConstantOfShape", 9, kMax, convert_constant_of_shape, ""},
    {"", "Range", 11, kMax, convert_range, "bounds known at import"},
    {"", "EyeLike", 9, kMax, convert_eye_like, ""},
    {"", "Trilu", 14, kMax, convert_trilu, ""},
    {"", "OneHot", 9, kMax, convert_one_hot, "depth known at import"},
    {"", "HannWindow", 17, kMax, convert_hann_window, "size known at import"},
    {"", "HammingWindow", 17, kMax, convert_hamming_window, "size known at import"},
    {"", "BlackmanWindow", 17, kMax, convert_blackman_window, "size known at import"},
    {"", "Optional", 15, kMax, convert_optional, "of a tensor"},
    {"", "OptionalHasElement", 15, kMax, convert_optional_has_element, "tensor or no input"},
    {"", "OptionalGetElement", 15, kMax, convert_optional_get_element, "tensor input"},
    // convert_gather.cpp
    {"", "Gather", 1, kMax, convert_gather, ""},
    {"", "GatherElements", 11, kMax, convert_gather_elements, ""},
    {"", "GatherND", 11, kMax, convert_gather_nd, ""},
    {"", "ScatterND", 11, kMax, convert_scatter_nd, ""},
    {"", "ScatterElements", 11, kMax, convert_scatter_elements, ""},
    {"", "Scatter", 9, kMax, convert_scatter_elements, "deprecated alias of ScatterElements"},
    {"", "ReverseSequence", 10, kMax, convert_reverse_sequence, ""},
    {"", "TensorScatter", 24, kMax, convert_tensor_scatter, ""},
    // convert_reduce.cpp
    {"", "ReduceSum", 1, 12, convert_reduce_sum, ""},
    {"", "ReduceSum", 13, kMax, convert_reduce_sum, ""},
    {"", "ReduceMean", 1, 17, convert_reduce_mean, ""},
    {"", "ReduceMean", 18, kMax, convert_reduce_mean, ""},
    {"", "ReduceMax", 1, 17, convert_reduce_max, ""},
    {"", "ReduceMax", 18, kMax, convert_reduce_max, ""},
    {"", "ReduceMin", 1, 17, convert_reduce_min, ""},
    {"", "ReduceMin", 18, kMax, convert_reduce_min, ""},
    {"", "ReduceProd", 1, 17, convert_reduce_prod, ""},
    {"", "ReduceProd", 18, kMax, convert_reduce_prod, ""},
    {"", "ReduceL1", 1, 17, convert_reduce_l1, ""},
    {"", "ReduceL1", 18, kMax, convert_reduce_l1, ""},
    {"", "ReduceL2", 1, 17, convert_reduce_l2, ""},
    {"", "ReduceL2", 18, kMax, convert_reduce_l2, ""},
    {"", "ReduceLogSum", 1, 17, convert_reduce_log_sum, ""},
    {"", "ReduceLogSum", 18, kMax, convert_reduce_log_sum, ""},
    {"", "ReduceLogSumExp", 1, 17, convert_reduce_log_sum_exp, ""},
    {"", "ReduceLogSumExp", 18, kMax, convert_reduce_log_sum_exp, ""},
    {"", "ReduceSumSquare", 1, 17, convert_reduce_sum_square, ""},
    {"", "ReduceSumSquare", 18, kMax, convert_reduce_sum_square, ""},
    {"", "ArgMax", 1, kMax, convert_arg_max, ""},
    {"", "ArgMin", 1, kMax, convert_arg_min, ""},
    // convert_math.cpp
    {"", "MatMul", 1, kMax, convert_matmul, ""},
    {"", "Gemm", 7, kMax, convert_gemm, ""},
    {"", "CumSum", 11, kMax, convert_cum_sum, "axis known at import"},
    {"", "CumProd", 26, kMax, convert_cum_prod, "axis known at import"},
    {"", "DFT", 17, 19, convert_dft, "matrix products; dft_length known at import"},
    {"", "DFT", 20, kMax, convert_dft, "matrix products; dft_length and axis known at import"},
    {"", "Einsum", 12, kMax, convert_einsum, "broadcast product then sum"},
    {"", "TopK", 1, 9, convert_top_k, "O(n^2) in the axis length"},
    {"", "TopK", 10, kMax, convert_top_k, "O(n^2) in the axis length; k known at import"},
    // convert_nn.cpp
    {"", "Softmax", 1, 12, convert_softmax, ""},
    {"", "Softmax", 13, kMax, convert_softmax, ""},
    {"", "LogSoftmax", 1, 12, convert_log_softmax, ""},
    {"", "LogSoftmax", 13, kMax, convert_log_softmax, ""},
    {"", "Hardmax", 1, 12, convert_hardmax, ""},
    {"", "Hardmax", 13, kMax, convert_hardmax, ""},
    {"", "BatchNormalization", 7, 13, convert_batch_norm, "inference"},
    {"", "BatchNormalization", 14, kMax, convert_batch_norm, ""},
    {"", "InstanceNormalization", 6, kMax, convert_instance_norm, ""},
    {"", "LayerNormalization", 17, kMax, convert_layer_norm, ""},
    {"", "RMSNormalization", 23, kMax, convert_rms_norm, ""},
    {"", "GroupNormalization", 18, 20, convert_group_norm, ""},
    {"", "GroupNormalization", 21, kMax, convert_group_norm, ""},
    {"", "LpNormalization", 1, kMax, convert_lp_norm, ""},
    {"", "MeanVarianceNormalization", 9, kMax, convert_mvn, ""},
    {"", "LRN", 1, kMax, convert_lrn, ""},
    {"", "Dropout", 1, 11, convert_dropout, "inference (or ratio 0) only"},
    {"", "Dropout", 12, kMax, convert_dropout, "inference (or ratio 0) only"},
    // convert_loss.cpp
    {"", "NegativeLogLikelihoodLoss", 12, kMax, convert_nll_loss, ""},
    {"", "SoftmaxCrossEntropyLoss", 12, kMax, convert_softmax_cross_entropy, ""},
    // convert_attention.cpp
    {"", "Attention", 23, kMax, convert_attention, ""},
    {"", "RotaryEmbedding", 23, kMax, convert_rotary_embedding, ""},
    {"", "LinearAttention", 27, kMax, convert_linear_attention, "unrolled over the sequence"},
    {"ai.onnx.preview", "FlexAttention", 1, 1, convert_flex_attention, ""},
    // convert_conv.cpp
    {"", "Conv", 1, kMax, convert_conv, "1-d, 2-d and 3-d"},
    {"", "ConvTranspose", 1, kMax, convert_conv_transpose, "1-d, 2-d and 3-d"},
    {"", "MaxPool", 1, kMax, convert_max_pool, "1-d, 2-d and 3-d; Indices for 1-d and 2-d without ceil_mode or SAME"},
    {"", "AveragePool", 1, kMax, convert_average_pool, "1-d, 2-d and 3-d"},
    {"", "LpPool", 2, kMax, convert_lp_pool, "1-d, 2-d and 3-d"},
    {"", "GlobalAveragePool", 1, kMax, convert_global_average_pool, ""},
    {"", "GlobalMaxPool", 1, kMax, convert_global_max_pool, ""},
    {"", "GlobalLpPool", 2, kMax, convert_global_lp_pool, ""},
    {"", "CausalConvWithState", 27, kMax, convert_causal_conv_with_state, ""},
    // convert_control.cpp
    {"", "If", 1, kMax, convert_if, "tensor branches only"},
    {"", "Loop", 1, kMax, convert_loop, "unrolled when trip count and conditions are known at import, else while_loop"},
    {"", "Scan", 9, kMax, convert_scan, "unrolled over the static sequence length"},
    // convert_sample.cpp
    {"", "GridSample", 16, 19, convert_grid_sample, "2-d and 3-d"},
    {"", "GridSample", 20, kMax, convert_grid_sample, "2-d and 3-d"},
    {"", "AffineGrid", 20, kMax, convert_affine_grid, "size known at import"},
    // convert_quant.cpp
    {"", "QuantizeLinear", 10, 12, convert_quantize_linear, "uint8/int8"},
    {"", "QuantizeLinear", 13, kMax, convert_quantize_linear, "uint8/int8"},
    {"", "DequantizeLinear", 10, 12, convert_dequantize_linear, "uint8/int8/int32"},
    {"", "DequantizeLinear", 13, kMax, convert_dequantize_linear, "uint8/int8/int32"},
    {"", "DynamicQuantizeLinear", 11, kMax, convert_dynamic_quantize_linear, ""},
    {"", "MatMulInteger", 10, kMax, convert_matmul_integer, ""},
    {"", "QLinearMatMul", 10, kMax, convert_qlinear_matmul, "uint8/int8"},
    {"", "ConvInteger", 10, kMax, convert_conv_integer, "1-d and 2-d"},
    {"", "QLinearConv", 10, kMax, convert_qlinear_conv, "1-d and 2-d; uint8/int8"},
    // convert_rnn.cpp
    {"", "RNN", 7, 13, convert_rnn, "unrolled; sequence_lens forward only"},
    {"", "RNN", 14, kMax, convert_rnn, "unrolled; sequence_lens forward only"},
    {"", "GRU", 7, 13, convert_gru, "unrolled; sequence_lens forward only"},
    {"", "GRU", 14, kMax, convert_gru, "unrolled; sequence_lens forward only"},
    {"", "LSTM", 7, 13, convert_lstm, "unrolled; sequence_lens forward only; no input_forget"},
    {"", "LSTM", 14, kMax, convert_lstm, "unrolled; sequence_lens forward only; no input_forget"},
    // convert_unpool.cpp
    {"", "MaxUnpool", 9, kMax, convert_max_unpool, ""},
    {"", "Col2Im", 18, kMax, convert_col2im, "shapes known at import"},
    // convert_training.cpp
    {"ai.onnx.preview.training", "Adagrad", 1, 1, convert_adagrad, ""},
    {"ai.onnx.preview.training", "Momentum", 1, 1, convert_momentum, ""},
    {"ai.onnx.preview.training", "Adam", 1, 1, convert_adam, ""},
    // convert_resize.cpp
    {"", "Resize", 10, 10, convert_resize, "scales known at import"},
    {"", "Resize", 11, 17, convert_resize, "scales or sizes known at import"},
    {"", "Resize", 18, kMax, convert_resize, "scales or sizes known at import"},
    {"", "Upsample", 7, 9, convert_upsample, ""},
};

}  // namespace

std::span<const ConverterRow> converter_table() { return kTable; }

const ConverterRow* find_converter(std::string_view domain, std::string_view op_type,
                                   int64_t opset, bool* known) {
  *known = false;
  for (const ConverterRow& r : kTable) {
    if (r.op_type != op_type || r.domain != domain) continue;
    *known = true;
    if (opset >= r.since && opset <= r.until) return &r;
  }
  return nullptr;
}

std::vector<OpSupport> supported_ops() {
  std::vector<OpSupport> out;
  for (const ConverterRow& r : kTable) {
    out.push_back({r.domain, r.op_type, r.since, r.until, r.notes});
  }
  std::sort(out.begin(), out.end(), [](const OpSupport& a, const OpSupport& b) {
    return std::tie(a.domain, a.op_type, a.since_version) <
           std::tie(b.domain, b.op_type, b.since_version);
  });
  return out;
}

std::string supported_ops_markdown() {
  // One line per (domain, op type): its opset ranges and notes.
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> rows;
  for (const OpSupport& s : supported_ops()) {
    auto& [ranges, notes] = rows[{s.domain, s.op_type}];
    std::string range = s.until_version == kMaxOpset
                            ? fmt::format("{}+", s.since_version)
                            : fmt::format("{}-{}", s.since_version, s.until_version);
    ranges += (ranges.empty() ? "" : ", ") + range;
    if (!s.notes.empty() && notes.find(s.notes) == std::string::npos) {
      notes += (notes.empty() ? "" : "; ") + s.notes;
    }
  }
  std::string md = "| Op | Opsets | Notes |\n|---|---|---|\n";
  for (const auto& [key, val] : rows) {
    std::string name = key.first.empty() ? key.second : key.first + ":" + key.second;
    md += fmt::format("| {} | {} | {} |\n", name, val.first, val.second);
  }
  return md;
}

}  // namespace tg::onnx
