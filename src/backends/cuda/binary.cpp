// CUDA kernels of the elementwise binary family (NumPy broadcasting): generated elementwise
// kernels (elementwise_codegen.h) applying the tg_dev functors of device/elementwise.cuh, which
// mirror the CPU kernels (src/backends/cpu/binary.cpp): integer arithmetic wraps (MIN / -1 = MIN,
// MIN mod -1 = 0), NaN-propagating maximum/minimum, Python floor_mod/floor_div, f16/bf16 computed
// in f32 and rounded once. Integer div/mod/floor_div/floor_mod never divide by zero: the kernel
// sets a device flag that is read back after it (a host synchronization, only for these integer
// ops) and raises tg::Error(invalid_argument) "[op] integer division by zero".
// Dtypes as on the CPU: arithmetic every dtype but bool, pow/atan2 floating only, comparisons
// every dtype (bool output), logical ops bool only; any rank and broadcast.
#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/elementwise_ops.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

using K = ir::OpKind;

void binary_kernel(KernelContext& ctx) {
  const DType in[2] = {ctx.inputs[0].dtype(), ctx.inputs[1].dtype()};
  const DType out = ctx.outputs[0].dtype();
  const std::string args[2] = {"v0", "v1"};
  ElementwiseSpec spec;
  spec.inputs = {in[0], in[1]};
  spec.outputs = {out};
  spec.exprs = {elementwise_expression(ctx.node.kind, in, out, args, ctx.op_name(), &spec.uses_flag)};
  TG_CHECK_INTERNAL(!spec.exprs[0].empty(), "binary_kernel: not a binary op");
  run_elementwise(ctx, spec, ctx.inputs.subspan(0, 2), ctx.outputs);
}

}  // namespace

void register_binary_kernels(KernelTable& t) {
  for (K k : {K::add, K::sub, K::mul, K::div, K::pow, K::maximum, K::minimum, K::mod, K::floor_mod, K::floor_div,
              K::atan2, K::equal, K::not_equal, K::less, K::less_equal, K::greater, K::greater_equal,
              K::logical_and, K::logical_or, K::logical_xor}) {
    t.set(k, binary_kernel);
  }
}

}  // namespace tg::cuda
