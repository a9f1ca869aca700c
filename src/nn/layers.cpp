// The layer machinery of the model API: Input, the Layer handle, the LayerImpl base (naming,
// weights, error prefixes), initializers, activations, and the weightless layers. Dense, Conv2D,
// BatchNorm and pooling live in layers_weighted.cpp.
#include <fmt/format.h>

#include <cmath>

#include "core/convert.h"
#include "core/error_util.h"
#include "nn/init_random.h"
#include "nn/model_impl.h"
#include "tg/ops.h"

namespace tg::nn {
namespace detail {

std::string ModelContext::unique_name(const std::string& base) {
  std::string name = base;
  int& count = name_counts[base];
  while (names.count(name)) name = fmt::format("{}_{}", base, ++count);
  return name;
}

uint64_t derive_seed(uint64_t base, uint64_t a, uint64_t b) {
  auto mix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(base) ^ a) ^ (b + 0x632BE59BD9B4E019ull));
}

namespace {

TensorData convert_floating(const TensorData& v, DType dtype) {
  if (v.dtype() == dtype) return v;
  TensorData out(v.shape(), dtype);
  const void* src = v.raw_data();
  void* dst = out.raw_data();
  for (int64_t i = 0; i < v.num_elements(); ++i) {
    store_from_double(dtype, dst, i, load_as_double(v.dtype(), src, i));
  }
  return out;
}

double fan_of(const Initializer& init, Fans fans) {
  double fan = init.mode == Initializer::FanMode::fan_in ? fans.fan_in : fans.fan_out;
  return std::max(fan, 1.0);
}

}  // namespace

TensorData initial_value(const Initializer& init, const Shape& shape, Fans fans, uint64_t seed,
                         DType dtype) {
  using K = Initializer::Kind;
  auto uniform = [&](double limit) {
    return fast_random_uniform(shape, static_cast<float>(-limit), static_cast<float>(limit), seed);
  };
  auto normal = [&](double stddev) {
    return fast_random_normal(shape, 0.f, static_cast<float>(stddev), seed);
  };
  const double fan_avg = std::max((fans.fan_in + fans.fan_out) / 2, 1.0);
  TensorData v;
  switch (init.kind) {
    case K::zeros: return TensorData::zeros(shape, dtype);
    case K::ones: return TensorData::full(shape, dtype, 1.0);
    case K::constant: return TensorData::full(shape, dtype, init.a);
    case K::uniform:
      v = fast_random_uniform(shape, static_cast<float>(init.a), static_cast<float>(init.b), seed);
      break;
    case K::normal:
      v = fast_random_normal(shape, static_cast<float>(init.a), static_cast<float>(init.b), seed);
      break;
    case K::glorot_uniform: v = uniform(std::sqrt(3.0 / fan_avg)); break;
    case K::glorot_normal: v = normal(std::sqrt(1.0 / fan_avg)); break;
    case K::he_normal: v = normal(std::sqrt(2.0 / fan_of(init, fans))); break;
    case K::he_uniform: v = uniform(std::sqrt(6.0 / fan_of(init, fans))); break;
    case K::lecun_uniform: v = uniform(std::sqrt(1.0 / std::max(fans.fan_in, 1.0))); break;
  }
  return convert_floating(v, dtype);
}

void fail_layer(ErrorCode code, const std::string& name, const std::string& type,
                const std::string& message) {
  if (name.empty()) throw Error(code, fmt::format("[{}] {}", type, message));
  throw Error(code, fmt::format("[{}] {}: {}", name, type, message));
}

void LayerImpl::fail(ErrorCode code, const std::string& message) const {
  fail_layer(code, name_, type_name_, message);
}

void LayerImpl::attach(const std::shared_ptr<ModelContext>& ctx) {
  if (owner_ == ctx.get()) return;
  if (owner_ != nullptr) {
    fail(ErrorCode::invalid_argument,
         "the layer belongs to another model (a layer is applied to the tensors of one model)");
  }
  if (name_.empty()) {
    name_ = ctx->unique_name(base_name_);
  } else if (ctx->names.count(name_)) {
    fail(ErrorCode::invalid_argument, "another layer of the model is already called '" + name_ + "'");
  }
  ctx->names.insert(name_);
  owner_ = ctx.get();
  index_ = static_cast<int64_t>(ctx->layers.size());
  ctx->layers.push_back(nullptr);  // filled by Layer::operator() (needs the shared_ptr)
}

Tensor LayerImpl::add_weight(ModelContext& ctx, const std::string& weight, const Shape& shape,
                             const Initializer& init, Fans fans, bool trainable) {
  const uint64_t k = trainable_.size() + non_trainable_.size();
  TensorData value = initial_value(init, shape, fans, derive_seed(ctx.seed, index_, k), ctx.dtype);
  Tensor v = ctx.graph.variable(value, name_ + "/" + weight);
  (trainable ? trainable_ : non_trainable_).push_back(v);
  return v;
}

Tensor apply_activation(Tensor x, Act act, const ActivationOptions& o) {
  switch (act) {
    case Act::linear: return x;
    case Act::relu: return relu(x);
    case Act::leaky_relu: return leaky_relu(x, o.alpha.value_or(0.01));
    case Act::elu: return elu(x, o.alpha.value_or(1.0));
    case Act::gelu: return gelu(x, o.approximate_tanh);
    case Act::silu: return silu(x);
    case Act::sigmoid: return sigmoid(x);
    case Act::tanh: return tanh(x);
    case Act::softmax: return softmax(x, o.axis);
  }
  return x;
}

}  // namespace detail

using detail::LayerImpl;
using detail::ModelContext;

namespace {

constexpr std::string_view kActNames[] = {"linear", "relu",    "leaky_relu", "elu",    "gelu",
                                          "silu",   "sigmoid", "tanh",       "softmax"};

// Checks that a rank >= 2 input has static non-batch dims; returns their product.
int64_t feature_count(const LayerImpl& layer, const Tensor& x) {
  if (x.rank() < 2) {
    layer.fail(ErrorCode::shape_mismatch,
               fmt::format("expects an input of rank >= 2 ([batch, ...]), got {}", str(x.shape())));
  }
  int64_t n = 1;
  for (size_t i = 1; i < x.shape().size(); ++i) {
    if (x.shape()[i] < 0) {
      layer.fail(ErrorCode::shape_mismatch,
                 fmt::format("needs static non-batch dims, got {}", str(x.shape())));
    }
    n *= x.shape()[i];
  }
  return n;
}

class FlattenImpl : public LayerImpl {
 public:
  explicit FlattenImpl(std::string name) : LayerImpl("Flatten", "flatten", std::move(name)) {}
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    const Tensor& x = xs[0];
    int64_t n = feature_count(*this, x);
    return reshape(x, {x.shape()[0], n});
  }
};

class ReshapeImpl : public LayerImpl {
 public:
  ReshapeImpl(Shape target, std::string name)
      : LayerImpl("Reshape", "reshape", std::move(name)), target_(std::move(target)) {
    int unknown = 0;
    for (int64_t d : target_) {
      if (d < -1) fail(ErrorCode::invalid_argument, "target dims must be >= -1, got " + str(target_));
      unknown += d == -1;
    }
    if (unknown > 1) fail(ErrorCode::invalid_argument, "at most one -1 in " + str(target_));
  }
  std::string describe() const override { return str(target_); }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    const Tensor& x = xs[0];
    int64_t n = feature_count(*this, x);
    Shape shape = target_;
    int64_t known = 1;
    for (int64_t d : shape) known *= d == -1 ? 1 : d;
    for (int64_t& d : shape) {
      if (d == -1) d = known == 0 ? 0 : n / known;
    }
    if (num_elements(shape) != n) {
      fail(ErrorCode::shape_mismatch, fmt::format("cannot reshape {} ({} features per example) to "
                                                  "[batch] + {}", str(x.shape()), n, str(target_)));
    }
    shape.insert(shape.begin(), x.shape()[0]);
    return reshape(x, shape);
  }

 private:
  Shape target_;
};

class ActivationImpl : public LayerImpl {
 public:
  ActivationImpl(Act act, ActivationOptions o)
      : LayerImpl("Activation", std::string(act_name(act)), o.name), act_(act), options_(o) {
    if (static_cast<int>(act) < 0 || static_cast<size_t>(act) >= std::size(kActNames)) {
      fail(ErrorCode::invalid_argument, "unknown activation");
    }
  }
  std::string describe() const override { return std::string(act_name(act_)); }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    return detail::apply_activation(xs[0], act_, options_);
  }

 private:
  Act act_;
  ActivationOptions options_;
};

class DropoutImpl : public LayerImpl {
 public:
  DropoutImpl(double rate, std::optional<uint64_t> seed, std::string name)
      : LayerImpl("Dropout", "dropout", std::move(name)), rate_(rate), seed_(seed) {
    if (!(rate >= 0 && rate < 1)) {
      fail(ErrorCode::invalid_argument, fmt::format("rate = {} must be in [0, 1)", rate));
    }
  }
  std::string describe() const override { return fmt::format("rate {}", rate_); }
  Tensor call(ModelContext& ctx, const std::vector<Tensor>& xs) override {
    uint64_t seed = seed_.value_or(detail::derive_seed(ctx.seed, index_, 1000));
    return dropout(xs[0], ctx.is_training, {.rate = rate_, .seed = seed});
  }

 private:
  double rate_;
  std::optional<uint64_t> seed_;
};

// Checks two or more inputs of one shape (dynamic dims match anything) and dtype.
void check_same_shapes(const LayerImpl& layer, const std::vector<Tensor>& xs, int64_t skip_axis) {
  for (size_t i = 1; i < xs.size(); ++i) {
    const Shape& a = xs[0].shape();
    const Shape& b = xs[i].shape();
    bool ok = a.size() == b.size() && xs[0].dtype() == xs[i].dtype();
    for (size_t d = 0; ok && d < a.size(); ++d) {
      ok = static_cast<int64_t>(d) == skip_axis || a[d] == b[d] || a[d] == -1 || b[d] == -1;
    }
    if (!ok) {
      std::string all;
      for (const Tensor& x : xs) all += (all.empty() ? "" : ", ") + x.type().to_string();
      layer.fail(xs[0].dtype() == xs[i].dtype() ? ErrorCode::shape_mismatch
                                                : ErrorCode::dtype_mismatch,
                 fmt::format("input {} does not match input 0 (inputs {})", i, all));
    }
  }
}

class AddImpl : public LayerImpl {
 public:
  explicit AddImpl(std::string name) : LayerImpl("Add", "add", std::move(name)) {}
  int arity() const override { return 0; }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    check_same_shapes(*this, xs, -1);
    Tensor y = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) y = add(y, xs[i]);
    return y;
  }
};

class ConcatenateImpl : public LayerImpl {
 public:
  ConcatenateImpl(int64_t axis, std::string name)
      : LayerImpl("Concatenate", "concatenate", std::move(name)), axis_(axis) {}
  int arity() const override { return 0; }
  std::string describe() const override { return fmt::format("axis {}", axis_); }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    const int64_t rank = xs[0].rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis <= 0 || axis >= rank) {
      fail(ErrorCode::invalid_argument,
           fmt::format("axis {} must name a non-batch dim of the rank-{} inputs", axis_, rank));
    }
    check_same_shapes(*this, xs, axis);
    return concat(xs, axis);
  }

 private:
  int64_t axis_;
};

class LambdaImpl : public LayerImpl {
 public:
  LambdaImpl(std::function<Tensor(Tensor)> fn, std::string name)
      : LayerImpl("Lambda", "lambda", std::move(name)), fn_(std::move(fn)) {
    if (!fn_) fail(ErrorCode::invalid_argument, "the function is empty");
  }
  Tensor call(ModelContext&, const std::vector<Tensor>& xs) override {
    Tensor y = fn_(xs[0]);
    if (!y.valid() || y.graph_impl() != xs[0].graph_impl()) {
      fail(ErrorCode::invalid_argument, "the function must return a tensor of its input's graph");
    }
    return y;
  }

 private:
  std::function<Tensor(Tensor)> fn_;
};

std::string error_with_layer(const Error& e, const LayerImpl& l) {
  std::string prefix = fmt::format("[{}] ", l.name_);
  std::string what = e.what();
  if (what.rfind(prefix, 0) == 0) return what;
  return fmt::format("[{}] {}: {}", l.name_, l.type_name_, what);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

SymbolicTensor Input(Shape shape, InputOptions options) {
  for (int64_t d : shape) {
    if (d < 0) {
      fail(ErrorCode::invalid_argument, "Input", "dims must be static (>= 0), got {} (the batch "
           "dim is not part of the shape)", str(shape));
    }
  }
  if (!is_floating(options.dtype)) {
    fail(ErrorCode::dtype_mismatch, "Input", "dtype must be floating, got {}",
         dtype_name(options.dtype));
  }
  if (options.batch_size < -1 || options.batch_size == 0) {
    fail(ErrorCode::invalid_argument, "Input", "batch_size must be -1 (any) or >= 1, got {}",
         options.batch_size);
  }
  auto ctx = std::make_shared<ModelContext>();
  ctx->dtype = options.dtype;
  ctx->seed = options.seed;
  shape.insert(shape.begin(), options.batch_size);
  Tensor x = ctx->graph.placeholder(shape, options.dtype, options.name);
  ctx->is_training = ctx->graph.placeholder({}, DType::bool_, "is_training");
  return SymbolicTensor(ctx, x);
}

std::string_view act_name(Act act) {
  auto i = static_cast<size_t>(act);
  return i < std::size(kActNames) ? kActNames[i] : "unknown";
}

Act act_from_name(std::string_view name) {
  if (name == "none") return Act::linear;
  for (size_t i = 0; i < std::size(kActNames); ++i) {
    if (kActNames[i] == name) return static_cast<Act>(i);
  }
  fail(ErrorCode::invalid_argument, "act_from_name", "unknown activation '{}' (expected one of {})",
       name, fmt::join(kActNames, ", "));
}

SymbolicTensor Layer::operator()(const SymbolicTensor& x) const {
  return (*this)(std::vector<SymbolicTensor>{x});
}

SymbolicTensor Layer::operator()(const std::vector<SymbolicTensor>& xs) const {
  if (!impl_) fail(ErrorCode::invalid_argument, "Layer", "applying an empty Layer handle");
  LayerImpl& l = *impl_;
  if (xs.empty()) l.fail(ErrorCode::invalid_argument, "needs at least one input");
  for (const SymbolicTensor& x : xs) {
    if (!x.valid()) l.fail(ErrorCode::invalid_argument, "an input is an empty SymbolicTensor");
    if (x.context() != xs[0].context()) {
      l.fail(ErrorCode::invalid_argument, "the inputs belong to different models");
    }
  }
  if (l.arity() == 1 && xs.size() != 1) {
    l.fail(ErrorCode::invalid_argument, fmt::format("takes one input, got {}", xs.size()));
  }
  if (l.arity() == 0 && xs.size() < 2) {
    l.fail(ErrorCode::invalid_argument, fmt::format("takes two or more inputs, got {}", xs.size()));
  }
  const auto& ctx = xs[0].context();
  const bool first = l.owner_ == nullptr;
  l.attach(ctx);
  if (first) ctx->layers[l.index_] = impl_;
  std::vector<Tensor> ts;
  for (const SymbolicTensor& x : xs) ts.push_back(x.tensor());
  Tensor y;
  try {
    y = l.call(*ctx, ts);
  } catch (const Error& e) {
    throw Error(e.code(), error_with_layer(e, l));
  }
  l.built_ = true;
  l.output_shape_ = y.shape();
  return SymbolicTensor(ctx, y);
}

const std::string& Layer::name() const {
  static const std::string kEmpty;
  return impl_ ? impl_->name_ : kEmpty;
}
std::string Layer::type_name() const { return impl_ ? impl_->type_name_ : ""; }
std::vector<Tensor> Layer::trainable_weights() const {
  return impl_ ? impl_->trainable_ : std::vector<Tensor>{};
}
std::vector<Tensor> Layer::non_trainable_weights() const {
  return impl_ ? impl_->non_trainable_ : std::vector<Tensor>{};
}
int64_t Layer::parameter_count() const {
  int64_t n = 0;
  for (const Tensor& w : trainable_weights()) n += num_elements(w.shape());
  return n;
}
Shape Layer::output_shape() const { return impl_ ? impl_->output_shape_ : Shape{}; }

Dropout::Dropout(double rate, std::optional<uint64_t> seed, std::string name)
    : Layer(std::make_shared<DropoutImpl>(rate, seed, std::move(name))) {}
Flatten::Flatten(std::string name) : Layer(std::make_shared<FlattenImpl>(std::move(name))) {}
Reshape::Reshape(Shape target_shape, std::string name)
    : Layer(std::make_shared<ReshapeImpl>(std::move(target_shape), std::move(name))) {}
Activation::Activation(Act act, ActivationOptions options)
    : Layer(std::make_shared<ActivationImpl>(act, std::move(options))) {}
Add::Add(std::string name) : Layer(std::make_shared<AddImpl>(std::move(name))) {}
Concatenate::Concatenate(int64_t axis, std::string name)
    : Layer(std::make_shared<ConcatenateImpl>(axis, std::move(name))) {}
Lambda::Lambda(std::function<Tensor(Tensor)> fn, std::string name)
    : Layer(std::make_shared<LambdaImpl>(std::move(fn), std::move(name))) {}

}  // namespace tg::nn
