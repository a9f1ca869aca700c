// Gather and scatter ops (gather, gather_nd, gather_elements, scatter_nd, scatter_elements):
// dtype/shape rules and builders. Builders normalize axes and batch_dims to non-negative values;
// the InferFns re-check every attribute (they also run at compile time with concrete shapes).
#include "ops/builder.h"

namespace tg {
namespace {

using Op = std::string_view;

void check_index_dtype(const TensorType& indices, Op op) {
  if (indices.dtype != DType::i32 && indices.dtype != DType::i64) {
    fail(ErrorCode::dtype_mismatch, op, "indices must be i32 or i64, got {}", indices.to_string());
  }
}

// Dims a and b agree unless both are sizes and differ (symbols are checked once bound).
bool dims_agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }
// The merged dim of two agreeing dims (a size over a symbol over -1; see unify_dims).
int64_t merge_dim(int64_t a, int64_t b) {
  int64_t out = a;
  ops::unify_dims(a, b, out);
  return out;
}

// Checks that the first `batch_dims` dims of x and indices agree; returns the merged dims.
Shape check_batch_dims(const TensorType& x, const TensorType& indices, int64_t batch_dims, Op op) {
  Shape out;
  for (int64_t d = 0; d < batch_dims; ++d) {
    int64_t a = x.shape[static_cast<size_t>(d)], b = indices.shape[static_cast<size_t>(d)];
    if (!dims_agree(a, b)) {
      fail(ErrorCode::shape_mismatch, op,
           "batch dim {} of x is {} but of indices is {} (x {}, indices {})", d, a, b, str(x.shape),
           str(indices.shape));
    }
    out.push_back(merge_dim(a, b));
  }
  return out;
}

// Checks indices.shape[d] <= x.shape[d] for every d != axis (gather_elements, scatter_elements).
void check_elements_shapes(const TensorType& x, const TensorType& indices, int64_t axis, Op op,
                           std::string_view x_name) {
  if (indices.rank() != x.rank()) {
    fail(ErrorCode::shape_mismatch, op,
         "indices must have the rank of {} ({}), got {} ({} {}, indices {})", x_name, x.rank(),
         indices.rank(), x_name, str(x.shape), str(indices.shape));
  }
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t xd = x.shape[static_cast<size_t>(d)], id = indices.shape[static_cast<size_t>(d)];
    if (d != axis && xd >= 0 && id >= 0 && id > xd) {
      fail(ErrorCode::shape_mismatch, op,
           "dim {} of indices is {}, larger than {} of {} ({} {}, indices {})", d, id, xd, x_name,
           x_name, str(x.shape), str(indices.shape));
    }
  }
}

void check_axis(int64_t axis, int64_t rank, Op op) {
  if (axis < 0 || axis >= rank) {
    fail(ErrorCode::invalid_argument, op, "axis {} is out of range for rank {}", axis, rank);
  }
}

// The static last dim K of nd indices; raises when indices is a scalar or K is dynamic.
int64_t index_depth(const TensorType& indices, Op op) {
  if (indices.rank() < 1) {
    fail(ErrorCode::shape_mismatch, op, "indices must have rank >= 1, got {}", indices.to_string());
  }
  int64_t k = indices.shape.back();
  if (k < 0) {
    fail(ErrorCode::invalid_argument, op, "the last dim of indices must be static, got {}",
         indices.to_string());
  }
  return k;
}

std::vector<TensorType> infer_gather(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<GatherDesc>(node.attrs);
  const TensorType &x = in[0], &indices = in[1];
  Op op = "gather";
  check_index_dtype(indices, op);
  check_axis(a.axis, x.rank(), op);
  if (a.batch_dims < 0 || a.batch_dims > indices.rank() || a.batch_dims > a.axis) {
    fail(ErrorCode::invalid_argument, op,
         "batch_dims {} must be in [0, min(indices rank {}, axis {})] (x {}, indices {})",
         a.batch_dims, indices.rank(), a.axis, str(x.shape), str(indices.shape));
  }
  Shape out = check_batch_dims(x, indices, a.batch_dims, op);
  out.insert(out.end(), x.shape.begin() + a.batch_dims, x.shape.begin() + a.axis);
  out.insert(out.end(), indices.shape.begin() + a.batch_dims, indices.shape.end());
  out.insert(out.end(), x.shape.begin() + a.axis + 1, x.shape.end());
  return {{out, x.dtype}};
}

std::vector<TensorType> infer_gather_nd(const ir::Node& node, std::span<const TensorType> in) {
  const auto& a = std::get<GatherNdDesc>(node.attrs);
  const TensorType &x = in[0], &indices = in[1];
  Op op = "gather_nd";
  check_index_dtype(indices, op);
  int64_t k = index_depth(indices, op);
  if (a.batch_dims < 0 || a.batch_dims >= indices.rank() || a.batch_dims > x.rank()) {
    fail(ErrorCode::invalid_argument, op, "batch_dims {} must be in [0, {}) (x {}, indices {})",
         a.batch_dims, std::min(indices.rank(), x.rank() + 1), str(x.shape), str(indices.shape));
  }
  if (k > x.rank() - a.batch_dims) {
    fail(ErrorCode::shape_mismatch, op,
         "indices.shape[-1] = {} exceeds rank of x ({}) minus batch_dims ({}) (x {}, indices {})",
         k, x.rank(), a.batch_dims, str(x.shape), str(indices.shape));
  }
  Shape out = check_batch_dims(x, indices, a.batch_dims, op);
  out.insert(out.end(), indices.shape.begin() + a.batch_dims, indices.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + a.batch_dims + k, x.shape.end());
  return {{out, x.dtype}};
}

std::vector<TensorType> infer_gather_elements(const ir::Node& node,
                                              std::span<const TensorType> in) {
  const auto& a = std::get<GatherElementsDesc>(node.attrs);
  const TensorType &x = in[0], &indices = in[1];
  Op op = "gather_elements";
  check_index_dtype(indices, op);
  check_axis(a.axis, x.rank(), op);
  check_elements_shapes(x, indices, a.axis, op, "x");
  return {{indices.shape, x.dtype}};
}

void check_updates_dtype(const TensorType& data, const TensorType& updates, Op op) {
  if (updates.dtype != data.dtype) {
    fail(ErrorCode::dtype_mismatch, op, "updates dtype differs from data: {} and {} (use cast)",
         data.to_string(), updates.to_string());
  }
}

void check_reduction(ScatterReduction r, Op op) {
  if (r != ScatterReduction::none && r != ScatterReduction::add && r != ScatterReduction::mul &&
      r != ScatterReduction::min && r != ScatterReduction::max) {
    fail(ErrorCode::invalid_argument, op, "unknown reduction {}", static_cast<int>(r));
  }
}

std::vector<TensorType> infer_scatter_nd(const ir::Node& node, std::span<const TensorType> in) {
  const TensorType &data = in[0], &indices = in[1], &updates = in[2];
  Op op = "scatter_nd";
  check_reduction(std::get<ScatterNdDesc>(node.attrs).reduction, op);
  check_index_dtype(indices, op);
  check_updates_dtype(data, updates, op);
  int64_t k = index_depth(indices, op);
  if (k > data.rank()) {
    fail(ErrorCode::shape_mismatch, op,
         "indices.shape[-1] = {} exceeds the rank of data ({}) (data {}, indices {})", k,
         data.rank(), str(data.shape), str(indices.shape));
  }
  Shape want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), data.shape.begin() + k, data.shape.end());
  bool ok = want.size() == updates.shape.size();
  for (size_t d = 0; ok && d < want.size(); ++d) ok = dims_agree(want[d], updates.shape[d]);
  if (!ok) {
    fail(ErrorCode::shape_mismatch, op,
         "updates shape {} must be indices.shape[:-1] + data.shape[{}:] = {} (data {}, indices {})",
         str(updates.shape), k, str(want), str(data.shape), str(indices.shape));
  }
  return {data};
}

std::vector<TensorType> infer_scatter_elements(const ir::Node& node,
                                               std::span<const TensorType> in) {
  const auto& a = std::get<ScatterElementsDesc>(node.attrs);
  const TensorType &data = in[0], &indices = in[1], &updates = in[2];
  Op op = "scatter_elements";
  check_reduction(a.reduction, op);
  check_index_dtype(indices, op);
  check_updates_dtype(data, updates, op);
  check_axis(a.axis, data.rank(), op);
  bool same = indices.rank() == updates.rank();
  for (size_t d = 0; same && d < indices.shape.size(); ++d)
    same = dims_agree(indices.shape[d], updates.shape[d]);
  if (!same) {
    fail(ErrorCode::shape_mismatch, op, "indices and updates shapes differ: {} and {}",
         str(indices.shape), str(updates.shape));
  }
  check_elements_shapes(data, indices, a.axis, op, "data");
  return {data};
}

}  // namespace

namespace ops {
void register_gather_ops(OpRegistry& r) {
  r.set(ir::OpKind::gather, infer_gather);
  r.set(ir::OpKind::gather_nd, infer_gather_nd);
  r.set(ir::OpKind::gather_elements, infer_gather_elements);
  r.set(ir::OpKind::scatter_nd, infer_scatter_nd);
  r.set(ir::OpKind::scatter_elements, infer_scatter_elements);
}
}  // namespace ops

Tensor gather(Tensor x, Tensor indices, GatherDesc desc) {
  if (x.valid() && indices.valid()) {
    desc.axis = ops::normalize_axis(desc.axis, x.rank(), "gather");
    int64_t q = indices.rank();
    if (desc.batch_dims < -q || desc.batch_dims > q) {
      fail(ErrorCode::invalid_argument, "gather",
           "batch_dims {} is out of range for indices rank {}", desc.batch_dims, q);
    }
    if (desc.batch_dims < 0) desc.batch_dims += q;
  }
  return ops::make_op(ir::OpKind::gather, {x, indices}, desc);
}

Tensor gather_nd(Tensor x, Tensor indices, GatherNdDesc desc) {
  return ops::make_op(ir::OpKind::gather_nd, {x, indices}, desc);
}

Tensor gather_elements(Tensor x, Tensor indices, GatherElementsDesc desc) {
  if (x.valid()) desc.axis = ops::normalize_axis(desc.axis, x.rank(), "gather_elements");
  return ops::make_op(ir::OpKind::gather_elements, {x, indices}, desc);
}

Tensor scatter_nd(Tensor data, Tensor indices, Tensor updates, ScatterNdDesc desc) {
  return ops::make_op(ir::OpKind::scatter_nd, {data, indices, updates}, desc);
}

Tensor scatter_elements(Tensor data, Tensor indices, Tensor updates, ScatterElementsDesc desc) {
  if (data.valid()) desc.axis = ops::normalize_axis(desc.axis, data.rank(), "scatter_elements");
  return ops::make_op(ir::OpKind::scatter_elements, {data, indices, updates}, desc);
}

}  // namespace tg
