// The model zoo: MLP, LeNet-5, the MNIST CNN of `tg train`, and torchvision's ResNet-18/34/50.
#include <fmt/format.h>

#include "core/error_util.h"
#include "nn/model_impl.h"

namespace tg::nn::zoo {
namespace {

constexpr double kMnistCnnDropout = 0.25;
constexpr int64_t kMlpDefaultHidden[] = {256, 128};

struct Resolved {
  Shape input_shape;
  int64_t num_classes;
  Layout layout;
  InputOptions input;
};

// Fills the defaults of `o` for a model whose default input is h x w x c.
Resolved resolve(const ModelOptions& o, std::string_view model, int64_t h, int64_t w, int64_t c,
                 int64_t classes) {
  if (o.layout != Layout::nhwc && o.layout != Layout::nchw) {
    fail(ErrorCode::invalid_argument, model, "layout must be nhwc or nchw");
  }
  if (o.num_classes < 0) {
    fail(ErrorCode::invalid_argument, model, "num_classes = {} must be >= 1 (0: default)", o.num_classes);
  }
  Resolved r;
  r.layout = o.layout;
  r.input_shape = !o.input_shape.empty() ? o.input_shape
                  : o.layout == Layout::nhwc ? Shape{h, w, c} : Shape{c, h, w};
  r.num_classes = o.num_classes > 0 ? o.num_classes : classes;
  r.input = {.dtype = o.dtype, .seed = o.seed};
  return r;
}

void check_image_input(const Resolved& r, std::string_view model) {
  if (r.input_shape.size() != 3) {
    fail(ErrorCode::invalid_argument, model, "input_shape must be 3 dims ({} without the batch "
         "dim), got {}", r.layout == Layout::nhwc ? "H, W, C" : "C, H, W", str(r.input_shape));
  }
}

Conv2DOptions conv_opts(Layout layout, int64_t stride, int64_t pad, std::string name,
                        Initializer init = Initializer::he_normal(Initializer::FanMode::fan_out)) {
  return {.strides = stride, .padding = Padding::explicit_padding,
          .explicit_padding = {pad, pad, pad, pad}, .use_bias = false, .layout = layout,
          .kernel_initializer = init, .name = std::move(name)};
}

// ModelOptions::sync_batch_norm of the model being built on this thread (set by resnet()).
thread_local bool t_sync_batch_norm = false;
struct SyncBatchNormScope {
  explicit SyncBatchNormScope(bool on) { t_sync_batch_norm = on; }
  ~SyncBatchNormScope() { t_sync_batch_norm = false; }
};

BatchNormLayerOptions bn_opts(Layout layout, std::string name) {
  return {.axis = layout == Layout::nhwc ? -1 : 1, .name = std::move(name), .sync = t_sync_batch_norm};
}

SymbolicTensor conv_bn(SymbolicTensor x, Layout layout, int64_t filters, int64_t kernel,
                       int64_t stride, const std::string& conv, const std::string& bn, bool relu) {
  x = Conv2D(filters, kernel, conv_opts(layout, stride, kernel / 2, conv))(x);
  x = BatchNorm(bn_opts(layout, bn))(x);
  return relu ? Activation(Act::relu, {.name = bn + ".relu"})(x) : x;
}

// torchvision BasicBlock (expansion 1) / Bottleneck (expansion 4, stride on the 3x3 conv).
SymbolicTensor residual_block(SymbolicTensor x, Layout layout, int64_t planes, int64_t stride,
                              bool bottleneck, const std::string& p) {
  const int64_t in_channels = x.shape()[layout == Layout::nhwc ? 3 : 1];
  const int64_t out_channels = bottleneck ? planes * 4 : planes;
  SymbolicTensor y;
  if (bottleneck) {
    y = conv_bn(x, layout, planes, 1, 1, p + ".conv1", p + ".bn1", true);
    y = conv_bn(y, layout, planes, 3, stride, p + ".conv2", p + ".bn2", true);
    y = conv_bn(y, layout, out_channels, 1, 1, p + ".conv3", p + ".bn3", false);
  } else {
    y = conv_bn(x, layout, planes, 3, stride, p + ".conv1", p + ".bn1", true);
    y = conv_bn(y, layout, planes, 3, 1, p + ".conv2", p + ".bn2", false);
  }
  SymbolicTensor shortcut = x;
  if (stride != 1 || in_channels != out_channels) {
    shortcut = conv_bn(x, layout, out_channels, 1, stride, p + ".downsample.0", p + ".downsample.1",
                       false);
  }
  y = Add(p + ".add")({y, shortcut});
  return Activation(Act::relu, {.name = p + ".relu"})(y);
}

Model resnet(const ModelOptions& o, std::string_view name, const std::vector<int64_t>& blocks,
             bool bottleneck) {
  Resolved r = resolve(o, name, 224, 224, 3, 1000);
  check_image_input(r, name);
  const Layout l = r.layout;
  SyncBatchNormScope sync(o.sync_batch_norm);
  SymbolicTensor x = Input(r.input_shape, r.input);
  SymbolicTensor y = conv_bn(x, l, 64, 7, 2, "conv1", "bn1", true);
  y = MaxPool2D(3, {.strides = 2, .padding = Padding::explicit_padding,
                    .explicit_padding = {1, 1, 1, 1}, .layout = l, .name = "maxpool"})(y);
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      y = residual_block(y, l, planes, stride, bottleneck,
                         fmt::format("layer{}.{}", stage + 1, b));
    }
  }
  y = GlobalAvgPool2D(l, "avgpool")(y);
  y = Dense(r.num_classes, {.kernel_initializer = Initializer::lecun_uniform(),
                            .bias_initializer = Initializer::lecun_uniform(), .name = "fc"})(y);
  return Model(x, y, std::string(name));
}

}  // namespace

Model mlp(ModelOptions o) {
  Resolved r = resolve(o, "mlp", 28, 28, 1, 10);
  std::vector<int64_t> hidden = o.hidden_units;
  if (hidden.empty()) hidden.assign(std::begin(kMlpDefaultHidden), std::end(kMlpDefaultHidden));
  const double rate = o.dropout < 0 ? 0 : o.dropout;
  SymbolicTensor x = Input(r.input_shape, r.input);
  SymbolicTensor y = r.input_shape.size() > 1 ? Flatten()(x) : x;
  for (int64_t units : hidden) {
    y = Dense(units, {.activation = Act::relu})(y);
    if (rate > 0) y = Dropout(rate)(y);
  }
  y = Dense(r.num_classes)(y);
  return Model(x, y, "mlp");
}

Model lenet5(ModelOptions o) {
  Resolved r = resolve(o, "lenet5", 28, 28, 1, 10);
  check_image_input(r, "lenet5");
  const Layout l = r.layout;
  SymbolicTensor x = Input(r.input_shape, r.input);
  SymbolicTensor y = Conv2D(6, 5, {.padding = Padding::same, .layout = l, .activation = Act::relu})(x);
  y = AvgPool2D(2, {.layout = l})(y);
  y = Conv2D(16, 5, {.layout = l, .activation = Act::relu})(y);
  y = AvgPool2D(2, {.layout = l})(y);
  y = Flatten()(y);
  y = Dense(120, {.activation = Act::relu})(y);
  y = Dense(84, {.activation = Act::relu})(y);
  y = Dense(r.num_classes)(y);
  return Model(x, y, "lenet5");
}

Model mnist_cnn(ModelOptions o) {
  Resolved r = resolve(o, "mnist_cnn", 28, 28, 1, 10);
  check_image_input(r, "mnist_cnn");
  const Layout l = r.layout;
  const double rate = o.dropout < 0 ? kMnistCnnDropout : o.dropout;
  auto block = [&](SymbolicTensor t, int64_t filters) {
    t = Conv2D(filters, 3, {.padding = Padding::same, .use_bias = false, .layout = l,
                            .kernel_initializer = Initializer::he_normal()})(t);
    // Pooling first: BN and relu then touch a quarter of the elements (the elementwise ops of
    // their composites dominate a CPU training step), with the same accuracy.
    t = MaxPool2D(2, {.layout = l})(t);
    t = BatchNorm({.axis = l == Layout::nhwc ? -1 : 1, .sync = o.sync_batch_norm})(t);
    return Activation(Act::relu)(t);
  };
  SymbolicTensor x = Input(r.input_shape, r.input);
  SymbolicTensor y = block(block(x, 32), 64);
  y = Flatten()(y);
  y = Dense(128, {.activation = Act::relu, .kernel_initializer = Initializer::he_normal()})(y);
  if (rate > 0) y = Dropout(rate)(y);
  y = Dense(r.num_classes)(y);
  return Model(x, y, "mnist_cnn");
}

Model resnet18(ModelOptions o) { return resnet(o, "resnet18", {2, 2, 2, 2}, false); }
Model resnet34(ModelOptions o) { return resnet(o, "resnet34", {3, 4, 6, 3}, false); }
Model resnet50(ModelOptions o) { return resnet(o, "resnet50", {3, 4, 6, 3}, true); }

std::vector<std::string> names() {
  return {"mlp", "lenet5", "mnist_cnn", "resnet18", "resnet34", "resnet50"};
}

Model build(std::string_view name, ModelOptions options) {
  if (name == "mlp") return mlp(std::move(options));
  if (name == "lenet5") return lenet5(std::move(options));
  if (name == "mnist_cnn") return mnist_cnn(std::move(options));
  if (name == "resnet18") return resnet18(std::move(options));
  if (name == "resnet34") return resnet34(std::move(options));
  if (name == "resnet50") return resnet50(std::move(options));
  fail(ErrorCode::invalid_argument, "zoo", "unknown model '{}' (expected one of {})", name,
       fmt::join(names(), ", "));
}

}  // namespace tg::nn::zoo
