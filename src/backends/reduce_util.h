// Host-side helper shared by the CPU and CUDA argmax/argmin kernels (backends/<backend>/reduce.cpp).
#pragma once
#include "backends/kernel.h"
#include "core/error_util.h"

namespace tg::backends {

/// x viewed as [outer, axis, inner] around the reduced axis of an ArgReduceDesc.
struct ArgReduceGeometry {
  int64_t outer = 1, axis = 1, inner = 1;
};

/// The geometry of ctx's argmax/argmin over ctx.inputs[0]; raises tg::Error(invalid_argument)
/// "[op] cannot reduce axis A of T" for an axis out of range or of size 0.
inline ArgReduceGeometry arg_reduce_geometry(const KernelContext& ctx) {
  const auto& desc = std::get<ArgReduceDesc>(ctx.node.attrs);
  const TensorData& in = ctx.inputs[0];
  const Shape& s = in.shape();
  if (desc.axis < 0 || desc.axis >= in.rank() || s[desc.axis] == 0) {
    fail(ErrorCode::invalid_argument, ctx.op_name(), "cannot reduce axis {} of {}", desc.axis,
         in.type().to_string());
  }
  ArgReduceGeometry g;
  g.axis = s[desc.axis];
  for (int64_t d = 0; d < desc.axis; ++d) g.outer *= s[d];
  for (int64_t d = desc.axis + 1; d < in.rank(); ++d) g.inner *= s[d];
  return g;
}

}  // namespace tg::backends
