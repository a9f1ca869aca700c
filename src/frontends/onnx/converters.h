// Declarations of the converters, one group per family file (convert_<family>.cpp); the table
// that maps (op type, opset range) to them is registry.cpp.
#pragma once
#include <vector>

#include "frontends/onnx/converter.h"

namespace tg::onnx {

#define TG_ONNX_CONVERTER(name) std::vector<Tensor> convert_##name(NodeContext& ctx)

// convert_elementwise.cpp
TG_ONNX_CONVERTER(acos);
TG_ONNX_CONVERTER(asin);
TG_ONNX_CONVERTER(atan);
TG_ONNX_CONVERTER(sinh);
TG_ONNX_CONVERTER(cosh);
TG_ONNX_CONVERTER(asinh);
TG_ONNX_CONVERTER(acosh);
TG_ONNX_CONVERTER(atanh);
TG_ONNX_CONVERTER(softplus);
TG_ONNX_CONVERTER(softsign);
TG_ONNX_CONVERTER(relu);
TG_ONNX_CONVERTER(leaky_relu);
TG_ONNX_CONVERTER(elu);
TG_ONNX_CONVERTER(selu);
TG_ONNX_CONVERTER(celu);
TG_ONNX_CONVERTER(thresholded_relu);
TG_ONNX_CONVERTER(hard_sigmoid);
TG_ONNX_CONVERTER(hard_swish);
TG_ONNX_CONVERTER(shrink);
TG_ONNX_CONVERTER(mish);
TG_ONNX_CONVERTER(swish);
TG_ONNX_CONVERTER(gelu);
TG_ONNX_CONVERTER(prelu);
TG_ONNX_CONVERTER(is_inf);
TG_ONNX_CONVERTER(pow);
TG_ONNX_CONVERTER(mod);
TG_ONNX_CONVERTER(clip);
TG_ONNX_CONVERTER(cast);
TG_ONNX_CONVERTER(cast_like);
TG_ONNX_CONVERTER(identity);
TG_ONNX_CONVERTER(where);
TG_ONNX_CONVERTER(sum);
TG_ONNX_CONVERTER(mean);
TG_ONNX_CONVERTER(max);
TG_ONNX_CONVERTER(min);
TG_ONNX_CONVERTER(swiglu);
TG_ONNX_CONVERTER(bit_shift);
TG_ONNX_CONVERTER(bitwise_and);
TG_ONNX_CONVERTER(bitwise_or);
TG_ONNX_CONVERTER(bitwise_xor);
TG_ONNX_CONVERTER(bitwise_not);

// convert_shape.cpp
TG_ONNX_CONVERTER(reshape);
TG_ONNX_CONVERTER(flatten);
TG_ONNX_CONVERTER(transpose);
TG_ONNX_CONVERTER(squeeze);
TG_ONNX_CONVERTER(unsqueeze);
TG_ONNX_CONVERTER(concat);
TG_ONNX_CONVERTER(split);
TG_ONNX_CONVERTER(slice);
TG_ONNX_CONVERTER(expand);
TG_ONNX_CONVERTER(tile);
TG_ONNX_CONVERTER(pad);
TG_ONNX_CONVERTER(shape);
TG_ONNX_CONVERTER(size);
TG_ONNX_CONVERTER(depth_to_space);
TG_ONNX_CONVERTER(space_to_depth);
TG_ONNX_CONVERTER(compress);
TG_ONNX_CONVERTER(center_crop_pad);

// convert_generator.cpp
TG_ONNX_CONVERTER(constant);
TG_ONNX_CONVERTER(constant_of_shape);
TG_ONNX_CONVERTER(range);
TG_ONNX_CONVERTER(eye_like);
TG_ONNX_CONVERTER(trilu);
TG_ONNX_CONVERTER(one_hot);
TG_ONNX_CONVERTER(hann_window);
TG_ONNX_CONVERTER(hamming_window);
TG_ONNX_CONVERTER(blackman_window);
TG_ONNX_CONVERTER(optional_has_element);
TG_ONNX_CONVERTER(optional_get_element);
TG_ONNX_CONVERTER(optional);

// convert_gather.cpp
TG_ONNX_CONVERTER(gather);
TG_ONNX_CONVERTER(gather_elements);
TG_ONNX_CONVERTER(gather_nd);
TG_ONNX_CONVERTER(scatter_nd);
TG_ONNX_CONVERTER(scatter_elements);
TG_ONNX_CONVERTER(reverse_sequence);
TG_ONNX_CONVERTER(tensor_scatter);

// convert_reduce.cpp
TG_ONNX_CONVERTER(reduce_sum);
TG_ONNX_CONVERTER(reduce_mean);
TG_ONNX_CONVERTER(reduce_max);
TG_ONNX_CONVERTER(reduce_min);
TG_ONNX_CONVERTER(reduce_prod);
TG_ONNX_CONVERTER(reduce_l1);
TG_ONNX_CONVERTER(reduce_l2);
TG_ONNX_CONVERTER(reduce_log_sum);
TG_ONNX_CONVERTER(reduce_log_sum_exp);
TG_ONNX_CONVERTER(reduce_sum_square);
TG_ONNX_CONVERTER(arg_max);
TG_ONNX_CONVERTER(arg_min);

// convert_math.cpp
TG_ONNX_CONVERTER(matmul);
TG_ONNX_CONVERTER(gemm);
TG_ONNX_CONVERTER(cum_sum);
TG_ONNX_CONVERTER(cum_prod);
TG_ONNX_CONVERTER(top_k);
TG_ONNX_CONVERTER(einsum);
TG_ONNX_CONVERTER(dft);

// convert_nn.cpp
TG_ONNX_CONVERTER(softmax);
TG_ONNX_CONVERTER(log_softmax);
TG_ONNX_CONVERTER(hardmax);
TG_ONNX_CONVERTER(batch_norm);
TG_ONNX_CONVERTER(instance_norm);
TG_ONNX_CONVERTER(layer_norm);
TG_ONNX_CONVERTER(rms_norm);
TG_ONNX_CONVERTER(group_norm);
TG_ONNX_CONVERTER(lp_norm);
TG_ONNX_CONVERTER(mvn);
TG_ONNX_CONVERTER(lrn);
TG_ONNX_CONVERTER(dropout);

// convert_loss.cpp
TG_ONNX_CONVERTER(nll_loss);
TG_ONNX_CONVERTER(softmax_cross_entropy);

// convert_attention.cpp
TG_ONNX_CONVERTER(attention);
TG_ONNX_CONVERTER(rotary_embedding);
TG_ONNX_CONVERTER(linear_attention);
TG_ONNX_CONVERTER(flex_attention);

// convert_conv.cpp
TG_ONNX_CONVERTER(conv);
TG_ONNX_CONVERTER(conv_transpose);
TG_ONNX_CONVERTER(max_pool);
TG_ONNX_CONVERTER(average_pool);
TG_ONNX_CONVERTER(lp_pool);
TG_ONNX_CONVERTER(global_average_pool);
TG_ONNX_CONVERTER(global_max_pool);
TG_ONNX_CONVERTER(global_lp_pool);
TG_ONNX_CONVERTER(causal_conv_with_state);

// convert_resize.cpp
TG_ONNX_CONVERTER(resize);
TG_ONNX_CONVERTER(upsample);

// convert_control.cpp
TG_ONNX_CONVERTER(if);
TG_ONNX_CONVERTER(loop);
TG_ONNX_CONVERTER(scan);

// convert_sample.cpp
TG_ONNX_CONVERTER(grid_sample);
TG_ONNX_CONVERTER(affine_grid);

// convert_quant.cpp
TG_ONNX_CONVERTER(quantize_linear);
TG_ONNX_CONVERTER(dequantize_linear);
TG_ONNX_CONVERTER(dynamic_quantize_linear);
TG_ONNX_CONVERTER(matmul_integer);
TG_ONNX_CONVERTER(qlinear_matmul);
TG_ONNX_CONVERTER(conv_integer);
TG_ONNX_CONVERTER(qlinear_conv);

// convert_rnn.cpp
TG_ONNX_CONVERTER(rnn);
TG_ONNX_CONVERTER(gru);
TG_ONNX_CONVERTER(lstm);

// convert_training.cpp
TG_ONNX_CONVERTER(adagrad);
TG_ONNX_CONVERTER(momentum);
TG_ONNX_CONVERTER(adam);

// convert_unpool.cpp
TG_ONNX_CONVERTER(max_unpool);
TG_ONNX_CONVERTER(col2im);

#undef TG_ONNX_CONVERTER

}  // namespace tg::onnx
