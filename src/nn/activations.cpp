// Composite activations: softmax, log_softmax, relu, leaky_relu, elu, gelu, silu, built from
// primitives so autodiff flows through them. Semantics: docs/nn.md.
#include <cmath>
#include <numbers>

#include "core/error_util.h"
#include "tg/autodiff.h"
#include "tg/nn.h"
#include "tg/ops.h"

namespace tg {
namespace {

int64_t checked_axis(const Tensor& x, int64_t axis, std::string_view op) {
  if (!x.valid()) fail(ErrorCode::invalid_argument, op, "x is an empty Tensor");
  if (!is_floating(x.dtype())) {
    fail(ErrorCode::dtype_mismatch, op, "expects a floating tensor, got {}", x.type().to_string());
  }
  const int64_t rank = x.rank();
  if (rank == 0) fail(ErrorCode::invalid_argument, op, "expects rank >= 1, got a scalar");
  if (axis < -rank || axis >= rank) {
    fail(ErrorCode::invalid_argument, op, "axis {} is out of range for rank {} (shape {})", axis,
         rank, str(x.shape()));
  }
  return axis < 0 ? axis + rank : axis;
}

// x - m with m the max along `axis` (0 where it is infinite or the row is empty), m held constant
// for autodiff: softmax and log_softmax do not depend on the shift.
Tensor shifted(const Tensor& x, int64_t axis) {
  Graph g(x.graph_impl());
  Tensor m = reduce_max(x, {.axes = {axis}, .keep_dims = true});
  m = select(is_inf(m), g.constant(0.0, x.dtype()), m);
  return sub(x, stop_gradient(m));
}

// The elementwise activations take one floating tensor of any shape.
void check_floating(const Tensor& x, std::string_view op) {
  if (!x.valid()) fail(ErrorCode::invalid_argument, op, "x is an empty Tensor");
  if (!is_floating(x.dtype())) {
    fail(ErrorCode::dtype_mismatch, op, "expects a floating tensor, got {}", x.type().to_string());
  }
}

void check_finite(double v, std::string_view what, std::string_view op) {
  if (!std::isfinite(v)) fail(ErrorCode::invalid_argument, op, "{} = {} must be finite", what, v);
}

Tensor zero_like(const Tensor& x) { return Graph(x.graph_impl()).constant(0.0, x.dtype()); }

}  // namespace

Tensor relu(Tensor x) {
  check_floating(x, "relu");
  // x <= 0 selects 0: the gradient at 0 is 0 and NaN propagates (x <= NaN is false).
  Tensor zero = zero_like(x);
  return select(less_equal(x, zero), zero, x);
}

Tensor leaky_relu(Tensor x, double alpha) {
  check_floating(x, "leaky_relu");
  check_finite(alpha, "alpha", "leaky_relu");
  // The gradient at 0 is alpha (PyTorch); NaN propagates through alpha * x.
  return select(greater(x, zero_like(x)), x, x * alpha);
}

Tensor elu(Tensor x, double alpha) {
  check_floating(x, "elu");
  check_finite(alpha, "alpha", "elu");
  // expm1 only sees x <= 0 (and NaN): for large x, exp(x) = inf would turn the zero cotangent of
  // the unselected branch into 0 * inf = NaN.
  Tensor zero = zero_like(x);
  Tensor positive = greater(x, zero);
  Tensor negative_part = select(positive, zero, x);
  return select(positive, x, expm1(negative_part) * alpha);
}

Tensor gelu(Tensor x, bool approximate_tanh) {
  check_floating(x, "gelu");
  Tensor half_x = x * 0.5;
  if (!approximate_tanh) return half_x * (erf(x * (1.0 / std::numbers::sqrt2)) + 1.0);
  const double beta = std::sqrt(2.0 / std::numbers::pi), kappa = 0.044715;
  Tensor inner = (x + x * square(x) * kappa) * beta;
  return half_x * (tanh(inner) + 1.0);
}

Tensor silu(Tensor x) {
  check_floating(x, "silu");
  return x * sigmoid(x);
}

Tensor softmax(Tensor x, int64_t axis) {
  axis = checked_axis(x, axis, "softmax");
  Tensor e = exp(shifted(x, axis));
  return div(e, reduce_sum(e, {.axes = {axis}, .keep_dims = true}));
}

Tensor log_softmax(Tensor x, int64_t axis) {
  axis = checked_axis(x, axis, "log_softmax");
  Tensor z = shifted(x, axis);
  return sub(z, log(reduce_sum(exp(z), {.axes = {axis}, .keep_dims = true})));
}

}  // namespace tg
