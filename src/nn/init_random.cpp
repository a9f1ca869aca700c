// Fast f32 uniform / normal generation for weight initializers (src/nn/init_random.h).
#include "nn/init_random.h"

#include <cmath>

#include "core/parallel.h"
#include "core/philox.h"

namespace tg::nn::detail {
namespace {

// Blocks per parallel chunk (4 elements each).
constexpr int64_t kBlockGrain = 4096;

philox::Block block(uint64_t seed, uint64_t b) {
  return philox::philox4x32_10(
      philox::Block{{static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), 0u, 0u}},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

float to_unit(uint32_t w) { return static_cast<float>(w >> 8) * (1.0f / 16777216.0f); }

// philox::uniform_value<float> given the element's uniform u.
float uniform_from(float u, double low, double high) {
  float v = static_cast<float>(low) + static_cast<float>(high - low) * u;
  while (low < high && static_cast<double>(v) >= high) {
    float below = philox::next_below(v);
    if (static_cast<double>(below) < low) break;
    v = below;
  }
  return v;
}

template <typename F>
TensorData generate(const Shape& shape, F&& per_block) {
  TensorData t(shape, DType::f32);
  float* out = t.data<float>();
  const int64_t n = t.num_elements();
  core::parallel_for((n + 3) / 4, kBlockGrain, [&](int64_t begin, int64_t end) {
    float v[4];
    for (int64_t b = begin; b < end; ++b) {
      per_block(static_cast<uint64_t>(b), v);
      for (int64_t j = 0; j < 4 && 4 * b + j < n; ++j) out[4 * b + j] = v[j];
    }
  });
  return t;
}

}  // namespace

TensorData fast_random_uniform(const Shape& shape, float low, float high, uint64_t seed) {
  const double lo = low, hi = high;
  return generate(shape, [&](uint64_t b, float* v) {
    philox::Block w = block(seed, b);
    for (int j = 0; j < 4; ++j) v[j] = uniform_from(to_unit(w.v[j]), lo, hi);
  });
}

TensorData fast_random_normal(const Shape& shape, float mean, float stddev, uint64_t seed) {
  // Block b holds words 4b..4b+3: the uniforms of the Box-Muller pairs 2b and 2b+1, i.e. the
  // normal elements 4b..4b+3 (philox::normal_f32).
  const auto m = static_cast<float>(static_cast<double>(mean));
  const auto s = static_cast<float>(static_cast<double>(stddev));
  return generate(shape, [&](uint64_t b, float* v) {
    philox::Block w = block(seed, b);
    for (int pair = 0; pair < 2; ++pair) {
      float u1 = 1.0f - to_unit(w.v[2 * pair]), u2 = to_unit(w.v[2 * pair + 1]);
      float r = sqrtf(-2.0f * logf(u1));
      float t = 6.28318530717958647692f * u2;
      v[2 * pair] = m + s * (r * cosf(t));
      v[2 * pair + 1] = m + s * (r * sinf(t));
    }
  });
}

}  // namespace tg::nn::detail
