#include "autodiff/gradcheck.h"

#include <fmt/format.h>

#include <cmath>

namespace tg::testing {

namespace {
std::vector<GradCase>& cases() {
  static std::vector<GradCase> c;
  return c;
}
}  // namespace

bool register_grad_case(GradCase c) {
  cases().push_back(std::move(c));
  return true;
}
const std::vector<GradCase>& grad_cases() { return cases(); }

std::string check_gradient(const GradCase& c) {
  Graph g;
  std::vector<Tensor> xs;
  std::vector<TensorData> values;
  for (size_t i = 0; i < c.input_shapes.size(); ++i) {
    xs.push_back(g.placeholder(c.input_shapes[i], DType::f64, "x" + std::to_string(i)));
    if (i < c.values.size() && !c.values[i].empty()) {
      values.push_back(TensorData::from_vector<double>(c.values[i], c.input_shapes[i]));
    } else {
      values.push_back(TensorData::random_uniform(c.input_shapes[i], static_cast<float>(c.low),
                                                  static_cast<float>(c.high), 1000 + i, DType::f64));
    }
  }
  Tensor y = c.fn(xs);
  if (y.dtype() != DType::f64) y = cast(y, DType::f64);
  // A fixed random weighting makes every output element matter: L = sum(y * r).
  Tensor r = is_static(y.shape())
                 ? g.constant(TensorData::random_uniform(y.shape(), 0.5f, 1.5f, 77, DType::f64))
                 : g.constant(1.0, DType::f64);
  Tensor loss = reduce_sum(y * r);
  std::vector<int> wrt = c.wrt;
  if (wrt.empty()) {
    for (size_t i = 0; i < xs.size(); ++i) wrt.push_back(static_cast<int>(i));
  }
  std::vector<Tensor> targets_x;
  for (int i : wrt) targets_x.push_back(xs[static_cast<size_t>(i)]);
  std::vector<Tensor> grads = gradients(loss, targets_x);

  auto feeds_for = [&](const std::vector<TensorData>& v) {
    Feeds f;
    for (size_t i = 0; i < xs.size(); ++i) f.emplace_back(xs[i], v[i]);
    return f;
  };
  std::vector<TensorData> analytic = g.run(feeds_for(values), grads, {}, Device::cpu());
  std::string worst;
  double worst_excess = 0;
  for (size_t k = 0; k < wrt.size(); ++k) {
    size_t i = static_cast<size_t>(wrt[k]);
    int64_t n = values[i].num_elements();
    for (int64_t e = 0; e < n; ++e) {
      auto shifted = [&](double delta) {
        std::vector<TensorData> v = values;
        v[i] = values[i].clone();
        v[i].data<double>()[e] += delta;
        return g.run(feeds_for(v), {loss}, {}, Device::cpu())[0].data<double>()[0];
      };
      double numeric = (shifted(c.eps) - shifted(-c.eps)) / (2 * c.eps);
      double got = analytic[k].data<double>()[e];
      double excess = std::fabs(got - numeric) - (c.atol + c.rtol * std::fabs(numeric));
      if (!(excess <= 0) && (worst.empty() || excess > worst_excess || std::isnan(excess))) {
        worst_excess = excess;
        worst = fmt::format("d/dx{}[{}]: analytic {:.10g}, finite difference {:.10g}", i, e, got, numeric);
      }
    }
  }
  return worst;
}

}  // namespace tg::testing
