// The oneDNN path of the CPU pool kernels (float32): pooling_v2 forward and backward primitives,
// cached per geometry. The callers (backends/cpu/pool.cpp) decide when oneDNN computes what the
// op specifies and use their own loops otherwise.
#pragma once
#include "ops/pool.h"

namespace tg::cpu {

enum class PoolAlgo { max, avg_include_pad, avg_exclude_pad };

/// y = pool(x) for a static geometry with at least one element in x and y. Returns false (and
/// computes nothing) where oneDNN has only its slow reference implementation (e.g. dilation) or
/// cannot create the primitive.
bool onednn_pool_forward(const ops::PoolGeometry& g, PoolAlgo algo, const float* x, float* y);

/// dx = the gradient of pool(x) for the cotangent dy (dx is overwritten). For max, x is read
/// (oneDNN recomputes the forward pass to find each window's first maximal element); for avg it
/// is not. Returns false (and computes nothing) as onednn_pool_forward.
bool onednn_pool_backward(const ops::PoolGeometry& g, PoolAlgo algo, const float* dy,
                          const float* x, float* dx);

}  // namespace tg::cpu
