// CUDA kernels of the cast family. cast: every pair of the 9 dtypes with the CPU's rules
// (src/backends/cpu/cast.cpp, tg_dev::convert in device/elementwise.cuh): x -> bool is x != 0
// (NaN -> true), bool -> x is 0/1, int -> int wraps, int/float -> float rounds to nearest even
// (f16/bf16 through f32, as the CPU), float -> int truncates and saturates, NaN -> 0. A cast to
// the input's own type is a copy. stop_gradient is the identity (shares storage).
// Generated elementwise kernels (elementwise_codegen.h); any rank.
#include <fmt/format.h>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/elementwise_ops.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

void cast_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  if (x.type() == y.type()) {  // no-op cast: a copy (the output has its own place in the arena)
    if (x.nbytes() > 0) {
      check(cudaMemcpyAsync(ptr(y), ptr(x), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ctx)), ctx.op_name(),
            "cudaMemcpyAsync");
    }
    return;
  }
  if (x.num_elements() != y.num_elements()) {
    fail(ErrorCode::shape_mismatch, ctx.op_name(), "input shape {} differs from output shape {}", str(x.shape()),
         str(y.shape()));
  }
  if (x.num_elements() == 0) return;
  if (x.dtype() == y.dtype()) {  // same dtype, other shape: a copy
    check(cudaMemcpyAsync(ptr(y), ptr(x), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ctx)), ctx.op_name(),
          "cudaMemcpyAsync");
    return;
  }
  ElementwiseSpec spec;
  spec.inputs = {x.dtype()};
  spec.outputs = {y.dtype()};
  const DType in = x.dtype();
  const std::string arg = "v0";
  bool flag = false;
  spec.exprs = {elementwise_expression(ir::OpKind::cast, std::span<const DType>(&in, 1), y.dtype(),
                                       std::span<const std::string>(&arg, 1), ctx.op_name(), &flag)};
  // Same element count: the input is read as contiguous whatever its shape.
  TensorData flat = x.shape() == y.shape() ? x : x.reshaped(y.shape());
  run_elementwise(ctx, spec, std::span<const TensorData>(&flat, 1), ctx.outputs);
}

}  // namespace

void register_cast_kernels(KernelTable& t) {
  t.set(ir::OpKind::cast, cast_kernel);
  t.set(ir::OpKind::stop_gradient, [](KernelContext& ctx) { ctx.outputs[0] = ctx.inputs[0]; });
}

}  // namespace tg::cuda
