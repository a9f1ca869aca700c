// ai.onnx.preview.training optimizers Adagrad, Momentum and Adam (opset 1): one update step of
// every tensor group (variadic: R, T, then the X's, the G's and the optimizer states), with the
// formulas of the operator documentation. R (learning rate) and T (step count) are scalars.
#include <cmath>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

struct Groups {
  Tensor r, t;
  int64_t n = 0;
  std::vector<Tensor> inputs;  // all inputs from index 2 on
  Tensor at(int64_t kind, int64_t i) const { return inputs[static_cast<size_t>(kind * n + i)]; }
};

Groups groups(NodeContext& c, int64_t kinds) {
  Groups g;
  g.r = reshape(c.input(0), {});
  g.t = reshape(cast_to(c.input(1), DType::i64), {});
  g.inputs = c.inputs_from(2);
  if (g.inputs.empty() || static_cast<int64_t>(g.inputs.size()) % kinds != 0) {
    c.fail(ErrorCode::invalid_argument, "expected R, T and {} groups of tensors, got {} inputs",
           kinds, c.num_inputs());
  }
  g.n = static_cast<int64_t>(g.inputs.size()) / kinds;
  return g;
}

}  // namespace

std::vector<Tensor> convert_adagrad(NodeContext& c) {
  Groups g = groups(c, 3);
  double decay = c.attr_float("decay_factor", 0.0), eps = c.attr_float("epsilon", 0.0);
  double norm = c.attr_float("norm_coefficient", 0.0);
  std::vector<Tensor> xs, hs;
  for (int64_t i = 0; i < g.n; ++i) {
    Tensor x = g.at(0, i), grad = g.at(1, i), h = g.at(2, i);
    DType dt = x.dtype();
    Tensor r = cast_to(g.r, dt) / (cast(g.t, dt) * decay + 1.0);
    Tensor gr = x * norm + grad;
    Tensor h_new = h + gr * gr;
    xs.push_back(x - r * gr / (sqrt(h_new) + eps));
    hs.push_back(h_new);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<Tensor> convert_momentum(NodeContext& c) {
  Groups g = groups(c, 3);
  for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"}) c.require_attr(a);
  double alpha = c.attr_float("alpha", 0), beta = c.attr_float("beta", 0);
  double norm = c.attr_float("norm_coefficient", 0);
  std::string mode = c.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov") c.fail(ErrorCode::invalid_argument, "unknown mode '{}'", mode);
  std::vector<Tensor> xs, vs;
  for (int64_t i = 0; i < g.n; ++i) {
    Tensor x = g.at(0, i), grad = g.at(1, i), v = g.at(2, i);
    DType dt = x.dtype();
    Tensor gr = x * norm + grad;
    // The first step (T = 0) takes the gradient itself.
    Tensor b = select(greater(g.t, c.graph().constant(0.0, DType::i64)), scalar_like(x, beta),
                      scalar_like(x, 1.0));
    Tensor v_new = v * alpha + b * gr;
    Tensor r = cast_to(g.r, dt);
    xs.push_back(mode == "standard" ? x - r * v_new : x - r * (gr + v_new * alpha));
    vs.push_back(v_new);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

std::vector<Tensor> convert_adam(NodeContext& c) {
  Groups g = groups(c, 4);
  double alpha = c.attr_float("alpha", 0.9), beta = c.attr_float("beta", 0.999);
  double eps = c.attr_float("epsilon", 0.0), norm = c.attr_float("norm_coefficient", 0.0);
  double post = c.attr_float("norm_coefficient_post", 0.0);
  std::vector<Tensor> xs, vs, hs;
  for (int64_t i = 0; i < g.n; ++i) {
    Tensor x = g.at(0, i), grad = g.at(1, i), v = g.at(2, i), h = g.at(3, i);
    DType dt = x.dtype();
    Tensor gr = x * norm + grad;
    Tensor v_new = v * alpha + gr * (1 - alpha);
    Tensor h_new = h * beta + gr * gr * (1 - beta);
    Tensor tf = cast(g.t, dt), r = cast_to(g.r, dt);
    // Bias correction from the second step on: R sqrt(1 - beta^T) / (1 - alpha^T).
    Tensor corrected = r * sqrt(scalar_like(x, 1) - pow(scalar_like(x, beta), tf)) /
                       (scalar_like(x, 1) - pow(scalar_like(x, alpha), tf));
    Tensor r_adj = select(greater(g.t, c.graph().constant(0.0, DType::i64)), corrected, r);
    Tensor x_new = x - r_adj * (v_new / (sqrt(h_new) + eps));
    xs.push_back(post != 0 ? x_new * (1 - post) : x_new);
    vs.push_back(v_new);
    hs.push_back(h_new);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

}  // namespace tg::onnx
