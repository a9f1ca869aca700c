// The pool op family: window geometry and validation (ops/pool.h), type inference, the builders
// of max_pool2d, avg_pool2d, their backward ops, and the global_avg_pool2d composite.
#include "ops/pool.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "ops/builder.h"

namespace tg {
namespace ops {

void PoolDim::taps_within(int64_t o, int64_t lo, int64_t hi, int64_t* first, int64_t* last) const {
  const int64_t base = o * stride - pad_before;
  // lo <= base + t * dilation < hi  <=>  ceil((lo - base) / d) <= t <= floor((hi - 1 - base) / d)
  const int64_t f = std::max<int64_t>(0, -floor_div_pos(base - lo, dilation));
  const int64_t l = std::min<int64_t>(k, floor_div_pos(hi - 1 - base, dilation) + 1);
  *first = f;
  *last = std::max(l, f);
}

int64_t PoolDim::padded_tap_count(int64_t o) const {
  int64_t first = 0, last = 0;
  taps_within(o, -pad_before, in + pad_after, &first, &last);
  return last - first;
}

Shape PoolGeometry::output_shape() const {
  return nhwc ? Shape{n, h.out, w.out, c} : Shape{n, c, h.out, w.out};
}

Shape PoolGeometry::input_shape() const {
  return nhwc ? Shape{n, h.in, w.in, c} : Shape{n, c, h.in, w.in};
}

namespace {

constexpr int64_t kMaxWindowValue = std::numeric_limits<int32_t>::max();

// kernel_size / strides / dilations: two entries in [1, 2^31).
void check_pair(const std::vector<int64_t>& v, const char* what, std::string_view op,
                const Shape& x) {
  const bool ok = v.size() == 2 && std::all_of(v.begin(), v.end(), [](int64_t e) {
                    return e >= 1 && e <= kMaxWindowValue;
                  });
  if (!ok) {
    fail(ErrorCode::invalid_argument, op,
         "{} [{}] must have 2 entries (h, w), each in [1, 2^31) (input {})", what,
         fmt::join(v, ","), str(x));
  }
}

void check_explicit_padding(const Pool2dDesc& d, std::string_view op, const Shape& x) {
  const auto& p = d.explicit_padding;
  const bool ok = p.size() == 4 && std::all_of(p.begin(), p.end(), [](int64_t e) {
                    return e >= 0 && e <= kMaxWindowValue;
                  });
  if (!ok) {
    fail(ErrorCode::invalid_argument, op,
         "explicit_padding [{}] must have 4 entries (top, bottom, left, right), each >= 0 "
         "(input {})",
         fmt::join(p, ","), str(x));
  }
}

PoolDim resolve_dim(const Pool2dDesc& d, const std::vector<int64_t>& strides, size_t i, int64_t in,
                    std::string_view op, const Shape& x) {
  PoolDim r;
  r.in = in;
  r.k = d.kernel_size[i];
  r.stride = strides[i];
  r.dilation = d.dilations[i];
  const int64_t extent = r.dilation * (r.k - 1) + 1;  // < 2^62: no overflow
  if (extent > kMaxWindowValue) {
    fail(ErrorCode::invalid_argument, op,
         "the dilated window spans {} elements along {} (kernel_size [{}], dilations [{}]); at "
         "most 2^31 - 1 (input {})",
         extent, i == 0 ? "h" : "w", fmt::join(d.kernel_size, ","), fmt::join(d.dilations, ","),
         str(x));
  }
  const int64_t before = d.explicit_padding[2 * i], after = d.explicit_padding[2 * i + 1];
  if (d.padding == Padding::explicit_padding && (before >= extent || after >= extent)) {
    fail(ErrorCode::invalid_argument, op,
         "explicit_padding [{}] along {} must be smaller than the (dilated) window {} (input {})",
         fmt::join(d.explicit_padding, ","), i == 0 ? "h" : "w", extent, str(x));
  }
  const WindowDim w =
      resolve_window_dim(in, r.k, r.stride, r.dilation, d.padding, before, after, d.ceil_mode);
  r.pad_before = w.pad_before;
  r.pad_after = w.pad_after;
  r.out = w.out;
  const bool same = d.padding == Padding::same || d.padding == Padding::same_lower;
  if (!same && in >= 0 && in + r.pad_before + r.pad_after < extent) {
    fail(ErrorCode::invalid_argument, op,
         "the window spans {} elements along {} but the padded input has {} (input {}, "
         "kernel_size [{}], dilations [{}], pads {}+{})",
         extent, i == 0 ? "h" : "w", in + r.pad_before + r.pad_after, str(x),
         fmt::join(d.kernel_size, ","), fmt::join(d.dilations, ","), r.pad_before, r.pad_after);
  }
  if (in >= 0 && r.out < 0) r.out = 0;
  return r;
}

}  // namespace

PoolGeometry pool_geometry(const Pool2dDesc& d, const Shape& x, std::string_view op) {
  if (x.size() != 4) {
    fail(ErrorCode::shape_mismatch, op,
         "needs a rank-4 input ([N, H, W, C] or [N, C, H, W]), got {}", str(x));
  }
  if (d.data_layout != Layout::nhwc && d.data_layout != Layout::nchw) {
    fail(ErrorCode::invalid_argument, op, "data_layout must be nhwc or nchw (input {})", str(x));
  }
  check_pair(d.kernel_size, "kernel_size", op, x);
  const std::vector<int64_t>& strides = d.strides.empty() ? d.kernel_size : d.strides;
  check_pair(strides, "strides", op, x);
  check_pair(d.dilations, "dilations", op, x);
  check_explicit_padding(d, op, x);  // validated always, used only with explicit_padding
  PoolGeometry g;
  g.nhwc = d.data_layout == Layout::nhwc;
  g.n = x[0];
  g.c = g.nhwc ? x[3] : x[1];
  g.h = resolve_dim(d, strides, 0, g.nhwc ? x[1] : x[2], op, x);
  g.w = resolve_dim(d, strides, 1, g.nhwc ? x[2] : x[3], op, x);
  return g;
}

}  // namespace ops

namespace {

using ir::OpKind;

void check_dtype(const TensorType& x, OpKind kind, std::string_view op) {
  if (kind == OpKind::max_pool2d) {
    if (!is_numeric(x.dtype)) {
      fail(ErrorCode::dtype_mismatch, op, "needs a numeric input, got {}", x.to_string());
    }
  } else if (!is_floating(x.dtype)) {
    fail(ErrorCode::dtype_mismatch, op, "needs a floating input, got {} (use cast)", x.to_string());
  }
}

std::vector<TensorType> infer_pool(const ir::Node& node, std::span<const TensorType> in) {
  const std::string_view op = ir::op_name(node.kind);
  const auto& desc = std::get<Pool2dDesc>(node.attrs);
  const TensorType& x = in[0];
  check_dtype(x, node.kind, op);
  const ops::PoolGeometry g = ops::pool_geometry(desc, x.shape, op);
  return {{g.output_shape(), x.dtype}};
}

// dy must have the forward output shape of x (dims unknown on either side are not checked).
std::vector<TensorType> infer_pool_backward(const ir::Node& node, std::span<const TensorType> in) {
  const std::string_view op = ir::op_name(node.kind);
  const auto& desc = std::get<Pool2dDesc>(node.attrs);
  const TensorType &dy = in[0], &x = in[1];
  check_dtype(x, node.kind, op);
  if (dy.dtype != x.dtype) {
    fail(ErrorCode::dtype_mismatch, op, "dy {} and x {} must have the same dtype", dy.to_string(),
         x.to_string());
  }
  const ops::PoolGeometry g = ops::pool_geometry(desc, x.shape, op);
  const Shape expected = g.output_shape();
  bool ok = dy.shape.size() == 4;
  for (size_t i = 0; ok && i < 4; ++i) {
    ok = expected[i] < 0 || dy.shape[i] < 0 || expected[i] == dy.shape[i];
  }
  if (!ok) {
    fail(ErrorCode::shape_mismatch, op, "dy {} must have the forward output shape {} (x {})",
         str(dy.shape), str(expected), str(x.shape));
  }
  // dx has x's shape; a batch or channel dim unknown in x but known in dy is taken from dy.
  Shape dx = x.shape;
  const size_t ci = desc.data_layout == Layout::nhwc ? 3 : 1;
  if (dx[0] < 0) dx[0] = dy.shape[0];
  if (dx[ci] < 0) dx[ci] = dy.shape[ci];
  return {{dx, x.dtype}};
}

// Empty strides become kernel_size; explicit_padding (validated, then unused) is zeroed unless
// the style is explicit_padding, so that equal ops have equal attributes.
Pool2dDesc normalized(Pool2dDesc d) {
  if (d.strides.empty()) d.strides = d.kernel_size;
  const auto& p = d.explicit_padding;
  const bool valid_pads =
      p.size() == 4 && std::all_of(p.begin(), p.end(), [](int64_t e) { return e >= 0; });
  if (d.padding != Padding::explicit_padding && valid_pads) d.explicit_padding = {0, 0, 0, 0};
  return d;
}

}  // namespace

namespace ops {
void register_pool_ops(OpRegistry& r) {
  r.set(OpKind::max_pool2d, infer_pool);
  r.set(OpKind::avg_pool2d, infer_pool);
  r.set(OpKind::max_pool2d_backward, infer_pool_backward);
  r.set(OpKind::avg_pool2d_backward, infer_pool_backward);
}
}  // namespace ops

Tensor max_pool2d(Tensor x, Pool2dDesc desc) {
  return ops::make_op(OpKind::max_pool2d, {x}, normalized(std::move(desc)));
}

Tensor avg_pool2d(Tensor x, Pool2dDesc desc) {
  return ops::make_op(OpKind::avg_pool2d, {x}, normalized(std::move(desc)));
}

Tensor max_pool2d_backward(Tensor dy, Tensor x, Pool2dDesc desc) {
  return ops::make_op(OpKind::max_pool2d_backward, {dy, x}, normalized(std::move(desc)));
}

Tensor avg_pool2d_backward(Tensor dy, Tensor x, Pool2dDesc desc) {
  return ops::make_op(OpKind::avg_pool2d_backward, {dy, x}, normalized(std::move(desc)));
}

Tensor global_avg_pool2d(Tensor x, Layout data_layout, bool keep_dims) {
  constexpr std::string_view kOp = "global_avg_pool2d";
  if (!x.valid()) fail(ErrorCode::invalid_argument, kOp, "x is not a valid tensor");
  if (x.rank() != 4) {
    fail(ErrorCode::shape_mismatch, kOp,
         "needs a rank-4 input ([N, H, W, C] or [N, C, H, W]), got {}", str(x.shape()));
  }
  if (data_layout != Layout::nhwc && data_layout != Layout::nchw) {
    fail(ErrorCode::invalid_argument, kOp, "data_layout must be nhwc or nchw (input {})",
         str(x.shape()));
  }
  if (!is_floating(x.dtype())) {
    fail(ErrorCode::dtype_mismatch, kOp, "needs a floating input, got {} (use cast)",
         x.type().to_string());
  }
  const std::vector<int64_t> axes =
      data_layout == Layout::nhwc ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2, 3};
  return reduce_mean(x, {.axes = axes, .keep_dims = keep_dims});
}

}  // namespace tg
