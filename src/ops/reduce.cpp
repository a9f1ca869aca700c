// The reduce op family: dtype/shape rules and builders, plus the composites reduce_mean and
// reduce_variance (built from reduce_sum and elementwise ops; they have no ops.def row).
#include "ops/builder.h"

namespace tg {
namespace {

using ir::OpKind;

bool is_logical(OpKind k) { return k == OpKind::reduce_and || k == OpKind::reduce_or; }

void check_reduce_dtype(OpKind k, const TensorType& x) {
  std::string_view op = ir::op_name(k);
  if (is_logical(k)) {
    if (x.dtype != DType::bool_) {
      fail(ErrorCode::dtype_mismatch, op, "needs a bool input, got {}", x.to_string());
    }
  } else if (!is_numeric(x.dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "needs a numeric input, got {} (use cast)", x.to_string());
  }
}

// Attributes come normalized from the builders; re-checked here because inference is the
// op's contract (a node may be built by other code than the builders).
void check_axes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1])) {
      fail(ErrorCode::invalid_argument, op, "axes [{}] are not sorted, unique and in [0, {})",
           fmt::join(axes, ","), rank);
    }
  }
}

std::vector<TensorType> infer_reduce(const ir::Node& node, std::span<const TensorType> in) {
  const TensorType& x = in[0];
  std::string_view op = ir::op_name(node.kind);
  check_reduce_dtype(node.kind, x);
  const auto& desc = std::get<ReduceDesc>(node.attrs);
  check_axes(desc.axes, x.rank(), op);
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool reduced = next < desc.axes.size() && desc.axes[next] == d;
    if (reduced) ++next;
    if (!reduced) out.push_back(x.shape[d]);
    else if (desc.keep_dims) out.push_back(1);
  }
  return {{out, x.dtype}};
}

std::vector<TensorType> infer_arg_reduce(const ir::Node& node, std::span<const TensorType> in) {
  const TensorType& x = in[0];
  std::string_view op = ir::op_name(node.kind);
  const auto& desc = std::get<ArgReduceDesc>(node.attrs);
  if (desc.axis < 0 || desc.axis >= x.rank()) {
    fail(ErrorCode::invalid_argument, op, "axis {} is out of range for rank {} (input {})",
         desc.axis, x.rank(), x.to_string());
  }
  if (x.shape[desc.axis] == 0) {
    fail(ErrorCode::invalid_argument, op, "cannot reduce the empty axis {} (input {})", desc.axis,
         x.to_string());
  }
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != desc.axis) out.push_back(x.shape[d]);
    else if (desc.keep_dims) out.push_back(1);
  }
  return {{out, DType::i64}};
}

void check_input(const Tensor& x, std::string_view op) {
  if (!x.valid()) fail(ErrorCode::invalid_argument, op, "input 0 is an empty Tensor");
}

// Normalized, sorted axes; every dim when the user gave none.
ReduceDesc normalized(const Tensor& x, ReduceDesc desc, std::string_view op) {
  check_input(x, op);
  std::vector<int64_t> axes = ops::normalize_axes(desc.axes, x.rank(), op);
  if (desc.axes.empty()) {
    for (int64_t d = 0; d < x.rank(); ++d) axes.push_back(d);
  }
  return {std::move(axes), desc.keep_dims};
}

Tensor build_reduce(OpKind kind, Tensor x, ReduceDesc desc) {
  ReduceDesc n = normalized(x, std::move(desc), ir::op_name(kind));
  return ops::make_op(kind, {x}, std::move(n));
}

Tensor build_arg_reduce(OpKind kind, Tensor x, ArgReduceDesc desc) {
  std::string_view op = ir::op_name(kind);
  check_input(x, op);
  desc.axis = ops::normalize_axis(desc.axis, x.rank(), op);
  return ops::make_op(kind, {x}, desc);
}

// Checks a composite's input and returns its normalized descriptor.
ReduceDesc composite_desc(const Tensor& x, ReduceDesc desc, std::string_view op) {
  check_input(x, op);
  if (!is_floating(x.dtype())) {
    fail(ErrorCode::dtype_mismatch, op, "needs a floating input, got {} (use cast)",
         x.type().to_string());
  }
  return normalized(x, std::move(desc), op);
}

bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

// Mean of x (f32 or f64) over the normalized axes. The element count comes from the static
// shape; when a reduced dim is dynamic it is computed at run time as the sum of a tensor of ones.
Tensor mean_impl(Tensor x, const ReduceDesc& desc) {
  Tensor sum = reduce_sum(x, desc);
  int64_t count = 1;
  bool dynamic = false;
  for (int64_t a : desc.axes) {
    if (x.shape()[a] < 0) dynamic = true;
    else count *= x.shape()[a];
  }
  if (!dynamic) return sum / static_cast<double>(count);
  Tensor ones = cast(is_nan(x), x.dtype()) * 0.0 + 1.0;  // is_nan is 0/1: never NaN or inf
  return sum / reduce_sum(ones, desc);
}

}  // namespace

namespace ops {
void register_reduce_ops(OpRegistry& r) {
  for (OpKind k : {OpKind::reduce_sum, OpKind::reduce_prod, OpKind::reduce_max, OpKind::reduce_min,
                   OpKind::reduce_and, OpKind::reduce_or}) {
    r.set(k, infer_reduce);
  }
  r.set(OpKind::argmax, infer_arg_reduce);
  r.set(OpKind::argmin, infer_arg_reduce);
}
}  // namespace ops

Tensor reduce_sum(Tensor x, ReduceDesc desc) { return build_reduce(OpKind::reduce_sum, x, std::move(desc)); }
Tensor reduce_prod(Tensor x, ReduceDesc desc) { return build_reduce(OpKind::reduce_prod, x, std::move(desc)); }
Tensor reduce_max(Tensor x, ReduceDesc desc) { return build_reduce(OpKind::reduce_max, x, std::move(desc)); }
Tensor reduce_min(Tensor x, ReduceDesc desc) { return build_reduce(OpKind::reduce_min, x, std::move(desc)); }
Tensor reduce_and(Tensor x, ReduceDesc desc) { return build_reduce(OpKind::reduce_and, x, std::move(desc)); }
Tensor reduce_or(Tensor x, ReduceDesc desc) { return build_reduce(OpKind::reduce_or, x, std::move(desc)); }
Tensor argmax(Tensor x, ArgReduceDesc desc) { return build_arg_reduce(OpKind::argmax, x, desc); }
Tensor argmin(Tensor x, ArgReduceDesc desc) { return build_arg_reduce(OpKind::argmin, x, desc); }

Tensor reduce_mean(Tensor x, ReduceDesc desc) {
  ReduceDesc n = composite_desc(x, std::move(desc), "reduce_mean");
  if (!is_half(x.dtype())) return mean_impl(x, n);
  // f16/bf16: computed in f32 so that the sum cannot overflow the 16-bit range.
  return cast(mean_impl(cast(x, DType::f32), n), x.dtype());
}

Tensor reduce_variance(Tensor x, ReduceDesc desc) {
  ReduceDesc n = composite_desc(x, std::move(desc), "reduce_variance");
  DType dtype = x.dtype();
  if (is_half(dtype)) x = cast(x, DType::f32);
  // Two-pass: mean((x - mean(x))^2), which avoids the cancellation of E[x^2] - E[x]^2.
  Tensor centered = x - mean_impl(x, {n.axes, true});
  Tensor var = mean_impl(square(centered), n);
  return is_half(dtype) ? cast(var, dtype) : var;
}

}  // namespace tg
