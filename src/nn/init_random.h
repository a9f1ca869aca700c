// Fast host generation of the weight initializers' random values: bit-identical to
// TensorData::random_uniform / random_normal in f32 (the same Philox4x32-10 stream and
// formulas, src/core/philox.h), but computing one Philox block per 4 elements (instead of one
// per 32-bit word) and using every core. Big models (ResNet-50: 25.6M weights) build in a
// fraction of the time.
#pragma once
#include <cstdint>

#include "tg/tensor_data.h"

namespace tg::nn::detail {

/// TensorData::random_uniform(shape, low, high, seed) (f32), equal bit for bit.
TensorData fast_random_uniform(const Shape& shape, float low, float high, uint64_t seed);
/// TensorData::random_normal(shape, mean, stddev, seed) (f32), equal bit for bit.
TensorData fast_random_normal(const Shape& shape, float mean, float stddev, uint64_t seed);

}  // namespace tg::nn::detail
