// Neural-network building blocks built from the primitive ops (so autodiff flows through them):
// composite activations, losses, optimizer steps as graph builders, and learning-rate schedules.
// Semantics in detail: docs/nn.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

// ---------------------------------------------------------------------------------------------
// Activations.

/// exp(x) / sum(exp(x)) along `axis` (negative counts from the end), computed as
/// exp(x - m) / sum(exp(x - m)) with m = the row max (0 where the max is infinite), m held
/// constant for autodiff (softmax does not depend on it). Floating x of rank >= 1
/// (tg::Error(dtype_mismatch) / (invalid_argument) "[softmax] ..." otherwise). A row of all -inf
/// or containing +inf gives NaN (as PyTorch). Same shape and dtype as x.
TG_API Tensor softmax(Tensor x, int64_t axis = -1);
/// log(softmax(x)) along `axis`, computed stably as (x - m) - log(sum(exp(x - m))). An element of
/// -inf in a row that has a finite one gives -inf (not NaN). Errors as softmax ("[log_softmax]").
TG_API Tensor log_softmax(Tensor x, int64_t axis = -1);

/// max(x, 0), with gradient 0 at x == 0 (PyTorch). Floating dtypes; errors "[relu]".
TG_API Tensor relu(Tensor x);
/// x for x > 0, alpha * x otherwise (torch.nn.LeakyReLU, default slope 0.01). Errors "[leaky_relu]".
TG_API Tensor leaky_relu(Tensor x, double alpha = 0.01);
/// x for x > 0, alpha * (exp(x) - 1) otherwise (torch.nn.ELU, Clevert et al. 2015). Errors "[elu]".
TG_API Tensor elu(Tensor x, double alpha = 1.0);
/// Gaussian error linear unit (Hendrycks & Gimpel 2016), torch.nn.GELU: exact
/// x * 0.5 * (1 + erf(x / sqrt(2))), or with approximate_tanh
/// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). Floating dtypes; errors "[gelu]".
TG_API Tensor gelu(Tensor x, bool approximate_tanh = false);
/// x * sigmoid(x) (SiLU / swish, torch.nn.SiLU). Floating dtypes; errors "[silu]".
TG_API Tensor silu(Tensor x);

// ---------------------------------------------------------------------------------------------
// Normalization and dropout.

struct BatchNormOptions {
  /// The channel axis of x (negative counts from the end): -1 for NHWC / [N, C], 1 for NCHW.
  int64_t axis = -1;
  /// PyTorch's convention: running = (1 - momentum) * running + momentum * batch_statistic.
  double momentum = 0.1;
  double epsilon = 1e-5;
};
/// Batch normalization (Ioffe & Szegedy 2015), torch.nn.BatchNorm2d semantics.
/// x: floating, rank >= 2; gamma, beta, running_mean, running_var: [C] with C = x's dim at
/// options.axis, x's dtype; running_mean and running_var are variables (Graph::variable).
/// is_training: bool scalar tensor (a placeholder fed per run, or a constant).
/// Training: y = gamma * (x - mean) / sqrt(var + epsilon) + beta with the batch mean and the
/// biased batch variance over every axis except options.axis; the running statistics are updated
/// with the unbiased variance (n / (n - 1) * var) by assign_variable ops that y depends on
/// through a control dependency (so computing y updates them; nothing else needs to be run).
/// Inference: the running statistics normalize and the variables keep their values. The two
/// modes are the branches of an if_else on is_training (include/tg/control_flow.h): only the
/// taken one runs, so inference never computes batch statistics.
/// Errors (tg::Error "[batch_norm]" with the shapes): parameter shapes that are not [C]
/// (shape_mismatch), dtypes (dtype_mismatch), running statistics that are not variables or an
/// is_training that is not a bool scalar (invalid_argument).
TG_API Tensor batch_norm(Tensor x, Tensor gamma, Tensor beta, Tensor running_mean, Tensor running_var,
                  Tensor is_training, BatchNormOptions options = {});

struct LayerNormOptions {
  /// The normalized axes are [begin_axis, rank): -1 normalizes the last dim (torch.nn.LayerNorm
  /// with normalized_shape = x.shape[begin_axis:], ONNX LayerNormalization's axis).
  int64_t begin_axis = -1;
  double epsilon = 1e-5;
};
/// Layer normalization (Ba et al. 2016): y = (x - mean) / sqrt(var + epsilon) * gamma + beta,
/// mean and biased variance over the normalized axes. gamma and beta have shape
/// x.shape[begin_axis:] (either may be an empty Tensor: no scale / no shift). Floating dtypes.
/// Errors "[layer_norm]": shapes (shape_mismatch), dtypes (dtype_mismatch), axis (invalid_argument).
TG_API Tensor layer_norm(Tensor x, Tensor gamma, Tensor beta, LayerNormOptions options = {});

struct DropoutOptions {
  double rate = 0.5;   ///< probability of zeroing an element, in [0, 1)
  uint64_t seed = 0;   ///< with the per-run counter, selects the Philox stream
};
/// Inverted dropout (Srivastava et al. 2014, torch.nn.Dropout): in training each element is kept
/// with probability 1 - rate and scaled by 1 / (1 - rate); at inference y = x. is_training: bool
/// scalar tensor. The mask comes from random_uniform_like keyed by an i64 counter variable
/// ("dropout_<id>/counter") that each training run increments, so every step draws a new mask
/// and a run is reproducible from (seed, counter). Errors "[dropout]": rate outside [0, 1),
/// non-floating x (dtype_mismatch), a bad is_training (invalid_argument).
TG_API Tensor dropout(Tensor x, Tensor is_training, DropoutOptions options = {});

// ---------------------------------------------------------------------------------------------
// Losses. Each returns the per-element (or per-example) loss when reduction is none, else a
// scalar: the sum, or the mean over the per-example losses (NaN for an empty batch).
enum class LossReduction { none, sum, mean };

struct SoftmaxCrossEntropyOptions {
  int64_t axis = -1;  ///< the class axis of the logits
  LossReduction reduction = LossReduction::mean;
};
/// Cross entropy between softmax(logits) and the labels along the class axis:
/// loss = -sum_c labels[c] * log_softmax(logits)[c] per example (torch.nn.CrossEntropyLoss).
/// logits: floating, rank >= 1. labels either
///  - floating with logits' shape and dtype: one-hot rows or class probabilities; a class with
///    label 0 contributes 0 even when its log-probability is -inf; or
///  - i32/i64 class indices with logits' shape minus the class axis: loss = -log_softmax[label]
///    (an index outside [-C, C) raises tg::Error(out_of_range) at run time; a negative index
///    counts from the end, as gather does).
/// A row of logits with -inf at the labelled class and a finite value elsewhere gives +inf, not
/// NaN. Per-example losses have logits' shape minus the class axis. Errors
/// "[softmax_cross_entropy]" at build time: non-floating logits or other label dtypes
/// (dtype_mismatch), label shapes that do not fit (shape_mismatch), a bad axis (invalid_argument).
TG_API Tensor softmax_cross_entropy(Tensor logits, Tensor labels, SoftmaxCrossEntropyOptions options = {});
/// Binary cross entropy of sigmoid(logits) against labels z in [0, 1], elementwise
/// (torch.nn.BCEWithLogitsLoss): max(x, 0) - x*z + log1p(exp(-|x|)), stable for large |x|, with
/// the exact gradient sigmoid(x) - z (also at x = 0). logits and labels: one floating dtype
/// (dtype_mismatch) and equal shapes (shape_mismatch), errors named "[sigmoid_cross_entropy]".
TG_API Tensor sigmoid_cross_entropy(Tensor logits, Tensor labels,
                             LossReduction reduction = LossReduction::mean);
/// (predictions - targets)^2, elementwise, then reduced (torch.nn.MSELoss; the mean is over every
/// element). One floating dtype and equal shapes, errors named "[mean_squared_error]".
TG_API Tensor mean_squared_error(Tensor predictions, Tensor targets,
                          LossReduction reduction = LossReduction::mean);

// ---------------------------------------------------------------------------------------------
// Optimizers: graph builders. Each call appends one training step to the graph and returns its
// assign ops (the parameters' in params order, then the state's, last the step counter's): run
// all of them as target ops (with the loss as a target, say) once per step. `params` are
// variables (from Graph::variable, floating); `grads[i]` has params[i]'s shape and dtype (e.g.
// from tg::gradients(loss, params)). Every update reads the start-of-run values of the
// parameters and of the optimizer state, so the assignments do not interfere and a run computes
// the loss and the gradients at the old parameters. `learning_rate` is a floating scalar tensor
// (a placeholder fed each step, or a variable; cast to each parameter's dtype) so schedules
// change it without recompiling.
// Optimizer state lives in variables created here: "<name>/step" (i64 scalar, the number of
// steps taken, incremented by each step) and per parameter "<param>/<name>_<slot>" with the
// parameter's shape and dtype, starting at zero (so save_variables/load_variables checkpoint it).
// The formulas are PyTorch's (torch.optim.SGD, Adam, AdamW); see docs/nn.md.
// Errors (tg::Error naming "[sgd_step]" / "[adam_step]"): params that are not floating variables
// or grads that do not match (invalid_argument / shape_mismatch / dtype_mismatch), a learning rate
// that is not a floating scalar, bad hyper-parameters (invalid_argument), and a state variable
// name that is taken (two optimizers on one graph need distinct names).

struct SgdOptions {
  double momentum = 0;      ///< >= 0; keeps "<param>/<name>_momentum" when > 0
  double dampening = 0;     ///< in [0, 1]
  double weight_decay = 0;  ///< L2 penalty added to the gradient, >= 0
  bool nesterov = false;    ///< needs momentum > 0 and dampening == 0
  bool maximize = false;
  std::string name = "sgd";  ///< prefix of the state variables
};
/// PyTorch SGD: g = grad + wd*p; with momentum b = g on the first step, else
/// momentum*b + (1 - dampening)*g, and g = nesterov ? g + momentum*b : b; p -= lr*g.
TG_API std::vector<Operation> sgd_step(Graph& g, const std::vector<Tensor>& params,
                                const std::vector<Tensor>& grads, Tensor learning_rate,
                                SgdOptions options = {});

struct AdamOptions {
  double beta1 = 0.9;                   ///< in [0, 1)
  double beta2 = 0.999;                 ///< in [0, 1)
  double epsilon = 1e-8;                ///< >= 0
  double weight_decay = 0;              ///< >= 0; L2 (Adam) or decoupled (AdamW)
  bool decoupled_weight_decay = false;  ///< AdamW: p *= 1 - lr*wd before the Adam update
  bool amsgrad = false;                 ///< keeps "<param>/<name>_v_max", the running max of v
  bool maximize = false;
  std::string name = "";  ///< state prefix; empty gives "adam" (or "adamw" when decoupled)
};
/// PyTorch Adam (AdamW with decoupled_weight_decay): t += 1; g = grad (+ wd*p unless decoupled);
/// m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; v_max = max(v_max, v) with amsgrad;
/// p -= lr * (m / (1 - b1^t)) / (sqrt(v or v_max) / sqrt(1 - b2^t) + eps).
TG_API std::vector<Operation> adam_step(Graph& g, const std::vector<Tensor>& params,
                                 const std::vector<Tensor>& grads, Tensor learning_rate,
                                 AdamOptions options = {});
/// adam_step with decoupled_weight_decay = true (torch.optim.AdamW). Without options the weight
/// decay is AdamW's default 0.01; given options keep their own weight_decay.
TG_API std::vector<Operation> adamw_step(Graph& g, const std::vector<Tensor>& params,
                                  const std::vector<Tensor>& grads, Tensor learning_rate,
                                  AdamOptions options = {.weight_decay = 0.01});

// ---------------------------------------------------------------------------------------------
// Learning-rate schedules: plain functions of the step number (0 for the first step), to feed the
// learning-rate placeholder. Bad arguments raise tg::Error(invalid_argument).

/// torch.optim.lr_scheduler.StepLR: base_lr * gamma^floor(step / step_size). step >= 0,
/// step_size >= 1.
TG_API double step_decay_lr(double base_lr, int64_t step, int64_t step_size, double gamma = 0.1);
/// Linear warm-up then cosine decay (as transformers' get_cosine_schedule_with_warmup, with a
/// floor): base_lr * step / warmup_steps for step < warmup_steps; then
/// min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - warmup_steps) / (total_steps -
/// warmup_steps))) / 2 up to total_steps; min_lr after. 0 <= warmup_steps <= total_steps,
/// total_steps >= 1, step >= 0.
TG_API double cosine_warmup_lr(double base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps,
                        double min_lr = 0);

}  // namespace tg
