// CUDA kernels of the shape / data-movement family, mirroring backends/cpu/shape.cpp:
// broadcast_to, transpose, slice, reverse and tile are strided views of their input (an offset
// and one source stride per output dim: 0 for a broadcast dim, negative for a reversed one),
// simplified (size-1 dims dropped, contiguous neighbours merged) and copied by
// kernels::copy_view (memcpy / vectorized rows / tiled transpose / generic); reshape returns a
// view of its input (no copy); pad maps every output element through the boundary rule; concat
// copies each input into its column range of the output rows. Any dtype (moved by element size).
// Limit: a view that still has more than kernels::kMaxViewDims dims after simplification (tile of
// rank > 6 with nothing mergeable) raises tg::Error(unsupported).
#include "backends/cuda/kernels/shape.h"

#include <cstring>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/strided_view.h"
#include "core/convert.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

using View = backends::StridedView;
using backends::simplify;

void copy_view(KernelContext& ctx, const TensorData& in, TensorData& out, const View& view) {
  if (out.num_elements() == 0) return;
  const View v = simplify(view);
  if (v.shape.size() > static_cast<size_t>(kernels::kMaxViewDims)) {
    fail(ErrorCode::unsupported, ctx.op_name(),
         "a strided copy of {} dims is not supported on CUDA (at most {})", v.shape.size(),
         kernels::kMaxViewDims);
  }
  kernels::StridedView sv;
  sv.rank = static_cast<int>(v.shape.size());
  sv.offset = v.offset;
  for (size_t i = 0; i < v.shape.size(); ++i) {
    sv.dims[i] = v.shape[i];
    sv.strides[i] = v.strides[i];
  }
  kernels::copy_view(ptr(in), ptr(out), static_cast<int>(dtype_size(in.dtype())), sv,
                     stream_of(ctx));
  check_launch(ctx.op_name(), "copy_view");
}

// broadcast_to, transpose, slice, reverse and tile: a copy of the op's strided view of its input
// (a slice of one contiguous block is that block itself: backends::bind_slice_view).
void view_kernel(KernelContext& ctx) {
  if (ctx.node.kind == ir::OpKind::slice && backends::bind_slice_view(ctx)) return;
  if (std::optional<View> v = backends::view_of(ctx)) copy_view(ctx, ctx.inputs[0], ctx.outputs[0], *v);
}

void reshape_kernel(KernelContext& ctx) {
  ctx.outputs[0] = ctx.inputs[0].reshaped(ctx.node.outputs[0].shape);  // a view: no copy
}

/// Each output row (the dims before axis) is the inputs' rows one after another.
void concat_kernel(KernelContext& ctx) {
  TensorData& out = ctx.outputs[0];
  const size_t axis = static_cast<size_t>(std::get<ir::ConcatAttrs>(ctx.node.attrs).axis);
  const Shape& shape = out.shape();
  const int64_t esize = static_cast<int64_t>(dtype_size(out.dtype()));
  int64_t outer = 1;
  for (size_t i = 0; i < axis; ++i) outer *= shape[i];
  const int64_t out_row = outer == 0 ? 0 : out.num_elements() / outer * esize;  // bytes
  if (out_row == 0) return;
  int64_t at = 0;
  for (const TensorData& x : ctx.inputs) {
    TG_CHECK_INTERNAL(x.dtype() == out.dtype() && x.rank() == out.rank(), "concat input type");
    const int64_t in_row = x.num_elements() / outer * esize;
    kernels::concat_piece(ptr(x), ptr(out), outer, in_row, out_row, at, stream_of(ctx));
    at += in_row;
  }
  TG_CHECK_INTERNAL(at == out_row, "concat inputs do not fill the output");
  check_launch(ctx.op_name(), "concat_piece");
}

void pad_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  const PadDesc& p = std::get<PadDesc>(ctx.node.attrs);
  if (y.num_elements() == 0) return;
  const size_t esize = dtype_size(x.dtype());
  if (x.rank() == 0) {
    check(cudaMemcpyAsync(ptr(y), ptr(x), esize, cudaMemcpyDeviceToDevice, stream_of(ctx)),
          ctx.op_name(), "cudaMemcpyAsync");
    return;
  }
  if (x.rank() > kernels::kMaxViewDims) {
    fail(ErrorCode::unsupported, ctx.op_name(),
         "pad of rank {} is not supported on CUDA (at most {})", x.rank(), kernels::kMaxViewDims);
  }
  kernels::PadParams pp;
  pp.rank = static_cast<int>(x.rank());
  pp.mode = static_cast<int>(p.mode);
  static_assert(static_cast<int>(PadMode::constant) == 0 &&
                static_cast<int>(PadMode::reflect) == 1 &&
                static_cast<int>(PadMode::symmetric) == 2 && static_cast<int>(PadMode::edge) == 3 &&
                static_cast<int>(PadMode::periodic) == 4);
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  for (size_t i = 0; i < x.shape().size(); ++i) {
    const int64_t dim = x.shape()[i];
    const bool padded = p.before[i] > 0 || p.after[i] > 0;
    if (padded && p.mode != PadMode::constant && dim < (p.mode == PadMode::reflect ? 2 : 1)) {
      fail(ErrorCode::invalid_argument, ctx.op_name(),
           "dim {} of {} is too small for this padding mode", i, str(x.shape()));
    }
    pp.out_dims[i] = y.shape()[i];
    pp.in_dims[i] = dim;
    pp.in_strides[i] = in_strides[i];
    pp.before[i] = p.before[i];
  }
  alignas(8) unsigned char value[8] = {};
  store_from_double(x.dtype(), value, 0, p.value);  // the builder checked that it fits
  std::memcpy(&pp.value, value, sizeof value);
  kernels::pad(ptr(x), ptr(y), static_cast<int>(esize), pp, stream_of(ctx));
  check_launch(ctx.op_name(), "pad");
}

}  // namespace

void register_shape_kernels(KernelTable& t) {
  using K = ir::OpKind;
  t.set(K::broadcast_to, view_kernel);
  t.set(K::reshape, reshape_kernel);
  t.set(K::transpose, view_kernel);
  t.set(K::slice, view_kernel);
  t.set(K::pad, pad_kernel);
  t.set(K::concat, concat_kernel);
  t.set(K::reverse, view_kernel);
  t.set(K::tile, view_kernel);
}

}  // namespace tg::cuda
