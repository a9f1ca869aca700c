// Helpers of the pass tests: TG_FUSION (or another variable) set for a scope, counting op names in printed IR,
// comparing a fused run with the unfused one.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tg/autodiff.h"
#include "tg/nn.h"
#include "tg/tg.h"

namespace tg::testing {

/// Sets the environment variable `name` to `value` until the end of the scope (the previous value
/// restored).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Sets TG_FUSION to `value` until the end of the scope.
class ScopedFusion : public ScopedEnv {
 public:
  explicit ScopedFusion(const char* value) : ScopedEnv("TG_FUSION", value) {}
};

/// Occurrences of `what` in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

/// An NHWC batch-norm training step on 8 channels: y = relu(batch_norm(x)), loss = sum(y^2 / 2),
/// its gradients by x, gamma and beta; `training` is a bool placeholder (fed, or bound at compile
/// time); the running statistics start at 0 and 1.
struct BatchNormStep {
  Graph g;
  Tensor x, training, gamma, beta, mean, var, loss;
  std::vector<Tensor> grads;
  BatchNormStep(const Shape& x_shape, const TensorData& gamma_init, const TensorData& beta_init) {
    x = g.placeholder(x_shape, DType::f32, "x");
    training = g.placeholder({}, DType::bool_, "training");
    gamma = g.variable(gamma_init, "gamma");
    beta = g.variable(beta_init, "beta");
    mean = g.variable(TensorData::zeros({8}), "mean");
    var = g.variable(TensorData::full({8}, DType::f32, 1.0), "var");
    Tensor y = relu(batch_norm(x, gamma, beta, mean, var, training, {.axis = -1}));
    loss = reduce_sum(y * y * 0.5);
    grads = gradients(loss, {x, gamma, beta});
  }
  /// The loss and the three gradients.
  std::vector<Tensor> targets() const { return {loss, grads[0], grads[1], grads[2]}; }
  /// `r` followed by the running statistics' values after the run.
  std::vector<TensorData> with_statistics(std::vector<TensorData> r) const {
    r.push_back(g.variable_value(mean));
    r.push_back(g.variable_value(var));
    return r;
  }
};

/// Same count and types of results, every value of `got` within rtol (relative, plus rtol
/// absolute) of `want`'s.
inline void expect_all_near(const std::vector<TensorData>& want, const std::vector<TensorData>& got, double rtol) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].type(), want[k].type()) << k;
    for (int64_t i = 0; i < want[k].num_elements(); ++i) {
      const double b = want[k].element_as_double(i);
      EXPECT_NEAR(got[k].element_as_double(i), b, rtol * (1 + std::fabs(b))) << k << " " << i;
    }
  }
}

/// Every value of the fused run within 1e-5 (relative, plus 1e-5 absolute) of the unfused run's.
inline void expect_matches_unfused(const std::vector<TensorData>& plain, const std::vector<TensorData>& fused) {
  expect_all_near(plain, fused, 1e-5);
}

}  // namespace tg::testing
