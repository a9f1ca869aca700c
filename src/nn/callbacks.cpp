// Training configuration helpers (Optimizer factories, loss names, History) and the built-in
// callbacks ModelCheckpoint and EarlyStopping.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error_util.h"
#include "nn/model_impl.h"

namespace tg::nn {

namespace {

constexpr std::string_view kLossNames[] = {"sparse_categorical_crossentropy",
                                           "categorical_crossentropy", "binary_crossentropy",
                                           "mean_squared_error"};

bool maximizes(const std::optional<bool>& maximize, const std::string& monitor) {
  return maximize.value_or(monitor.find("acc") != std::string::npos);
}

double monitored(const Logs& logs, const std::string& monitor, std::string_view op) {
  auto it = logs.find(monitor);
  if (it == logs.end()) {
    std::string keys;
    for (const auto& [k, v] : logs) keys += (keys.empty() ? "" : ", ") + k;
    fail(ErrorCode::not_found, op, "monitor '{}' is not in the epoch logs ({}); pass validation "
         "data to fit or monitor another key", monitor, keys);
  }
  return it->second;
}

bool improved(double value, double best, bool maximize, double min_delta) {
  if (std::isnan(value)) return false;
  return maximize ? value > best + min_delta : value < best - min_delta;
}

std::string expand_epoch(const std::string& path, int64_t epoch) {
  std::string out = path;
  const std::string key = "{epoch}";
  for (size_t pos = out.find(key); pos != std::string::npos; pos = out.find(key, pos)) {
    std::string e = std::to_string(epoch + 1);
    out.replace(pos, key.size(), e);
    pos += e.size();
  }
  return out;
}

}  // namespace

std::string_view loss_name(Loss loss) {
  auto i = static_cast<size_t>(loss);
  return i < std::size(kLossNames) ? kLossNames[i] : "unknown";
}

Loss loss_from_name(std::string_view name) {
  if (name == "cross_entropy" || name == "sparse_ce") return Loss::sparse_categorical_crossentropy;
  if (name == "mse") return Loss::mean_squared_error;
  for (size_t i = 0; i < std::size(kLossNames); ++i) {
    if (kLossNames[i] == name) return static_cast<Loss>(i);
  }
  fail(ErrorCode::invalid_argument, "loss_from_name", "unknown loss '{}' (expected one of {}, "
       "cross_entropy, sparse_ce, mse)", name, fmt::join(kLossNames, ", "));
}

Optimizer Optimizer::sgd(double learning_rate, SgdOptions options) {
  Optimizer o;
  o.kind = Kind::sgd;
  o.learning_rate = learning_rate;
  o.sgd_options = std::move(options);
  return o;
}

Optimizer Optimizer::adam(double learning_rate, AdamOptions options) {
  Optimizer o;
  o.kind = Kind::adam;
  o.learning_rate = learning_rate;
  o.adam_options = std::move(options);
  return o;
}

Optimizer Optimizer::adamw(double learning_rate, AdamOptions options) {
  Optimizer o = adam(learning_rate, std::move(options));
  o.kind = Kind::adamw;
  o.adam_options.decoupled_weight_decay = true;
  return o;
}

Optimizer Optimizer::from_name(std::string_view name, double learning_rate) {
  if (name == "sgd") return sgd(learning_rate);
  if (name == "momentum") return sgd(learning_rate, {.momentum = 0.9});
  if (name == "nesterov") return sgd(learning_rate, {.momentum = 0.9, .nesterov = true});
  if (name == "adam") return adam(learning_rate);
  if (name == "adamw") return adamw(learning_rate);
  fail(ErrorCode::invalid_argument, "Optimizer", "unknown optimizer '{}' (expected sgd, momentum, "
       "nesterov, adam or adamw)", name);
}

const std::vector<double>& History::operator[](const std::string& key) const {
  auto it = metrics.find(key);
  if (it == metrics.end()) {
    std::string keys;
    for (const auto& [k, v] : metrics) keys += (keys.empty() ? "" : ", ") + k;
    fail(ErrorCode::not_found, "History", "no '{}' (keys: {})", key, keys);
  }
  return it->second;
}

ModelCheckpoint::ModelCheckpoint(std::string path, CheckpointOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  if (path_.empty()) fail(ErrorCode::invalid_argument, "ModelCheckpoint", "the path is empty");
}

void ModelCheckpoint::on_epoch_end(Model& model, int64_t epoch, const Logs& logs) {
  if (options_.save_best_only) {
    double value = monitored(logs, options_.monitor, "ModelCheckpoint");
    bool max = maximizes(options_.maximize, options_.monitor);
    if (best_epoch_ >= 0 && !improved(value, best_, max, 0)) return;
    if (std::isnan(value)) return;
    best_ = value;
    best_epoch_ = epoch;
  }
  if (model.communicator().rank() != 0) return;  // data parallelism: rank 0 writes the checkpoints
  std::string path = expand_epoch(path_, epoch);
  model.save(path);
  saved_.push_back(path);
}

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  if (options_.patience < 0 || !(options_.min_delta >= 0)) {
    fail(ErrorCode::invalid_argument, "EarlyStopping", "patience ({}) and min_delta ({}) must be >= 0",
         options_.patience, options_.min_delta);
  }
}

void EarlyStopping::on_train_begin(Model&) {
  best_epoch_ = -1;
  wait_ = 0;
  stopped_epoch_ = -1;
}

void EarlyStopping::on_epoch_end(Model& model, int64_t epoch, const Logs& logs) {
  double value = monitored(logs, options_.monitor, "EarlyStopping");
  bool max = maximizes(options_.maximize, options_.monitor);
  if (best_epoch_ < 0 || improved(value, best_, max, options_.min_delta)) {
    if (!std::isnan(value)) {
      best_ = value;
      best_epoch_ = epoch;
      wait_ = 0;
      return;
    }
  }
  if (++wait_ >= std::max<int64_t>(options_.patience, 1)) {
    stopped_epoch_ = epoch;
    model.stop_training();
  }
}

}  // namespace tg::nn
