// Bindings of tg::nn (tg/model.h): symbolic tensors, layers, Model and Sequential with
// compile / fit / evaluate / predict (the progress bar of fit, verbose=1), callbacks (Python
// subclasses of Callback too), checkpoints and the model zoo. Guide: docs/model.md.
#include "common.h"
#include "tg/model.h"

namespace tgpy {

namespace {

namespace nn = tg::nn;

nn::Size2 to_size2(py::handle h) {
  if (py::isinstance<py::int_>(h)) return nn::Size2(h.cast<int64_t>());
  auto v = to_shape(h);
  if (v.size() != 2) {
    throw tg::Error(tg::ErrorCode::invalid_argument,
                    "[nn] a size is an int or (height, width), not " + py::repr(h).cast<std::string>());
  }
  return nn::Size2(v[0], v[1]);
}

nn::Act to_act(py::handle h) {
  if (h.is_none()) return nn::Act::linear;
  if (py::isinstance<nn::Act>(h)) return h.cast<nn::Act>();
  return nn::act_from_name(h.cast<std::string>());
}

nn::Initializer to_init(py::handle h) {
  if (py::isinstance<nn::Initializer>(h)) return h.cast<nn::Initializer>();
  std::string s = h.cast<std::string>();
  return parse_enum<nn::Initializer>(
      "initializer", s,
      {{"zeros", nn::Initializer::zeros()}, {"ones", nn::Initializer::ones()},
       {"glorot_uniform", nn::Initializer::glorot_uniform()}, {"glorot_normal", nn::Initializer::glorot_normal()},
       {"he_normal", nn::Initializer::he_normal()}, {"he_uniform", nn::Initializer::he_uniform()},
       {"lecun_uniform", nn::Initializer::lecun_uniform()}});
}

nn::Optimizer to_optimizer(py::handle h) {
  if (py::isinstance<nn::Optimizer>(h)) return h.cast<nn::Optimizer>();
  std::string s = h.cast<std::string>();
  double lr = (s == "sgd" || s == "momentum" || s == "nesterov") ? 0.01 : 1e-3;
  return nn::Optimizer::from_name(s, lr);
}

nn::Loss to_loss(py::handle h) {
  if (py::isinstance<nn::Loss>(h)) return h.cast<nn::Loss>();
  return nn::loss_from_name(h.cast<std::string>());
}

nn::SymbolicTensor apply_layer(const nn::Layer& l, py::handle x) {
  if (py::isinstance<nn::SymbolicTensor>(x)) return l(x.cast<nn::SymbolicTensor>());
  return l(x.cast<std::vector<nn::SymbolicTensor>>());
}

py::dict history_dict(const nn::History& h) {
  py::dict d;
  for (auto& [k, v] : h.metrics) d[py::str(k)] = v;
  return d;
}

// Python subclasses of Callback override any of the hooks.
class PyCallback : public nn::Callback {
 public:
  using nn::Callback::Callback;
  void on_train_begin(nn::Model& model) override { PYBIND11_OVERRIDE(void, nn::Callback, on_train_begin, model); }
  void on_epoch_begin(nn::Model& model, int64_t epoch) override {
    PYBIND11_OVERRIDE(void, nn::Callback, on_epoch_begin, model, epoch);
  }
  void on_batch_end(nn::Model& model, int64_t batch, const nn::Logs& logs) override {
    PYBIND11_OVERRIDE(void, nn::Callback, on_batch_end, model, batch, logs);
  }
  void on_epoch_end(nn::Model& model, int64_t epoch, const nn::Logs& logs) override {
    PYBIND11_OVERRIDE(void, nn::Callback, on_epoch_end, model, epoch, logs);
  }
  void on_train_end(nn::Model& model, const nn::History& history) override {
    PYBIND11_OVERRIDE(void, nn::Callback, on_train_end, model, history);
  }
};

tg::data::Split to_split(const std::string& s) {
  return parse_enum<tg::data::Split>("data", s, {{"train", tg::data::Split::train}, {"test", tg::data::Split::test}});
}


}  // namespace

void bind_nn(py::module_& m) {
  py::class_<nn::SymbolicTensor>(m, "SymbolicTensor",
                                 "A tensor of a model under construction (from Input or a layer).")
      .def_property_readonly("tensor", &nn::SymbolicTensor::tensor, "The graph tensor.")
      .def_property_readonly("shape", [](const nn::SymbolicTensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype", &nn::SymbolicTensor::dtype)
      .def("__repr__", [](const nn::SymbolicTensor& t) { return "<nn.SymbolicTensor " + t.tensor().to_string() + ">"; });
  m.def("Input", [](py::handle shape, py::handle dtype, std::string name, uint64_t seed, int64_t batch_size) {
          return nn::Input(to_shape(shape), {to_dtype(dtype), std::move(name), seed, batch_size});
        }, py::arg("shape"), py::arg("dtype") = tg::DType::f32, py::arg("name") = "input", py::arg("seed") = 0,
        py::arg("batch_size") = -1,
        "Starts a model: a placeholder [batch_size, *shape] (shape without the batch dim) in a new\n"
        "graph. seed: the base seed of every layer's initializers and dropout masks.");

  py::enum_<nn::Act>(m, "Act", "Activation functions.")
      .value("linear", nn::Act::linear).value("relu", nn::Act::relu).value("leaky_relu", nn::Act::leaky_relu)
      .value("elu", nn::Act::elu).value("gelu", nn::Act::gelu).value("silu", nn::Act::silu)
      .value("sigmoid", nn::Act::sigmoid).value("tanh", nn::Act::tanh).value("softmax", nn::Act::softmax);
  py::enum_<nn::Loss>(m, "Loss", "Losses, computed on the model's raw outputs (logits).")
      .value("sparse_categorical_crossentropy", nn::Loss::sparse_categorical_crossentropy)
      .value("categorical_crossentropy", nn::Loss::categorical_crossentropy)
      .value("binary_crossentropy", nn::Loss::binary_crossentropy)
      .value("mean_squared_error", nn::Loss::mean_squared_error);

  py::class_<nn::Initializer>(m, "Initializer", "Weight initializers (or their names as strings).")
      .def_static("zeros", &nn::Initializer::zeros)
      .def_static("ones", &nn::Initializer::ones)
      .def_static("constant", &nn::Initializer::constant, py::arg("value"))
      .def_static("uniform", &nn::Initializer::uniform, py::arg("low"), py::arg("high"))
      .def_static("normal", &nn::Initializer::normal, py::arg("mean"), py::arg("stddev"))
      .def_static("glorot_uniform", &nn::Initializer::glorot_uniform)
      .def_static("glorot_normal", &nn::Initializer::glorot_normal)
      .def_static("he_normal", [](bool fan_out) {
        return nn::Initializer::he_normal(fan_out ? nn::Initializer::FanMode::fan_out : nn::Initializer::FanMode::fan_in);
      }, py::arg("fan_out") = false)
      .def_static("he_uniform", [](bool fan_out) {
        return nn::Initializer::he_uniform(fan_out ? nn::Initializer::FanMode::fan_out : nn::Initializer::FanMode::fan_in);
      }, py::arg("fan_out") = false)
      .def_static("lecun_uniform", &nn::Initializer::lecun_uniform);

  py::class_<nn::Layer>(m, "Layer",
                        "A layer: applying it (layer(x), or layer([a, b])) appends its ops to the model's\n"
                        "graph; the first application creates its weights, later ones share them.")
      .def("__call__", &apply_layer, py::arg("x"))
      .def_property_readonly("name", &nn::Layer::name)
      .def_property_readonly("type_name", &nn::Layer::type_name)
      .def_property_readonly("trainable_weights", &nn::Layer::trainable_weights)
      .def_property_readonly("non_trainable_weights", &nn::Layer::non_trainable_weights)
      .def_property_readonly("parameter_count", &nn::Layer::parameter_count)
      .def_property_readonly("output_shape", [](const nn::Layer& l) { return py::tuple(py::cast(l.output_shape())); })
      .def("__repr__", [](const nn::Layer& l) { return "<nn." + l.type_name() + " '" + l.name() + "'>"; });

  py::class_<nn::Dense, nn::Layer>(m, "Dense", "activation(x @ kernel + bias): [..., in] -> [..., units].")
      .def(py::init([](int64_t units, py::handle activation, bool use_bias, py::handle ki, py::handle bi, std::string name) {
             return nn::Dense(units, {to_act(activation), use_bias, to_init(ki), to_init(bi), std::move(name)});
           }), py::arg("units"), py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("bias_initializer") = "zeros", py::arg("name") = "");
  py::class_<nn::Conv2D, nn::Layer>(m, "Conv2D", "2-D convolution plus bias and activation (Keras Conv2D).")
      .def(py::init([](int64_t filters, py::handle kernel_size, py::handle strides, const std::string& padding,
                       py::handle explicit_padding, py::handle dilation, int64_t groups, bool use_bias,
                       const std::string& layout, py::handle activation, py::handle ki, py::handle bi, std::string name) {
             nn::Conv2DOptions o;
             o.strides = to_size2(strides);
             o.padding = to_padding(padding, explicit_padding);
             if (!explicit_padding.is_none()) o.explicit_padding = to_shape(explicit_padding);
             o.dilation = to_size2(dilation);
             o.groups = groups;
             o.use_bias = use_bias;
             o.layout = to_layout(layout);
             o.activation = to_act(activation);
             o.kernel_initializer = to_init(ki);
             o.bias_initializer = to_init(bi);
             o.name = std::move(name);
             return nn::Conv2D(filters, to_size2(kernel_size), o);
           }), py::arg("filters"), py::arg("kernel_size"), py::arg("strides") = 1, py::arg("padding") = "valid",
           py::arg("explicit_padding") = py::none(), py::arg("dilation") = 1, py::arg("groups") = 1,
           py::arg("use_bias") = true, py::arg("layout") = "nhwc", py::arg("activation") = py::none(),
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("bias_initializer") = "zeros",
           py::arg("name") = "");
  py::class_<nn::BatchNorm, nn::Layer>(m, "BatchNorm", "Batch normalization (torch.nn.BatchNorm2d).")
      .def(py::init([](int64_t axis, double momentum, double epsilon, bool center, bool scale, std::string name) {
             return nn::BatchNorm({axis, momentum, epsilon, center, scale, std::move(name)});
           }), py::arg("axis") = -1, py::arg("momentum") = 0.1, py::arg("epsilon") = 1e-5, py::arg("center") = true,
           py::arg("scale") = true, py::arg("name") = "");
  auto pool_options = [](py::handle strides, const std::string& padding, py::handle explicit_padding, bool ceil_mode,
                         bool count_include_pad, const std::string& layout, std::string name) {
    nn::Pool2DOptions o;
    if (!strides.is_none()) o.strides = to_size2(strides);
    o.padding = to_padding(padding, explicit_padding);
    if (!explicit_padding.is_none()) o.explicit_padding = to_shape(explicit_padding);
    o.ceil_mode = ceil_mode;
    o.count_include_pad = count_include_pad;
    o.layout = to_layout(layout);
    o.name = std::move(name);
    return o;
  };
  py::class_<nn::MaxPool2D, nn::Layer>(m, "MaxPool2D", "Max pooling over pool_size windows.")
      .def(py::init([pool_options](py::handle pool_size, py::handle strides, const std::string& padding,
                                   py::handle explicit_padding, bool ceil_mode, const std::string& layout, std::string name) {
             return nn::MaxPool2D(to_size2(pool_size),
                                  pool_options(strides, padding, explicit_padding, ceil_mode, false, layout, std::move(name)));
           }), py::arg("pool_size") = 2, py::arg("strides") = py::none(), py::arg("padding") = "valid",
           py::arg("explicit_padding") = py::none(), py::arg("ceil_mode") = false, py::arg("layout") = "nhwc",
           py::arg("name") = "");
  py::class_<nn::AvgPool2D, nn::Layer>(m, "AvgPool2D", "Average pooling over pool_size windows.")
      .def(py::init([pool_options](py::handle pool_size, py::handle strides, const std::string& padding,
                                   py::handle explicit_padding, bool ceil_mode, bool count_include_pad,
                                   const std::string& layout, std::string name) {
             return nn::AvgPool2D(to_size2(pool_size), pool_options(strides, padding, explicit_padding, ceil_mode,
                                                                    count_include_pad, layout, std::move(name)));
           }), py::arg("pool_size") = 2, py::arg("strides") = py::none(), py::arg("padding") = "valid",
           py::arg("explicit_padding") = py::none(), py::arg("ceil_mode") = false, py::arg("count_include_pad") = false,
           py::arg("layout") = "nhwc", py::arg("name") = "");
  py::class_<nn::GlobalAvgPool2D, nn::Layer>(m, "GlobalAvgPool2D", "[N,H,W,C] -> [N,C] (or nchw).")
      .def(py::init([](const std::string& layout, std::string name) {
             return nn::GlobalAvgPool2D(to_layout(layout), std::move(name));
           }), py::arg("layout") = "nhwc", py::arg("name") = "");
  py::class_<nn::Dropout, nn::Layer>(m, "Dropout", "Inverted dropout while training; the identity otherwise.")
      .def(py::init([](double rate, std::optional<uint64_t> seed, std::string name) {
             return nn::Dropout(rate, seed, std::move(name));
           }), py::arg("rate"), py::arg("seed") = py::none(), py::arg("name") = "");
  py::class_<nn::Flatten, nn::Layer>(m, "Flatten", "[N, d1, d2, ...] -> [N, d1*d2*...].")
      .def(py::init<std::string>(), py::arg("name") = "");
  py::class_<nn::Reshape, nn::Layer>(m, "Reshape", "[N, ...] -> [N, *target_shape].")
      .def(py::init([](py::handle s, std::string name) { return nn::Reshape(to_shape(s), std::move(name)); }),
           py::arg("target_shape"), py::arg("name") = "");
  py::class_<nn::Activation, nn::Layer>(m, "Activation", "Applies an activation function.")
      .def(py::init([](py::handle act, std::optional<double> alpha, bool approximate_tanh, int64_t axis, std::string name) {
             return nn::Activation(to_act(act), {alpha, approximate_tanh, axis, std::move(name)});
           }), py::arg("activation"), py::arg("alpha") = py::none(), py::arg("approximate_tanh") = false,
           py::arg("axis") = -1, py::arg("name") = "");
  py::class_<nn::Add, nn::Layer>(m, "Add", "Elementwise sum of inputs of one shape (residuals).")
      .def(py::init<std::string>(), py::arg("name") = "");
  py::class_<nn::Concatenate, nn::Layer>(m, "Concatenate", "Joins inputs along `axis` (not the batch).")
      .def(py::init<int64_t, std::string>(), py::arg("axis") = -1, py::arg("name") = "");
  py::class_<nn::Lambda, nn::Layer>(m, "Lambda", "A weightless layer computing fn(x) with tensorgraph ops.")
      .def(py::init([](py::function fn, std::string name) {
             return nn::Lambda([fn](tg::Tensor x) { return fn(x).cast<tg::Tensor>(); }, std::move(name));
           }), py::arg("fn"), py::arg("name") = "");

  py::class_<nn::Optimizer>(m, "Optimizer", "Optimizer configuration for Model.compile (or a name: 'adam', ...).")
      .def_static("sgd", [](double lr, double momentum, double dampening, double wd, bool nesterov) {
        tg::SgdOptions o;
        o.momentum = momentum;
        o.dampening = dampening;
        o.weight_decay = wd;
        o.nesterov = nesterov;
        return nn::Optimizer::sgd(lr, o);
      }, py::arg("learning_rate") = 0.01, py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
         py::arg("weight_decay") = 0.0, py::arg("nesterov") = false)
      .def_static("adam", [](double lr, double b1, double b2, double eps, double wd, bool amsgrad) {
        return nn::Optimizer::adam(lr, {b1, b2, eps, wd, false, amsgrad});
      }, py::arg("learning_rate") = 1e-3, py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("epsilon") = 1e-8,
         py::arg("weight_decay") = 0.0, py::arg("amsgrad") = false)
      .def_static("adamw", [](double lr, double b1, double b2, double eps, double wd, bool amsgrad) {
        return nn::Optimizer::adamw(lr, {b1, b2, eps, wd, true, amsgrad});
      }, py::arg("learning_rate") = 1e-3, py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("epsilon") = 1e-8,
         py::arg("weight_decay") = 0.01, py::arg("amsgrad") = false)
      .def_static("from_name", &nn::Optimizer::from_name, py::arg("name"), py::arg("learning_rate"))
      .def_readwrite("learning_rate", &nn::Optimizer::learning_rate)
      .def_property("schedule", [](const nn::Optimizer&) { return py::none(); },
                    [](nn::Optimizer& o, py::object fn) {
                      if (fn.is_none()) {
                        o.schedule = nullptr;
                        return;
                      }
                      // Called by fit, which runs without the GIL.
                      auto f = std::make_shared<py::object>(fn);
                      o.schedule = [f](int64_t step, int64_t total) {
                        py::gil_scoped_acquire gil;
                        return (*f)(step, total).cast<double>();
                      };
                    },
                    "A function (step, total_steps) -> learning rate (e.g. tg.cosine_warmup_lr), or None.");

  py::class_<nn::History>(m, "History", "What fit returns: per-epoch values under each key of the epoch logs.")
      .def_property_readonly("history", &history_dict, "{'loss': [...], 'accuracy': [...], ...}")
      .def_readonly("epochs", &nn::History::epochs)
      .def_readonly("seconds", &nn::History::seconds)
      .def("__getitem__", [](const nn::History& h, const std::string& k) { return h[k]; });

  py::class_<nn::Callback, PyCallback, std::shared_ptr<nn::Callback>>(
      m, "Callback", "Hooks called by fit; subclass and override any of them.")
      .def(py::init<>())
      .def("on_train_begin", &nn::Callback::on_train_begin, py::arg("model"))
      .def("on_epoch_begin", &nn::Callback::on_epoch_begin, py::arg("model"), py::arg("epoch"))
      .def("on_batch_end", &nn::Callback::on_batch_end, py::arg("model"), py::arg("batch"), py::arg("logs"))
      .def("on_epoch_end", &nn::Callback::on_epoch_end, py::arg("model"), py::arg("epoch"), py::arg("logs"))
      .def("on_train_end", &nn::Callback::on_train_end, py::arg("model"), py::arg("history"));
  py::class_<nn::ModelCheckpoint, nn::Callback, std::shared_ptr<nn::ModelCheckpoint>>(
      m, "ModelCheckpoint", "Saves the model after every epoch, or when the monitored value improved.")
      .def(py::init([](std::string path, std::string monitor, bool save_best_only, std::optional<bool> maximize) {
             return std::make_shared<nn::ModelCheckpoint>(std::move(path), nn::CheckpointOptions{std::move(monitor), save_best_only, maximize});
           }), py::arg("path"), py::arg("monitor") = "val_loss", py::arg("save_best_only") = false,
           py::arg("maximize") = py::none())
      .def_property_readonly("best", &nn::ModelCheckpoint::best)
      .def_property_readonly("best_epoch", &nn::ModelCheckpoint::best_epoch)
      .def_property_readonly("saved", &nn::ModelCheckpoint::saved);
  py::class_<nn::EarlyStopping, nn::Callback, std::shared_ptr<nn::EarlyStopping>>(
      m, "EarlyStopping", "Stops fit after `patience` epochs without improvement.")
      .def(py::init([](std::string monitor, int64_t patience, double min_delta, std::optional<bool> maximize) {
             return std::make_shared<nn::EarlyStopping>(nn::EarlyStoppingOptions{std::move(monitor), patience, min_delta, maximize});
           }), py::arg("monitor") = "val_loss", py::arg("patience") = 0, py::arg("min_delta") = 0.0,
           py::arg("maximize") = py::none())
      .def_property_readonly("stopped_epoch", &nn::EarlyStopping::stopped_epoch);
  py::class_<nn::CSVLogger, nn::Callback, std::shared_ptr<nn::CSVLogger>>(
      m, "CSVLogger", "One CSV row per epoch (epoch, logs, seconds); optionally a JSON of the history.")
      .def(py::init([](std::string path, bool append, std::string json_path) {
             return std::make_shared<nn::CSVLogger>(std::move(path), nn::CSVLoggerOptions{append, std::move(json_path)});
           }), py::arg("path"), py::arg("append") = false, py::arg("json_path") = "")
      .def_property_readonly("columns", &nn::CSVLogger::columns)
      .def_property_readonly("rows", &nn::CSVLogger::rows);

  py::class_<nn::Model>(m, "Model",
                        "A functional model: the graph reaching `output` from `input`. A handle: copies\n"
                        "refer to the same model.")
      .def(py::init<const nn::SymbolicTensor&, const nn::SymbolicTensor&, std::string>(), py::arg("input"),
           py::arg("output"), py::arg("name") = "model")
      .def_property_readonly("name", &nn::Model::name)
      .def_property_readonly("built", &nn::Model::built)
      .def_property_readonly("graph", &nn::Model::graph)
      .def_property_readonly("input", &nn::Model::input)
      .def_property_readonly("output", &nn::Model::output)
      .def_property_readonly("is_training", &nn::Model::is_training)
      .def_property_readonly("layers", &nn::Model::layers)
      .def("layer", &nn::Model::layer, py::arg("name"))
      .def_property_readonly("trainable_weights", &nn::Model::trainable_weights)
      .def_property_readonly("non_trainable_weights", &nn::Model::non_trainable_weights)
      .def_property_readonly("parameter_count", &nn::Model::parameter_count)
      .def_property_readonly("non_trainable_parameter_count", &nn::Model::non_trainable_parameter_count)
      .def("summary", &nn::Model::summary, "A Keras-style table of layers, output shapes and parameters.")
      .def("compile", [](nn::Model& model, py::handle optimizer, py::handle loss, std::vector<std::string> metrics,
                         py::handle device, const std::string& precision) {
             std::vector<nn::Metric> ms;
             for (auto& s : metrics) ms.push_back(parse_enum<nn::Metric>("compile", s, {{"accuracy", nn::Metric::accuracy}}));
             tg::CompileOptions o;
             o.precision = parse_enum<tg::ComputePrecision>(
                 "compile", precision,
                 {{"f32", tg::ComputePrecision::f32}, {"tf32", tg::ComputePrecision::tf32},
                  {"bf16", tg::ComputePrecision::bf16}, {"f16", tg::ComputePrecision::f16}});
             model.compile(to_optimizer(optimizer), to_loss(loss), ms,
                           device.is_none() ? tg::Device::cpu() : to_device(device), o);
           }, py::arg("optimizer") = "adam", py::arg("loss") = "sparse_categorical_crossentropy",
           py::arg("metrics") = std::vector<std::string>{"accuracy"}, py::arg("device") = "cpu",
           py::arg("precision") = "f32",
           "Sets the optimizer (an Optimizer or 'sgd', 'momentum', 'nesterov', 'adam', 'adamw'), the\n"
           "loss and metrics, and appends the training step. device runs every step (None: the CPU);\n"
           "precision 'f32', 'tf32', 'bf16' or 'f16' (conv and matmul on CUDA).")
      .def_property_readonly("compiled", &nn::Model::compiled)
      .def("fit", [](nn::Model& model, py::handle x, py::handle y, int64_t epochs, int64_t batch_size, bool shuffle,
                     uint64_t seed, double validation_split, py::handle validation_data,
                     std::vector<std::shared_ptr<nn::Callback>> callbacks, int verbose, int64_t initial_epoch) {
             nn::FitOptions o;
             o.epochs = epochs;
             o.batch_size = batch_size;
             o.shuffle = shuffle;
             o.seed = seed;
             o.validation_split = validation_split;
             if (!validation_data.is_none()) {
               py::tuple v = validation_data.cast<py::tuple>();
               o.validation_x = to_tensor_data(v[0]);
               o.validation_y = to_tensor_data(v[1]);
             }
             o.callbacks = std::move(callbacks);
             o.verbose = verbose;
             o.initial_epoch = initial_epoch;
             tg::TensorData tx = to_tensor_data(x), ty = to_tensor_data(y);
             py::module_::import("sys").attr("stdout").attr("flush")();
             py::gil_scoped_release nogil;
             nn::History h = model.fit(tx, ty, o);
             std::fflush(stdout);
             return h;
           }, py::arg("x"), py::arg("y"), py::arg("epochs") = 1, py::arg("batch_size") = 32, py::arg("shuffle") = true,
           py::arg("seed") = 0, py::arg("validation_split") = 0.0, py::arg("validation_data") = py::none(),
           py::arg("callbacks") = std::vector<std::shared_ptr<nn::Callback>>{}, py::arg("verbose") = 1,
           py::arg("initial_epoch") = 0,
           "Trains on x [N, ...] and y [N, ...] (numpy arrays, TensorData or DLPack tensors) for\n"
           "`epochs` epochs of mini-batches. verbose 1 draws the progress bar (a few plain lines\n"
           "per epoch when stdout is not a terminal), 2 one line per epoch, 0 nothing. Returns a\n"
           "History.")
      .def("evaluate", [](nn::Model& model, py::handle x, py::handle y, int64_t batch_size, int verbose) {
             tg::TensorData tx = to_tensor_data(x), ty = to_tensor_data(y);
             py::gil_scoped_release nogil;
             return model.evaluate(tx, ty, {batch_size, verbose, nullptr});
           }, py::arg("x"), py::arg("y"), py::arg("batch_size") = 32, py::arg("verbose") = 0,
           "Mean loss and metrics over x, y in inference mode: {'loss': ..., 'accuracy': ...}.")
      .def("predict", [](nn::Model& model, py::handle x, int64_t batch_size) {
             tg::TensorData tx = to_tensor_data(x);
             py::gil_scoped_release nogil;
             return model.predict(tx, batch_size);
           }, py::arg("x"), py::arg("batch_size") = 32, "The model's outputs for x in inference mode (TensorData).")
      .def("train_on_batch", [](nn::Model& model, py::handle x, py::handle y, double lr) {
             tg::TensorData tx = to_tensor_data(x), ty = to_tensor_data(y);
             py::gil_scoped_release nogil;
             return model.train_on_batch(tx, ty, lr);
           }, py::arg("x"), py::arg("y"), py::arg("learning_rate") = -1.0,
           "One training step on one batch; returns its loss (and accuracy) at the weights before it.")
      .def_property_readonly("global_step", &nn::Model::global_step)
      .def("save", &nn::Model::save, py::arg("path"), "Writes every variable to a safetensors file.")
      .def("load", &nn::Model::load, py::arg("path"), "Reads a file written by save (all or nothing).")
      .def("get_weights", [](const nn::Model& model) {
             py::dict d;
             for (auto& [k, v] : model.get_weights()) d[py::str(k)] = v.clone();
             return d;
           }, "{variable name: TensorData} of the weights (copies).")
      .def("set_weights", [](nn::Model& model, py::dict weights) {
             std::vector<std::pair<std::string, tg::TensorData>> w;
             for (auto [k, v] : weights) w.emplace_back(k.cast<std::string>(), to_tensor_data(v).clone());
             model.set_weights(w);
           }, py::arg("weights"), "Replaces the named weights, all at once.")
      .def("stop_training", &nn::Model::stop_training);

  py::class_<nn::Sequential, nn::Model>(m, "Sequential", "A plain stack of layers.")
      .def(py::init([](std::vector<nn::Layer> layers, py::handle input_shape, py::handle dtype, uint64_t seed,
                       std::string name) {
             if (input_shape.is_none()) return nn::Sequential(std::move(layers), std::move(name));
             nn::InputOptions in;
             in.dtype = to_dtype(dtype);
             in.seed = seed;
             return nn::Sequential(to_shape(input_shape), std::move(layers), in, std::move(name));
           }), py::arg("layers") = std::vector<nn::Layer>{}, py::arg("input_shape") = py::none(),
           py::arg("dtype") = tg::DType::f32, py::arg("seed") = 0, py::arg("name") = "sequential",
           "Built at once when input_shape (without the batch dim) is given, else on first use.")
      .def("add", &nn::Sequential::add, py::arg("layer"))
      .def("build", [](nn::Sequential& s, py::handle shape, py::handle dtype, uint64_t seed) {
             nn::InputOptions in;
             in.dtype = to_dtype(dtype);
             in.seed = seed;
             s.build(to_shape(shape), in);
           }, py::arg("input_shape"), py::arg("dtype") = tg::DType::f32, py::arg("seed") = 0);

  py::module_ zoo = m.def_submodule("zoo", "The model zoo: mlp, lenet5, mnist_cnn, resnet18/34/50.");
  auto options = [](py::handle input_shape, int64_t num_classes, const std::string& layout, py::handle dtype,
                    uint64_t seed, py::handle hidden_units, double dropout) {
    nn::zoo::ModelOptions o;
    o.input_shape = to_axes(input_shape);
    o.num_classes = num_classes;
    o.layout = to_layout(layout);
    o.dtype = to_dtype(dtype);
    o.seed = seed;
    o.hidden_units = to_axes(hidden_units);
    o.dropout = dropout;
    return o;
  };
  auto def_zoo = [&](const char* name, nn::Model (*fn)(nn::zoo::ModelOptions), const char* doc) {
    zoo.def(name, [fn, options](py::handle input_shape, int64_t num_classes, const std::string& layout, py::handle dtype,
                                uint64_t seed, py::handle hidden_units, double dropout) {
          return fn(options(input_shape, num_classes, layout, dtype, seed, hidden_units, dropout));
        }, py::arg("input_shape") = py::none(), py::arg("num_classes") = 0, py::arg("layout") = "nhwc",
        py::arg("dtype") = tg::DType::f32, py::arg("seed") = 0, py::arg("hidden_units") = py::none(),
        py::arg("dropout") = -1.0, doc);
  };
  def_zoo("mlp", &nn::zoo::mlp, "Flatten, Dense+relu per hidden_units (default (256, 128)), Dense.");
  def_zoo("lenet5", &nn::zoo::lenet5, "LeNet-5 for 28x28 inputs (61,706 parameters).");
  def_zoo("mnist_cnn", &nn::zoo::mnist_cnn, "The small MNIST CNN of `tg train` (421,738 parameters).");
  def_zoo("resnet18", &nn::zoo::resnet18, "torchvision's ResNet-18 (11,689,512 parameters at 224x224x3).");
  def_zoo("resnet34", &nn::zoo::resnet34, "torchvision's ResNet-34 (21,797,672 parameters).");
  def_zoo("resnet50", &nn::zoo::resnet50, "torchvision's ResNet-50 v1.5 (25,557,032 parameters).");
  zoo.def("build", [options](const std::string& name, py::handle input_shape, int64_t num_classes,
                             const std::string& layout, py::handle dtype, uint64_t seed, py::handle hidden_units,
                             double dropout) {
        return nn::zoo::build(name, options(input_shape, num_classes, layout, dtype, seed, hidden_units, dropout));
      }, py::arg("name"), py::arg("input_shape") = py::none(), py::arg("num_classes") = 0, py::arg("layout") = "nhwc",
      py::arg("dtype") = tg::DType::f32, py::arg("seed") = 0, py::arg("hidden_units") = py::none(),
      py::arg("dropout") = -1.0, "The zoo model called `name` (one of names()).");
  zoo.def("names", &nn::zoo::names, "The zoo's model names: mlp, lenet5, mnist_cnn, resnet18, resnet34, resnet50.");

  py::module_ data = m.def_submodule("data", "Datasets (tg/data.h): MNIST, CIFAR-10, synthetic.");
  auto pair = [](const tg::data::Dataset& d) { return py::make_tuple(d.images, d.labels); };
  data.def("load_mnist", [pair](const std::string& dir, const std::string& split, const std::string& layout, int64_t limit) {
        return pair(tg::data::load_mnist_dir(dir, to_split(split), {to_layout(layout), limit}));
      }, py::arg("dir"), py::arg("split") = "train", py::arg("layout") = "nhwc", py::arg("limit") = -1,
      "(images f32 [N,28,28,1] in [0,1], labels int64 [N]) of an MNIST-format directory (e.g. data/mnist).");
  data.def("load_cifar10", [pair](const std::string& dir, const std::string& split, const std::string& layout, int64_t limit) {
        return pair(tg::data::load_cifar10_dir(dir, to_split(split), {to_layout(layout), limit}));
      }, py::arg("dir"), py::arg("split") = "train", py::arg("layout") = "nhwc", py::arg("limit") = -1,
      "(images, labels) of cifar-10-batches-bin.");
  data.def("random_shift", [pair](const tg::TensorData& images, const tg::TensorData& labels, int64_t max_shift,
                                  uint64_t seed, const std::string& layout) {
        tg::data::Dataset d{images, labels, 10, to_layout(layout)};
        return pair(tg::data::random_shift(d, max_shift, seed));
      }, py::arg("images"), py::arg("labels"), py::arg("max_shift"), py::arg("seed"), py::arg("layout") = "nhwc",
      "(images, labels) with each image translated by its own random offset in [-max_shift, max_shift]\n"
      "(pixels moved off dropped, uncovered ones 0): the random-shift augmentation of `tg train`.");
  data.def("make_synthetic", [pair](int64_t n, int64_t h, int64_t w, int64_t c, int64_t classes, double noise,
                                    uint64_t seed, uint64_t sample_seed, const std::string& layout) {
        return pair(tg::data::make_synthetic({n, h, w, c, classes, noise, seed, sample_seed, to_layout(layout)}));
      }, py::arg("num_examples") = 1024, py::arg("height") = 28, py::arg("width") = 28, py::arg("channels") = 1,
      py::arg("num_classes") = 10, py::arg("noise") = 0.5, py::arg("seed") = 0, py::arg("sample_seed") = 0,
      py::arg("layout") = "nhwc", "(images, labels) of a seeded, learnable synthetic task.");
}

}  // namespace tgpy
