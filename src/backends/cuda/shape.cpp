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
#include "core/convert.h"
#include "core/error_util.h"
#include "ops/builder.h"

namespace tg::cuda {
namespace {

struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// Drops size-1 dims and merges neighbours contiguous in the source (as the CPU's simplify).
View simplify(const View& v) {
  View s{{}, {}, v.offset};
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (v.shape[i] == 1) continue;
    if (!s.shape.empty() && s.strides.back() == v.strides[i] * v.shape[i]) {
      s.shape.back() *= v.shape[i];
      s.strides.back() = v.strides[i];
    } else {
      s.shape.push_back(v.shape[i]);
      s.strides.push_back(v.strides[i]);
    }
  }
  if (s.shape.empty()) {
    s.shape = {1};
    s.strides = {1};
  }
  return s;
}

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

View identity_view(const TensorData& in) { return {in.shape(), row_major_strides(in.shape()), 0}; }

void broadcast_to_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const Shape& out = ctx.node.outputs[0].shape;
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  const size_t lead = out.size() - x.shape().size();
  View v{out, std::vector<int64_t>(out.size(), 0), 0};
  for (size_t i = lead; i < out.size(); ++i) {
    int64_t d = x.shape()[i - lead];
    if (d != out[i] && d != 1) {
      fail(ErrorCode::shape_mismatch, ctx.op_name(), "cannot broadcast {} to {}", str(x.shape()),
           str(out));
    }
    v.strides[i] = d == 1 ? 0 : in_strides[i - lead];
  }
  copy_view(ctx, x, ctx.outputs[0], v);
}

void reshape_kernel(KernelContext& ctx) {
  ctx.outputs[0] = ctx.inputs[0].reshaped(ctx.node.outputs[0].shape);  // a view: no copy
}

void transpose_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const auto& perm = std::get<ir::TransposeAttrs>(ctx.node.attrs).perm;
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  View v{ctx.node.outputs[0].shape, {}, 0};
  for (int64_t p : perm) v.strides.push_back(in_strides[static_cast<size_t>(p)]);
  copy_view(ctx, x, ctx.outputs[0], v);
}

void slice_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const SliceDesc& d = std::get<SliceDesc>(ctx.node.attrs);
  View v = identity_view(x);
  const std::vector<int64_t> in_strides = v.strides;
  for (size_t i = 0; i < d.axes.size(); ++i) {
    const size_t axis = static_cast<size_t>(d.axes[i]);
    int64_t start = 0, length = 0;
    ops::resolve_slice_dim(d.begin[i], d.end[i], d.strides[i], x.shape()[axis], &start, &length);
    v.shape[axis] = length;
    if (length == 0) return;
    v.offset += start * in_strides[axis];
    v.strides[axis] = length == 1 ? 0 : d.strides[i] * in_strides[axis];
  }
  TG_CHECK_INTERNAL(v.shape == ctx.outputs[0].shape(),
                    "slice shape differs from its inferred type");
  copy_view(ctx, x, ctx.outputs[0], v);
}

void reverse_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  View v = identity_view(x);
  for (int64_t a : std::get<ir::ReverseAttrs>(ctx.node.attrs).axes) {
    const size_t axis = static_cast<size_t>(a);
    if (v.shape[axis] == 0) return;
    v.offset += (v.shape[axis] - 1) * v.strides[axis];
    v.strides[axis] = -v.strides[axis];
  }
  copy_view(ctx, x, ctx.outputs[0], v);
}

/// tile is the view [m0, d0, m1, d1, ...] with strides [0, s0, 0, s1, ...].
void tile_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const auto& m = std::get<ir::TileAttrs>(ctx.node.attrs).multiples;
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  View v;
  for (size_t i = 0; i < m.size(); ++i) {
    v.shape.insert(v.shape.end(), {m[i], x.shape()[i]});
    v.strides.insert(v.strides.end(), {0, in_strides[i]});
  }
  copy_view(ctx, x, ctx.outputs[0], v);
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
  t.set(K::broadcast_to, broadcast_to_kernel);
  t.set(K::reshape, reshape_kernel);
  t.set(K::transpose, transpose_kernel);
  t.set(K::slice, slice_kernel);
  t.set(K::pad, pad_kernel);
  t.set(K::concat, concat_kernel);
  t.set(K::reverse, reverse_kernel);
  t.set(K::tile, tile_kernel);
}

}  // namespace tg::cuda
