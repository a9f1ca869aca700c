// The stencil op family: attribute validation, shape/dtype inference and the builder.
#include <cmath>
#include <limits>
#include <utility>

#include "ops/builder.h"

namespace tg {
namespace {

constexpr std::string_view kOp = "stencil";

bool is_arg(StencilReduction r) {
  return r == StencilReduction::argmin || r == StencilReduction::argmax;
}

bool needs_source_element(BoundaryMode m) {
  return m != BoundaryMode::zero && m != BoundaryMode::constant;
}

// strides / dilations: k entries, each >= 1.
void check_steps(const std::vector<int64_t>& v, size_t k, const char* what) {
  if (v.size() != k) {
    fail(ErrorCode::invalid_argument, kOp, "{} [{}] must have {} entries (one per window dim)",
         what, fmt::join(v, ","), k);
  }
  for (int64_t s : v) {
    if (s < 1) {
      fail(ErrorCode::invalid_argument, kOp, "{} [{}] must all be >= 1", what, fmt::join(v, ","));
    }
  }
}

void check_attrs(const StencilDesc& d, size_t k) {
  check_steps(d.strides, k, "strides");
  check_steps(d.dilations, k, "dilations");
  const auto& p = d.explicit_padding;
  if (p.size() != 2 * k) {
    fail(ErrorCode::invalid_argument, kOp,
         "explicit_padding [{}] must have {} entries (before, after per window dim)",
         fmt::join(p, ","), 2 * k);
  }
  for (int64_t v : p) {
    if (v < 0) {
      fail(ErrorCode::invalid_argument, kOp, "explicit_padding [{}] must be >= 0",
           fmt::join(p, ","));
    }
  }
}

void check_dtypes(const TensorType& x, const TensorType& w) {
  if (x.dtype != w.dtype) {
    fail(ErrorCode::dtype_mismatch, kOp, "source {} and weights {} must have the same dtype",
         x.to_string(), w.to_string());
  }
  if (!is_numeric(x.dtype)) {
    fail(ErrorCode::dtype_mismatch, kOp, "needs numeric inputs, got source {}", x.to_string());
  }
}

// Range of integer dtype t that a double holds exactly (i64: +-2^53).
std::pair<double, double> exact_int_range(DType t) {
  switch (t) {
    case DType::i8:
      return {-128.0, 127.0};
    case DType::u8:
      return {0.0, 255.0};
    case DType::i32:
      return {-2147483648.0, 2147483647.0};
    default:
      return {-9007199254740992.0, 9007199254740992.0};
  }
}

// For integer dtypes the constant boundary value must be an integer the dtype holds.
void check_constant(const StencilDesc& d, DType dtype) {
  if (d.boundary_mode != BoundaryMode::constant || is_floating(dtype)) return;
  const double c = d.padding_constant;
  const auto [lo, hi] = exact_int_range(dtype);
  if (!(c >= lo && c <= hi) || std::trunc(c) != c) {
    fail(ErrorCode::invalid_argument, kOp, "padding_constant {} is not representable in {}", c,
         dtype_name(dtype));
  }
}

struct DimPlan {
  int64_t in, win, stride, dilation, before, after;
};

// a * b + c; raises when it overflows int64 (absurd strides, dilations or paddings).
int64_t mul_add(int64_t a, int64_t b, int64_t c, size_t d) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r)) {
    fail(ErrorCode::invalid_argument, kOp,
         "window dim {}: size, stride, dilation and padding overflow int64", d);
  }
  return r;
}

// Output size of one window dim, or -1 when unknown; raises when the window does not fit.
int64_t output_dim(const DimPlan& p, PaddingStyle style, BoundaryMode mode, size_t d,
                   const TensorType& x, const TensorType& w) {
  if (p.in < 0 || p.win < 0) return -1;
  if (p.win == 0) {
    fail(ErrorCode::shape_mismatch, kOp, "weights dim {} is 0 (source {}, weights {})", d,
         x.to_string(), w.to_string());
  }
  const int64_t extent = mul_add(p.win - 1, p.dilation, 1, d);  // dilated window size
  int64_t out;
  if (style == PaddingStyle::same) {
    out = p.in == 0 ? 0 : (p.in - 1) / p.stride + 1;
    mul_add(1, p.in, mul_add(out, p.stride, extent, d), d);  // bounds every coordinate read
  } else {
    int64_t padded = p.in;
    if (style == PaddingStyle::explicit_padding) {
      padded = mul_add(1, mul_add(1, p.in, p.before, d), p.after, d);
    }
    mul_add(1, padded, extent, d);  // bounds every coordinate read
    if (padded < extent) {
      fail(ErrorCode::invalid_argument, kOp,
           "window dim {} spans {} elements (size {}, dilation {}) but the padded input has {} "
           "(source {}, weights {})",
           d, extent, p.win, p.dilation, padded, x.to_string(), w.to_string());
    }
    out = (padded - extent) / p.stride + 1;
  }
  if (p.in == 0 && out > 0 && needs_source_element(mode)) {
    fail(ErrorCode::invalid_argument, kOp,
         "window dim {} of the source is empty: nothing to mirror/clamp/wrap (source {})", d,
         x.to_string());
  }
  return out;
}

std::vector<TensorType> infer_stencil(const ir::Node& node, std::span<const TensorType> in) {
  const TensorType& x = in[0];
  const TensorType& w = in[1];
  const auto& desc = std::get<StencilDesc>(node.attrs);
  const size_t k = w.shape.size();
  if (k < 1 || k > 4) {
    fail(ErrorCode::shape_mismatch, kOp, "weights rank {} must be in 1..4 (weights {})", k,
         w.to_string());
  }
  if (x.shape.size() < k) {
    fail(ErrorCode::shape_mismatch, kOp,
         "source rank {} is less than the window rank {} (source {}, weights {})", x.shape.size(),
         k, x.to_string(), w.to_string());
  }
  check_dtypes(x, w);
  check_attrs(desc, k);
  check_constant(desc, x.dtype);
  int64_t window = 1;  // known part of the window size
  for (int64_t s : w.shape) {
    if (s > 0 && __builtin_mul_overflow(window, s, &window)) {
      fail(ErrorCode::invalid_argument, kOp, "weights {} has too many elements", w.to_string());
    }
  }
  if (is_arg(desc.reduction) && window > std::numeric_limits<int32_t>::max()) {
    fail(ErrorCode::invalid_argument, kOp, "{} window elements exceed the i32 index range", window);
  }
  Shape out = x.shape;
  const size_t lead = x.shape.size() - k;
  for (size_t d = 0; d < k; ++d) {
    DimPlan p{x.shape[lead + d],
              w.shape[d],
              desc.strides[d],
              desc.dilations[d],
              desc.explicit_padding[2 * d],
              desc.explicit_padding[2 * d + 1]};
    out[lead + d] = output_dim(p, desc.padding_style, desc.boundary_mode, d, x, w);
  }
  return {{out, is_arg(desc.reduction) ? DType::i32 : x.dtype}};
}

}  // namespace

namespace ops {
void register_stencil_ops(OpRegistry& r) { r.set(ir::OpKind::stencil, infer_stencil); }
}  // namespace ops

Tensor stencil(Tensor source, Tensor weights, StencilDesc desc) {
  // Empty strides/dilations/padding take their defaults (needs the window rank; an invalid
  // rank or tensor is reported by make_op / infer_stencil).
  if (weights.valid()) {
    const auto k = static_cast<size_t>(weights.rank());
    if (desc.strides.empty()) desc.strides.assign(k, 1);
    if (desc.dilations.empty()) desc.dilations.assign(k, 1);
    if (desc.explicit_padding.empty()) desc.explicit_padding.assign(2 * k, 0);
  }
  return ops::make_op(ir::OpKind::stencil, {source, weights}, std::move(desc));
}

}  // namespace tg
