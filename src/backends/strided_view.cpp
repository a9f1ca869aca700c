#include "backends/strided_view.h"

#include "core/error_util.h"
#include "ops/slice.h"

namespace tg::backends {

StridedView simplify(const StridedView& v) {
  StridedView s{{}, {}, v.offset};
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

namespace {

using K = ir::OpKind;

StridedView identity_view(const TensorData& in) { return {in.shape(), row_major_strides(in.shape()), 0}; }

StridedView broadcast_view(const KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const Shape& out = ctx.node.outputs[0].shape;
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  const size_t lead = out.size() - x.shape().size();
  StridedView v{out, std::vector<int64_t>(out.size(), 0), 0};
  for (size_t i = lead; i < out.size(); ++i) {
    int64_t d = x.shape()[i - lead];
    if (d != out[i] && d != 1) {
      fail(ErrorCode::shape_mismatch, ctx.op_name(), "cannot broadcast {} to {}", str(x.shape()), str(out));
    }
    v.strides[i] = d == 1 ? 0 : in_strides[i - lead];
  }
  return v;
}

StridedView transpose_view(const KernelContext& ctx) {
  const auto& perm = std::get<ir::TransposeAttrs>(ctx.node.attrs).perm;
  const std::vector<int64_t> in_strides = row_major_strides(ctx.inputs[0].shape());
  StridedView v{ctx.node.outputs[0].shape, {}, 0};
  for (int64_t p : perm) v.strides.push_back(in_strides[static_cast<size_t>(p)]);
  return v;
}

std::optional<StridedView> slice_view(const KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const SliceDesc& d = std::get<SliceDesc>(ctx.node.attrs);
  StridedView v = identity_view(x);
  const std::vector<int64_t> in_strides = v.strides;
  for (size_t i = 0; i < d.axes.size(); ++i) {
    const size_t axis = static_cast<size_t>(d.axes[i]);
    int64_t start = 0, length = 0;
    ops::resolve_slice_dim(d.begin[i], d.end[i], d.strides[i], x.shape()[axis], &start, &length);
    v.shape[axis] = length;
    if (length == 0) return std::nullopt;  // nothing to copy
    v.offset += start * in_strides[axis];
    // (length - 1) * stride stays inside the dim, so the product cannot overflow unless length
    // is 1.
    v.strides[axis] = length == 1 ? 0 : d.strides[i] * in_strides[axis];
  }
  TG_CHECK_INTERNAL(v.shape == ctx.outputs[0].shape(), "slice shape differs from its inferred type");
  return v;
}

std::optional<StridedView> reverse_view(const KernelContext& ctx) {
  StridedView v = identity_view(ctx.inputs[0]);
  for (int64_t a : std::get<ir::ReverseAttrs>(ctx.node.attrs).axes) {
    const size_t axis = static_cast<size_t>(a);
    if (v.shape[axis] == 0) return std::nullopt;
    v.offset += (v.shape[axis] - 1) * v.strides[axis];
    v.strides[axis] = -v.strides[axis];
  }
  return v;
}

/// tile is the view [m0, d0, m1, d1, ...] with strides [0, s0, 0, s1, ...], whose row-major order
/// is the output's [m0*d0, m1*d1, ...].
StridedView tile_view(const KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  const auto& m = std::get<ir::TileAttrs>(ctx.node.attrs).multiples;
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  StridedView v;
  for (size_t i = 0; i < m.size(); ++i) {
    v.shape.insert(v.shape.end(), {m[i], x.shape()[i]});
    v.strides.insert(v.strides.end(), {0, in_strides[i]});
  }
  return v;
}

}  // namespace

std::optional<StridedView> view_of(const KernelContext& ctx) {
  switch (ctx.node.kind) {
    case K::broadcast_to: return broadcast_view(ctx);
    case K::transpose: return transpose_view(ctx);
    case K::slice: return slice_view(ctx);
    case K::reverse: return reverse_view(ctx);
    case K::tile: return tile_view(ctx);
    default: fail(ErrorCode::internal, ctx.op_name(), "not a strided-view op");
  }
}

bool bind_slice_view(KernelContext& ctx) {
  TensorData& out = ctx.outputs[0];
  if (!out.empty()) return false;
  const TensorType& t = ctx.node.outputs[0];
  const TensorData& x = ctx.inputs[0];
  if (const std::optional<int64_t> offset = ops::slice_view_offset(ctx.node)) {
    const int64_t end = *offset + num_elements(t.shape) * static_cast<int64_t>(dtype_size(t.dtype));
    TG_CHECK_INTERNAL(x.dtype() == t.dtype && end <= static_cast<int64_t>(x.nbytes()), "slice view outside its input");
    auto* base = static_cast<char*>(const_cast<void*>(x.storage_ptr()));
    out = TensorData::from_external(base + *offset, t.shape, t.dtype, x.device(), x.storage());
    return true;
  }
  out = TensorData(t.shape, t.dtype, x.device());
  return false;
}

}  // namespace tg::backends
