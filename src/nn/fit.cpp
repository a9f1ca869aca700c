// Model::fit, evaluate, predict and train_on_batch: data checks, mini-batches, one compiled
// executable per (kind, batch size), running means of the loss and accuracy, callbacks.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "core/convert.h"
#include "core/error_util.h"
#include "nn/model_impl.h"
#include "nn/progress.h"
#include "runtime/compile.h"
#include "tg/ops.h"
#include "tg/interrupt.h"

namespace tg::nn {

using detail::ExeKind;
using detail::ModelState;

namespace detail {

Executable& executable(ModelState& s, ExeKind kind, int64_t batch) {
  // CompileOptions::disable_type_inference: one executable per mode whose batch dim varies
  // (runtime/specialize.h), so a new batch size (a last partial batch) compiles nothing.
  if (s.compile_options.disable_type_inference) batch = -1;
  auto key = std::make_pair(static_cast<int>(kind), batch);
  if (auto it = s.exes.find(key); it != s.exes.end()) return it->second;
  Graph& g = s.ctx->graph;
  auto typed = [batch](const Tensor& t) {
    Shape shape = t.shape();
    shape[0] = batch;
    return std::make_pair(t, TensorType{shape, t.dtype()});
  };
  // is_training is bound at compile time (not fed): the if_else of every batch norm and dropout
  // then folds to its branch on backends that fuse.
  auto flag = [&](bool on) {
    return runtime::BoundFeeds{{s.ctx->is_training, TensorData::from_vector<bool>({on}, {})}};
  };
  // The model's training, evaluation and prediction executables never run at the same time: they
  // share one arena (the largest any of them needs).
  CompileOptions options = s.compile_options;
  if (options.arena_group.empty()) options.arena_group = "tg::nn::Model";
  Executable exe;
  std::vector<Tensor> metrics = {s.loss_value};
  if (s.num_correct.valid()) metrics.push_back(s.num_correct);
  std::vector<Tensor> train_metrics = {s.train_loss};  // all-reduced under data parallelism
  if (s.train_correct.valid()) train_metrics.push_back(s.train_correct);
  switch (kind) {
    case ExeKind::train:
      exe = runtime::compile_graph(g.impl(), s.device,
                                   {typed(s.input.tensor()), typed(s.labels), {s.learning_rate, {{}, DType::f32}}},
                                   train_metrics, s.train_ops, options, flag(true));
      break;
    case ExeKind::eval:
      exe = runtime::compile_graph(g.impl(), s.device, {typed(s.input.tensor()), typed(s.labels)}, metrics, {},
                                   options, flag(false));
      break;
    case ExeKind::predict:
      exe = runtime::compile_graph(g.impl(), s.device, {typed(s.input.tensor())}, {s.output.tensor()}, {},
                                   options, flag(false));
      break;
  }
  return s.exes.emplace(key, std::move(exe)).first->second;
}

}  // namespace detail

namespace {

// Running sums over the batches of an epoch or an evaluation. On a GPU the step's loss and
// correct count stay on the device until read: reading waits for the queued steps, so they are
// read in groups (when `due()`: every 0.25 s or 64 steps) instead of stalling the GPU every step.
struct Totals {
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t seen = 0;
  int64_t elements = 0;  ///< predictions the accuracy counts
  bool accuracy = false;
  struct Pending {
    std::vector<TensorData> outs;
    int64_t count, per_example;
  };
  std::vector<Pending> pending;
  std::chrono::steady_clock::time_point last_read = std::chrono::steady_clock::now();

  void add(const std::vector<TensorData>& outs, int64_t count, int64_t per_example) {
    pending.push_back({outs, count, per_example});
    if (outs[0].device().is_cpu()) read();
  }
  bool due() const {
    return pending.size() >= 64 ||
           std::chrono::steady_clock::now() - last_read > std::chrono::milliseconds(250);
  }
  // Folds the pending steps into the sums (waits for the device).
  void read() {
    for (const Pending& p : pending) {
      loss_sum += p.outs[0].element_as_double(0) * static_cast<double>(p.count);
      seen += p.count;
      if (p.outs.size() > 1) {
        accuracy = true;
        correct += static_cast<int64_t>(p.outs[1].element_as_double(0));
        elements += p.count * p.per_example;
      }
    }
    pending.clear();
    last_read = std::chrono::steady_clock::now();
  }
  Logs logs(const std::string& prefix = "") const {
    Logs l;
    if (seen == 0) return l;
    l[prefix + "loss"] = loss_sum / static_cast<double>(seen);
    if (accuracy) {
      l[prefix + "accuracy"] = elements ? static_cast<double>(correct) / static_cast<double>(elements) : 0;
    }
    return l;
  }
};

// Predictions per example that the accuracy counts.
int64_t predictions_per_example(const ModelState& s) {
  Shape shape = s.labels.shape();
  if (s.loss == Loss::categorical_crossentropy) shape.pop_back();
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// Checks x against the model's input ([N, dims...], its dtype); returns N.
int64_t check_x(const ModelState& s, const TensorData& x, std::string_view op) {
  const Tensor& in = s.input.tensor();
  if (x.empty()) fail(ErrorCode::invalid_argument, op, "x is empty");
  bool ok = x.rank() == in.rank();
  for (int64_t d = 1; ok && d < in.rank(); ++d) ok = x.shape()[d] == in.shape()[d];
  if (!ok) {
    fail(ErrorCode::shape_mismatch, op, "x is {}, the model '{}' takes [N{}{}] (input {})",
         x.type().to_string(), s.name, in.rank() > 1 ? "," : "",
         fmt::join(in.shape().begin() + 1, in.shape().end(), ","), in.type().to_string());
  }
  if (x.dtype() != in.dtype()) {
    fail(ErrorCode::dtype_mismatch, op, "x is {}, the model '{}' takes {} inputs",
         x.type().to_string(), s.name, dtype_name(in.dtype()));
  }
  if (x.shape()[0] == 0) fail(ErrorCode::invalid_argument, op, "x has no examples ({})", str(x.shape()));
  return x.shape()[0];
}

TensorData convert(const TensorData& v, DType dtype) {
  if (v.dtype() == dtype) return v;
  TensorData out(v.shape(), dtype);
  for (int64_t i = 0; i < v.num_elements(); ++i) {
    store_from_double(dtype, out.raw_data(), i, load_as_double(v.dtype(), v.raw_data(), i));
  }
  return out;
}

// Checks y against the labels the loss wants and converts it to the labels placeholder's dtype.
TensorData prepare_labels(const ModelState& s, const TensorData& y, int64_t n, std::string_view op,
                          bool validation = false) {
  if (y.empty()) fail(ErrorCode::invalid_argument, op, "y is empty");
  Shape want = s.labels.shape();
  want[0] = n;
  const bool sparse = s.loss == Loss::sparse_categorical_crossentropy;
  if (y.shape() != want) {
    fail(ErrorCode::shape_mismatch, op, "y is {}, {} with outputs {} needs labels {}",
         y.type().to_string(), loss_name(s.loss), str(s.output.shape()), str(want));
  }
  if (sparse ? !is_integer(y.dtype()) : !is_floating(y.dtype())) {
    fail(ErrorCode::dtype_mismatch, op, "y is {}, {} needs {} labels", y.type().to_string(),
         loss_name(s.loss), sparse ? "integer" : "floating");
  }
  TensorData labels = convert(y.to(Device::cpu()), s.labels.dtype());
  const int64_t classes = s.output.shape().empty() ? -1 : s.output.shape().back();
  if (sparse && classes >= 0) {
    // Checked here, before any step runs, so the message names the example (the loss's gather
    // would name a position inside one batch).
    const int64_t per_example = n > 0 ? labels.num_elements() / n : 0;
    for (int64_t i = 0; i < labels.num_elements(); ++i) {
      // The labels placeholder is i64 (converted above): read exactly, not through double.
      const int64_t l = labels.dtype() == DType::i64 ? labels.data<int64_t>()[i]
                                                     : static_cast<int64_t>(load_as_double(labels.dtype(), labels.raw_data(), i));
      if (l < 0 || l >= classes) {
        fail(ErrorCode::out_of_range, op,
             "label {} of example {}{} is outside [0, {}): {} with outputs {} takes class indices", l,
             per_example > 0 ? i / per_example : i, validation ? " of the validation data" : "", classes,
             loss_name(s.loss), str(s.output.shape()));
      }
    }
  }
  return labels;
}

// Rows order[begin, begin + count) of src.
TensorData take_rows(const TensorData& src, const std::vector<int64_t>& order, int64_t begin,
                     int64_t count) {
  Shape shape = src.shape();
  shape[0] = count;
  TensorData out(shape, src.dtype());
  const size_t row = src.nbytes() / static_cast<size_t>(src.shape()[0]);
  const auto* from = static_cast<const char*>(src.raw_data());
  auto* to = static_cast<char*>(out.raw_data());
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(to + static_cast<size_t>(i) * row, from + static_cast<size_t>(order[begin + i]) * row, row);
  }
  return out;
}

// Mini-batches on the model's device. On the CPU a batch is a copy of its rows; elsewhere the data
// is copied to the device once (place) and each batch is gathered there by a small compiled
// graph, so no step waits for a host-to-device copy of its batch.
class Batches {
 public:
  explicit Batches(Device device) : device_(device) {}
  TensorData place(const TensorData& t) const { return t.empty() ? t : t.to(device_); }
  TensorData rows(const TensorData& src, const std::vector<int64_t>& order, int64_t begin, int64_t count) {
    if (src.device().is_cpu()) return take_rows(src, order, begin, count);
    std::vector<int64_t> idx(order.begin() + begin, order.begin() + begin + count);
    return gather_exe(src, count).run({src, TensorData::from_vector<int64_t>(idx, {count})})[0];
  }

 private:
  Executable& gather_exe(const TensorData& src, int64_t count) {
    std::string key = fmt::format("{}/{}", src.type().to_string(), count);
    auto it = exes_.find(key);
    if (it != exes_.end()) return it->second;
    Graph g;
    Tensor x = g.placeholder(src.shape(), src.dtype(), "data");
    Tensor i = g.placeholder({count}, DType::i64, "rows");
    Executable exe = g.compile(device_, {{x, src.type()}, {i, TensorType{{count}, DType::i64}}},
                               {gather(x, i, GatherDesc{.axis = 0})});
    return exes_.emplace(key, std::move(exe)).first->second;
  }
  Device device_;
  std::map<std::string, Executable> exes_;
};

std::vector<int64_t> identity(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Fisher-Yates with a SplitMix64 stream and Lemire's multiply-shift (same on every platform).
void shuffle(std::vector<int64_t>& v, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = v.size(); i > 1; --i) {
    uint64_t r = detail::derive_seed(state++, 0x5eed, i);
    auto j = static_cast<size_t>((static_cast<unsigned __int128>(r) * i) >> 64);
    std::swap(v[i - 1], v[j]);
  }
}

void check_batch_size(int64_t batch_size, std::string_view op) {
  if (batch_size < 1) fail(ErrorCode::invalid_argument, op, "batch_size = {} must be >= 1", batch_size);
}

// Loss and metrics of x, y (labels prepared) in inference mode.
Logs run_eval(ModelState& s, const TensorData& x_host, const TensorData& y_host, int64_t batch_size,
              int verbose, std::FILE* out, const std::string& prefix) {
  Batches batches(s.device);
  const TensorData x = batches.place(x_host), y = batches.place(y_host);
  const int64_t n = x.shape()[0];
  const int64_t steps = (n + batch_size - 1) / batch_size;
  detail::Progress progress(out, verbose, steps, prefix.empty() ? "Evaluate" : "Validate");
  const std::vector<int64_t> order = identity(n);
  const int64_t per_example = predictions_per_example(s);
  Totals totals;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t begin = step * batch_size, count = std::min(batch_size, n - begin);
    Executable& exe = detail::executable(s, ExeKind::eval, count);
    auto outs = exe.run({batches.rows(x, order, begin, count), batches.rows(y, order, begin, count)});
    totals.add(outs, count, per_example);
    if (!totals.pending.empty() && (totals.due() || step + 1 == steps)) totals.read();
    if (totals.pending.empty()) progress.update(step + 1, totals.seen, totals.logs());
    check_interrupt();  // e.g. Ctrl-C in Python: evaluate (or fit's validation) ends here
  }
  Logs logs = totals.logs(prefix);
  progress.finish(totals.seen, totals.logs());
  return logs;
}

double learning_rate(const ModelState& s, int64_t step, int64_t total_steps) {
  const Optimizer& o = s.optimizer;
  double lr = o.schedule ? o.schedule(step, total_steps) : o.learning_rate;
  if (!std::isfinite(lr) || lr < 0) {
    fail(ErrorCode::invalid_argument, "fit", "the learning rate of step {} is {} (must be finite "
         "and >= 0)", step, lr);
  }
  return lr;
}

void require_compiled(const ModelState& s, std::string_view op) {
  if (!s.compiled) fail(ErrorCode::invalid_argument, op, "model '{}' is not compiled: call compile first", s.name);
}

struct Split {
  TensorData x, y, val_x, val_y;
};

// The training part and the validation data of fit (labels prepared).
Split split_data(ModelState& s, const TensorData& x, const TensorData& y, const FitOptions& o) {
  const int64_t n = check_x(s, x, "fit");
  TensorData labels = prepare_labels(s, y, n, "fit");
  if (!o.validation_x.empty() || !o.validation_y.empty()) {
    int64_t nv = check_x(s, o.validation_x, "fit");
    return {x, labels, o.validation_x, prepare_labels(s, o.validation_y, nv, "fit", true)};
  }
  if (!(o.validation_split >= 0 && o.validation_split < 1)) {
    fail(ErrorCode::invalid_argument, "fit", "validation_split = {} must be in [0, 1)", o.validation_split);
  }
  if (o.validation_split == 0) return {x, labels, {}, {}};  // x stays where it is (host or device)
  TensorData hx = x.to(Device::cpu());
  auto nv = static_cast<int64_t>(static_cast<double>(n) * o.validation_split);
  if (nv == 0 || nv == n) {
    fail(ErrorCode::invalid_argument, "fit", "validation_split = {} of {} examples leaves {} for "
         "validation and {} for training (each needs >= 1)", o.validation_split, n, nv, n - nv);
  }
  std::vector<int64_t> order = identity(n);
  return {take_rows(hx, order, 0, n - nv), take_rows(labels, order, 0, n - nv),
          take_rows(hx, order, n - nv, nv), take_rows(labels, order, n - nv, nv)};
}

void check_fit_options(const FitOptions& o) {
  check_batch_size(o.batch_size, "fit");
  if (o.epochs < 0 || o.initial_epoch < 0 || o.initial_epoch > o.epochs) {
    fail(ErrorCode::invalid_argument, "fit", "need 0 <= initial_epoch ({}) <= epochs ({})",
         o.initial_epoch, o.epochs);
  }
  if (o.verbose < 0 || o.verbose > 2) fail(ErrorCode::invalid_argument, "fit", "verbose = {} must be 0, 1 or 2", o.verbose);
  for (const auto& cb : o.callbacks) {
    if (!cb) fail(ErrorCode::invalid_argument, "fit", "a callback is null");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

History Model::fit(const TensorData& x, const TensorData& y, FitOptions o) {
  ModelState& s = detail::state_of(*this, "fit");
  require_compiled(s, "fit");
  check_fit_options(o);
  if (!s.ctx && !x.empty()) ensure_built(Shape(x.shape().begin() + 1, x.shape().end()), x.dtype());
  Split data = split_data(s, x, y, o);
  Batches batches(s.device);
  const TensorData train_x = batches.place(data.x), train_y = batches.place(data.y);
  const int64_t n = data.x.shape()[0];
  const int64_t steps = (n + o.batch_size - 1) / o.batch_size;
  const int64_t total_steps = steps * o.epochs;
  const int64_t per_example = predictions_per_example(s);
  // Data parallelism: rank r trains on its shard of each batch; only rank 0 prints.
  const int rank = s.data_parallel.communicator.rank(), world = s.data_parallel.communicator.world_size();
  if (rank != 0) o.verbose = 0;
  int64_t step = global_step();
  const auto start = std::chrono::steady_clock::now();
  s.stop_requested = false;
  History history;
  for (const auto& cb : o.callbacks) cb->on_train_begin(*this);
  for (int64_t epoch = o.initial_epoch; epoch < o.epochs && !s.stop_requested; ++epoch) {
    for (const auto& cb : o.callbacks) cb->on_epoch_begin(*this, epoch);
    std::vector<int64_t> order = identity(n);
    if (o.shuffle) shuffle(order, detail::derive_seed(o.seed, 0xf17, static_cast<uint64_t>(epoch)));
    detail::Progress progress(o.out, o.verbose, steps, fmt::format("Epoch {}/{}", epoch + 1, o.epochs));
    Totals totals;
    for (int64_t i = 0; i < steps; ++i, ++step) {
      const int64_t begin = i * o.batch_size, count = std::min(o.batch_size, n - begin);
      // Rank r's rows: [r * shard, (r + 1) * shard) of the batch; count % world rows are left out.
      const int64_t shard = count / world, first = begin + rank * shard;
      auto lr = static_cast<float>(learning_rate(s, step, total_steps));
      if (shard > 0) {
        Executable& exe = detail::executable(s, ExeKind::train, shard);
        auto outs = exe.run({batches.rows(train_x, order, first, shard), batches.rows(train_y, order, first, shard),
                             TensorData::scalar(lr)});
        totals.add(outs, shard * world, per_example);  // the step reports the global loss
      } else {
        --step;  // a batch too small to shard: no step
      }
      // On a GPU, callbacks and the progress bar see the logs of the steps read so far.
      if (!totals.pending.empty() && (totals.due() || i + 1 == steps)) totals.read();
      Logs logs = totals.logs();
      if (totals.pending.empty()) progress.update(i + 1, totals.seen, logs);
      for (const auto& cb : o.callbacks) cb->on_batch_end(*this, i, logs);
      check_interrupt();  // e.g. Ctrl-C in Python: fit ends after this batch's step
    }
    totals.read();
    Logs logs = totals.logs();
    if (!data.val_x.empty()) {
      Logs v = run_eval(s, data.val_x, data.val_y, o.batch_size, 0, o.out, "val_");
      logs.insert(v.begin(), v.end());
    }
    progress.finish(totals.seen, logs);
    history.epochs.push_back(epoch);
    for (const auto& [k, v] : logs) history.metrics[k].push_back(v);
    for (const auto& cb : o.callbacks) cb->on_epoch_end(*this, epoch, logs);
  }
  history.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& cb : o.callbacks) cb->on_train_end(*this, history);
  return history;
}

Logs Model::evaluate(const TensorData& x, const TensorData& y, EvaluateOptions o) {
  ModelState& s = detail::state_of(*this, "evaluate");
  require_compiled(s, "evaluate");
  check_batch_size(o.batch_size, "evaluate");
  if (!s.ctx && !x.empty()) ensure_built(Shape(x.shape().begin() + 1, x.shape().end()), x.dtype());
  const int64_t n = check_x(s, x, "evaluate");
  TensorData labels = prepare_labels(s, y, n, "evaluate");
  return run_eval(s, x.to(Device::cpu()), labels, o.batch_size, o.verbose, o.out, "");
}

TensorData Model::predict(const TensorData& x, int64_t batch_size) {
  ModelState& s = detail::state_of(*this, "predict");
  check_batch_size(batch_size, "predict");
  if (!s.ctx && !x.empty()) ensure_built(Shape(x.shape().begin() + 1, x.shape().end()), x.dtype());
  const int64_t n = check_x(s, x, "predict");
  if (n <= batch_size) {  // one batch: x as it is (on any device)
    return detail::executable(s, ExeKind::predict, n).run({x})[0].to(Device::cpu());
  }
  TensorData hx = x.to(Device::cpu());
  const std::vector<int64_t> order = identity(n);
  TensorData result;
  size_t offset = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    const int64_t count = std::min(batch_size, n - begin);
    Executable& exe = detail::executable(s, ExeKind::predict, count);
    TensorData y = exe.run({take_rows(hx, order, begin, count)})[0].to(Device::cpu());
    if (result.empty()) {
      Shape shape = y.shape();
      shape[0] = n;
      result = TensorData(shape, y.dtype());
    }
    std::memcpy(static_cast<char*>(result.raw_data()) + offset, y.raw_data(), y.nbytes());
    offset += y.nbytes();
    check_interrupt();  // e.g. Ctrl-C in Python: predict ends after this batch
  }
  return result;
}

Logs Model::train_on_batch(const TensorData& x, const TensorData& y, double lr) {
  ModelState& s = detail::state_of(*this, "train_on_batch");
  require_compiled(s, "train_on_batch");
  if (!s.ctx && !x.empty()) ensure_built(Shape(x.shape().begin() + 1, x.shape().end()), x.dtype());
  const int64_t n = check_x(s, x, "train_on_batch");
  TensorData labels = prepare_labels(s, y, n, "train_on_batch");
  if (lr < 0) lr = s.optimizer.learning_rate;
  if (!std::isfinite(lr) || lr < 0) {
    fail(ErrorCode::invalid_argument, "train_on_batch", "learning rate {} must be finite and >= 0", lr);
  }
  Executable& exe = detail::executable(s, ExeKind::train, n);
  auto outs = exe.run({x, labels, TensorData::scalar(static_cast<float>(lr))});
  Totals totals;
  totals.add(outs, n, predictions_per_example(s));
  totals.read();
  return totals.logs();
}

}  // namespace tg::nn
