// CPU kernels of the random op family. Element i (row-major) is a function of (seed, i) only (and
// of the key input for random_uniform_like), as defined in src/core/philox.h, so the result does
// not depend on the thread split and equals TensorData::random_uniform/random_normal bit for bit
// (random_uniform_like with key 0 equals random_uniform).
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "core/philox.h"

namespace tg::cpu {
namespace {

// Philox costs far more than a copy: split into smaller chunks than kGrain.
constexpr int64_t kRandomGrain = 4096;

template <typename T, bool kNormal>
void generate(const ir::RandomAttrs& a, TensorData& y) {
  T* out = static_cast<T*>(y.raw_data());
  parallel_for(y.num_elements(), kRandomGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto k = static_cast<uint64_t>(i);
      out[i] = kNormal ? philox::normal_value<T>(a.seed, k, a.a, a.b)
                       : philox::uniform_value<T>(a.seed, k, a.a, a.b);
    }
  });
}

template <bool kNormal>
void random_kernel(KernelContext& ctx) {
  const auto& attrs = std::get<ir::RandomAttrs>(ctx.node.attrs);
  TensorData& y = ctx.outputs[0];
  dispatch<DTypeGroup::floating>(y.dtype(), ctx.op_name(),
                                 [&](auto tag) { generate<decltype(tag), kNormal>(attrs, y); });
}

// The key input as the 64-bit Philox stream key (signed values sign-extended: -1 is all ones).
uint64_t stream_key(const TensorData& key, const char* op) {
  uint64_t k = 0;
  dispatch<DTypeGroup::integer>(key.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    k = static_cast<uint64_t>(static_cast<int64_t>(key.data<T>()[0]));
  });
  return k;
}

template <typename T>
void generate_like(const ir::RandomLikeAttrs& a, uint64_t key, TensorData& y) {
  T* out = static_cast<T*>(y.raw_data());
  parallel_for(y.num_elements(), kRandomGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = philox::uniform_value<T>(a.seed, static_cast<uint64_t>(i), a.low, a.high, key);
    }
  });
}

void random_like_kernel(KernelContext& ctx) {
  const auto& attrs = std::get<ir::RandomLikeAttrs>(ctx.node.attrs);
  const uint64_t key = stream_key(ctx.inputs[1], ctx.op_name());
  TensorData& y = ctx.outputs[0];
  dispatch<DTypeGroup::floating>(y.dtype(), ctx.op_name(),
                                 [&](auto tag) { generate_like<decltype(tag)>(attrs, key, y); });
}

}  // namespace

void register_random_kernels(KernelTable& t) {
  t.set(ir::OpKind::random_uniform, random_kernel<false>);
  t.set(ir::OpKind::random_normal, random_kernel<true>);
  t.set(ir::OpKind::random_uniform_like, random_like_kernel);
}

}  // namespace tg::cpu
