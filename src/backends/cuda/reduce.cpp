// CUDA kernels of the reduce family: reduce_sum/prod/max/min/and/or over any axes (keep_dims
// only changes the output's shape, not its layout) and argmax/argmin over one axis (int64
// indices). Semantics and dtypes exactly as backends/cpu/reduce.cpp (accumulation types, NaN,
// integer wrap-around, empty reductions give the identity); the kernels and their mapping are
// described in kernels/reduce.cu. Here: dtype checks, dim grouping (adjacent reduced / kept dims
// merged, size-1 dims dropped), the empty and nothing-reduced cases, and scratch buffers from the
// run's workspace (declared scratch).
#include "backends/cuda/kernels/reduce.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/scalar_type.h"
#include "backends/reduce_util.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

using ir::OpKind;
using kernels::ReduceKind;
using kernels::ScalarType;


/// Scratch of one kernel call, from the run's workspace.
struct Scratch {
  KernelContext& ctx;
  kernels::ScratchFn fn() {
    return [this](size_t bytes) { return workspace_of(ctx, std::max<size_t>(bytes, 1)); };
  }
};

std::vector<kernels::ReduceGroup> coalesce(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<kernels::ReduceGroup> groups;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (shape[d] == 1) continue;
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!groups.empty() && groups.back().reduced == reduced)
      groups.back().size *= shape[d];
    else
      groups.push_back({shape[d], reduced});
  }
  return groups;
}

template <ReduceKind K, cpu::DTypeGroup G>
void value_kernel(KernelContext& ctx) {
  const auto& desc = std::get<ReduceDesc>(ctx.node.attrs);
  const TensorData& in = ctx.inputs[0];
  TensorData& out = ctx.outputs[0];
  cpu::dispatch<G>(in.dtype(), ctx.op_name(), [](auto) {});  // raises for an unsupported dtype
  const ScalarType type = scalar_type(in.dtype());
  cudaStream_t stream = stream_of(ctx);
  if (out.num_elements() == 0) return;
  if (in.num_elements() == 0) {
    kernels::reduce_fill_identity(K, type, ptr(out), out.num_elements(), stream);
    check_launch(ctx.op_name(), "reduce_fill_identity");
    return;
  }
  std::vector<kernels::ReduceGroup> groups = coalesce(in.shape(), desc.axes);
  if (std::none_of(groups.begin(), groups.end(), [](const auto& g) { return g.reduced; })) {
    // Only size-1 dims (or none) reduced: the output is a copy.
    check(cudaMemcpyAsync(ptr(out), ptr(in), out.nbytes(), cudaMemcpyDeviceToDevice, stream),
          ctx.op_name(), "cudaMemcpyAsync");
    return;
  }
  Scratch scratch{ctx};
  kernels::reduce(K, type, ptr(in), ptr(out), std::move(groups), context_of(ctx).sm_count,
                  scratch.fn(), stream);
  check_launch(ctx.op_name(), "reduce");
}

template <ReduceKind K>
void arg_kernel(KernelContext& ctx) {
  const TensorData& in = ctx.inputs[0];
  const backends::ArgReduceGeometry geo = backends::arg_reduce_geometry(ctx);
  if (geo.outer * geo.inner == 0) return;
  cpu::dispatch<cpu::DTypeGroup::all>(in.dtype(), ctx.op_name(), [](auto) {});
  Scratch scratch{ctx};
  kernels::reduce(K, scalar_type(in.dtype()), ptr(in), ptr(ctx.outputs[0]),
                  {{geo.outer, false}, {geo.axis, true}, {geo.inner, false}}, context_of(ctx).sm_count,
                  scratch.fn(), stream_of(ctx));
  check_launch(ctx.op_name(), "reduce");
}

}  // namespace

void register_reduce_kernels(KernelTable& t) {
  using G = cpu::DTypeGroup;
  t.set(OpKind::reduce_sum, value_kernel<ReduceKind::sum, G::numeric>);
  t.set(OpKind::reduce_prod, value_kernel<ReduceKind::prod, G::numeric>);
  t.set(OpKind::reduce_max, value_kernel<ReduceKind::max, G::numeric>);
  t.set(OpKind::reduce_min, value_kernel<ReduceKind::min, G::numeric>);
  t.set(OpKind::reduce_and, value_kernel<ReduceKind::all, G::boolean>);
  t.set(OpKind::reduce_or, value_kernel<ReduceKind::any, G::boolean>);
  t.set(OpKind::argmax, arg_kernel<ReduceKind::argmax>);
  t.set(OpKind::argmin, arg_kernel<ReduceKind::argmin>);
}

}  // namespace tg::cuda
