// Model and Sequential: construction, introspection (layers, weights, summary), compile (the
// training step appended to the graph), and weights I/O (save, load, get/set_weights).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "core/convert.h"
#include "core/error_util.h"
#include "core/safetensors.h"
#include "ir/graph.h"
#include "nn/model_impl.h"
#include "runtime/compile.h"
#include "tg/autodiff.h"
#include "tg/gradients_ready.h"
#include "tg/ops.h"
#include "tg/sync_batch_norm.h"

namespace tg::nn {

using detail::ModelContext;
using detail::ModelState;

namespace detail {

ModelState& state_of(const Model& model, std::string_view op) {
  if (!model.state()) fail(ErrorCode::invalid_argument, op, "the model is empty (default-constructed)");
  return *model.state();
}

ModelContext& built_context(const Model& model, std::string_view op) {
  ModelState& s = state_of(model, op);
  if (!s.ctx) {
    fail(ErrorCode::invalid_argument, op, "the Sequential model '{}' is not built yet: give it an "
         "input shape (constructor or build) or call fit/evaluate/predict first", s.name);
  }
  return *s.ctx;
}

}  // namespace detail

namespace {

// True when `to` is reached from `from` through data edges.
bool depends_on(const Tensor& to, const Tensor& from) {
  const ir::Graph& g = *to.graph_impl();
  std::vector<char> seen(static_cast<size_t>(g.size()), 0);
  std::vector<int> stack = {to.node_id()};
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (id == from.node_id()) return true;
    if (seen[id]) continue;
    seen[id] = 1;
    for (const ir::ValueRef& v : g.node(id).inputs) stack.push_back(v.node);
  }
  return false;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

int64_t count(const std::vector<Tensor>& ws) {
  int64_t n = 0;
  for (const Tensor& w : ws) n += num_elements(w.shape());
  return n;
}

// The loss and the number of correct predictions of one batch.
std::pair<Tensor, Tensor> loss_and_correct(const ModelState& s, const Tensor& out,
                                           const Tensor& labels, bool accuracy) {
  Tensor loss, correct;
  const int64_t last = out.rank() - 1;
  switch (s.loss) {
    case Loss::sparse_categorical_crossentropy:
      loss = softmax_cross_entropy(out, labels);
      if (accuracy) correct = equal(argmax(out, {.axis = last}), labels);
      break;
    case Loss::categorical_crossentropy:
      loss = softmax_cross_entropy(out, labels);
      if (accuracy) correct = equal(argmax(out, {.axis = last}), argmax(labels, {.axis = last}));
      break;
    case Loss::binary_crossentropy: {
      loss = sigmoid_cross_entropy(out, labels);
      Graph g(out.graph_impl());
      if (accuracy) {
        correct = equal(greater(out, g.constant(0.0, out.dtype())),
                        greater(labels, g.constant(0.5, out.dtype())));
      }
      break;
    }
    case Loss::mean_squared_error: loss = mean_squared_error(out, labels); break;
  }
  if (correct.valid()) correct = reduce_sum(cast(correct, DType::i64));
  return {loss, correct};
}

// Binds the all_reduces of synchronized batch norms (BatchNormLayerOptions::sync, built on the
// single communicator, in the if_else branches of is_training) to `comm`, before the backward is
// built (whose transposes take the communicator from the forward collectives).
int bind_sync_batch_norm(ir::Graph& g, const Communicator& comm) {
  int bound = 0;
  for (ir::Node& n : g.nodes()) {
    for (ir::Region& r : n.regions) bound += bind_sync_batch_norm(*r.body, comm);
    if (n.kind != ir::OpKind::all_reduce || n.name != kSyncBatchNormCollective) continue;
    auto& a = std::get<ir::CollectiveAttrs>(n.attrs);
    if (a.group != 0) continue;  // built on a communicator of its own
    a.rank = comm.rank();
    a.world_size = comm.world_size();
    a.backend = comm.backend();
    a.group = comm.group_id();
    ++bound;
  }
  return bound;
}

std::vector<Operation> optimizer_step(ModelState& s, Graph& g, const std::vector<Tensor>& params,
                                      const std::vector<Tensor>& grads) {
  const Optimizer& o = s.optimizer;
  switch (o.kind) {
    case Optimizer::Kind::sgd:
      s.step_variable = o.sgd_options.name + "/step";
      return sgd_step(g, params, grads, s.learning_rate, o.sgd_options);
    case Optimizer::Kind::adam:
    case Optimizer::Kind::adamw: {
      AdamOptions a = o.adam_options;
      if (o.kind == Optimizer::Kind::adamw) a.decoupled_weight_decay = true;
      std::string name = !a.name.empty() ? a.name : a.decoupled_weight_decay ? "adamw" : "adam";
      s.step_variable = name + "/step";
      return adam_step(g, params, grads, s.learning_rate, a);
    }
  }
  return {};
}

// Appends the labels placeholder, loss, metric and optimizer step to a built, compiled model.
void build_training(ModelState& s) {
  ModelContext& ctx = *s.ctx;
  Tensor out = s.output.tensor();
  const bool sparse = s.loss == Loss::sparse_categorical_crossentropy;
  if (sparse && out.rank() < 2) {
    fail(ErrorCode::invalid_argument, "compile", "sparse_categorical_crossentropy needs outputs "
         "[batch, ..., classes], the model's are {}", str(out.shape()));
  }
  Shape label_shape = out.shape();
  if (sparse) label_shape.pop_back();
  try {
    s.labels = ctx.graph.placeholder(label_shape, sparse ? DType::i64 : out.dtype(), "labels");
    s.learning_rate = ctx.graph.placeholder({}, DType::f32, "learning_rate");
    bool accuracy = std::count(s.metrics.begin(), s.metrics.end(), Metric::accuracy) > 0;
    std::tie(s.loss_value, s.num_correct) = loss_and_correct(s, out, s.labels, accuracy);
    std::vector<Tensor> params;
    for (const auto& l : ctx.layers) {
      if (l) params.insert(params.end(), l->trainable_.begin(), l->trainable_.end());
    }
    if (params.empty()) fail(ErrorCode::invalid_argument, "compile", "the model has no trainable weights");
    s.train_loss = s.loss_value;
    s.train_correct = s.num_correct;
    const Communicator& comm = s.data_parallel.communicator;
    std::vector<Tensor> grads;
    if (comm.world_size() > 1) {
      bind_sync_batch_norm(*ctx.graph.impl(), comm);
      // Each bucket's all_reduce is appended as soon as the backward sweep completes it, before
      // the backward of the earlier layers (overlap on CUDA, docs/distributed.md).
      std::vector<TensorType> types;
      for (const Tensor& p : params) types.push_back(p.type());
      detail::GradientBuckets buckets(types, comm, s.data_parallel.bucket_bytes);
      gradients_as_ready(s.loss_value, params,
                                   [&](size_t i, const Tensor& grad) { buckets.ready(i, grad); });
      grads = buckets.finish();
      s.train_loss = all_reduce(s.loss_value, comm, {CollectiveReduction::mean});
      if (s.num_correct.valid()) s.train_correct = all_reduce(s.num_correct, comm, {CollectiveReduction::sum});
    }
    if (grads.empty()) grads = gradients(s.loss_value, params);
    s.train_ops = optimizer_step(s, ctx.graph, params, grads);
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("[compile]", 0) == 0) throw;
    throw Error(e.code(), "[compile] " + what);
  }
}

// A Sequential's graph: Input then every layer in order.
void build_sequential(ModelState& s, const Shape& input_shape, InputOptions input) {
  if (s.ctx) fail(ErrorCode::invalid_argument, "Sequential", "'{}' is already built", s.name);
  if (s.pending.empty()) fail(ErrorCode::invalid_argument, "Sequential", "'{}' has no layers", s.name);
  SymbolicTensor x = Input(input_shape, input);
  SymbolicTensor y = x;
  for (const Layer& l : s.pending) y = l(y);
  s.ctx = x.context();
  s.input = x;
  s.output = y;
  if (s.compiled) build_training(s);
}

void check_weight_types(const std::vector<std::pair<std::string, TensorData>>& given,
                        const std::map<std::string, Tensor>& weights, bool convert,
                        std::vector<std::string>& problems) {
  for (const auto& [name, value] : given) {
    auto it = weights.find(name);
    if (it == weights.end()) {
      problems.push_back(fmt::format("'{}' is not a weight of the model", name));
      continue;
    }
    TensorType want = it->second.type();
    bool dtype_ok = value.dtype() == want.dtype ||
                    (convert && is_floating(value.dtype()) && is_floating(want.dtype));
    if (value.shape() != want.shape || !dtype_ok) {
      problems.push_back(fmt::format("'{}' is {}, the model's is {}", name, value.type().to_string(),
                                     want.to_string()));
    }
  }
}

// True when `a` and `b` are rank-4 shapes with the same dims in another order: a convolution
// kernel of a model built with the other image layout (hwio for nhwc, oihw for nchw).
bool is_layout_permutation(const Shape& a, const Shape& b) {
  if (a.size() != 4 || b.size() != 4 || a == b) return false;
  Shape sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return sa == sb;
}

[[noreturn]] void fail_problems(std::string_view op, const std::string& what,
                                const std::vector<std::string>& problems,
                                const std::string& note = "") {
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  fail(ErrorCode::shape_mismatch, op, "{}{} mismatch{}, nothing changed:{}{}", what, problems.size(),
       problems.size() == 1 ? "" : "es", all, note);
}

TensorData to_dtype(const TensorData& v, DType dtype) {
  if (v.dtype() == dtype) return v.to(Device::cpu()).clone();
  TensorData host = v.to(Device::cpu());
  TensorData out(v.shape(), dtype);
  for (int64_t i = 0; i < v.num_elements(); ++i) {
    store_from_double(dtype, out.raw_data(), i, load_as_double(v.dtype(), host.raw_data(), i));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Model::Model(const SymbolicTensor& input, const SymbolicTensor& output, std::string name) {
  if (!input.valid() || !output.valid()) {
    fail(ErrorCode::invalid_argument, "Model", "input and output must be symbolic tensors of a model");
  }
  if (input.context() != output.context()) {
    fail(ErrorCode::invalid_argument, "Model", "input and output belong to different models");
  }
  if (input.tensor().op().kind_name() != "placeholder" ||
      input.tensor().node_id() == input.context()->is_training.node_id()) {
    fail(ErrorCode::invalid_argument, "Model", "the input must come from tg::nn::Input, got {}",
         input.tensor().to_string());
  }
  if (!depends_on(output.tensor(), input.tensor())) {
    fail(ErrorCode::invalid_argument, "Model", "the output {} does not depend on the input {}",
         output.tensor().to_string(), input.tensor().to_string());
  }
  state_ = std::make_shared<ModelState>();
  state_->name = std::move(name);
  state_->ctx = input.context();
  state_->input = input;
  state_->output = output;
}

const std::string& Model::name() const { return detail::state_of(*this, "Model").name; }
bool Model::built() const { return state_ && state_->ctx; }
Graph Model::graph() const { return detail::built_context(*this, "graph").graph; }
SymbolicTensor Model::input() const { return detail::state_of(*this, "input").input; }
SymbolicTensor Model::output() const { return detail::state_of(*this, "output").output; }
Tensor Model::is_training() const { return detail::built_context(*this, "is_training").is_training; }

std::vector<Layer> Model::layers() const {
  std::vector<Layer> out;
  if (!built()) return out;
  for (const auto& l : state_->ctx->layers) {
    if (l) out.emplace_back(l);
  }
  return out;
}

Layer Model::layer(const std::string& name) const {
  for (const Layer& l : layers()) {
    if (l.name() == name) return l;
  }
  fail(ErrorCode::not_found, "layer", "model '{}' has no layer '{}'", state_ ? state_->name : "", name);
}

std::vector<Tensor> Model::trainable_weights() const {
  std::vector<Tensor> out;
  for (const Layer& l : layers()) {
    auto w = l.trainable_weights();
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

std::vector<Tensor> Model::non_trainable_weights() const {
  std::vector<Tensor> out;
  for (const Layer& l : layers()) {
    auto w = l.non_trainable_weights();
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

int64_t Model::parameter_count() const {
  detail::built_context(*this, "parameter_count");
  return count(trainable_weights());
}

int64_t Model::non_trainable_parameter_count() const {
  detail::built_context(*this, "parameter_count");
  return count(non_trainable_weights());
}

std::string Model::summary() const {
  detail::built_context(*this, "summary");
  std::vector<std::array<std::string, 4>> rows = {{"Layer (type)", "Output shape", "Params", "Config"}};
  rows.push_back({fmt::format("{} (Input)", state_->input.tensor().op().name()),
                  str(state_->input.shape()), "0", ""});
  for (const Layer& l : layers()) {
    rows.push_back({fmt::format("{} ({})", l.name(), l.type_name()), str(l.output_shape()),
                    with_commas(l.parameter_count()), l.impl()->describe()});
  }
  std::array<size_t, 4> width{};
  for (const auto& r : rows) {
    for (size_t c = 0; c < 4; ++c) width[c] = std::max(width[c], r[c].size());
  }
  size_t total = width[0] + width[1] + width[2] + width[3] + 6;
  std::string out = fmt::format("Model: \"{}\"\n", state_->name);
  std::string rule(total, '-');
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::string line = fmt::format("{:<{}}  {:<{}}  {:>{}}  {}", r[0], width[0], r[1], width[1], r[2],
                                   width[2], r[3]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (i == 0) out += rule + "\n";
  }
  out += rule + "\n";
  out += fmt::format("Trainable params: {}\n", with_commas(parameter_count()));
  out += fmt::format("Non-trainable params: {}\n", with_commas(non_trainable_parameter_count()));
  return out;
}

void Model::compile(Optimizer optimizer, Loss loss, std::vector<Metric> metrics, Device device,
                    CompileOptions options, DataParallel data_parallel) {
  ModelState& s = detail::state_of(*this, "compile");
  if (s.compiled) fail(ErrorCode::invalid_argument, "compile", "model '{}' is already compiled", s.name);
  if (data_parallel.bucket_bytes < 0) {
    fail(ErrorCode::invalid_argument, "compile", "DataParallel::bucket_bytes = {} must be >= 0",
         data_parallel.bucket_bytes);
  }
  if (static_cast<int>(loss) < 0 || static_cast<int>(loss) > 3) {
    fail(ErrorCode::invalid_argument, "compile", "unknown loss");
  }
  for (Metric m : metrics) {
    if (m == Metric::accuracy && loss == Loss::mean_squared_error) {
      fail(ErrorCode::invalid_argument, "compile", "accuracy is not defined for mean_squared_error");
    }
  }
  if (!optimizer.schedule && !(optimizer.learning_rate >= 0 && std::isfinite(optimizer.learning_rate))) {
    fail(ErrorCode::invalid_argument, "compile", "learning_rate = {} must be finite and >= 0",
         optimizer.learning_rate);
  }
  s.optimizer = std::move(optimizer);
  s.loss = loss;
  s.metrics = std::move(metrics);
  s.device = device;
  s.compile_options = options;
  s.data_parallel = std::move(data_parallel);
  s.compiled = true;
  if (s.ctx) {
    try {
      build_training(s);
    } catch (...) {
      s.compiled = false;
      throw;
    }
  }
}

bool Model::compiled() const { return state_ && state_->compiled; }

const Communicator& Model::communicator() const {
  static const Communicator kSingle;
  return state_ ? state_->data_parallel.communicator : kSingle;
}

int64_t Model::global_step() const {
  if (!state_ || !state_->ctx || state_->step_variable.empty()) return 0;
  const auto& store = *state_->ctx->graph.impl()->variables();
  int slot = store.find(state_->step_variable);
  return slot < 0 ? 0 : static_cast<int64_t>(store.value(slot).element_as_double(0));
}

void Model::save(const std::string& path) const {
  detail::built_context(*this, "save").graph.save_variables(path);
}

void Model::export_executable(const std::string& path, int64_t batch_size) const {
  ModelState& s = detail::state_of(*this, "export_executable");
  ModelContext& ctx = detail::built_context(*this, "export_executable");
  if (batch_size < 1) fail(ErrorCode::invalid_argument, "export_executable", "batch_size {} is below 1", batch_size);
  Shape shape = s.input.tensor().shape();
  shape[0] = batch_size;
  CompileOptions options = s.compile_options;
  options.arena_group.clear();  // an executable of its own, as the file will hold
  Executable exe = runtime::compile_graph(
      ctx.graph.impl(), s.device, {{s.input.tensor(), TensorType{shape, s.input.tensor().dtype()}}},
      {s.output.tensor()}, {}, options, {{ctx.is_training, TensorData::from_vector<bool>({false}, {})}});
  // On a GPU one run generates the kernels, so that the file holds them (inference: no variable
  // changes; the training branches are folded away where kernels are generated).
  if (!s.device.is_cpu()) exe.run({TensorData::zeros(shape, s.input.tensor().dtype())});
  exe.save(path);
}

void Model::load(const std::string& path) {
  ModelContext& ctx = detail::built_context(*this, "load");
  auto& store = *ctx.graph.impl()->variables();
  auto tensors = safetensors::read(path);
  std::map<std::string, Tensor> weights;
  for (const Tensor& w : trainable_weights()) weights[w.op().name()] = w;
  for (const Tensor& w : non_trainable_weights()) weights[w.op().name()] = w;
  std::vector<std::string> problems;
  std::vector<int> slots;
  std::vector<TensorData> values;
  std::map<std::string, char> seen;
  size_t permuted = 0;  // mismatches that are kernels of the other image layout
  for (auto& [name, value] : tensors) {
    int slot = store.find(name);
    if (slot < 0) continue;  // e.g. optimizer state of a compiled model
    seen[name] = 1;
    if (value.type() != store.type(slot)) {
      problems.push_back(fmt::format("'{}' is {} in the file, {} in the model", name,
                                     value.type().to_string(), store.type(slot).to_string()));
      if (value.dtype() == store.type(slot).dtype &&
          is_layout_permutation(value.shape(), store.type(slot).shape)) {
        ++permuted;
      }
      continue;
    }
    slots.push_back(slot);
    values.push_back(std::move(value));
  }
  for (const auto& [name, w] : weights) {
    if (!seen.count(name)) problems.push_back(fmt::format("'{}' is missing from the file", name));
  }
  if (!problems.empty()) {
    fail_problems("load", path + ": ", problems,
                  permuted == problems.size()
                      ? "\n(each mismatch is a kernel with the model's dims in another order: the "
                        "checkpoint was probably saved by a model built with the other image layout, "
                        "nhwc or nchw; build this model with that layout)"
                      : "");
  }
  store.commit(slots, values);
}

std::vector<std::pair<std::string, TensorData>> Model::get_weights() const {
  ModelContext& ctx = detail::built_context(*this, "get_weights");
  std::vector<std::pair<std::string, TensorData>> out;
  for (const Tensor& w : trainable_weights()) out.emplace_back(w.op().name(), ctx.graph.variable_value(w));
  for (const Tensor& w : non_trainable_weights()) {
    out.emplace_back(w.op().name(), ctx.graph.variable_value(w));
  }
  return out;
}

void Model::set_weights(const std::vector<std::pair<std::string, TensorData>>& weights) {
  ModelContext& ctx = detail::built_context(*this, "set_weights");
  std::map<std::string, Tensor> own;
  for (const Tensor& w : trainable_weights()) own[w.op().name()] = w;
  for (const Tensor& w : non_trainable_weights()) own[w.op().name()] = w;
  std::vector<std::string> problems;
  check_weight_types(weights, own, /*convert=*/true, problems);
  if (!problems.empty()) fail_problems("set_weights", "", problems);
  auto& store = *ctx.graph.impl()->variables();
  std::vector<int> slots;
  std::vector<TensorData> values;
  for (const auto& [name, value] : weights) {
    slots.push_back(store.find(name));
    values.push_back(to_dtype(value, own.at(name).dtype()));
  }
  store.commit(slots, values);
}

void Model::stop_training() { detail::state_of(*this, "stop_training").stop_requested = true; }

void Model::ensure_built(const Shape& input_shape, DType dtype) const {
  ModelState& s = detail::state_of(*this, "Model");
  if (!s.ctx) build_sequential(s, input_shape, {.dtype = dtype});
}

// ---------------------------------------------------------------------------------------------

Sequential::Sequential(std::vector<Layer> layers, std::string name) {
  state_ = std::make_shared<ModelState>();
  state_->name = std::move(name);
  state_->sequential = true;
  for (Layer& l : layers) add(std::move(l));
}

Sequential::Sequential(Shape input_shape, std::vector<Layer> layers, InputOptions input,
                       std::string name)
    : Sequential(std::move(layers), std::move(name)) {
  build(std::move(input_shape), std::move(input));
}

void Sequential::add(Layer layer) {
  ModelState& s = detail::state_of(*this, "Sequential");
  if (s.ctx) fail(ErrorCode::invalid_argument, "Sequential", "'{}' is built: layers can no longer be added", s.name);
  if (!layer.valid()) fail(ErrorCode::invalid_argument, "Sequential", "an empty Layer handle");
  s.pending.push_back(std::move(layer));
}

void Sequential::build(Shape input_shape, InputOptions input) {
  build_sequential(detail::state_of(*this, "Sequential"), input_shape, std::move(input));
}

}  // namespace tg::nn
