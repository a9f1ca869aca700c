// CUDA kernels of the elementwise ternary family, broadcasting all three operands: select
// (cond ? a : b; cond bool, a and b any dtype, copied bit for bit) and clamp (min(max(x, lo), hi)
// with NaN propagation, lo > hi gives hi; every dtype but bool, f16/bf16 compared in f32), as the
// CPU kernels (src/backends/cpu/ternary.cpp). Generated elementwise kernels
// (elementwise_codegen.h); any rank.
#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/elementwise_ops.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

void ternary_kernel(KernelContext& ctx) {
  const DType in[3] = {ctx.inputs[0].dtype(), ctx.inputs[1].dtype(), ctx.inputs[2].dtype()};
  const DType out = ctx.outputs[0].dtype();
  const std::string args[3] = {"v0", "v1", "v2"};
  bool flag = false;
  ElementwiseSpec spec;
  spec.inputs = {in[0], in[1], in[2]};
  spec.outputs = {out};
  spec.exprs = {elementwise_expression(ctx.node.kind, in, out, args, ctx.op_name(), &flag)};
  TG_CHECK_INTERNAL(!spec.exprs[0].empty(), "ternary_kernel: not a ternary op");
  run_elementwise(ctx, spec, ctx.inputs.subspan(0, 3), ctx.outputs);
}

}  // namespace

void register_ternary_kernels(KernelTable& t) {
  t.set(ir::OpKind::select, ternary_kernel);
  t.set(ir::OpKind::clamp, ternary_kernel);
}

}  // namespace tg::cuda
