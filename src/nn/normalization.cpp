// Normalization and dropout composites: batch_norm (with running statistics kept in variables),
// layer_norm, and inverted dropout (masks from random_uniform_like keyed by a per-run counter).
// Built from the public ops so autodiff flows through them. Semantics: docs/nn.md.
#include <cmath>
#include <optional>
#include <string>

#include "core/error_util.h"
#include "ir/graph.h"
#include "tg/control_flow.h"
#include "tg/nn.h"
#include "tg/ops.h"
#include "tg/sync_batch_norm.h"

namespace tg {
namespace {

void check_x(const Tensor& x, std::string_view op) {
  if (!x.valid()) fail(ErrorCode::invalid_argument, op, "x is an empty Tensor");
  if (!is_floating(x.dtype())) {
    fail(ErrorCode::dtype_mismatch, op, "expects a floating x, got {}", x.type().to_string());
  }
}

// A tensor argument other than x: valid and of x's graph.
void check_same_graph(const Tensor& t, const Tensor& x, std::string_view what, std::string_view op) {
  if (!t.valid()) fail(ErrorCode::invalid_argument, op, "{} is an empty Tensor", what);
  if (t.graph_impl() != x.graph_impl()) {
    fail(ErrorCode::invalid_argument, op, "{} belongs to another graph than x", what);
  }
}

void check_is_training(const Tensor& t, const Tensor& x, std::string_view op) {
  check_same_graph(t, x, "is_training", op);
  if (t.dtype() != DType::bool_ || t.rank() != 0) {
    fail(ErrorCode::invalid_argument, op, "is_training must be a bool scalar, got {}",
         t.type().to_string());
  }
}

void check_epsilon(double epsilon, std::string_view op) {
  if (!std::isfinite(epsilon) || epsilon < 0) {
    fail(ErrorCode::invalid_argument, op, "epsilon = {} must be finite and >= 0", epsilon);
  }
}

bool shapes_fit(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != -1 && b[i] != -1) return false;
  }
  return true;
}

// A parameter of x's dtype with shape `expected` (what names the expectation, e.g. "[C]").
void check_param(const Tensor& p, const Tensor& x, const Shape& expected, std::string_view what,
                 std::string_view expectation, std::string_view op) {
  check_same_graph(p, x, what, op);
  if (p.dtype() != x.dtype()) {
    fail(ErrorCode::dtype_mismatch, op, "{} is {}, expected x's dtype (x {})", what,
         p.type().to_string(), x.type().to_string());
  }
  if (!shapes_fit(p.shape(), expected)) {
    fail(ErrorCode::shape_mismatch, op, "{} is {}, expected {} = {} (x {})", what,
         p.type().to_string(), expectation, str(expected), x.type().to_string());
  }
}

void check_batch_norm_options(const BatchNormOptions& o) {
  if (!std::isfinite(o.momentum) || o.momentum < 0 || o.momentum > 1) {
    fail(ErrorCode::invalid_argument, "batch_norm", "momentum = {} is not in [0, 1]", o.momentum);
  }
  check_epsilon(o.epsilon, "batch_norm");
}

void check_running_stat(const Tensor& v, std::string_view what) {
  if (v.op().kind_name() != "variable") {
    fail(ErrorCode::invalid_argument, "batch_norm",
         "{} must be a variable (from Graph::variable), got the output of '{}'", what,
         v.op().kind_name());
  }
}

// The number of elements reduced per channel when some reduced dims are dynamic: counted at run
// time in f64 (exact) over a slice of x that keeps only those dims (its values are not used:
// is_nan(s) * 0 + 1 is 1 for any value), times the static dims' product, which `static_count`
// receives either way. nullopt when every reduced dim is static.
std::optional<Tensor> dynamic_count(const Tensor& x, int64_t channel_axis, double* static_count) {
  *static_count = 1;
  SliceDesc keep_dynamic;
  for (int64_t a = 0; a < x.rank(); ++a) {
    const int64_t d = x.shape()[a];
    if (a != channel_axis && d == -1) continue;
    if (a != channel_axis) *static_count *= static_cast<double>(d);
    keep_dynamic.begin.push_back(0);
    keep_dynamic.end.push_back(1);
    keep_dynamic.axes.push_back(a);
  }
  if (keep_dynamic.axes.size() == static_cast<size_t>(x.rank())) return std::nullopt;
  Tensor ones = cast(is_nan(slice(x, keep_dynamic)), DType::f64) * 0.0 + 1.0;
  return reduce_sum(ones) * *static_count;
}

// The number of elements reduced per channel as a scalar of `dtype`: a constant when those dims
// are static, else counted at run time.
Tensor element_count(const Tensor& x, int64_t channel_axis, DType dtype) {
  double static_count = 1;
  std::optional<Tensor> n = dynamic_count(x, channel_axis, &static_count);
  if (!n) return Graph(x.graph_impl()).constant(static_count, dtype);
  return cast(*n, dtype);
}

// An all_reduce (sum) of sync_batch_norm, named so that nn models can bind it to their
// communicator at compile (kSyncBatchNormCollective).
Tensor sync_sum(const Tensor& t, const Communicator& comm) {
  Tensor r = all_reduce(t, comm, {CollectiveReduction::sum});
  r.graph_impl()->node(r.node_id()).name = kSyncBatchNormCollective;
  return r;
}

// The first "dropout_<k>/counter" name not taken in the graph; returns k.
uint64_t free_dropout_index(const Graph& g) {
  for (uint64_t k = 0;; ++k) {
    if (g.impl()->variables()->find(fmt::format("dropout_{}/counter", k)) < 0) return k;
  }
}

}  // namespace

namespace {

// batch_norm, with the statistics of every rank of *comm when comm is set (sync_batch_norm).
Tensor batch_norm_impl(Tensor x, Tensor gamma, Tensor beta, Tensor running_mean, Tensor running_var,
                       Tensor is_training, BatchNormOptions options, const Communicator* comm) {
  const std::string_view op = comm ? "sync_batch_norm" : "batch_norm";
  check_x(x, op);
  const int64_t rank = x.rank();
  if (rank < 2) {
    fail(ErrorCode::invalid_argument, op, "expects x of rank >= 2, got {}", x.type().to_string());
  }
  if (options.axis < -rank || options.axis >= rank) {
    fail(ErrorCode::invalid_argument, op, "axis {} is out of range for x {}", options.axis,
         x.type().to_string());
  }
  const int64_t axis = options.axis < 0 ? options.axis + rank : options.axis;
  check_batch_norm_options(options);
  const Shape channels{x.shape()[axis]};
  check_param(gamma, x, channels, "gamma", "[C]", op);
  check_param(beta, x, channels, "beta", "[C]", op);
  check_param(running_mean, x, channels, "running_mean", "[C]", op);
  check_param(running_var, x, channels, "running_var", "[C]", op);
  check_running_stat(running_mean, "running_mean");
  check_running_stat(running_var, "running_var");
  if (running_mean.node_id() == running_var.node_id()) {
    fail(ErrorCode::invalid_argument, op, "running_mean and running_var are the same variable");
  }
  check_is_training(is_training, x, op);

  Graph g(x.graph_impl());
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < rank; ++a) {
    if (a != axis) axes.push_back(a);
  }
  Shape per_channel(static_cast<size_t>(rank), 1);  // [C] broadcast against x
  per_channel[static_cast<size_t>(axis)] = -1;
  auto bc = [&](const Tensor& p) { return reshape(p, per_channel); };

  // is_training chooses the branch at run time (if_else): inference never computes batch
  // statistics and never touches the variables.
  const double m = options.momentum;
  auto training = [&] {
    // Batch mean and biased variance normalize; the running statistics move towards the batch's
    // (PyTorch: running = (1 - momentum) * running + momentum * batch, unbiased variance).
    Tensor mean, centered, var, unbiased;
    double static_count = 1;     // n when every reduced dim is static
    std::optional<Tensor> count;  // n counted at run time (dynamic dims, or all ranks' n)
    if (comm == nullptr) {
      mean = reduce_mean(x, {.axes = axes, .keep_dims = true});
      centered = x - mean;
      var = reduce_mean(square(centered), {.axes = axes, .keep_dims = true});
      count = dynamic_count(x, axis, &static_count);
      unbiased = var * (count ? cast(*count / (*count - 1.0), x.dtype())
                              : g.constant(static_count / (static_count - 1), x.dtype()));
    } else {
      // The global statistics: [per-channel sums, count] all-reduced, the mean, then the
      // all-reduced sums of squared deviations from it (f32 for half-precision x).
      const DType sd = x.dtype() == DType::f16 || x.dtype() == DType::bf16 ? DType::f32 : x.dtype();
      Tensor xs = sd == x.dtype() ? x : cast(x, sd);
      const int64_t c = channels[0];
      Tensor sums = reduce_sum(xs, {.axes = axes});  // [C]
      Tensor total = sync_sum(concat({sums, reshape(element_count(x, axis, sd), {1})}, 0), *comm);
      Tensor n = reshape(slice(total, {.begin = {c}, .end = {c + 1}}), {});
      count = n;
      Tensor mean_s = bc(slice(total, {.begin = {0}, .end = {c}})) / n;
      Tensor centered_s = xs - mean_s;
      Tensor squares = sync_sum(reduce_sum(square(centered_s), {.axes = axes}), *comm);
      Tensor var_s = bc(squares) / n;
      Tensor unbiased_s = var_s * (n / (n - 1.0));
      auto back = [&](const Tensor& t) { return sd == x.dtype() ? t : cast(t, x.dtype()); };
      mean = back(mean_s);
      centered = back(centered_s);
      var = back(var_s);
      unbiased = back(unbiased_s);
    }
    // Computed in the statistics' broadcast shape (then viewed as [C]), so fusion can merge it
    // with the other per-channel program of the step.
    Tensor new_mean = reshape(bc(running_mean) * (1 - m) + mean * m, {-1});
    Tensor new_var = reshape(bc(running_var) * (1 - m) + unbiased * m, {-1});
    // With at most one value per channel the unbiased variance is 0 * 1/0 (NaN; an empty batch
    // also has a NaN mean): the running statistics keep their values instead of turning NaN
    // (PyTorch raises here, Keras blends a biased 0; a last partial batch of one example must not
    // poison every later inference).
    if (count) {
      Tensor enough = greater(*count, g.constant(1.0, count->dtype()));
      new_mean = select(enough, new_mean, running_mean);
      new_var = select(enough, new_var, running_var);
    } else if (static_count <= 1) {
      new_mean = running_mean;
      new_var = running_var;
    }
    Operation assign_mean = assign_variable(running_mean, new_mean);
    Operation assign_var = assign_variable(running_var, new_var);
    // An empty batch (n = 0) has a NaN variance. y is empty either way, but gamma's gradient is
    // a sum over no rows (0) times rsqrt(var + epsilon): the variance is taken as 0 there, so
    // that gradient is 0, not NaN.
    if (count) {
      var = select(greater(*count, g.constant(0.0, count->dtype())), var,
                   g.constant(0.0, var.dtype()));
    } else if (static_count == 0) {
      var = select(g.constant(0.0, DType::bool_), var, g.constant(0.0, var.dtype()));
    }
    Tensor scaled = centered * (bc(gamma) * rsqrt(var + options.epsilon));
    // The last op of y is ordered after the assignments, which keeps them with y.
    return g.control_dependency({assign_mean, assign_var},
                                [&] { return std::vector<Tensor>{scaled + bc(beta)}; });
  };
  auto inference = [&] {
    // The start-of-run running statistics, folded into one scale and shift.
    Tensor scale = bc(gamma) * rsqrt(bc(running_var) + options.epsilon);
    return std::vector<Tensor>{x * scale + (bc(beta) - bc(running_mean) * scale)};
  };
  return if_else(is_training, training, inference)[0];
}

}  // namespace

const char* const kSyncBatchNormCollective = "sync_batch_norm";

Tensor batch_norm(Tensor x, Tensor gamma, Tensor beta, Tensor running_mean, Tensor running_var,
                  Tensor is_training, BatchNormOptions options) {
  return batch_norm_impl(x, gamma, beta, running_mean, running_var, is_training, options, nullptr);
}

Tensor sync_batch_norm(Tensor x, Tensor gamma, Tensor beta, Tensor running_mean, Tensor running_var,
                       Tensor is_training, const Communicator& comm, BatchNormOptions options) {
  return batch_norm_impl(x, gamma, beta, running_mean, running_var, is_training, options, &comm);
}

Tensor layer_norm(Tensor x, Tensor gamma, Tensor beta, LayerNormOptions options) {
  constexpr std::string_view op = "layer_norm";
  check_x(x, op);
  const int64_t rank = x.rank();
  if (rank == 0) fail(ErrorCode::invalid_argument, op, "expects x of rank >= 1, got a scalar");
  if (options.begin_axis < -rank || options.begin_axis >= rank) {
    fail(ErrorCode::invalid_argument, op, "begin_axis {} is out of range for x {}",
         options.begin_axis, x.type().to_string());
  }
  const int64_t begin = options.begin_axis < 0 ? options.begin_axis + rank : options.begin_axis;
  check_epsilon(options.epsilon, op);
  const Shape normalized(x.shape().begin() + begin, x.shape().end());
  const std::string expectation = fmt::format("x.shape[{}:]", begin);
  if (gamma.valid()) check_param(gamma, x, normalized, "gamma", expectation, op);
  if (beta.valid()) check_param(beta, x, normalized, "beta", expectation, op);

  std::vector<int64_t> axes;
  for (int64_t a = begin; a < rank; ++a) axes.push_back(a);
  Tensor mean = reduce_mean(x, {.axes = axes, .keep_dims = true});
  Tensor centered = x - mean;
  Tensor var = reduce_mean(square(centered), {.axes = axes, .keep_dims = true});
  Tensor y = centered * rsqrt(var + options.epsilon);
  if (gamma.valid()) y = y * gamma;  // x.shape[begin:] broadcasts from the right
  if (beta.valid()) y = y + beta;
  return y;
}

Tensor dropout(Tensor x, Tensor is_training, DropoutOptions options) {
  constexpr std::string_view op = "dropout";
  check_x(x, op);
  const double rate = options.rate;
  if (!(rate >= 0 && rate < 1)) {
    fail(ErrorCode::invalid_argument, op, "rate = {} is not in [0, 1)", rate);
  }
  check_is_training(is_training, x, op);

  Graph g(x.graph_impl());
  const uint64_t k = free_dropout_index(g);
  Tensor counter = g.variable(TensorData::scalar<int64_t>(0), fmt::format("dropout_{}/counter", k));
  Operation bump = assign_variable(counter, select(is_training, counter + 1.0, counter));

  // The k-th dropout of a graph offsets the seed, so dropouts sharing options.seed draw
  // independent masks; u is f32 whatever x's dtype (24 random bits).
  const uint64_t seed = options.seed + k * 0x9E3779B97F4A7C15ull;
  Tensor u = random_uniform_like(x, counter, 0, 1, {.seed = seed, .dtype = DType::f32});
  Tensor keep = greater_equal(u, g.constant(rate, DType::f32));
  Tensor kept = x * (1 / (1 - rate));
  return g.control_dependency({bump}, [&] {
    Tensor dropped = select(keep, kept, g.constant(0.0, x.dtype()));
    return std::vector<Tensor>{select(is_training, dropped, x)};
  })[0];
}

}  // namespace tg
