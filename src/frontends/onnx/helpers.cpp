// Helpers shared by the converters.
#include <fmt/format.h>

#include "core/error_util.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/tensor_proto.h"

namespace tg::onnx {

Tensor cast_to(Tensor x, DType dtype) { return x.dtype() == dtype ? x : cast(x, dtype); }

Tensor scalar_like(Tensor x, double v) { return Graph(x.graph_impl()).constant(v, x.dtype()); }

Tensor via_f64(Tensor x, Tensor (*f)(Tensor)) {
  if (is_floating(x.dtype())) return f(x);
  return cast(f(cast(x, DType::f64)), x.dtype());
}

DType dtype_attr(const NodeContext& ctx, int64_t onnx_type) {
  std::optional<DType> d = dtype_from_onnx(static_cast<int32_t>(onnx_type));
  if (!d) {
    ctx.fail(ErrorCode::unsupported, "data type {} is not supported",
             onnx_type_name(static_cast<int32_t>(onnx_type)));
  }
  return *d;
}

Shape broadcast_shape(const NodeContext& ctx, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1) out[i] = db;
    else if (db == 1) out[i] = da;
    else if (da == db) out[i] = da;
    else if (da == -1) out[i] = db;  // -1 (unknown) takes the other; a size beats a symbol
    else if (db == -1) out[i] = da;
    else if (da < 0 || db < 0) out[i] = std::max(da, db);
    else ctx.fail(ErrorCode::shape_mismatch, "shapes {} and {} do not broadcast", str(a), str(b));
  }
  return out;
}

}  // namespace tg::onnx
