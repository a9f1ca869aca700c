// CPU kernels of the random op family. Element i (row-major) is a function of (seed, i) only, as
// defined in src/core/philox.h, so the result does not depend on the thread split and equals
// TensorData::random_uniform/random_normal bit for bit.
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

}  // namespace

void register_random_kernels(KernelTable& t) {
  t.set(ir::OpKind::random_uniform, random_kernel<false>);
  t.set(ir::OpKind::random_normal, random_kernel<true>);
}

}  // namespace tg::cpu
