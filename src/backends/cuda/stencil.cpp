// CUDA kernel of the stencil op (semantics of backends/cpu/stencil.cpp: window rank 1..4 over the
// last dims, strides, dilations, explicit/valid/same padding, every boundary mode, reductions
// sum/product/min/max/argmin/argmax; numeric dtypes). Here: the geometry (as the CPU's Plan,
// with its errors) and the boundary value. The kernel is the generated tiled one
// (stencil_codegen.h: shared-memory tiles with halos, one NVRTC kernel per window shape,
// strides, dilations, reduction, boundary mode and dtype); windows it cannot tile (over 343 taps,
// tiles over 40 KB) run the generic thread-per-output kernel of kernels/stencil.cu.
#include "backends/cuda/kernels/stencil.h"
#include "backends/cuda/stencil_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/dispatch.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/scalar_type.h"
#include "backends/stencil_util.h"
#include "core/error_util.h"
#include "ops/boundary.h"

namespace tg::cuda {
namespace {

using kernels::ScalarType;


/// The CPU's boundary_value: the constant in the compute type, rounded to the storage type.
template <typename T>
cpu::compute_t<T> boundary_value(const StencilDesc& d) {
  using C = cpu::compute_t<T>;
  if (d.boundary_mode != BoundaryMode::constant) return C(0);
  double c = d.padding_constant;
  if constexpr (std::is_same_v<C, float>) {
    constexpr double kMax = std::numeric_limits<float>::max();
    if (c > kMax || c < -kMax) c = c > 0 ? HUGE_VAL : -HUGE_VAL;
    return static_cast<C>(static_cast<T>(static_cast<float>(c)));
  } else {
    return static_cast<C>(c);
  }
}

// The geometry (p) and the tiled kernel's spec and sizes; false when the tiled kernel does not fit.
bool plan(const StencilDesc& d, const Shape& xs, const Shape& ws, const Shape& ys, DType dtype, const char* op,
          kernels::StencilParams& p, TiledStencilSpec& spec, TiledStencilSizes& sizes) {
  p.mode = static_cast<int>(d.boundary_mode);
  p.reduction = static_cast<int>(d.reduction);
  static_assert(static_cast<int>(BoundaryMode::zero) == 0 &&
                static_cast<int>(BoundaryMode::constant) == 1 &&
                static_cast<int>(BoundaryMode::reflect) == 2 &&
                static_cast<int>(BoundaryMode::symmetric) == 3 &&
                static_cast<int>(BoundaryMode::clamp_to_edge) == 4 &&
                static_cast<int>(BoundaryMode::periodic) == 5);
  static_assert(static_cast<int>(StencilReduction::sum) == 0 &&
                static_cast<int>(StencilReduction::product) == 1 &&
                static_cast<int>(StencilReduction::min) == 2 &&
                static_cast<int>(StencilReduction::max) == 3 &&
                static_cast<int>(StencilReduction::argmin) == 4 &&
                static_cast<int>(StencilReduction::argmax) == 5);
  backends::stencil_geometry(p, xs, ws, ys, kernels::kMaxStencilRank);
  const size_t lead = xs.size() - ws.size();
  if (p.batch * p.out_block == 0) return false;
  for (int i = 0; i < p.k; ++i) {
    const int64_t in = xs[lead + i];
    if (in == 0 && d.boundary_mode != BoundaryMode::zero &&
        d.boundary_mode != BoundaryMode::constant) {
      fail(ErrorCode::invalid_argument, op, "window dim {} of the source is empty: nothing to read", i);
    }
    p.in[i] = in;
    p.stride[i] = d.strides.at(i);
    p.dilation[i] = d.dilations.at(i);
    p.before[i] = ops::stencil_pad_before(d, static_cast<size_t>(i), in, p.out[i], p.win[i]);
  }
  cpu::dispatch<cpu::DTypeGroup::numeric>(dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const cpu::compute_t<T> c = boundary_value<T>(d);
    static_assert(sizeof(c) <= sizeof(p.boundary));
    std::memcpy(&p.boundary, &c, sizeof(c));
  });
  // The tiled kernel: window dims padded to 4 (leading dims of size 1).
  spec.dtype = dtype;
  spec.reduction = p.reduction;
  spec.mode = p.mode;
  sizes.batch = p.batch;
  sizes.boundary_bits = p.boundary;
  bool fits = true;
  for (int i = 0; i < p.k; ++i) {
    const size_t j = static_cast<size_t>(4 - p.k + i);
    fits = fits && p.win[i] <= 4096 && p.stride[i] <= 4096 && p.dilation[i] <= 4096;
    spec.win[j] = static_cast<int>(std::min<int64_t>(p.win[i], 4097));
    spec.stride[j] = static_cast<int>(std::min<int64_t>(p.stride[i], 4097));
    spec.dilation[j] = static_cast<int>(std::min<int64_t>(p.dilation[i], 4097));
    sizes.in[j] = p.in[i];
    sizes.out[j] = p.out[i];
    sizes.before[j] = p.before[i];
  }
  return fits && plan_tiled_stencil(spec, p.k, sizes);
}

void stencil_kernel(KernelContext& ctx) {
  const auto& d = std::get<StencilDesc>(ctx.node.attrs);
  kernels::StencilParams p;
  TiledStencilSpec spec;
  TiledStencilSizes sizes;
  const bool tiled = plan(d, ctx.inputs[0].shape(), ctx.inputs[1].shape(), ctx.outputs[0].shape(),
                          ctx.inputs[0].dtype(), ctx.op_name(), p, spec, sizes);
  if (p.batch * p.out_block == 0) return;
  if (tiled) {
    run_tiled_stencil(ctx, spec, sizes, ptr(ctx.inputs[0]), ptr(ctx.inputs[1]), ptr(ctx.outputs[0]));
    return;
  }
  kernels::stencil(scalar_type(ctx.inputs[0].dtype()), ptr(ctx.inputs[0]), ptr(ctx.inputs[1]),
                   ptr(ctx.outputs[0]), p, stream_of(ctx));
  check_launch(ctx.op_name(), "stencil");
}

}  // namespace

bool plan_stencil_op(const StencilDesc& desc, const Shape& xs, const Shape& ws, const Shape& ys, DType dtype,
                     const char* op, TiledStencilSpec& spec, TiledStencilSizes& sizes, bool& empty) {
  kernels::StencilParams p;
  const bool tiled = plan(desc, xs, ws, ys, dtype, op, p, spec, sizes);
  empty = p.batch * p.out_block == 0;
  return tiled;
}

void register_stencil_kernels(KernelTable& t) { t.set(ir::OpKind::stencil, stencil_kernel); }

}  // namespace tg::cuda
