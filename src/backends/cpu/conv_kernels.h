// Internal interface between the conv kernels' entry points (conv.cpp) and their two engines:
// oneDNN for f32 and bf16 (conv_onednn.cpp) and a plain multi-threaded loop for f64
// (conv_reference.cpp).
#pragma once
#include "ops/conv_geometry.h"

namespace tg::cpu {

/// Which of the three convolution computations runs.
enum class ConvPass { forward, backward_data, backward_weights };

/// One convolution computation with static shapes. Its two inputs and one output are:
///   forward:          a = x,  b = w  -> y
///   backward_data:    a = dy, b = w  -> dx
///   backward_weights: a = dy, b = x  -> dw
/// all contiguous in data_layout (x, y, dx, dy) or weights_layout (w, dw).
struct ConvProblem {
  ConvPass pass = ConvPass::forward;
  ops::ConvGeometry g;
  Layout data_layout = Layout::nhwc;
  Layout weights_layout = Layout::hwio;
  DType dtype = DType::f32;   ///< of all three tensors
  const char* op = "conv2d";  ///< for error messages
};

/// p.dtype f32 or bf16 on oneDNN (primitives chosen and cached per problem). Returns false,
/// computing nothing, for a bf16 problem that oneDNN can only run with its slow reference kernel
/// on this CPU (the caller then computes in f32). Raises tg::Error(internal) if oneDNN fails.
bool conv_onednn(const ConvProblem& p, const void* a, const void* b, void* out);

/// Test hook: runs format candidate `index` (0, 1, 2: see conv_onednn.cpp) of the oneDNN path,
/// uncached and untimed, so that tests can check each format choice.
void conv_onednn_candidate(const ConvProblem& p, int index, const void* a, const void* b,
                           void* out);

/// f64 reference: direct loops over the definition, parallel over output rows/elements.
void conv_reference_f64(const ConvProblem& p, const double* a, const double* b, double* out);

}  // namespace tg::cpu
