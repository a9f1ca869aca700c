// A Keras-like model API on top of tg::Graph: layers, Sequential and functional models, training
// (compile / fit / evaluate / predict), checkpoints, and a model zoo (MLP, LeNet-5, a small MNIST
// CNN, ResNet-18/34/50). A model owns one tg::Graph; its parameters are graph variables, so
// everything tg offers (autodiff, optimizers, save_variables) applies. Guide: docs/model.md.
//
//   auto x = tg::nn::Input({28, 28, 1});
//   auto h = tg::nn::Conv2D(32, 3, {.activation = tg::nn::Act::relu})(x);
//   auto y = tg::nn::Dense(10)(tg::nn::Flatten()(tg::nn::MaxPool2D(2)(h)));
//   tg::nn::Model model(x, y);
//   model.compile(tg::nn::Optimizer::adam(1e-3), tg::nn::Loss::sparse_categorical_crossentropy);
//   tg::nn::History h = model.fit(x_train, y_train, {.epochs = 3, .batch_size = 64});
//
// Errors are tg::Error. Build-time errors of a layer name it: "[conv2d_1] Conv2D: [conv2d] input
// channels 3 do not match weights' 4 (...)"; errors of the model API name the method ("[fit] ...").
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tg/collective.h"
#include "tg/export.h"
#include "tg/graph.h"
#include "tg/nn.h"
#include "tg/ops_conv.h"

namespace tg::nn {

namespace detail {
struct ModelContext;
class LayerImpl;
struct ModelState;
}  // namespace detail

class Model;

// ---------------------------------------------------------------------------------------------
// Symbolic tensors (Keras functional API).

/// A tensor of a model under construction: a tg::Tensor of the model's graph plus the model's
/// build context (the graph, the is_training placeholder, the seeds and layer names). Produced by
/// Input() and by applying layers. Shapes include the batch dim (-1 unless InputOptions fixes it).
class TG_API SymbolicTensor {
 public:
  SymbolicTensor() = default;
  SymbolicTensor(std::shared_ptr<detail::ModelContext> context, Tensor tensor)
      : context_(std::move(context)), tensor_(std::move(tensor)) {}
  /// The graph tensor (usable with every tg op; wrap results with Lambda to stay symbolic).
  const Tensor& tensor() const { return tensor_; }
  const Shape& shape() const { return tensor_.shape(); }
  DType dtype() const { return tensor_.dtype(); }
  bool valid() const { return context_ != nullptr; }
  const std::shared_ptr<detail::ModelContext>& context() const { return context_; }

 private:
  std::shared_ptr<detail::ModelContext> context_;
  Tensor tensor_;
};

struct InputOptions {
  DType dtype = DType::f32;  ///< floating; layers create their weights in this dtype
  std::string name = "input";
  /// Base seed of the weight initializers and dropout masks of every layer of this model: layer
  /// k (in order of first application) draws from seeds derived from (seed, k), so a model built
  /// twice by the same code gets the same weights.
  uint64_t seed = 0;
  int64_t batch_size = -1;  ///< -1: any batch size (one executable is compiled per batch size)
};
/// Starts a model: a placeholder of shape [batch_size, shape...] in a new graph. `shape` excludes
/// the batch dim and must be static (dims >= 0). Errors "[Input]": dynamic or negative dims, a
/// non-floating dtype (dtype_mismatch).
TG_API SymbolicTensor Input(Shape shape, InputOptions options = {});

// ---------------------------------------------------------------------------------------------
// Building blocks of layers.

/// A height/width pair; an integer gives both: `Conv2D(32, 3)`, `.strides = {2, 1}`.
struct Size2 {
  int64_t h = 1;
  int64_t w = 1;
  Size2() = default;
  Size2(int64_t both) : h(both), w(both) {}  // NOLINT(google-explicit-constructor): by design
  Size2(int64_t height, int64_t width) : h(height), w(width) {}
  friend bool operator==(const Size2&, const Size2&) = default;
};

/// Activation functions (tg/nn.h composites). leaky_relu slope 0.01, elu alpha 1, exact gelu,
/// softmax over the last axis unless ActivationOptions say otherwise.
enum class Act { linear, relu, leaky_relu, elu, gelu, silu, sigmoid, tanh, softmax };
/// "linear", "relu", ... (the enumerator's name).
TG_API std::string_view act_name(Act act);
/// Parses act_name's output (also "none" for linear); tg::Error(invalid_argument) otherwise.
TG_API Act act_from_name(std::string_view name);

/// Weight initializers (drawn on the host with TensorData::random_uniform/random_normal in f32,
/// then converted to the weight's dtype, from the seed the layer derives; so an f32 and an f64
/// build of one model start from the same values). Fans: Dense kernel [in, out] has fan_in = in,
/// fan_out = out; a conv kernel has fan_in = kH*kW*C_in/groups, fan_out = kH*kW*C_out/groups.
///  - glorot_uniform: U(-l, l), l = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010; Keras'
///    default kernel initializer); glorot_normal: N(0, sqrt(2 / (fan_in + fan_out)));
///  - he_normal: N(0, sqrt(2 / fan)) with fan = fan_in or fan_out (He et al. 2015;
///    torch.nn.init.kaiming_normal_ with nonlinearity relu); he_uniform: U(-l, l),
///    l = sqrt(6 / fan);
///  - lecun_uniform: U(-l, l), l = sqrt(1 / fan_in) (torch's default for Linear/Conv2d weights
///    and biases, where fan_in is the weight's);
///  - uniform(a, b), normal(a = mean, b = stddev), constant(a), zeros, ones.
/// Keras' he_normal/glorot_normal use a truncated normal; these use the plain normal (PyTorch).
struct Initializer {
  enum class Kind {
    zeros, ones, constant, uniform, normal,
    glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_uniform
  };
  enum class FanMode { fan_in, fan_out };
  Kind kind = Kind::zeros;
  double a = 0;  ///< constant value, uniform low, or normal mean
  double b = 0;  ///< uniform high or normal stddev
  FanMode mode = FanMode::fan_in;  ///< he_normal / he_uniform only

  static Initializer zeros() { return {Kind::zeros}; }
  static Initializer ones() { return {Kind::ones}; }
  static Initializer constant(double value) { return {Kind::constant, value}; }
  static Initializer uniform(double low, double high) { return {Kind::uniform, low, high}; }
  static Initializer normal(double mean, double stddev) { return {Kind::normal, mean, stddev}; }
  static Initializer glorot_uniform() { return {Kind::glorot_uniform}; }
  static Initializer glorot_normal() { return {Kind::glorot_normal}; }
  static Initializer he_normal(FanMode mode = FanMode::fan_in) {
    return {Kind::he_normal, 0, 0, mode};
  }
  static Initializer he_uniform(FanMode mode = FanMode::fan_in) {
    return {Kind::he_uniform, 0, 0, mode};
  }
  static Initializer lecun_uniform() { return {Kind::lecun_uniform}; }
};

// ---------------------------------------------------------------------------------------------
// Layers. A Layer is a cheap handle (copies refer to the same layer). Applying it to symbolic
// tensors appends its ops to their model's graph; the first application creates its weights
// (variables "<layer name>/<weight>"), later applications share them. A layer belongs to one
// model (applying it to another model's tensors raises tg::Error(invalid_argument)). Default
// names are the snake_case type name made unique per model: "dense", "dense_1", "conv2d", ...;
// a name given twice in one model raises tg::Error(invalid_argument).

class TG_API Layer {
 public:
  Layer() = default;
  explicit Layer(std::shared_ptr<detail::LayerImpl> impl) : impl_(std::move(impl)) {}
  /// Applies the layer to one input.
  SymbolicTensor operator()(const SymbolicTensor& x) const;
  /// Applies the layer to several inputs (Add, Concatenate); one-input layers accept a list of 1.
  SymbolicTensor operator()(const std::vector<SymbolicTensor>& xs) const;
  /// The layer's name ("" until it is first applied, unless one was given).
  const std::string& name() const;
  /// "Dense", "Conv2D", ...
  std::string type_name() const;
  /// Trainable weights (kernel, bias, gamma, beta), empty before the first application.
  std::vector<Tensor> trainable_weights() const;
  /// Non-trainable state (BatchNorm's running mean and variance).
  std::vector<Tensor> non_trainable_weights() const;
  /// Number of trainable scalars.
  int64_t parameter_count() const;
  /// Output shape of the latest application (empty before the first).
  Shape output_shape() const;
  bool valid() const { return impl_ != nullptr; }
  const std::shared_ptr<detail::LayerImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::LayerImpl> impl_;
};

struct DenseOptions {
  Act activation = Act::linear;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::glorot_uniform();
  Initializer bias_initializer = Initializer::zeros();
  std::string name = "";
};
/// y = activation(x @ kernel + bias): x [..., in] -> [..., units]; kernel [in, units], bias
/// [units] (Keras Dense, torch.nn.Linear with the kernel transposed). Errors: units < 1
/// (invalid_argument, at construction "[Dense]"), an input of rank < 2 or a dynamic last dim
/// (shape_mismatch, naming the layer).
class TG_API Dense : public Layer {
 public:
  explicit Dense(int64_t units, DenseOptions options = {});
};

struct Conv2DOptions {
  Size2 strides = 1;
  Padding padding = Padding::valid;
  std::vector<int64_t> explicit_padding = {0, 0, 0, 0};  ///< {top, bottom, left, right}
  Size2 dilation = 1;
  int64_t groups = 1;
  bool use_bias = true;
  /// nhwc (weights hwio [kH, kW, C_in/groups, filters]) or nchw (weights oihw [filters,
  /// C_in/groups, kH, kW], PyTorch's layout).
  Layout layout = Layout::nhwc;
  Act activation = Act::linear;
  Initializer kernel_initializer = Initializer::glorot_uniform();
  Initializer bias_initializer = Initializer::zeros();
  std::string name = "";
};
/// 2-D convolution (tg::conv2d; Keras Conv2D, torch.nn.Conv2d) plus bias and activation.
/// Errors: filters < 1 or a bad kernel/stride/dilation/groups/layout (invalid_argument at
/// construction, "[Conv2D]"); input rank, channels and window problems as conv2d, naming the layer.
class TG_API Conv2D : public Layer {
 public:
  Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options = {});
};

struct BatchNormLayerOptions {
  int64_t axis = -1;  ///< the channel axis: -1 for nhwc and [N, C], 1 for nchw
  /// PyTorch's convention: running = (1 - momentum) * running + momentum * batch statistic
  /// (Keras' momentum 0.99 is this 0.01).
  double momentum = 0.1;
  double epsilon = 1e-5;
  bool center = true;  ///< learn beta (else 0)
  bool scale = true;   ///< learn gamma (else 1)
  std::string name = "";
  /// Synchronized batch norm (torch.nn.SyncBatchNorm): while training, the statistics are those
  /// of the whole batch over the ranks of the communicator the model is compiled with
  /// (DataParallel::communicator; tg::sync_batch_norm), the running statistics updated from them.
  /// Without data parallelism it trains as an ordinary BatchNorm.
  bool sync = false;
};
/// tg::batch_norm with trainable gamma (ones) and beta (zeros) and running statistics
/// ("moving_mean" zeros, "moving_variance" ones, non-trainable): batch statistics while
/// training (fit), running statistics otherwise (evaluate, predict). torch.nn.BatchNorm2d.
class TG_API BatchNorm : public Layer {
 public:
  explicit BatchNorm(BatchNormLayerOptions options = {});
};

struct Pool2DOptions {
  std::optional<Size2> strides = std::nullopt;  ///< default: the pool size
  Padding padding = Padding::valid;
  std::vector<int64_t> explicit_padding = {0, 0, 0, 0};  ///< {top, bottom, left, right}
  bool ceil_mode = false;
  bool count_include_pad = false;  ///< AvgPool2D only
  Layout layout = Layout::nhwc;
  std::string name = "";
};
/// tg::max_pool2d over pool_size windows.
class TG_API MaxPool2D : public Layer {
 public:
  explicit MaxPool2D(Size2 pool_size = 2, Pool2DOptions options = {});
};
/// tg::avg_pool2d over pool_size windows.
class TG_API AvgPool2D : public Layer {
 public:
  explicit AvgPool2D(Size2 pool_size = 2, Pool2DOptions options = {});
};
/// tg::global_avg_pool2d: [N, H, W, C] (or [N, C, H, W]) -> [N, C].
class TG_API GlobalAvgPool2D : public Layer {
 public:
  explicit GlobalAvgPool2D(Layout layout = Layout::nhwc, std::string name = "");
};

/// tg::dropout (inverted dropout) while training; the identity otherwise. rate in [0, 1)
/// (invalid_argument "[Dropout]"). The mask seed defaults to one derived from the model seed.
class TG_API Dropout : public Layer {
 public:
  explicit Dropout(double rate, std::optional<uint64_t> seed = std::nullopt, std::string name = "");
};

/// [N, d1, d2, ...] -> [N, d1*d2*...] (row-major: nchw and nhwc flatten in different orders).
/// The non-batch dims must be static.
class TG_API Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "");
};

/// [N, ...] -> [N, target_shape...] (target_shape excludes the batch dim; one -1 allowed).
class TG_API Reshape : public Layer {
 public:
  explicit Reshape(Shape target_shape, std::string name = "");
};

struct ActivationOptions {
  std::optional<double> alpha = std::nullopt;  ///< leaky_relu slope (0.01) / elu alpha (1.0)
  bool approximate_tanh = false;  ///< gelu's tanh approximation
  int64_t axis = -1;              ///< softmax axis
  std::string name = "";
};
/// Applies an activation function.
class TG_API Activation : public Layer {
 public:
  explicit Activation(Act act, ActivationOptions options = {});
};

/// Elementwise sum of two or more inputs of one shape and dtype (residual connections).
/// Different shapes raise tg::Error(shape_mismatch) naming the layer (no broadcasting).
class TG_API Add : public Layer {
 public:
  explicit Add(std::string name = "");
};

/// Joins two or more inputs along `axis` (negative counts from the end; axis 0, the batch,
/// is not allowed).
class TG_API Concatenate : public Layer {
 public:
  explicit Concatenate(int64_t axis = -1, std::string name = "");
};

/// A weightless layer computing fn(x) with any tg ops (Keras Lambda).
class TG_API Lambda : public Layer {
 public:
  explicit Lambda(std::function<Tensor(Tensor)> fn, std::string name = "");
};

// ---------------------------------------------------------------------------------------------
// Training configuration.

/// Losses, computed on the model's raw outputs (logits: do not end the model with a softmax
/// when training with a cross entropy):
///  - sparse_categorical_crossentropy: tg::softmax_cross_entropy with integer labels (y of
///    shape [N] for outputs [N, C], i32 or i64, in [0, C));
///  - categorical_crossentropy: tg::softmax_cross_entropy with one-hot / probability labels
///    of the outputs' shape;
///  - binary_crossentropy: tg::sigmoid_cross_entropy, labels of the outputs' shape in [0, 1];
///  - mean_squared_error: tg::mean_squared_error, targets of the outputs' shape.
/// Floating labels may have any floating dtype (converted to the model's); integer labels are
/// converted to i64.
enum class Loss {
  sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy,
  mean_squared_error
};
TG_API std::string_view loss_name(Loss loss);
/// Parses loss_name's output (also "cross_entropy"/"sparse_ce" for sparse, "mse");
/// tg::Error(invalid_argument) otherwise.
TG_API Loss loss_from_name(std::string_view name);

/// accuracy: the fraction of examples whose argmax over the last axis equals the label
/// (sparse), the argmax of the label (categorical), or with logit > 0 equal to label > 0.5
/// (binary, per element). Not defined for mean_squared_error (compile raises invalid_argument).
enum class Metric { accuracy };

/// Optimizer configuration for Model::compile: the tg/nn.h step builders.
struct TG_API Optimizer {
  enum class Kind { sgd, adam, adamw };
  Kind kind = Kind::adam;
  double learning_rate = 1e-3;
  SgdOptions sgd_options = {};
  AdamOptions adam_options = {};
  /// Optional schedule: the learning rate of global step `step` (0-based, counted over all fits
  /// of the model, restored by load) when a fit takes `total_steps` steps from step 0
  /// (e.g. tg::cosine_warmup_lr). Replaces learning_rate when set.
  std::function<double(int64_t step, int64_t total_steps)> schedule = nullptr;

  static Optimizer sgd(double learning_rate = 0.01, SgdOptions options = {});
  static Optimizer adam(double learning_rate = 1e-3, AdamOptions options = {});
  static Optimizer adamw(double learning_rate = 1e-3, AdamOptions options = {.weight_decay = 0.01});
  /// "sgd" (momentum 0), "momentum" (SGD with momentum 0.9), "nesterov", "adam", "adamw";
  /// tg::Error(invalid_argument) otherwise.
  static Optimizer from_name(std::string_view name, double learning_rate);
};

/// Per-epoch (or per-evaluation) results: "loss", "accuracy", "val_loss", "val_accuracy".
using Logs = std::map<std::string, double>;

/// What fit returns: one value per epoch under each key of the epoch logs.
struct TG_API History {
  std::vector<int64_t> epochs = {};  ///< 0-based epoch numbers
  std::map<std::string, std::vector<double>> metrics = {};
  double seconds = 0;  ///< wall time of the fit
  /// metrics.at(key); tg::Error(not_found) listing the keys when absent.
  const std::vector<double>& operator[](const std::string& key) const;
};

/// Hooks called by fit. A callback may call model.stop_training() to end fit after the epoch.
class TG_API Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(Model& /*model*/) {}
  virtual void on_epoch_begin(Model& /*model*/, int64_t /*epoch*/) {}
  /// After each training batch; logs hold the running means of the epoch so far.
  virtual void on_batch_end(Model& /*model*/, int64_t /*batch*/, const Logs& /*logs*/) {}
  /// After each epoch (and its validation); logs as History's.
  virtual void on_epoch_end(Model& /*model*/, int64_t /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_train_end(Model& /*model*/, const History& /*history*/) {}
};

struct CheckpointOptions {
  /// The quantity compared with save_best_only, a key of the epoch logs.
  std::string monitor = "val_loss";
  bool save_best_only = false;
  /// Whether larger is better; default: true for keys containing "acc", false otherwise.
  std::optional<bool> maximize = std::nullopt;
};
/// Saves the model (Model::save: weights and optimizer state) after every epoch, or only when
/// the monitored value improved. "{epoch}" in the path is replaced by the 1-based epoch number.
/// Under data parallelism (Model::compile's DataParallel) only rank 0 writes (the others track
/// the best value alone, so saved() stays empty there).
/// A monitor missing from the logs raises tg::Error(not_found) "[ModelCheckpoint] ..."
/// (save_best_only only).
class TG_API ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string path, CheckpointOptions options = {});
  void on_epoch_end(Model& model, int64_t epoch, const Logs& logs) override;
  /// Best monitored value so far and its 0-based epoch (-1 before any save_best_only save).
  double best() const { return best_; }
  int64_t best_epoch() const { return best_epoch_; }
  /// Paths written so far, in order.
  const std::vector<std::string>& saved() const { return saved_; }

 private:
  std::string path_;
  CheckpointOptions options_;
  double best_ = 0;
  int64_t best_epoch_ = -1;
  std::vector<std::string> saved_;
};

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  int64_t patience = 0;    ///< epochs without improvement before stopping
  double min_delta = 0;    ///< smaller changes do not count as improvement
  std::optional<bool> maximize = std::nullopt;  ///< as CheckpointOptions::maximize
};
/// Stops fit after `patience` consecutive epochs (at least 1) without an improvement larger
/// than min_delta (Keras EarlyStopping). A monitor missing from the logs raises
/// tg::Error(not_found).
class TG_API EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(Model& model) override;
  void on_epoch_end(Model& model, int64_t epoch, const Logs& logs) override;
  /// The 0-based epoch after which training stopped, or -1.
  int64_t stopped_epoch() const { return stopped_epoch_; }

 private:
  EarlyStoppingOptions options_;
  double best_ = 0;
  int64_t best_epoch_ = -1;
  int64_t wait_ = 0;
  int64_t stopped_epoch_ = -1;
};

struct CSVLoggerOptions {
  /// Keep the rows of an existing file and add to them (resuming a training) instead of starting
  /// the file afresh; the columns are then those of its header line.
  bool append = false;
  /// Also rewrite this JSON file with the whole history after every epoch (empty: no JSON): one
  /// array per column, {"epoch": [1, 2], "loss": [0.61, 0.32], ...}, NaN written as null.
  std::string json_path = "";
};
/// Records the epoch logs of fit in a CSV file (Keras CSVLogger; under data parallelism only
/// rank 0 appends rows): a header line such as
/// "epoch,loss,accuracy,seconds", then one row per epoch: the 1-based epoch number (as the
/// progress line's "Epoch 1/6"), the epoch logs (loss and accuracy first, then val_loss and
/// val_accuracy, then any other key in name order) and the epoch's wall time in seconds
/// (training plus validation). Numbers are written in the shortest form that reads back exactly
/// ("nan" for NaN). The first epoch's logs fix the columns: a key missing from a later epoch
/// leaves its cell empty, a key new in a later epoch is not written. The file is created when the
/// logger is constructed, so one logger can serve several fit calls (one epoch each, say), and it
/// is flushed after every row, so it can be read while training runs. Errors: tg::Error(io_error)
/// "[CSVLogger] cannot write '<path>'" when a file cannot be created or written (at construction
/// or at the end of an epoch).
class TG_API CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string path, CSVLoggerOptions options = {});
  void on_epoch_begin(Model& model, int64_t epoch) override;
  void on_epoch_end(Model& model, int64_t epoch, const Logs& logs) override;
  const std::string& path() const { return path_; }
  /// The column names, "epoch" first and "seconds" last (empty before the first epoch, unless
  /// appending to a file with a header).
  const std::vector<std::string>& columns() const { return columns_; }
  /// Every row of the file (those read when appending, then one per epoch), in column order;
  /// empty cells are NaN.
  const std::vector<std::vector<double>>& rows() const { return rows_; }

 private:
  void write_json() const;
  std::string path_;
  CSVLoggerOptions options_;
  std::vector<std::string> columns_;
  std::vector<std::vector<double>> rows_;
  double epoch_start_ = -1;  ///< steady-clock seconds at on_epoch_begin
};

struct FitOptions {
  int64_t epochs = 1;
  int64_t batch_size = 32;  ///< the last batch of an epoch may be smaller
  bool shuffle = true;      ///< reshuffle the training examples every epoch
  uint64_t seed = 0;        ///< shuffling seed (epoch e uses a stream derived from seed and e)
  /// Fraction in [0, 1) of the examples (the last ones, taken before shuffling, as Keras) held
  /// out for validation. Ignored when validation_x is given.
  double validation_split = 0;
  TensorData validation_x = {};  ///< explicit validation data (empty: none)
  TensorData validation_y = {};
  std::vector<std::shared_ptr<Callback>> callbacks = {};
  /// 0: silent; 1: a progress bar redrawn in place when `out` is a terminal, else a few plain
  /// lines per epoch; 2: one line per epoch.
  int verbose = 1;
  std::FILE* out = nullptr;  ///< progress output (nullptr: stdout)
  int64_t initial_epoch = 0;  ///< epoch numbers start here (resuming)
};

/// Data-parallel training (Model::compile): every rank (a process per GPU, or a thread with
/// Communicator::in_process) holds a replica of the model with the same initial weights, takes
/// its shard of every batch in fit, and the gradients are averaged over the ranks (all_reduce
/// mean, in buckets) before every rank applies the same optimizer step, as PyTorch DDP does.
struct DataParallel {
  /// The ranks; the single communicator (world size 1) trains as without data parallelism.
  Communicator communicator = {};
  /// Gradients are flattened into buckets of about this many bytes, one all_reduce each, in the
  /// order the backward pass produces them (last layers first). 0: one all_reduce per weight.
  int64_t bucket_bytes = 25 << 20;
};

struct EvaluateOptions {
  int64_t batch_size = 32;
  int verbose = 0;
  std::FILE* out = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Models.

/// A functional model: the graph reaching `output` from `input`. A handle: copies refer to the
/// same model. Errors "[Model]": tensors of different models, an output that does not depend on
/// the input.
class TG_API Model {
 public:
  Model() = default;
  Model(const SymbolicTensor& input, const SymbolicTensor& output, std::string name = "model");

  const std::string& name() const;
  /// False for a Sequential that has not seen its input shape yet.
  bool built() const;
  /// The graph the model owns (layers, then the loss and training step once compiled).
  Graph graph() const;
  SymbolicTensor input() const;
  SymbolicTensor output() const;
  /// The bool scalar placeholder that layers (BatchNorm, Dropout) use to choose training mode.
  Tensor is_training() const;
  /// Layers in order of first application.
  std::vector<Layer> layers() const;
  /// The layer named `name` (tg::Error(not_found) otherwise).
  Layer layer(const std::string& name) const;
  std::vector<Tensor> trainable_weights() const;
  std::vector<Tensor> non_trainable_weights() const;
  /// Trainable scalars (kernels, biases, BatchNorm gamma and beta), as torchvision counts them.
  int64_t parameter_count() const;
  int64_t non_trainable_parameter_count() const;
  /// A Keras-style table: layer (type), output shape, parameter count, totals.
  std::string summary() const;

  /// Sets the optimizer, loss and metrics and appends the training step to the graph (labels
  /// placeholder, loss, gradients, optimizer state variables). Call once. Errors "[compile]":
  /// a second call, a metric the loss does not support, an output shape the loss cannot use
  /// (e.g. a sparse cross entropy on a rank-1 output). `device` runs every step of fit, evaluate,
  /// predict and train_on_batch (variables stay there between steps); `options` are used for
  /// each executable (e.g. CompileOptions::precision = ComputePrecision::bf16 on CUDA).
  /// `data_parallel` (DataParallel): with a communicator of world size N > 1 the training step
  /// all-reduces the gradients (mean over the ranks) and the loss and accuracy it reports (so
  /// every rank sees the global values), and fit trains data-parallel: with batch_size B every
  /// rank runs on its B / N rows of every batch (rank r: rows [r*B/N, (r+1)*B/N); a last batch
  /// of b rows gives b / N rows to each rank, the b % N last rows left out of that epoch, a
  /// batch of fewer than N rows is skipped), only rank 0 prints progress and writes
  /// checkpoints (ModelCheckpoint) and CSV logs (CSVLogger), and all ranks see the same logs.
  /// Every rank must compile the same model with the same options and call fit with the same
  /// data and options. Errors "[compile]": bucket_bytes < 0.
  void compile(Optimizer optimizer,
               Loss loss = Loss::sparse_categorical_crossentropy,
               std::vector<Metric> metrics = {Metric::accuracy},
               Device device = Device::cpu(), CompileOptions options = {},
               DataParallel data_parallel = {});
  bool compiled() const;
  /// The communicator given to compile (the single one otherwise).
  const Communicator& communicator() const;
  /// Trains on x [N, input dims...] (the model's input dtype) and y [N, ...] (labels as the loss
  /// wants) for options.epochs epochs of mini-batches, running one compiled executable per
  /// batch size (train mode: batch statistics, dropout). Returns the per-epoch logs. Errors
  /// "[fit]": not compiled, x/y shapes or dtypes that do not fit the model, N == 0, bad options;
  /// run-time errors (e.g. a label out of range) as the ops raise them.
  History fit(const TensorData& x, const TensorData& y, FitOptions options = {});
  /// Mean loss and metrics over x, y in inference mode ("loss", "accuracy"). Errors "[evaluate]".
  Logs evaluate(const TensorData& x, const TensorData& y, EvaluateOptions options = {});
  /// The model's outputs for x in inference mode, [N, output dims...]. Errors "[predict]".
  TensorData predict(const TensorData& x, int64_t batch_size = 32);
  /// One training step on one batch; returns its loss (and accuracy), at the weights before it.
  /// A negative learning_rate uses the optimizer's learning_rate (schedules apply in fit only).
  Logs train_on_batch(const TensorData& x, const TensorData& y, double learning_rate = -1);
  /// Steps taken by the optimizer so far (0 before compile).
  int64_t global_step() const;

  /// Writes every variable of the graph (weights, running statistics, optimizer state) to a
  /// safetensors file (Graph::save_variables). tg::Error(io_error) when it cannot be written.
  void save(const std::string& path) const;
  /// Reads a file written by save. Every weight of the model must be in the file with its dtype
  /// and shape; other variables (optimizer state, dropout counters) are restored when the
  /// graph has them and the file too, and ignored otherwise (so an uncompiled model loads a
  /// checkpoint of a compiled one). One tg::Error "[load]" lists every mismatch, and nothing is
  /// loaded then; tg::Error(io_error) for an unreadable file.
  void load(const std::string& path);
  /// The model's weights by variable name (trainable, then non-trainable; no optimizer state).
  std::vector<std::pair<std::string, TensorData>> get_weights() const;
  /// Replaces the named weights (all at once). Values are converted between floating dtypes;
  /// an unknown name or another shape raises tg::Error "[set_weights]" and nothing changes.
  void set_weights(const std::vector<std::pair<std::string, TensorData>>& weights);

  /// Writes the model's inference executable (input [batch_size, input dims...] of the model's
  /// input dtype -> output, inference mode: running statistics, no dropout) to `path` as a .tgx
  /// file (Executable::save, weights embedded), compiled for the device and options given to
  /// compile (the CPU for a model not compiled), so that `tg run path` or Executable::load runs it
  /// in another process. Errors: "[export_executable]" tg::Error(invalid_argument) for a
  /// batch_size below 1 or a model not built yet; those of Graph::compile and Executable::save.
  void export_executable(const std::string& path, int64_t batch_size = 1) const;

  /// Asks fit to stop after the current epoch (for callbacks).
  void stop_training();

  const std::shared_ptr<detail::ModelState>& state() const { return state_; }

 protected:
  /// Builds a Sequential's graph on first need (from `input_shape` without the batch dim).
  void ensure_built(const Shape& input_shape, DType dtype) const;
  std::shared_ptr<detail::ModelState> state_;
};

/// A plain stack of layers, each applied to the previous one's output. Built (its graph
/// created) by the constructor given an input shape, by build(), or by the first fit / evaluate
/// / predict from the data's shape (then with InputOptions defaults but the data's dtype).
class TG_API Sequential : public Model {
 public:
  explicit Sequential(std::vector<Layer> layers = {}, std::string name = "sequential");
  /// Builds at once for inputs [batch, input_shape...].
  Sequential(Shape input_shape, std::vector<Layer> layers, InputOptions input = {},
             std::string name = "sequential");
  /// Appends a layer (tg::Error(invalid_argument) "[Sequential]" once built).
  void add(Layer layer);
  /// Creates the graph for inputs [batch, input_shape...]; errors "[Sequential]" when built.
  void build(Shape input_shape, InputOptions input = {});
};

// ---------------------------------------------------------------------------------------------
// Model zoo.
namespace zoo {

struct ModelOptions {
  /// Input shape without the batch dim, in `layout` order; empty: the model's default
  /// (28x28x1 for mlp, lenet5, mnist_cnn; 224x224x3 for the ResNets).
  Shape input_shape = {};
  int64_t num_classes = 0;  ///< 0: the model's default (10; 1000 for the ResNets)
  Layout layout = Layout::nhwc;  ///< nhwc or nchw (convolution models)
  DType dtype = DType::f32;
  uint64_t seed = 0;  ///< InputOptions::seed
  std::vector<int64_t> hidden_units = {};  ///< mlp only; default {256, 128}
  double dropout = -1;  ///< mnist_cnn / mlp dropout rate; -1: the model's default
  bool sync_batch_norm = false;  ///< BatchNormLayerOptions::sync for every batch norm (data parallelism)
};

/// Flatten, Dense+relu per hidden_units (each followed by dropout when > 0; default 0), Dense.
TG_API Model mlp(ModelOptions options = {});
/// LeNet-5 (LeCun et al. 1998) as commonly used on 28x28 MNIST: conv 6@5x5 (same padding) +
/// relu + avg-pool 2, conv 16@5x5 + relu + avg-pool 2, dense 120, 84 (relu), num_classes
/// (61,706 parameters at 28x28x1 with 10 classes).
TG_API Model lenet5(ModelOptions options = {});
/// The small MNIST CNN of `tg train`: [conv 3x3 (same, no bias) + max-pool 2 + BN + relu] with
/// 32, then 64 filters (pooling first: BN and relu touch a quarter of the elements), flatten,
/// dense 128 + relu, dropout (ModelOptions::dropout; default 0.25), dense num_classes
/// (421,738 parameters). About 98.2% test accuracy on 8,000 MNIST digits in 6 epochs
/// (docs/model.md).
TG_API Model mnist_cnn(ModelOptions options = {});
/// ResNet-18/34 (He et al. 2016, basic blocks [2,2,2,2] / [3,4,6,3]) and ResNet-50 (bottleneck
/// blocks [3,4,6,3], v1.5: stride on the 3x3 conv), exactly torchvision's architecture: conv
/// 7x7/2 pad 3 (no bias) + BN + relu, max-pool 3x3/2 pad 1, the stages (64, 128, 256, 512
/// channels; x4 expansion for bottlenecks; 1x1/2 conv + BN projection shortcuts), global average
/// pool, dense num_classes. Parameter counts at 224x224x3 with 1000 classes: 11,689,512,
/// 21,797,672 and 25,557,032. Convs use he_normal(fan_out), the dense layer torch's default.
TG_API Model resnet18(ModelOptions options = {});
TG_API Model resnet34(ModelOptions options = {});
TG_API Model resnet50(ModelOptions options = {});
/// The zoo model called `name` (one of names()); tg::Error(invalid_argument) listing them
/// otherwise.
TG_API Model build(std::string_view name, ModelOptions options = {});
/// "mlp", "lenet5", "mnist_cnn", "resnet18", "resnet34", "resnet50".
TG_API std::vector<std::string> names();

}  // namespace zoo

}  // namespace tg::nn
