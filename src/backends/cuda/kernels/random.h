// Launchers of the random kernels (kernels/random.cu) of the random family
// (backends/cuda/random.cpp). Element i of the output is a function of (seed, i[, key]) only, as
// defined in src/core/philox.h, with the same arithmetic as the CPU (see random.cu for what is
// bit-identical). Plain pointers and sizes only; launchers queue work on `stream` and return.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// Floating storage types of random outputs.
enum class RandomType : int { f16, bf16, f32, f64 };
/// Integer dtypes of random_uniform_like's key input (read on the device, sign-extended).
enum class KeyType : int { none, i8, u8, i32, i64 };

/// out[i] = uniform in [low, high) from the Philox stream (seed, key); key read from `key` (one
/// element of `key_type`) on the device, 0 when key_type is none. n may be 0.
void launch_random_uniform(void* out, RandomType type, int64_t n, uint64_t seed, double low, double high,
                           const void* key, KeyType key_type, cudaStream_t stream);
/// out[i] = normal(mean, stddev) (Box-Muller) from the Philox stream of `seed`. n may be 0.
void launch_random_normal(void* out, RandomType type, int64_t n, uint64_t seed, double mean, double stddev,
                          cudaStream_t stream);

}  // namespace tg::cuda::kernels
