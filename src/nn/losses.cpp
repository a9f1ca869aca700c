// Losses built from primitives (autodiff flows through them): softmax and sigmoid cross entropy,
// mean squared error.
#include "core/error_util.h"
#include "tg/nn.h"
#include "tg/ops.h"

namespace tg {
namespace {

void check_tensor(const Tensor& t, std::string_view what, std::string_view op) {
  if (!t.valid()) fail(ErrorCode::invalid_argument, op, "{} is an empty Tensor", what);
}

void check_same_graph(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.graph_impl() != b.graph_impl()) {
    fail(ErrorCode::invalid_argument, op, "the two tensors belong to different graphs");
  }
}

// Equal ranks and equal dims where both are known.
bool shapes_fit(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != -1 && b[i] != -1) return false;
  }
  return true;
}

// Two floating tensors of one dtype and one shape (the elementwise losses).
void check_elementwise_pair(const Tensor& a, const Tensor& b, std::string_view a_name,
                            std::string_view b_name, std::string_view op) {
  check_tensor(a, a_name, op);
  check_tensor(b, b_name, op);
  check_same_graph(a, b, op);
  if (!is_floating(a.dtype()) || a.dtype() != b.dtype()) {
    fail(ErrorCode::dtype_mismatch, op, "{} and {} must share a floating dtype ({} {}, {} {})",
         a_name, b_name, a_name, a.type().to_string(), b_name, b.type().to_string());
  }
  if (!shapes_fit(a.shape(), b.shape())) {
    fail(ErrorCode::shape_mismatch, op, "{} {} and {} {} must have the same shape", a_name,
         str(a.shape()), b_name, str(b.shape()));
  }
}

Tensor reduce_loss(const Tensor& per_example, LossReduction reduction, std::string_view op) {
  switch (reduction) {
    case LossReduction::none:
      return per_example;
    case LossReduction::sum:
      return reduce_sum(per_example);
    case LossReduction::mean:
      return reduce_mean(per_example);
  }
  fail(ErrorCode::invalid_argument, op, "unknown LossReduction {}", static_cast<int>(reduction));
}

Shape without_axis(const Shape& s, int64_t axis) {
  Shape r = s;
  r.erase(r.begin() + axis);
  return r;
}

constexpr std::string_view kSce = "softmax_cross_entropy";

// Floating labels (one-hot or probabilities): the logits' dtype and shape.
void check_dense_labels(const Tensor& logits, const Tensor& labels) {
  if (labels.dtype() != logits.dtype()) {
    fail(ErrorCode::dtype_mismatch, kSce,
         "floating labels must have the logits' dtype (logits {}, labels {})",
         logits.type().to_string(), labels.type().to_string());
  }
  if (!shapes_fit(labels.shape(), logits.shape())) {
    fail(ErrorCode::shape_mismatch, kSce,
         "floating labels must have the logits' shape {} (labels {}); class indices must be i32 or "
         "i64",
         str(logits.shape()), str(labels.shape()));
  }
}

// Class indices: the logits' shape without the class axis.
void check_index_labels(const Tensor& logits, const Tensor& labels, int64_t axis) {
  Shape expected = without_axis(logits.shape(), axis);
  if (!shapes_fit(labels.shape(), expected)) {
    fail(ErrorCode::shape_mismatch, kSce,
         "class-index labels must have the logits' shape {} without axis {}, i.e. {} (labels {})",
         str(logits.shape()), axis, str(expected), str(labels.shape()));
  }
}

// -sum_c labels[c] * lsm[c] for floating labels. Where a label is 0 and the log-probability is
// -inf the term is 0 (not 0 * -inf = NaN), in the forward and the backward pass.
Tensor dense_label_loss(const Tensor& lsm, const Tensor& labels, int64_t axis) {
  Graph g(lsm.graph_impl());
  Tensor zero = g.constant(0.0, lsm.dtype());
  Tensor masked = select(logical_and(equal(labels, zero), is_inf(lsm)), zero, lsm);
  return neg(reduce_sum(mul(labels, masked), {.axes = {axis}}));
}

// -lsm[label] for integer class indices. A negative label l is moved to l - C, outside the
// range gather_elements accepts, so it raises out_of_range (as PyTorch's cross_entropy) instead of
// counting from the end (a silently trained wrong class). A dynamic C is counted at run time, as
// the sum over the class axis of a tensor of ones (as reduce_mean counts a dynamic dim).
Tensor index_label_loss(const Tensor& lsm, const Tensor& labels, int64_t axis) {
  Graph g(lsm.graph_impl());
  const DType ld = labels.dtype();
  const int64_t static_classes = lsm.shape()[axis];
  Tensor classes = static_classes >= 0
                       ? g.constant(static_cast<double>(static_classes), ld)
                       // is_nan is 0/1, so this is 1 everywhere, whatever lsm holds.
                       : reduce_sum(add(mul(cast(is_nan(lsm), ld), g.constant(0.0, ld)),
                                        g.constant(1.0, ld)),
                                    {.axes = {axis}});
  Tensor index = select(less(labels, g.constant(0.0, ld)), sub(labels, classes), labels);
  Tensor picked = gather_elements(lsm, expand_dims(index, axis), {.axis = axis});
  return neg(squeeze(picked, {axis}));
}

}  // namespace

Tensor softmax_cross_entropy(Tensor logits, Tensor labels, SoftmaxCrossEntropyOptions options) {
  check_tensor(logits, "logits", kSce);
  check_tensor(labels, "labels", kSce);
  check_same_graph(logits, labels, kSce);
  if (!is_floating(logits.dtype())) {
    fail(ErrorCode::dtype_mismatch, kSce, "logits must be floating, got {}",
         logits.type().to_string());
  }
  const int64_t rank = logits.rank();
  if (rank == 0)
    fail(ErrorCode::invalid_argument, kSce, "logits must have rank >= 1, got a scalar");
  int64_t axis = options.axis;
  if (axis < -rank || axis >= rank) {
    fail(ErrorCode::invalid_argument, kSce, "axis {} is out of range for logits {}", axis,
         logits.type().to_string());
  }
  if (axis < 0) axis += rank;
  const DType ld = labels.dtype();
  if (!is_floating(ld) && ld != DType::i32 && ld != DType::i64) {
    fail(ErrorCode::dtype_mismatch, kSce,
         "labels must be floating (one-hot or probabilities) or i32/i64 class indices, got {}",
         labels.type().to_string());
  }
  if (is_floating(ld)) {
    check_dense_labels(logits, labels);
  } else {
    check_index_labels(logits, labels, axis);
  }
  Tensor lsm = log_softmax(logits, axis);
  Tensor per_example =
      is_floating(ld) ? dense_label_loss(lsm, labels, axis) : index_label_loss(lsm, labels, axis);
  return reduce_loss(per_example, options.reduction, kSce);
}

Tensor sigmoid_cross_entropy(Tensor logits, Tensor labels, LossReduction reduction) {
  check_elementwise_pair(logits, labels, "logits", "labels", "sigmoid_cross_entropy");
  Graph g(logits.graph_impl());
  Tensor zero = g.constant(0.0, logits.dtype());
  // max(x, 0) - x*z + log1p(exp(-|x|)) in that order (so x*z cancels max(x, 0) first), with
  // the log term written per sign and each branch fed only its own side of 0: values and
  // gradients stay finite, and the gradient is sigmoid(x) - z everywhere (0.5 - z at x = 0).
  Tensor pos = greater(logits, zero);
  Tensor xp = select(pos, logits, zero);  // max(x, 0)
  Tensor xn = select(pos, zero, logits);  // min(x, 0)
  Tensor log_term = select(pos, log1p(exp(neg(xp))), log1p(exp(xn)));
  Tensor per_element = add(sub(xp, mul(logits, labels)), log_term);
  return reduce_loss(per_element, reduction, "sigmoid_cross_entropy");
}

Tensor mean_squared_error(Tensor predictions, Tensor targets, LossReduction reduction) {
  check_elementwise_pair(predictions, targets, "predictions", "targets", "mean_squared_error");
  return reduce_loss(square(sub(predictions, targets)), reduction, "mean_squared_error");
}

}  // namespace tg
