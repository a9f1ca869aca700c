// CUDA kernels of the random family: random_uniform, random_normal, random_uniform_like
// (floating outputs f16/bf16/f32/f64, any shape), through the precompiled Philox kernels of
// kernels/random.cu. Element i is a function of (seed, i) (and of the key input for
// random_uniform_like, read on the device: no synchronization), as on the CPU
// (src/backends/cpu/random.cpp, src/core/philox.h): uniform values are bit-identical to the CPU's;
// normal values agree except for rare last-ulp differences of log/sin/cos (see random.cu).
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/kernels/random.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

kernels::RandomType random_type(DType t, const char* op) {
  require_dtype(DTypeGroup::floating, t, op);
  switch (t) {
    case DType::f16: return kernels::RandomType::f16;
    case DType::bf16: return kernels::RandomType::bf16;
    case DType::f64: return kernels::RandomType::f64;
    default: return kernels::RandomType::f32;
  }
}

template <bool kNormal>
void random_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::RandomAttrs>(ctx.node.attrs);
  TensorData& y = ctx.outputs[0];
  const kernels::RandomType type = random_type(y.dtype(), ctx.op_name());
  if (y.num_elements() == 0) return;
  cudaStream_t stream = stream_of(ctx);
  if constexpr (kNormal) {
    kernels::launch_random_normal(y.storage_ptr(), type, y.num_elements(), a.seed, a.a, a.b, stream);
  } else {
    kernels::launch_random_uniform(y.storage_ptr(), type, y.num_elements(), a.seed, a.a, a.b, nullptr,
                                   kernels::KeyType::none, stream);
  }
  check_launch(ctx.op_name(), kNormal ? "random_normal" : "random_uniform");
}

void random_like_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::RandomLikeAttrs>(ctx.node.attrs);
  const TensorData& key = ctx.inputs[1];
  require_dtype(DTypeGroup::integer, key.dtype(), ctx.op_name());
  TensorData& y = ctx.outputs[0];
  const kernels::RandomType type = random_type(y.dtype(), ctx.op_name());
  if (y.num_elements() == 0) return;
  if (key.num_elements() < 1) fail(ErrorCode::invalid_argument, ctx.op_name(), "the key input is empty");
  kernels::KeyType key_type = kernels::KeyType::i64;
  switch (key.dtype()) {
    case DType::i8: key_type = kernels::KeyType::i8; break;
    case DType::u8: key_type = kernels::KeyType::u8; break;
    case DType::i32: key_type = kernels::KeyType::i32; break;
    default: break;
  }
  kernels::launch_random_uniform(y.storage_ptr(), type, y.num_elements(), a.seed, a.low, a.high, key.storage_ptr(),
                                 key_type, stream_of(ctx));
  check_launch(ctx.op_name(), "random_uniform_like");
}

}  // namespace

void register_random_kernels(KernelTable& t) {
  t.set(ir::OpKind::random_uniform, random_kernel<false>);
  t.set(ir::OpKind::random_normal, random_kernel<true>);
  t.set(ir::OpKind::random_uniform_like, random_like_kernel);
}

}  // namespace tg::cuda
