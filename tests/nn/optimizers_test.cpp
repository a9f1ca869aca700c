// Optimizer steps (SGD, Adam, AdamW) against an independent float64 implementation of PyTorch's
// documented update rules, state variables, ordering within a step, schedules, and errors.
#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/graph.h"
#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/nn.h"

namespace tg {
namespace {

using testing::expect_close;

// The fixed problem: two f64 parameters, each with gradient 2*(p - c) + 0.3*p^2 (of
// sum((p - c)^2 + 0.1*p^3)), built in the graph directly so these tests do not depend on the
// autodiff rules.
const std::vector<double> kW0 = {0.5, -1.0, 2.0, 0.0};
const std::vector<double> kB0 = {1.5, -0.25};
const std::vector<double> kCW = {1.0, 0.5, -1.0, 0.25};
const std::vector<double> kCB = {-0.5, 2.0};
const std::vector<double> kLr = {0.1, 0.05, 0.02};  // a schedule fed through the placeholder

double grad_of(double p, double c) { return 2 * (p - c) + 0.3 * p * p; }

// ---- the float64 reference (PyTorch's pseudo-code, one scalar at a time) ----

void ref_sgd(std::vector<double>& p, const std::vector<double>& c, const SgdOptions& o) {
  std::vector<double> buf(p.size(), 0.0);
  for (size_t t = 1; t <= kLr.size(); ++t) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad_of(p[i], c[i]);
      if (o.maximize) g = -g;
      if (o.weight_decay != 0) g += o.weight_decay * p[i];
      if (o.momentum != 0) {
        buf[i] = t == 1 ? g : o.momentum * buf[i] + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
      }
      p[i] -= kLr[t - 1] * g;
    }
  }
}

void ref_adam(std::vector<double>& p, const std::vector<double>& c, const AdamOptions& o) {
  std::vector<double> m(p.size(), 0.0), v(p.size(), 0.0), v_max(p.size(), 0.0);
  for (size_t t = 1; t <= kLr.size(); ++t) {
    const double lr = kLr[t - 1];
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad_of(p[i], c[i]);
      if (o.maximize) g = -g;
      if (o.decoupled_weight_decay) {
        p[i] -= lr * o.weight_decay * p[i];
      } else if (o.weight_decay != 0) {
        g += o.weight_decay * p[i];
      }
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      double m_hat = m[i] / (1 - std::pow(o.beta1, static_cast<double>(t)));
      double v_used = v[i];
      if (o.amsgrad) v_used = v_max[i] = std::max(v_max[i], v[i]);
      double v_hat = v_used / (1 - std::pow(o.beta2, static_cast<double>(t)));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + o.epsilon);
    }
  }
}

// ---- the graph under test ----

struct Problem {
  Graph g;
  Tensor w = g.variable(TensorData::from_vector<double>(kW0, {2, 2}), "w");
  Tensor b = g.variable(TensorData::from_vector<double>(kB0, {2}), "b");
  Tensor lr;
  std::vector<Tensor> grads() {
    auto grad = [&](Tensor p, const std::vector<double>& c, Shape s) {
      return (p - g.constant(TensorData::from_vector<double>(c, s))) * 2.0 + p * p * 0.3;
    };
    return {grad(w, kCW, {2, 2}), grad(b, kCB, {2})};
  }
  explicit Problem(DType lr_dtype = DType::f64) { lr = g.placeholder({}, lr_dtype, "lr"); }

  // Three steps with the learning rates of kLr; returns the final w and b.
  std::pair<TensorData, TensorData> train(const std::vector<Operation>& step) {
    Executable exe = g.compile(Device::cpu(), {{lr, TensorType{{}, lr.dtype()}}}, {}, step);
    for (double r : kLr) exe.run({TensorData::full({}, lr.dtype(), r)});
    return {g.variable_value(w), g.variable_value(b)};
  }
};

void expect_matches_reference(std::pair<TensorData, TensorData> got, std::vector<double> w,
                              std::vector<double> b, double rtol = 1e-6) {
  expect_close(got.first, w, {2, 2}, rtol, 1e-12);
  expect_close(got.second, b, {2}, rtol, 1e-12);
}

struct SgdCase {
  const char* label;
  SgdOptions options;
};

TEST(NnOptimizers, SgdMatchesFloat64Reference) {
  const SgdCase cases[] = {
      {"plain", {}},
      {"momentum", {.momentum = 0.9}},
      {"momentum+dampening", {.momentum = 0.8, .dampening = 0.3}},
      {"nesterov", {.momentum = 0.9, .nesterov = true}},
      {"weight_decay", {.momentum = 0.5, .weight_decay = 0.1}},
      {"maximize", {.momentum = 0.9, .maximize = true}},
  };
  for (const SgdCase& c : cases) {
    SCOPED_TRACE(c.label);
    Problem pr;
    auto got = pr.train(sgd_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, c.options));
    std::vector<double> w = kW0, b = kB0;
    ref_sgd(w, kCW, c.options);
    ref_sgd(b, kCB, c.options);
    expect_matches_reference(got, w, b);
  }
}

struct AdamCase {
  const char* label;
  AdamOptions options;
};

TEST(NnOptimizers, AdamMatchesFloat64Reference) {
  const AdamCase cases[] = {
      {"default", {}},
      {"betas+eps", {.beta1 = 0.8, .beta2 = 0.9, .epsilon = 1e-3}},
      {"l2", {.weight_decay = 0.1}},
      {"adamw", {.weight_decay = 0.1, .decoupled_weight_decay = true}},
      {"amsgrad", {.beta2 = 0.5, .amsgrad = true}},
      {"adamw+amsgrad+maximize",
       {.weight_decay = 0.05, .decoupled_weight_decay = true, .amsgrad = true, .maximize = true}},
  };
  for (const AdamCase& c : cases) {
    SCOPED_TRACE(c.label);
    Problem pr;
    auto got = pr.train(adam_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, c.options));
    std::vector<double> w = kW0, b = kB0;
    ref_adam(w, kCW, c.options);
    ref_adam(b, kCB, c.options);
    expect_matches_reference(got, w, b);
  }
}

// With elementwise fusion (the GPU's pipeline; TG_FUSION=1 here), a parameter's whole update (its
// state and the parameter itself) is one fused kernel: the step assigns only after computing every
// value, and still matches the reference.
TEST(NnOptimizers, OneFusedUpdatePerParameter) {
  testing::ScopedFusion fusion("1");
  auto check = [](const char* label, auto make_step) {
    SCOPED_TRACE(label);
    Problem pr;
    std::vector<Operation> step = make_step(pr);
    Executable exe = pr.g.compile(Device::cpu(), {{pr.lr, TensorType{{}, DType::f64}}}, {}, step);
    const std::string text = exe.to_string();
    // w [2,2] and b [2]: one program each (the gradient folds into it too).
    EXPECT_EQ(testing::count(text, "= fused_elementwise(") - testing::count(text, "{shape=[]"), 2) << text;
  };
  check("adam", [](Problem& pr) { return adam_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, {}); });
  check("amsgrad", [](Problem& pr) { return adam_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, {.amsgrad = true}); });
  check("sgd momentum", [](Problem& pr) { return sgd_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, {.momentum = 0.9}); });

  Problem pr;
  auto got = pr.train(adam_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, {.amsgrad = true}));
  std::vector<double> w = kW0, b = kB0;
  ref_adam(w, kCW, {.amsgrad = true});
  ref_adam(b, kCB, {.amsgrad = true});
  expect_matches_reference(got, w, b);
}

TEST(NnOptimizers, AdamWUsesDecoupledDecayAndItsDefault) {
  Problem pr;
  auto got = pr.train(adamw_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr));
  AdamOptions ref{.weight_decay = 0.01, .decoupled_weight_decay = true};
  std::vector<double> w = kW0, b = kB0;
  ref_adam(w, kCW, ref);
  ref_adam(b, kCB, ref);
  expect_matches_reference(got, w, b);
  EXPECT_GE(pr.g.impl()->variables()->find("w/adamw_m"), 0);
}

TEST(NnOptimizers, F32LearningRateWithF64Params) {
  Problem pr(DType::f32);
  auto got = pr.train(adam_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr));
  std::vector<double> w = kW0, b = kB0;
  ref_adam(w, kCW, {});
  ref_adam(b, kCB, {});
  expect_matches_reference(got, w, b);  // kLr's values are the same in f32 to ~1e-9
}

TEST(NnOptimizers, F32ParamsFollowTheReference) {
  Graph g;
  Tensor p = g.variable(TensorData::from_vector<float>({0.5f, -1.0f, 2.0f, 0.0f}, {4}), "p");
  Tensor lr = g.placeholder({}, DType::f32, "lr");
  Tensor grad =
      (p - g.constant(TensorData::from_vector<float>({1.0f, 0.5f, -1.0f, 0.25f}, {4}))) * 2.0 +
      p * p * 0.3;
  Executable exe = g.compile(Device::cpu(), {{lr, TensorType{{}, DType::f32}}}, {},
                             adam_step(g, {p}, {grad}, lr, {.amsgrad = true}));
  for (double r : kLr) exe.run({TensorData::scalar<float>(static_cast<float>(r))});
  std::vector<double> ref = kW0;
  ref_adam(ref, kCW, {.amsgrad = true});
  expect_close(g.variable_value(p), ref, {4}, 1e-5, 1e-6);
}

TEST(NnOptimizers, StateVariablesAndStepCounter) {
  Problem pr;
  auto step = adam_step(pr.g, {pr.w, pr.b}, pr.grads(), pr.lr, {.amsgrad = true});
  EXPECT_EQ(step.size(), 2u + 6u + 1u);  // params, m/v/v_max per param, the step counter
  const auto& store = *pr.g.impl()->variables();
  for (const char* name :
       {"adam/step", "w/adam_m", "w/adam_v", "w/adam_v_max", "b/adam_m", "b/adam_v"}) {
    EXPECT_GE(store.find(name), 0) << name;
  }
  pr.train(step);
  EXPECT_EQ(store.value(store.find("adam/step")).to_vector<int64_t>(), std::vector<int64_t>{3});
  // m after 3 steps is non-zero and has the parameter's type.
  TensorData m = store.value(store.find("w/adam_m"));
  EXPECT_EQ(m.type(), (TensorType{{2, 2}, DType::f64}));
  EXPECT_NE(m.element_as_double(0), 0.0);
}

TEST(NnOptimizers, StepReadsStartOfRunValues) {
  // The loss computed in the same run as the update sees the parameters before the update.
  Graph g;
  Tensor p = g.variable(TensorData::from_vector<double>({3}, {1}), "p");
  Tensor lr = g.constant(0.5, DType::f64);
  Tensor loss = reduce_sum(p * p);
  Tensor grad = p * 2.0;
  auto step = sgd_step(g, {p}, {grad}, lr, {.momentum = 0.5});
  std::vector<double> losses;
  for (int i = 0; i < 3; ++i)
    losses.push_back(g.run({}, {loss}, step, Device::cpu())[0].element_as_double(0));
  // p: 3 -> 3 - 0.5*6 = 0 -> buf = 0.5*6 + 0 = 3, p = 0 - 1.5 = -1.5 -> ...
  EXPECT_DOUBLE_EQ(losses[0], 9.0);
  EXPECT_DOUBLE_EQ(losses[1], 0.0);
  EXPECT_DOUBLE_EQ(losses[2], 2.25);
}

TEST(NnOptimizers, TrainsWithAutodiffGradients) {
  // Least squares on a line: Adam with tg::gradients drives the loss down.
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<double>({0, 1, 2, 3}, {4, 1}));
  Tensor y = g.constant(TensorData::from_vector<double>({1, 3, 5, 7}, {4, 1}));
  Tensor w = g.variable(TensorData::zeros({1, 1}, DType::f64), "w");
  Tensor b = g.variable(TensorData::zeros({1}, DType::f64), "b");
  Tensor loss = mean_squared_error(matmul(x, w) + b, y);
  auto step = adam_step(g, {w, b}, gradients(loss, {w, b}), g.constant(0.1, DType::f64));
  Executable exe = g.compile(Device::cpu(), {}, {loss}, step);
  double first = exe.run({})[0].element_as_double(0);
  double last = first;
  for (int i = 0; i < 300; ++i) last = exe.run({})[0].element_as_double(0);
  EXPECT_DOUBLE_EQ(first, 21.0);
  EXPECT_LT(last, 1e-3);
}

TEST(NnSchedules, StepDecayAndCosineWarmup) {
  EXPECT_DOUBLE_EQ(step_decay_lr(0.1, 0, 3), 0.1);
  EXPECT_DOUBLE_EQ(step_decay_lr(0.1, 2, 3), 0.1);
  EXPECT_DOUBLE_EQ(step_decay_lr(0.1, 3, 3), 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(step_decay_lr(1.0, 7, 3, 0.5), 0.25);
  EXPECT_DOUBLE_EQ(cosine_warmup_lr(1.0, 0, 2, 6), 0.0);
  EXPECT_DOUBLE_EQ(cosine_warmup_lr(1.0, 1, 2, 6), 0.5);
  EXPECT_DOUBLE_EQ(cosine_warmup_lr(1.0, 2, 2, 6), 1.0);
  EXPECT_NEAR(cosine_warmup_lr(1.0, 4, 2, 6), 0.5, 1e-15);
  EXPECT_NEAR(cosine_warmup_lr(1.0, 5, 2, 6), 0.146446609407, 1e-12);  // (1 + cos(3pi/4)) / 2
  EXPECT_NEAR(cosine_warmup_lr(1.0, 4, 2, 6, 0.2), 0.6, 1e-15);
  EXPECT_DOUBLE_EQ(cosine_warmup_lr(1.0, 6, 2, 6, 0.2), 0.2);
  EXPECT_DOUBLE_EQ(cosine_warmup_lr(1.0, 100, 2, 6, 0.2), 0.2);
  EXPECT_DOUBLE_EQ(cosine_warmup_lr(1.0, 0, 0, 4), 1.0);  // no warm-up
  EXPECT_TG_ERROR(step_decay_lr(0.1, 1, 0), ErrorCode::invalid_argument, "[step_decay_lr]");
  EXPECT_TG_ERROR(step_decay_lr(0.1, -1, 2), ErrorCode::invalid_argument, "[step_decay_lr]");
  EXPECT_TG_ERROR(cosine_warmup_lr(0.1, 0, 5, 4), ErrorCode::invalid_argument,
                  "[cosine_warmup_lr]");
  EXPECT_TG_ERROR(cosine_warmup_lr(0.1, -1, 0, 4), ErrorCode::invalid_argument,
                  "[cosine_warmup_lr]");
}

TEST(NnOptimizers, Errors) {
  Problem pr;
  auto grads = pr.grads();
  Graph& g = pr.g;
  Tensor not_var = g.placeholder({2}, DType::f64, "x");
  EXPECT_TG_ERROR(sgd_step(g, {not_var}, {grads[1]}, pr.lr), ErrorCode::invalid_argument,
                  "[sgd_step]");
  EXPECT_TG_ERROR(sgd_step(g, {pr.w}, {grads[1]}, pr.lr), ErrorCode::shape_mismatch, "[sgd_step]");
  Tensor f32_grad = g.constant(TensorData::zeros({2}, DType::f32));
  EXPECT_TG_ERROR(adam_step(g, {pr.b}, {f32_grad}, pr.lr), ErrorCode::dtype_mismatch,
                  "[adam_step]");
  EXPECT_TG_ERROR(adam_step(g, {pr.w, pr.b}, {grads[0]}, pr.lr), ErrorCode::invalid_argument,
                  "[adam_step]");
  EXPECT_TG_ERROR(adam_step(g, {}, {}, pr.lr), ErrorCode::invalid_argument, "[adam_step]");
  EXPECT_TG_ERROR(adam_step(g, {pr.b, pr.b}, {grads[1], grads[1]}, pr.lr),
                  ErrorCode::invalid_argument, "[adam_step]");
  Tensor vector_lr = g.constant(TensorData::zeros({1}, DType::f64));
  EXPECT_TG_ERROR(adam_step(g, {pr.b}, {grads[1]}, vector_lr), ErrorCode::invalid_argument,
                  "[adam_step]");
  EXPECT_TG_ERROR(adam_step(g, {pr.b}, {grads[1]}, g.constant(1.0, DType::i32)),
                  ErrorCode::invalid_argument, "[adam_step]");
  Tensor int_var = g.variable(TensorData::zeros({2}, DType::i32), "counter");
  EXPECT_TG_ERROR(sgd_step(g, {int_var}, {grads[1]}, pr.lr), ErrorCode::dtype_mismatch,
                  "[sgd_step]");
  EXPECT_TG_ERROR(adam_step(g, {pr.b}, {grads[1]}, pr.lr, {.beta1 = 1.0}),
                  ErrorCode::invalid_argument, "[adam_step]");
  EXPECT_TG_ERROR(adam_step(g, {pr.b}, {grads[1]}, pr.lr, {.epsilon = -1}),
                  ErrorCode::invalid_argument, "[adam_step]");
  EXPECT_TG_ERROR(sgd_step(g, {pr.b}, {grads[1]}, pr.lr, {.nesterov = true}),
                  ErrorCode::invalid_argument, "[sgd_step]");
  EXPECT_TG_ERROR(sgd_step(g, {pr.b}, {grads[1]}, pr.lr, {.momentum = -0.1}),
                  ErrorCode::invalid_argument, "[sgd_step]");
  // No state was created by the failed calls; a second optimizer needs its own name.
  EXPECT_LT(g.impl()->variables()->find("adam/step"), 0);
  adam_step(g, {pr.b}, {grads[1]}, pr.lr);
  EXPECT_TG_ERROR(adam_step(g, {pr.b}, {grads[1]}, pr.lr), ErrorCode::invalid_argument,
                  "already exists");
  adam_step(g, {pr.b}, {grads[1]}, pr.lr, {.name = "adam2"});
  EXPECT_GE(g.impl()->variables()->find("b/adam2_v"), 0);
}

}  // namespace
}  // namespace tg
