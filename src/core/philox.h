// Philox4x32-10 counter-based random numbers (Salmon, Moraes, Dror, Shaw: "Parallel random
// numbers: as easy as 1, 2, 3", SC'11). Shared by host code and device code: every backend
// derives element i of a random tensor from (seed, i) alone, so all give the same values.
//
// Stream: word n (a uint32) of seed s and stream key k is output n % 4 of Philox4x32-10 with key
// (s_lo, s_hi) and counter (n/4 low, n/4 high, k_lo, k_hi). k = 0 for random_uniform /
// random_normal and TensorData; random_uniform_like passes its key input as k.
// f32 (and f16/bf16, rounded from f32): uniform element i = (word_i >> 8) * 2^-24 in [0, 1).
// f64: uniform element i uses words 2i (high 27 bits) and 2i+1 (high 26 bits): 53 bits / 2^53.
// normal element i: pair p = i / 2 takes uniforms u1 (made in (0, 1] as 1 - u) and u2 of
//   "virtual" uniform elements 2p and 2p+1; r = sqrt(-2 ln u1); even i: r cos(2 pi u2), odd i:
//   r sin(2 pi u2) (Box-Muller).
// Element values of random tensors (uniform_value / normal_value below): low + (high - low) * u
// and mean + stddev * z, computed in double for f64 and in float otherwise, then rounded to the
// dtype; a uniform value that rounding carried up to high is replaced by the largest value of the
// dtype below high (so results stay in [low, high)).
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define TG_HOST_DEVICE __host__ __device__
#else
#define TG_HOST_DEVICE
#endif

namespace tg::philox {

struct Block {
  uint32_t v[4];
};

TG_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

/// Philox4x32 with 10 rounds.
TG_HOST_DEVICE inline Block philox4x32_10(Block ctr, uint32_t k0, uint32_t k1) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, ctr.v[0], &hi0, &lo0);
    mulhilo(kM1, ctr.v[2], &hi1, &lo1);
    ctr = Block{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

/// Word n of the stream for `seed` and stream key `key` (counter words 2 and 3).
TG_HOST_DEVICE inline uint32_t word(uint64_t seed, uint64_t n, uint64_t key = 0) {
  uint64_t b = n >> 2;
  Block ctr{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(key),
             static_cast<uint32_t>(key >> 32)}};
  Block out = philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return out.v[n & 3];
}

/// Uniform [0, 1) float for element i.
TG_HOST_DEVICE inline float uniform_f32(uint64_t seed, uint64_t i, uint64_t key = 0) {
  return static_cast<float>(word(seed, i, key) >> 8) * (1.0f / 16777216.0f);
}
/// Uniform [0, 1) double for element i.
TG_HOST_DEVICE inline double uniform_f64(uint64_t seed, uint64_t i, uint64_t key = 0) {
  uint64_t a = word(seed, 2 * i, key) >> 5, b = word(seed, 2 * i + 1, key) >> 6;
  return static_cast<double>(a * 67108864ull + b) * (1.0 / 9007199254740992.0);
}
/// Standard normal float for element i.
TG_HOST_DEVICE inline float normal_f32(uint64_t seed, uint64_t i) {
  uint64_t p = i >> 1;
  float u1 = 1.0f - uniform_f32(seed, 2 * p), u2 = uniform_f32(seed, 2 * p + 1);
  float r = sqrtf(-2.0f * logf(u1));
  float t = 6.28318530717958647692f * u2;
  return (i & 1) ? r * sinf(t) : r * cosf(t);
}
/// Standard normal double for element i.
TG_HOST_DEVICE inline double normal_f64(uint64_t seed, uint64_t i) {
  uint64_t p = i >> 1;
  double u1 = 1.0 - uniform_f64(seed, 2 * p), u2 = uniform_f64(seed, 2 * p + 1);
  double r = ::sqrt(-2.0 * ::log(u1));
  double t = 6.28318530717958647692 * u2;
  return (i & 1) ? r * ::sin(t) : r * ::cos(t);
}

/// The largest value of T below v (v not NaN). T is float, double, or a 16-bit sign-magnitude
/// float storage type with a `bits` member (f16_t, bf16_t).
template <typename T>
TG_HOST_DEVICE inline T next_below(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return ::nextafter(v, -HUGE_VAL);
  } else if constexpr (std::is_same_v<T, float>) {
    return ::nextafterf(v, -HUGE_VALF);
  } else {
    T r = v;
    if ((r.bits & 0x7fffu) == 0) {
      r.bits = 0x8001u;  // +-0 -> the negative subnormal nearest zero
    } else if (r.bits & 0x8000u) {
      r.bits = static_cast<uint16_t>(r.bits + 1);  // negative: one step away from zero
    } else {
      r.bits = static_cast<uint16_t>(r.bits - 1);
    }
    return r;
  }
}

/// Element i of a uniform [low, high) tensor of floating storage type T (see the top comment),
/// from the stream with key `key`.
template <typename T>
TG_HOST_DEVICE inline T uniform_value(uint64_t seed, uint64_t i, double low, double high,
                                      uint64_t key = 0) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  T v;
  if constexpr (std::is_same_v<T, double>) {
    v = low + (high - low) * uniform_f64(seed, i, key);
  } else {
    v = static_cast<T>(static_cast<float>(low) +
                       static_cast<float>(high - low) * uniform_f32(seed, i, key));
  }
  // Rounding can reach high (e.g. f16 with u close to 1); step back below it, staying >= low.
  while (low < high && static_cast<double>(static_cast<C>(v)) >= high) {
    T below = next_below(v);
    if (static_cast<double>(static_cast<C>(below)) < low) break;
    v = below;
  }
  return v;
}

/// Element i of a normal(mean, stddev) tensor of floating storage type T.
template <typename T>
TG_HOST_DEVICE inline T normal_value(uint64_t seed, uint64_t i, double mean, double stddev) {
  if constexpr (std::is_same_v<T, double>) {
    return mean + stddev * normal_f64(seed, i);
  } else {
    return static_cast<T>(static_cast<float>(mean) +
                          static_cast<float>(stddev) * normal_f32(seed, i));
  }
}

}  // namespace tg::philox
