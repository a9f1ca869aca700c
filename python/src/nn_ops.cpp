// Bindings of tg/nn.h: activations, normalization, dropout, losses, optimizer steps and learning
// rate schedules (graph builders; docs/nn.md).
#include "common.h"

namespace tgpy {

namespace {
tg::LossReduction to_reduction(const std::string& s) {
  return parse_enum<tg::LossReduction>("loss", s,
                                       {{"none", tg::LossReduction::none}, {"sum", tg::LossReduction::sum},
                                        {"mean", tg::LossReduction::mean}});
}
// An optional tensor (None: an empty Tensor, e.g. layer_norm without gamma).
tg::Tensor opt_tensor(py::handle h, const tg::Tensor& like) { return h.is_none() ? tg::Tensor() : as_tensor(h, like); }
}  // namespace

void bind_nn_ops(py::module_& m) {
  m.def("softmax", &tg::softmax, py::arg("x"), py::arg("axis") = -1, "exp(x) / sum(exp(x)) along axis, stably.");
  m.def("log_softmax", &tg::log_softmax, py::arg("x"), py::arg("axis") = -1, "log(softmax(x)), stably.");
  m.def("relu", &tg::relu, py::arg("x"), "max(x, 0).");
  m.def("leaky_relu", &tg::leaky_relu, py::arg("x"), py::arg("alpha") = 0.01, "x if x > 0 else alpha * x.");
  m.def("elu", &tg::elu, py::arg("x"), py::arg("alpha") = 1.0, "x if x > 0 else alpha * (exp(x) - 1).");
  m.def("gelu", &tg::gelu, py::arg("x"), py::arg("approximate_tanh") = false, "torch.nn.GELU (exact or tanh).");
  m.def("silu", &tg::silu, py::arg("x"), "x * sigmoid(x).");

  m.def("batch_norm", [](const tg::Tensor& x, const tg::Tensor& gamma, const tg::Tensor& beta,
                         const tg::Tensor& mean, const tg::Tensor& var, py::handle is_training, int64_t axis,
                         double momentum, double epsilon) {
          tg::Tensor tr = is_tensor(is_training) ? is_training.cast<tg::Tensor>()
                                                 : tg::Graph(x.graph_impl()).constant(is_training.cast<bool>() ? 1.0 : 0.0,
                                                                                      tg::DType::bool_);
          return tg::batch_norm(x, gamma, beta, mean, var, tr, {axis, momentum, epsilon});
        }, py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("running_mean"), py::arg("running_var"),
        py::arg("is_training"), py::arg("axis") = -1, py::arg("momentum") = 0.1, py::arg("epsilon") = 1e-5,
        "torch.nn.BatchNorm2d semantics; running_mean/var are variables updated while training.\n"
        "is_training: a bool scalar Tensor (or a Python bool, made a constant).");
  m.def("layer_norm", [](const tg::Tensor& x, py::handle gamma, py::handle beta, int64_t begin_axis, double eps) {
          return tg::layer_norm(x, opt_tensor(gamma, x), opt_tensor(beta, x), {begin_axis, eps});
        }, py::arg("x"), py::arg("gamma") = py::none(), py::arg("beta") = py::none(), py::arg("begin_axis") = -1,
        py::arg("epsilon") = 1e-5, "(x - mean) / sqrt(var + eps) * gamma + beta over axes [begin_axis, rank).");
  m.def("dropout", [](const tg::Tensor& x, py::handle is_training, double rate, uint64_t seed) {
          tg::Tensor tr = is_tensor(is_training) ? is_training.cast<tg::Tensor>()
                                                 : tg::Graph(x.graph_impl()).constant(is_training.cast<bool>() ? 1.0 : 0.0,
                                                                                      tg::DType::bool_);
          return tg::dropout(x, tr, {rate, seed});
        }, py::arg("x"), py::arg("is_training"), py::arg("rate") = 0.5, py::arg("seed") = 0,
        "Inverted dropout while training (a new mask every run), the identity otherwise.");

  m.def("softmax_cross_entropy", [](const tg::Tensor& logits, py::handle labels, int64_t axis, const std::string& r) {
          tg::Tensor l = is_tensor(labels) ? labels.cast<tg::Tensor>()
                                           : tg::Graph(logits.graph_impl()).constant(to_tensor_data(labels));
          return tg::softmax_cross_entropy(logits, l, {axis, to_reduction(r)});
        }, py::arg("logits"), py::arg("labels"), py::arg("axis") = -1, py::arg("reduction") = "mean",
        "Cross entropy of softmax(logits) against one-hot/probability labels or int class indices.");
  m.def("sigmoid_cross_entropy", [](const tg::Tensor& logits, py::handle labels, const std::string& r) {
          return tg::sigmoid_cross_entropy(logits, as_tensor(labels, logits), to_reduction(r));
        }, py::arg("logits"), py::arg("labels"), py::arg("reduction") = "mean", "torch.nn.BCEWithLogitsLoss.");
  m.def("mean_squared_error", [](const tg::Tensor& p, py::handle t, const std::string& r) {
          return tg::mean_squared_error(p, as_tensor(t, p), to_reduction(r));
        }, py::arg("predictions"), py::arg("targets"), py::arg("reduction") = "mean", "torch.nn.MSELoss.");

  m.def("sgd_step", [](tg::Graph& g, const std::vector<tg::Tensor>& params, const std::vector<tg::Tensor>& grads,
                       const tg::Tensor& lr, double momentum, double dampening, double weight_decay, bool nesterov,
                       bool maximize, std::string name) {
          return tg::sgd_step(g, params, grads, lr, {momentum, dampening, weight_decay, nesterov, maximize, std::move(name)});
        }, py::arg("graph"), py::arg("params"), py::arg("grads"), py::arg("learning_rate"), py::arg("momentum") = 0.0,
        py::arg("dampening") = 0.0, py::arg("weight_decay") = 0.0, py::arg("nesterov") = false,
        py::arg("maximize") = false, py::arg("name") = "sgd",
        "Appends one torch.optim.SGD step; returns its assign Operations (run them as target ops).");
  auto adam = [](bool decoupled) {
    return [decoupled](tg::Graph& g, const std::vector<tg::Tensor>& params, const std::vector<tg::Tensor>& grads,
                       const tg::Tensor& lr, double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                       bool maximize, std::string name) {
      tg::AdamOptions o{beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize, std::move(name)};
      return tg::adam_step(g, params, grads, lr, o);
    };
  };
  m.def("adam_step", adam(false), py::arg("graph"), py::arg("params"), py::arg("grads"), py::arg("learning_rate"),
        py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("epsilon") = 1e-8, py::arg("weight_decay") = 0.0,
        py::arg("amsgrad") = false, py::arg("maximize") = false, py::arg("name") = "",
        "Appends one torch.optim.Adam step; returns its assign Operations.");
  m.def("adamw_step", adam(true), py::arg("graph"), py::arg("params"), py::arg("grads"), py::arg("learning_rate"),
        py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("epsilon") = 1e-8, py::arg("weight_decay") = 0.01,
        py::arg("amsgrad") = false, py::arg("maximize") = false, py::arg("name") = "",
        "Appends one torch.optim.AdamW step; returns its assign Operations.");
  m.def("step_decay_lr", &tg::step_decay_lr, py::arg("base_lr"), py::arg("step"), py::arg("step_size"),
        py::arg("gamma") = 0.1, "StepLR: base_lr * gamma ** (step // step_size).");
  m.def("cosine_warmup_lr", &tg::cosine_warmup_lr, py::arg("base_lr"), py::arg("step"), py::arg("warmup_steps"),
        py::arg("total_steps"), py::arg("min_lr") = 0.0, "Linear warm-up, then cosine decay to min_lr.");
}

}  // namespace tgpy
