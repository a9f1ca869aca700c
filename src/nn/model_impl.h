// Internals of the Keras-like model API (include/tg/model.h): the build context a model's
// layers share, the layer implementation base class, and the model state.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tg/model.h"

namespace tg::nn::detail {

/// Shared by every symbolic tensor of one model under construction.
struct ModelContext {
  Graph graph;
  Tensor is_training;  ///< bool scalar placeholder
  DType dtype = DType::f32;
  uint64_t seed = 0;
  std::vector<std::shared_ptr<LayerImpl>> layers;  ///< in order of first application
  std::set<std::string> names;
  std::map<std::string, int> name_counts;

  /// `base` if free, else base_1, base_2, ...
  std::string unique_name(const std::string& base);
};

/// A weight's fans, for the variance-scaling initializers.
struct Fans {
  double fan_in = 1;
  double fan_out = 1;
};

/// The value of a new weight of `shape` drawn per `init` from `seed`, in `dtype`.
TensorData initial_value(const Initializer& init, const Shape& shape, Fans fans, uint64_t seed,
                         DType dtype);
/// A well-mixed seed from (base, a, b) (SplitMix64 finalizer).
uint64_t derive_seed(uint64_t base, uint64_t a, uint64_t b);
/// Applies an activation function.
Tensor apply_activation(Tensor x, Act act, const ActivationOptions& options = {});
/// "[name] Type: " prefix for errors a layer raises.
[[noreturn]] void fail_layer(ErrorCode code, const std::string& name, const std::string& type,
                             const std::string& message);

/// Base of every layer: its name, owning model, weights and forward computation.
class LayerImpl {
 public:
  LayerImpl(std::string type_name, std::string base_name, std::string name)
      : type_name_(std::move(type_name)), base_name_(std::move(base_name)), name_(std::move(name)) {}
  virtual ~LayerImpl() = default;
  /// 1 for one-input layers, 0 for "two or more".
  virtual int arity() const { return 1; }
  /// Appends the layer's ops for `xs` (creating its weights on the first call).
  virtual Tensor call(ModelContext& ctx, const std::vector<Tensor>& xs) = 0;
  /// Column of Model::summary describing the configuration ("" by default).
  virtual std::string describe() const { return ""; }

  /// Binds the layer to ctx (name, index) on first use; checks it is not another model's.
  void attach(const std::shared_ptr<ModelContext>& ctx);
  /// A new variable "<name>/<weight>" initialized per `init`.
  Tensor add_weight(ModelContext& ctx, const std::string& weight, const Shape& shape,
                    const Initializer& init, Fans fans, bool trainable);
  /// Raises tg::Error(code) "[name] Type: message".
  [[noreturn]] void fail(ErrorCode code, const std::string& message) const;

  std::string type_name_;
  std::string base_name_;  ///< snake_case default name
  std::string name_;
  ModelContext* owner_ = nullptr;
  int64_t index_ = -1;
  bool built_ = false;
  std::vector<Tensor> trainable_;
  std::vector<Tensor> non_trainable_;
  Shape output_shape_;
};

enum class ExeKind { train, eval, predict };

/// Everything a Model handle refers to.
struct ModelState {
  std::string name;
  std::shared_ptr<ModelContext> ctx;  ///< null until built
  SymbolicTensor input, output;
  bool sequential = false;
  std::vector<Layer> pending;  ///< a Sequential's layers until built

  // compile()
  bool compiled = false;
  Optimizer optimizer;
  Loss loss = Loss::sparse_categorical_crossentropy;
  std::vector<Metric> metrics;
  Device device = Device::cpu();
  CompileOptions compile_options;
  Tensor labels, learning_rate, loss_value, num_correct;
  /// What the training step reports: loss_value and num_correct, all-reduced over the ranks
  /// under data parallelism (mean and sum), else the same tensors.
  Tensor train_loss, train_correct;
  DataParallel data_parallel;
  std::vector<Operation> train_ops;
  std::string step_variable;  ///< the optimizer's step counter name
  /// (ExeKind, batch size; -1 for every size under CompileOptions::disable_type_inference)
  std::map<std::pair<int, int64_t>, Executable> exes;

  bool stop_requested = false;
};

/// Mutable access to a model's state (tg::Error "[op] model is empty" for a default Model).
ModelState& state_of(const Model& model, std::string_view op);
/// The model's context, building a Sequential is not possible here: tg::Error(invalid_argument)
/// "[op] ... not built".
ModelContext& built_context(const Model& model, std::string_view op);

/// Data-parallel gradient buckets (PyTorch DDP's): the gradients of weights of `types` (static
/// shapes, floating), averaged over the ranks of `comm` (all_reduce mean), flattened and
/// concatenated into buckets of at most `bucket_bytes` bytes (a larger gradient alone; one dtype
/// per bucket; 0: one all_reduce per gradient), filled from the last weight to the first (the
/// order backward produces them). A bucket's all_reduce is appended to the graph by the ready()
/// call that completes it (gradients_as_ready calls it during the backward sweep, so the
/// collective comes in the schedule before the backward of the earlier layers); finish() splits
/// the buckets back into per-weight gradients (ops appended then, after the backward). A non-static
/// shape: tg::Error(invalid_argument) "[compile] data parallelism needs static weight shapes ..."
/// (src/nn/data_parallel.cpp).
class GradientBuckets {
 public:
  GradientBuckets(const std::vector<TensorType>& types, Communicator comm, int64_t bucket_bytes);
  /// The complete gradient of weight `index`; starts its bucket's all_reduce when it is the last.
  void ready(size_t index, const Tensor& grad);
  /// The averaged gradients, in weight order. Every gradient must have been reported.
  std::vector<Tensor> finish();
  /// Buckets made, and started so far.
  size_t bucket_count() const { return buckets_.size(); }
  size_t started() const { return started_; }

 private:
  struct Bucket {
    std::vector<size_t> members;  ///< weight indices, in the order they were added (last first)
    size_t ready = 0;
    Tensor reduced;  ///< the all_reduce of the flattened members, once started
  };
  void start(Bucket& b);
  Communicator comm_;
  std::vector<Tensor> grads_;
  std::vector<int> bucket_of_;
  std::vector<Bucket> buckets_;
  size_t started_ = 0;
};

/// grads (any shapes, floating) averaged over the ranks of `comm` (all_reduce mean): flattened
/// and concatenated into buckets of at most `bucket_bytes` bytes (a larger gradient alone; one
/// dtype per bucket; 0: one all_reduce per gradient), filled from the last gradient to the first
/// (the order backward produces them), then split back. Same order and shapes as grads
/// (src/nn/data_parallel.cpp).
std::vector<Tensor> all_reduce_mean_in_buckets(const std::vector<Tensor>& grads, const Communicator& comm,
                                               int64_t bucket_bytes);

/// The executable of `kind` for batch size `batch`, compiled on first use.
Executable& executable(ModelState& s, ExeKind kind, int64_t batch);

}  // namespace tg::nn::detail
