// Optimizer steps as graph builders (PyTorch's SGD, Adam, AdamW update rules) and learning-rate
// schedules. Every update reads the start-of-run values of the parameters and of the state
// variables (the `variable` tensors), so the assignments of one step never see each other.
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>

#include "core/error_util.h"
#include "ir/graph.h"
#include "tg/nn.h"
#include "tg/ops.h"

namespace tg {
namespace {

bool shapes_fit(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != -1 && b[i] != -1) return false;
  }
  return true;
}

void check_param(Graph& g, const Tensor& p, const Tensor& grad, size_t i, std::string_view op) {
  if (!p.valid() || p.graph_impl() != g.impl()) {
    fail(ErrorCode::invalid_argument, op, "param {} is empty or belongs to another graph", i);
  }
  if (p.op().kind_name() != "variable") {
    fail(ErrorCode::invalid_argument, op,
         "param {} must be a variable (from Graph::variable), got the output of '{}'", i,
         p.op().kind_name());
  }
  if (!is_floating(p.dtype())) {
    fail(ErrorCode::dtype_mismatch, op,
         "param {} ('{}') is {}: only floating variables can be trained", i, p.op().name(),
         p.type().to_string());
  }
  if (!grad.valid() || grad.graph_impl() != g.impl()) {
    fail(ErrorCode::invalid_argument, op, "grad {} is empty or belongs to another graph", i);
  }
  if (grad.dtype() != p.dtype()) {
    fail(ErrorCode::dtype_mismatch, op, "grad {} is {}, param '{}' is {}", i,
         grad.type().to_string(), p.op().name(), p.type().to_string());
  }
  if (!shapes_fit(grad.shape(), p.shape())) {
    fail(ErrorCode::shape_mismatch, op, "grad {} is {}, param '{}' is {}", i,
         grad.type().to_string(), p.op().name(), p.type().to_string());
  }
}

void check_inputs(Graph& g, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const Tensor& lr, std::string_view op) {
  if (params.empty()) fail(ErrorCode::invalid_argument, op, "no parameters to update");
  if (params.size() != grads.size()) {
    fail(ErrorCode::invalid_argument, op, "{} params but {} grads", params.size(), grads.size());
  }
  std::set<int> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    check_param(g, params[i], grads[i], i, op);
    if (!seen.insert(params[i].node_id()).second) {
      fail(ErrorCode::invalid_argument, op, "param {} ('{}') is listed twice", i,
           params[i].op().name());
    }
  }
  if (!lr.valid() || lr.graph_impl() != g.impl()) {
    fail(ErrorCode::invalid_argument, op, "learning_rate is empty or belongs to another graph");
  }
  if (!is_floating(lr.dtype()) || lr.rank() != 0) {
    fail(ErrorCode::invalid_argument, op, "learning_rate must be a floating scalar, got {}",
         lr.type().to_string());
  }
}

void check_range(double v, double lo, double hi, bool hi_open, std::string_view what,
                 std::string_view op) {
  bool ok = std::isfinite(v) && v >= lo && (hi_open ? v < hi : v <= hi);
  if (!ok) {
    fail(ErrorCode::invalid_argument, op, "{} = {} is not in [{}, {}{}", what, v, lo, hi,
         hi_open ? ")" : "]");
  }
}

// Names of the state variables, all checked free before any is created.
struct StateNames {
  std::string step;
  std::vector<std::vector<std::string>> per_param;  // [param][slot]
};

StateNames state_names(Graph& g, const std::vector<Tensor>& params, const std::string& prefix,
                       const std::vector<std::string_view>& slots, std::string_view op) {
  StateNames n{prefix + "/step", {}};
  std::vector<std::string> all{n.step};
  for (const Tensor& p : params) {
    n.per_param.emplace_back();
    for (std::string_view s : slots) {
      n.per_param.back().push_back(fmt::format("{}/{}_{}", p.op().name(), prefix, s));
      all.push_back(n.per_param.back().back());
    }
  }
  for (const std::string& name : all) {
    if (g.impl()->variables()->find(name) >= 0) {
      fail(ErrorCode::invalid_argument, op,
           "state variable '{}' already exists: give this optimizer another name (options.name)",
           name);
    }
  }
  return n;
}

Tensor zeros_variable(Graph& g, const Tensor& like, const std::string& name) {
  return g.variable(TensorData::zeros(like.shape(), like.dtype()), name);
}

// A scalar tensor cast to each parameter dtype that needs it (one cast per dtype).
class ScalarCache {
 public:
  explicit ScalarCache(Tensor value) : value_(std::move(value)) {}
  Tensor as(DType dtype) {
    auto it = cache_.find(dtype);
    if (it != cache_.end()) return it->second;
    Tensor t = value_.dtype() == dtype ? value_ : cast(value_, dtype);
    cache_.emplace(dtype, t);
    return t;
  }

 private:
  Tensor value_;
  std::map<DType, Tensor> cache_;
};

// The step counter: its start-of-run value, and the op incrementing it.
struct StepCounter {
  Tensor start;
  Tensor next;
  Operation assign;
};

StepCounter step_counter(Graph& g, const std::string& name) {
  StepCounter s;
  s.start = g.variable(TensorData::scalar<int64_t>(0), name);
  s.next = add(s.start, g.constant(1.0, DType::i64));
  s.assign = assign_variable(s.start, s.next);
  return s;
}

void check_sgd_options(const SgdOptions& o) {
  constexpr std::string_view op = "sgd_step";
  const double inf = std::numeric_limits<double>::infinity();
  check_range(o.momentum, 0, inf, true, "momentum", op);
  check_range(o.dampening, 0, 1, false, "dampening", op);
  check_range(o.weight_decay, 0, inf, true, "weight_decay", op);
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
    fail(ErrorCode::invalid_argument, op,
         "nesterov needs momentum > 0 and dampening 0 (momentum {}, dampening {})", o.momentum,
         o.dampening);
  }
}

void check_adam_options(const AdamOptions& o) {
  constexpr std::string_view op = "adam_step";
  const double inf = std::numeric_limits<double>::infinity();
  check_range(o.beta1, 0, 1, true, "beta1", op);
  check_range(o.beta2, 0, 1, true, "beta2", op);
  check_range(o.epsilon, 0, inf, true, "epsilon", op);
  check_range(o.weight_decay, 0, inf, true, "weight_decay", op);
}

}  // namespace

std::vector<Operation> sgd_step(Graph& g, const std::vector<Tensor>& params,
                                const std::vector<Tensor>& grads, Tensor learning_rate,
                                SgdOptions o) {
  constexpr std::string_view op = "sgd_step";
  check_inputs(g, params, grads, learning_rate, op);
  check_sgd_options(o);
  const std::string prefix = o.name.empty() ? "sgd" : o.name;
  const bool use_momentum = o.momentum != 0;
  StateNames names = state_names(
      g, params, prefix,
      use_momentum ? std::vector<std::string_view>{"momentum"} : std::vector<std::string_view>{},
      op);
  StepCounter step = step_counter(g, names.step);
  Tensor first = equal(step.start, g.constant(0.0, DType::i64));
  ScalarCache lr(learning_rate);
  std::vector<Operation> updates, state_updates;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    Tensor d = o.maximize ? neg(grads[i]) : grads[i];
    if (o.weight_decay != 0) d = d + p * o.weight_decay;
    Tensor buf, next_buf;
    if (use_momentum) {
      buf = zeros_variable(g, p, names.per_param[i][0]);
      Tensor blended = buf * o.momentum + (o.dampening == 0 ? d : d * (1.0 - o.dampening));
      next_buf = select(first, d, blended);  // PyTorch: the buffer starts as the gradient
      d = o.nesterov ? d + next_buf * o.momentum : next_buf;
    }
    Tensor p_next = sub(p, mul(lr.as(p.dtype()), d));
    // Assignments after every value of the update (one fused kernel computes them all).
    if (use_momentum) state_updates.push_back(assign_variable(buf, next_buf));
    updates.push_back(assign_variable(p, p_next));
  }
  updates.insert(updates.end(), state_updates.begin(), state_updates.end());
  updates.push_back(step.assign);
  return updates;
}

std::vector<Operation> adam_step(Graph& g, const std::vector<Tensor>& params,
                                 const std::vector<Tensor>& grads, Tensor learning_rate,
                                 AdamOptions o) {
  constexpr std::string_view op = "adam_step";
  check_inputs(g, params, grads, learning_rate, op);
  check_adam_options(o);
  const bool decoupled = o.decoupled_weight_decay;
  const std::string prefix = !o.name.empty() ? o.name : decoupled ? "adamw" : "adam";
  std::vector<std::string_view> slots{"m", "v"};
  if (o.amsgrad) slots.push_back("v_max");
  StateNames names = state_names(g, params, prefix, slots, op);
  StepCounter step = step_counter(g, names.step);

  // Scalars of this step, in f64 (as PyTorch computes them in Python floats).
  Tensor t = cast(step.next, DType::f64);
  Tensor lr64 =
      learning_rate.dtype() == DType::f64 ? learning_rate : cast(learning_rate, DType::f64);
  Tensor bc1 = 1.0 - pow(g.constant(o.beta1, DType::f64), t);
  Tensor bc2 = 1.0 - pow(g.constant(o.beta2, DType::f64), t);
  ScalarCache step_size(div(lr64, bc1));
  ScalarCache bc2_sqrt(sqrt(bc2));
  ScalarCache decay(1.0 - lr64 * o.weight_decay);

  std::vector<Operation> updates, state_updates;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const DType dt = p.dtype();
    Tensor d = o.maximize ? neg(grads[i]) : grads[i];
    if (o.weight_decay != 0 && !decoupled) d = d + p * o.weight_decay;
    Tensor base = o.weight_decay != 0 && decoupled ? mul(p, decay.as(dt)) : p;
    Tensor m = zeros_variable(g, p, names.per_param[i][0]);
    Tensor v = zeros_variable(g, p, names.per_param[i][1]);
    Tensor m_next = m * o.beta1 + d * (1.0 - o.beta1);
    Tensor v_next = v * o.beta2 + d * d * (1.0 - o.beta2);
    Tensor v_used = v_next, v_max;
    if (o.amsgrad) {
      v_max = zeros_variable(g, p, names.per_param[i][2]);
      v_used = maximum(v_max, v_next);
    }
    Tensor denom = sqrt(v_used) / bc2_sqrt.as(dt) + o.epsilon;
    Tensor p_next = sub(base, mul(step_size.as(dt), div(m_next, denom)));
    // Assignments after every value of the update, so elementwise fusion computes m, v and p in
    // one kernel (an assignment between them would split it).
    state_updates.push_back(assign_variable(m, m_next));
    state_updates.push_back(assign_variable(v, v_next));
    if (o.amsgrad) state_updates.push_back(assign_variable(v_max, v_used));
    updates.push_back(assign_variable(p, p_next));
  }
  updates.insert(updates.end(), state_updates.begin(), state_updates.end());
  updates.push_back(step.assign);
  return updates;
}

std::vector<Operation> adamw_step(Graph& g, const std::vector<Tensor>& params,
                                  const std::vector<Tensor>& grads, Tensor learning_rate,
                                  AdamOptions options) {
  options.decoupled_weight_decay = true;
  return adam_step(g, params, grads, learning_rate, options);
}

double step_decay_lr(double base_lr, int64_t step, int64_t step_size, double gamma) {
  if (step < 0 || step_size < 1) {
    fail(ErrorCode::invalid_argument, "step_decay_lr",
         "needs step >= 0 and step_size >= 1 (step {}, step_size {})", step, step_size);
  }
  return base_lr * std::pow(gamma, static_cast<double>(step / step_size));
}

double cosine_warmup_lr(double base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps,
                        double min_lr) {
  if (step < 0 || warmup_steps < 0 || total_steps < 1 || warmup_steps > total_steps) {
    fail(ErrorCode::invalid_argument, "cosine_warmup_lr",
         "needs step >= 0 and 0 <= warmup_steps <= total_steps, total_steps >= 1 (step {}, "
         "warmup_steps {}, "
         "total_steps {})",
         step, warmup_steps, total_steps);
  }
  if (step < warmup_steps)
    return base_lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
  if (step >= total_steps) return min_lr;
  double progress =
      static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace tg
