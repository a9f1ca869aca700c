// CUDA kernels of the elementwise unary family: generated elementwise kernels
// (elementwise_codegen.h) applying the tg_dev functors of device/elementwise.cuh, which mirror the
// CPU kernels (src/backends/cpu/unary.cpp): integer neg/abs/square wrap around, sign keeps NaN,
// round is ties-to-even, sigmoid is the overflow-free form; f16/bf16 computed in f32 and rounded
// once. Dtypes as on the CPU: floating ops (exp ... round, is_nan, is_inf) take f16/bf16/f32/f64,
// numeric ops (neg, abs, sign, square) every dtype but bool, logical_not bool; any rank and shape.
#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/elementwise_ops.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

using K = ir::OpKind;

void unary_kernel(KernelContext& ctx) {
  const DType in = ctx.inputs[0].dtype();
  const DType out = ctx.outputs[0].dtype();
  bool flag = false;
  const std::string arg = "v0";
  ElementwiseSpec spec;
  spec.inputs = {in};
  spec.outputs = {out};
  spec.exprs = {elementwise_expression(ctx.node.kind, std::span<const DType>(&in, 1), out,
                                       std::span<const std::string>(&arg, 1), ctx.op_name(), &flag)};
  TG_CHECK_INTERNAL(!spec.exprs[0].empty(), "unary_kernel: not a unary op");
  run_elementwise(ctx, spec, ctx.inputs.subspan(0, 1), ctx.outputs);
}

}  // namespace

void register_unary_kernels(KernelTable& t) {
  for (K k : {K::neg, K::abs, K::sign, K::square, K::exp, K::log, K::log1p, K::expm1, K::sqrt, K::rsqrt,
              K::reciprocal, K::sin, K::cos, K::tan, K::tanh, K::sigmoid, K::erf, K::floor, K::ceil, K::round,
              K::logical_not, K::is_nan, K::is_inf}) {
    t.set(k, unary_kernel);
  }
}

}  // namespace tg::cuda
