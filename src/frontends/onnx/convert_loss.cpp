// Loss ONNX ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12/13 semantics:
// class dim 1, optional per-class weights, ignore_index, reductions none/sum/mean with the mean
// over the weights of the counted elements).
#include "frontends/onnx/converters.h"
#include "tg/nn.h"

namespace tg::onnx {
namespace {

// NLL of log-probabilities `lp` [N, C, d...] at integer `target` [N, d...].
Tensor nll(NodeContext& c, Tensor lp, Tensor target, Tensor weight) {
  if (lp.rank() < 2 || target.rank() != lp.rank() - 1) {
    c.fail(ErrorCode::shape_mismatch, "input {} and target {} do not fit [N, C, ...] / [N, ...]",
           str(lp.shape()), str(target.shape()));
  }
  std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    c.fail(ErrorCode::invalid_argument, "unknown reduction '{}'", reduction);
  }
  Tensor t = cast_to(target, DType::i64);
  Tensor zero = c.graph().constant(0.0, DType::i64);
  Tensor keep;  // bool: the element counts (not ignore_index)
  if (c.has_attr("ignore_index")) {
    Tensor ignore = c.graph().constant(static_cast<double>(c.attr_int("ignore_index", 0)), DType::i64);
    keep = not_equal(t, ignore);
    t = select(keep, t, zero);
  }
  Tensor picked = squeeze(gather_elements(lp, expand_dims(t, 1), {.axis = 1}), {1});
  Tensor w = weight.valid() ? gather(weight, t) : Tensor();
  if (keep.valid()) {
    Tensor k = cast(keep, lp.dtype());
    w = w.valid() ? w * k : k;
  }
  Tensor loss = w.valid() ? neg(picked) * w : neg(picked);
  if (reduction == "none") return loss;
  if (reduction == "sum") return reduce_sum(loss);
  if (!w.valid()) return reduce_mean(loss);
  return reduce_sum(loss) / reduce_sum(w);
}

}  // namespace

std::vector<Tensor> convert_nll_loss(NodeContext& c) {
  return {nll(c, c.input(0), c.input(1), c.optional_input(2))};
}

std::vector<Tensor> convert_softmax_cross_entropy(NodeContext& c) {
  Tensor scores = c.input(0);
  if (scores.rank() < 2) c.fail(ErrorCode::invalid_argument, "scores must have rank >= 2");
  Tensor lp = log_softmax(scores, 1);
  return {nll(c, lp, c.input(1), c.optional_input(2)), lp};
}

}  // namespace tg::onnx
