// CUDA kernels of the pool family: max_pool2d, avg_pool2d, max_pool2d_backward and
// avg_pool2d_backward (global_avg_pool2d is a reduce_mean composite), NHWC or NCHW, with the CPU
// backend's semantics (backends/cpu/pool.cpp; see kernels/pool.h for the rules).
//
// max_pool2d over contiguous (H, W) planes (NCHW, or NHWC with C = 1) runs the generated tiled
// stencil kernel (stencil_codegen.h: shared-memory tiles with halos, unit weights folded).
// Own kernels (kernels/pool.cu): forward ops one thread per output element; max backward first
// finds each window's routed element (an int32 tap index per dy element, in a scratch buffer),
// then every dx element gathers the dy of the windows that route to it; avg backward gathers
// dy / divisor over the windows containing each dx element. No atomics: deterministic, and the
// sums run over windows in (oh, ow) order in f32 (f64 for f64), rounded once to f16/bf16.
// dtypes: max_pool2d any numeric dtype; the others floating dtypes (dtype_mismatch otherwise).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels/pool.h"
#include "backends/cuda/stencil_codegen.h"
#include "core/error_util.h"
#include "ops/pool.h"

namespace tg::cuda {
namespace {

using kernels::PoolType;

// The kernel type of `dt`; raises dtype_mismatch like the CPU's dispatch for what `floating_only`
// (or bool) excludes.
PoolType pool_type(DType dt, bool floating_only, const char* op) {
  switch (dt) {
    case DType::f16: return PoolType::f16;
    case DType::bf16: return PoolType::bf16;
    case DType::f32: return PoolType::f32;
    case DType::f64: return PoolType::f64;
    default: break;
  }
  if (!floating_only) {
    switch (dt) {
      case DType::i8: return PoolType::i8;
      case DType::u8: return PoolType::u8;
      case DType::i32: return PoolType::i32;
      case DType::i64: return PoolType::i64;
      default: break;
    }
  }
  fail(ErrorCode::dtype_mismatch, op, "dtype {} is not supported", dtype_name(dt));
}

kernels::PoolWindow window_of(const ops::PoolDim& d) {
  return {d.in, d.k, d.stride, d.dilation, d.pad_before, d.pad_after, d.out};
}

kernels::PoolParams params_of(const KernelContext& ctx, const Shape& x_shape) {
  const auto& desc = std::get<Pool2dDesc>(ctx.node.attrs);
  const ops::PoolGeometry g = ops::pool_geometry(desc, x_shape, ctx.op_name());
  kernels::PoolParams p;
  p.n = g.n;
  p.c = g.c;
  p.h = window_of(g.h);
  p.w = window_of(g.w);
  p.nhwc = g.nhwc;
  p.count_include_pad = desc.count_include_pad;
  return p;
}

/// The bits of the lowest value of `dt` in its compute type (f32 for f16/bf16): max pooling's
/// padding, which never wins.
uint64_t lowest_bits(DType dt) {
  uint64_t bits = 0;
  auto put = [&bits](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (dt) {
    case DType::f64: put(-std::numeric_limits<double>::infinity()); break;
    case DType::i8: put(std::numeric_limits<int8_t>::lowest()); break;
    case DType::u8: put(std::numeric_limits<uint8_t>::lowest()); break;
    case DType::i32: put(std::numeric_limits<int32_t>::lowest()); break;
    case DType::i64: put(std::numeric_limits<int64_t>::lowest()); break;
    default: put(-std::numeric_limits<float>::infinity()); break;  // f16, bf16, f32
  }
  return bits;
}

/// max_pool2d over (H, W) planes that are contiguous (NCHW, or NHWC with one channel) as the
/// generated tiled stencil kernel (stencil_codegen.h): a max over unit weights with the padding
/// read as the lowest value, which never wins: the pooling semantics (NaN propagates, a window
/// without input elements gives -inf). False when the window does not tile.
bool max_pool_tiled(KernelContext& ctx, const kernels::PoolParams& p) {
  if (p.nhwc && p.c != 1) return false;
  TiledStencilSpec spec;
  spec.dtype = ctx.inputs[0].dtype();
  spec.reduction = 3;  // max
  spec.mode = 1;       // constant
  spec.unit_weights = true;
  const kernels::PoolWindow* dims[2] = {&p.h, &p.w};
  TiledStencilSizes sizes;
  sizes.batch = p.n * p.c;
  sizes.boundary_bits = lowest_bits(spec.dtype);
  for (size_t i = 0; i < 2; ++i) {
    const kernels::PoolWindow& d = *dims[i];
    if (d.k > 4096 || d.stride > 4096 || d.dilation > 4096) return false;
    spec.win[2 + i] = static_cast<int>(d.k);
    spec.stride[2 + i] = static_cast<int>(d.stride);
    spec.dilation[2 + i] = static_cast<int>(d.dilation);
    sizes.in[2 + i] = d.in;
    sizes.out[2 + i] = d.out;
    sizes.before[2 + i] = d.pad_before;
  }
  if (!plan_tiled_stencil(spec, 2, sizes)) return false;
  run_tiled_stencil(ctx, spec, sizes, ptr(ctx.inputs[0]), nullptr, ptr(ctx.outputs[0]));
  return true;
}

template <bool kMax>
void pool_forward_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  const kernels::PoolParams p = params_of(ctx, x.shape());
  const PoolType t = pool_type(x.dtype(), !kMax, ctx.op_name());
  if (y.num_elements() == 0) return;
  if (kMax) {
    if (max_pool_tiled(ctx, p)) return;
    kernels::launch_max_pool2d(t, ptr(x), ptr(y), p, stream_of(ctx));
  } else {
    kernels::launch_avg_pool2d(t, ptr(x), ptr(y), p, stream_of(ctx));
  }
  check_launch(ctx.op_name(), kMax ? "max_pool2d" : "avg_pool2d");
}

template <bool kMax>
void pool_backward_kernel(KernelContext& ctx) {
  const TensorData &dy = ctx.inputs[0], &x = ctx.inputs[1];
  TensorData& dx = ctx.outputs[0];
  const kernels::PoolParams p = params_of(ctx, x.shape());
  const PoolType t = pool_type(x.dtype(), true, ctx.op_name());
  if (dx.num_elements() == 0) return;
  const cudaStream_t stream = stream_of(ctx);
  if (kMax) {
    if (p.h.k * p.w.k > INT32_MAX) {
      fail(ErrorCode::unsupported, ctx.op_name(), "windows of more than 2^31 - 1 taps");
    }
    // One tap index per dy element, in the run's workspace.
    void* arg = workspace_of(ctx, static_cast<size_t>(std::max<int64_t>(dy.num_elements(), 1)) * 4);
    kernels::launch_max_pool2d_backward(t, ptr(dy), ptr(x), ptr(dx), static_cast<int32_t*>(arg), p, stream);
  } else {
    kernels::launch_avg_pool2d_backward(t, ptr(dy), ptr(dx), p, stream);
  }
  check_launch(ctx.op_name(), kMax ? "max_pool2d_backward" : "avg_pool2d_backward");
}

}  // namespace

void register_pool_kernels(KernelTable& t) {
  t.set(ir::OpKind::max_pool2d, pool_forward_kernel<true>);
  t.set(ir::OpKind::avg_pool2d, pool_forward_kernel<false>);
  t.set(ir::OpKind::max_pool2d_backward, pool_backward_kernel<true>);
  t.set(ir::OpKind::avg_pool2d_backward, pool_backward_kernel<false>);
}

}  // namespace tg::cuda
