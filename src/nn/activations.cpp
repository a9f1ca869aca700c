// Composite activations: softmax and log_softmax, built from primitives so autodiff flows
// through them.
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

}  // namespace

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
