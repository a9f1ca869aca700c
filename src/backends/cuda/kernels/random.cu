// Random kernels (see random.h): Philox4x32-10 from src/core/philox.h, one Philox block (4 words)
// per thread and step of a grid-stride loop, writing the 4 (f32/f16/bf16) or 2 (f64) elements
// that the block's words determine.
//
// Bit-identity with the CPU (src/core/philox.h's uniform_value / normal_value): the arithmetic
// after the Philox words is written with explicitly rounded intrinsics (__fmul_rn, __fadd_rn,
// __dmul_rn, ...), so nvcc can not contract it into FMAs the host does not use. Uniform values of
// every dtype are therefore bit-identical. Normal values need log, sin and cos: the host uses
// glibc's logf/sinf/cosf (f32) and log/sin/cos (f64); here f32 values are computed in double
// precision and rounded once (correctly rounded but in rare double-rounding cases, while glibc's
// float functions are within 1 ulp and almost always correctly rounded), f64 with CUDA's double
// functions (within 1-2 ulp). So normal values agree with the CPU's on nearly every element and
// otherwise differ by an ulp of an intermediate; exact agreement needs a shared portable
// implementation of those three functions in philox.h.
#include "backends/cuda/device/elementwise.cuh"
#include "backends/cuda/kernels/random.h"
#include "core/philox.h"

namespace tg::cuda::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

// Storage types with the conversions uniform_from needs.
struct F32 {
  typedef float storage;
  static __device__ __forceinline__ float from(float v) { return v; }
  static __device__ __forceinline__ float to(float v) { return v; }
  static __device__ __forceinline__ float below(float v) { return nextafterf(v, -__int_as_float(0x7f800000)); }
};
/// f16 and bf16: next_below as philox::next_below on the bits (sign-magnitude).
__device__ __forceinline__ unsigned short bits_below(unsigned short b) {
  if ((b & 0x7fffu) == 0) return 0x8001u;
  if (b & 0x8000u) return static_cast<unsigned short>(b + 1);
  return static_cast<unsigned short>(b - 1);
}
struct F16 {
  typedef unsigned short storage;
  static __device__ __forceinline__ unsigned short from(float v) { return tg_dev::float_to_f16_bits(v); }
  static __device__ __forceinline__ float to(unsigned short v) { return tg_dev::f16_bits_to_float(v); }
  static __device__ __forceinline__ unsigned short below(unsigned short v) { return bits_below(v); }
};
struct BF16 {
  typedef unsigned short storage;
  static __device__ __forceinline__ unsigned short from(float v) { return tg_dev::float_to_bf16_bits(v); }
  static __device__ __forceinline__ float to(unsigned short v) { return tg_dev::bf16_bits_to_float(v); }
  static __device__ __forceinline__ unsigned short below(unsigned short v) { return bits_below(v); }
};

__device__ __forceinline__ philox::Block philox_block(uint64_t seed, uint64_t b, uint64_t key) {
  philox::Block ctr{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(key),
                     static_cast<uint32_t>(key >> 32)}};
  return philox::philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// philox::uniform_f32 from its word.
__device__ __forceinline__ float u01_f32(uint32_t w) {
  return __fmul_rn(static_cast<float>(w >> 8), 1.0f / 16777216.0f);
}
/// philox::uniform_f64 from its two words.
__device__ __forceinline__ double u01_f64(uint32_t w0, uint32_t w1) {
  const uint64_t a = w0 >> 5, b = w1 >> 6;
  return __dmul_rn(static_cast<double>(a * 67108864ull + b), 1.0 / 9007199254740992.0);
}

/// philox::uniform_value<T> for float-computed T (f32, f16, bf16) from u in [0, 1).
template <class T>
__device__ __forceinline__ typename T::storage uniform_from(float u, float low_f, float span_f, double low,
                                                           double high) {
  typename T::storage v = T::from(__fadd_rn(low_f, __fmul_rn(span_f, u)));
  while (low < high && static_cast<double>(T::to(v)) >= high) {
    const typename T::storage b = T::below(v);
    if (static_cast<double>(T::to(b)) < low) break;
    v = b;
  }
  return v;
}
__device__ __forceinline__ double uniform_from_f64(double u, double low, double high) {
  double v = __dadd_rn(low, __dmul_rn(__dsub_rn(high, low), u));
  while (low < high && v >= high) {
    const double b = nextafter(v, -__longlong_as_double(0x7ff0000000000000LL));
    if (b < low) break;
    v = b;
  }
  return v;
}

__device__ __forceinline__ uint64_t load_key(const void* key, KeyType type) {
  switch (type) {
    case KeyType::i8: return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const signed char*>(key)));
    case KeyType::u8: return static_cast<uint64_t>(*static_cast<const unsigned char*>(key));
    case KeyType::i32: return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const int*>(key)));
    case KeyType::i64: return static_cast<uint64_t>(*static_cast<const long long*>(key));
    default: return 0;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) uniform_kernel(typename T::storage* __restrict__ out, int64_t n,
                                                           uint64_t seed, double low, double high,
                                                           const void* key_ptr, KeyType key_type) {
  const uint64_t key = load_key(key_ptr, key_type);
  const float low_f = __double2float_rn(low), span_f = __double2float_rn(__dsub_rn(high, low));
  const int64_t blocks = (n + 3) / 4;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += step) {
    const philox::Block w = philox_block(seed, static_cast<uint64_t>(b), key);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * b + j;
      if (i < n) out[i] = uniform_from<T>(u01_f32(w.v[j]), low_f, span_f, low, high);
    }
  }
}

__global__ void __launch_bounds__(kThreads) uniform_f64_kernel(double* __restrict__ out, int64_t n, uint64_t seed,
                                                               double low, double high, const void* key_ptr,
                                                               KeyType key_type) {
  const uint64_t key = load_key(key_ptr, key_type);
  const int64_t blocks = (n + 1) / 2;  // element i uses words 2i and 2i+1: block i / 2
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += step) {
    const philox::Block w = philox_block(seed, static_cast<uint64_t>(b), key);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int64_t i = 2 * b + j;
      if (i < n) out[i] = uniform_from_f64(u01_f64(w.v[2 * j], w.v[2 * j + 1]), low, high);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) normal_kernel(typename T::storage* __restrict__ out, int64_t n,
                                                          uint64_t seed, double mean, double stddev) {
  const float mean_f = __double2float_rn(mean), std_f = __double2float_rn(stddev);
  const int64_t blocks = (n + 3) / 4;  // element i uses words 2(i/2), 2(i/2)+1: block i / 4
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += step) {
    const philox::Block w = philox_block(seed, static_cast<uint64_t>(b), 0);
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int64_t i = 4 * b + 2 * q;
      if (i >= n) break;
      const float u1 = __fsub_rn(1.0f, u01_f32(w.v[2 * q])), u2 = u01_f32(w.v[2 * q + 1]);
      const float lg = __double2float_rn(log(static_cast<double>(u1)));
      const float r = __fsqrt_rn(__fmul_rn(-2.0f, lg));
      const float t = __fmul_rn(6.28318530717958647692f, u2);
      const float c = __double2float_rn(cos(static_cast<double>(t)));
      const float s = __double2float_rn(sin(static_cast<double>(t)));
      out[i] = T::from(__fadd_rn(mean_f, __fmul_rn(std_f, __fmul_rn(r, c))));
      if (i + 1 < n) out[i + 1] = T::from(__fadd_rn(mean_f, __fmul_rn(std_f, __fmul_rn(r, s))));
    }
  }
}

__global__ void __launch_bounds__(kThreads) normal_f64_kernel(double* __restrict__ out, int64_t n, uint64_t seed,
                                                              double mean, double stddev) {
  const int64_t pairs = (n + 1) / 2;  // pair p uses f64 uniforms 2p, 2p+1: words 4p..4p+3, block p
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs; p += step) {
    const philox::Block w = philox_block(seed, static_cast<uint64_t>(p), 0);
    const double u1 = __dsub_rn(1.0, u01_f64(w.v[0], w.v[1])), u2 = u01_f64(w.v[2], w.v[3]);
    const double r = __dsqrt_rn(__dmul_rn(-2.0, log(u1)));
    const double t = __dmul_rn(6.28318530717958647692, u2);
    const int64_t i = 2 * p;
    out[i] = __dadd_rn(mean, __dmul_rn(stddev, __dmul_rn(r, cos(t))));
    if (i + 1 < n) out[i + 1] = __dadd_rn(mean, __dmul_rn(stddev, __dmul_rn(r, sin(t))));
  }
}

}  // namespace

void launch_random_uniform(void* out, RandomType type, int64_t n, uint64_t seed, double low, double high,
                           const void* key, KeyType key_type, cudaStream_t stream) {
  if (n <= 0) return;
  switch (type) {
    case RandomType::f32:
      uniform_kernel<F32><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<float*>(out), n, seed, low,
                                                                            high, key, key_type);
      break;
    case RandomType::f16:
      uniform_kernel<F16><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<unsigned short*>(out), n,
                                                                            seed, low, high, key, key_type);
      break;
    case RandomType::bf16:
      uniform_kernel<BF16><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<unsigned short*>(out), n,
                                                                             seed, low, high, key, key_type);
      break;
    case RandomType::f64:
      uniform_f64_kernel<<<blocks_for((n + 1) / 2), kThreads, 0, stream>>>(static_cast<double*>(out), n, seed, low,
                                                                           high, key, key_type);
      break;
  }
}

void launch_random_normal(void* out, RandomType type, int64_t n, uint64_t seed, double mean, double stddev,
                          cudaStream_t stream) {
  if (n <= 0) return;
  switch (type) {
    case RandomType::f32:
      normal_kernel<F32><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<float*>(out), n, seed, mean,
                                                                           stddev);
      break;
    case RandomType::f16:
      normal_kernel<F16><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<unsigned short*>(out), n,
                                                                           seed, mean, stddev);
      break;
    case RandomType::bf16:
      normal_kernel<BF16><<<blocks_for((n + 3) / 4), kThreads, 0, stream>>>(static_cast<unsigned short*>(out), n,
                                                                            seed, mean, stddev);
      break;
    case RandomType::f64:
      normal_f64_kernel<<<blocks_for((n + 1) / 2), kThreads, 0, stream>>>(static_cast<double*>(out), n, seed, mean,
                                                                          stddev);
      break;
  }
}

}  // namespace tg::cuda::kernels
