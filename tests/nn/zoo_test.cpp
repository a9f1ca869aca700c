// Tests of the model zoo (tg::nn::zoo): parameter counts against torchvision's, a ResNet-50
// training step, f32 against f64 and nhwc against nchw forward passes.
#include <cmath>

#include "test_util.h"
#include "tg/model.h"

namespace tg::nn {
namespace {

// Trainable parameter counts of torchvision.models.resnet18/34/50(num_classes=1000):
// sum(p.numel() for p in model.parameters()).
constexpr int64_t kResnet18Params = 11'689'512;
constexpr int64_t kResnet34Params = 21'797'672;
constexpr int64_t kResnet50Params = 25'557'032;

TEST(Zoo, ResNetParameterCountsMatchTorchvision) {
  EXPECT_EQ(zoo::resnet18().parameter_count(), kResnet18Params);
  EXPECT_EQ(zoo::resnet34().parameter_count(), kResnet34Params);
  Model r50 = zoo::resnet50({.layout = Layout::nchw});
  EXPECT_EQ(r50.parameter_count(), kResnet50Params);
  // BN running statistics: 2 per channel of the 53 BatchNorm layers (torchvision buffers).
  EXPECT_EQ(r50.non_trainable_parameter_count(), 53'120);
  EXPECT_EQ(r50.output().shape(), (Shape{-1, 1000}));
  // torchvision names: layer3.0 is the first block of stage 3, with a projection shortcut.
  EXPECT_EQ(r50.layer("layer3.0.downsample.0").parameter_count(), 512 * 1024);
  EXPECT_EQ(r50.layer("layer3.0.conv2").output_shape(), (Shape{-1, 256, 14, 14}));  // v1.5 stride
}

TEST(Zoo, SmallModelParameterCounts) {
  // LeNet-5: 156 + 2,416 + 48,120 + 10,164 + 850.
  EXPECT_EQ(zoo::lenet5().parameter_count(), 61'706);
  // MLP 784-256-128-10.
  EXPECT_EQ(zoo::mlp().parameter_count(), 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  // mnist_cnn: conv 3*3*1*32 + BN 64 + conv 3*3*32*64 + BN 128 + dense 7*7*64*128 + 128 + 1290.
  Model cnn = zoo::mnist_cnn();
  EXPECT_EQ(cnn.parameter_count(), 288 + 64 + 18'432 + 128 + 401'536 + 1'290);
  EXPECT_EQ(zoo::mnist_cnn({.layout = Layout::nchw}).parameter_count(), cnn.parameter_count());
  // Other classes / input shape.
  EXPECT_EQ(zoo::resnet18({.input_shape = {64, 64, 3}, .num_classes = 10}).parameter_count(),
            kResnet18Params - 1000 * 512 - 1000 + 10 * 512 + 10);
  EXPECT_EQ(zoo::names().size(), 6u);
  EXPECT_EQ(zoo::build("lenet5", {.num_classes = 5}).output().shape(), (Shape{-1, 5}));
  EXPECT_TG_ERROR(zoo::build("vgg16"), ErrorCode::invalid_argument, "[zoo] unknown model 'vgg16'");
  EXPECT_TG_ERROR(zoo::resnet18({.input_shape = {224, 224}}), ErrorCode::invalid_argument,
                  "[resnet18] input_shape must be 3 dims");
}

TEST(Zoo, ResNet50TrainingStepChangesWeights) {
  Model m = zoo::resnet50({.input_shape = {64, 64, 3}, .num_classes = 10});
  m.compile(Optimizer::sgd(0.01, {.momentum = 0.9}));
  TensorData x = TensorData::random_normal({2, 64, 64, 3}, 0.f, 1.f, 5);
  TensorData y = TensorData::from_vector<int64_t>({3, 7}, {2});
  auto before = m.get_weights();
  Logs logs = m.train_on_batch(x, y);
  EXPECT_TRUE(std::isfinite(logs.at("loss")));
  EXPECT_GT(logs.at("loss"), 0);
  auto after = m.get_weights();
  ASSERT_EQ(before.size(), after.size());
  // Every trainable weight moved (the fc bias, the first conv, a BN gamma), and BN running
  // statistics were updated from the batch.
  for (const char* name : {"conv1/kernel", "fc/bias", "layer4.2.bn3/gamma", "bn1/moving_mean"}) {
    size_t i = 0;
    while (i < before.size() && before[i].first != name) ++i;
    ASSERT_LT(i, before.size()) << name;
    EXPECT_NE(before[i].second.to_vector<float>(), after[i].second.to_vector<float>()) << name;
  }
  EXPECT_EQ(m.global_step(), 1);
}

// Converts every weight to f64 (and keeps names).
std::vector<std::pair<std::string, TensorData>> to_f64(
    const std::vector<std::pair<std::string, TensorData>>& ws) {
  std::vector<std::pair<std::string, TensorData>> out;
  for (const auto& [name, v] : ws) {
    auto f = v.to_vector<float>();
    out.emplace_back(name, TensorData::from_vector<double>(std::vector<double>(f.begin(), f.end()),
                                                           v.shape()));
  }
  return out;
}

// Non-trivial BN running statistics, so inference-mode normalization is exercised.
void randomize_bn_statistics(Model& m) {
  auto ws = m.get_weights();
  uint64_t seed = 100;
  for (auto& [name, v] : ws) {
    if (name.find("moving_mean") != std::string::npos) {
      v = TensorData::random_uniform(v.shape(), -0.2f, 0.2f, seed++);
    } else if (name.find("moving_variance") != std::string::npos) {
      v = TensorData::random_uniform(v.shape(), 0.5f, 2.f, seed++);
    }
  }
  m.set_weights(ws);
}

// Tolerance of the f32 forward pass against f64: |f32 - f64| <= kF32VsF64Rtol * max|f64 logit|
// (about 5e-7 is observed: f32 accumulation over ~20 convolutions with BN and residual sums).
constexpr double kF32VsF64Rtol = 2e-5;

// Builds `name` in f32 and f64 with the same weights (random BN statistics) and compares the
// logits of one forward pass (inference mode) on x.
void expect_f32_matches_f64(const std::string& name, const Shape& input, int64_t batch) {
  Model m32 = zoo::build(name, {.input_shape = input, .num_classes = 10});
  Model m64 = zoo::build(name, {.input_shape = input, .num_classes = 10, .dtype = DType::f64});
  randomize_bn_statistics(m32);
  m64.set_weights(to_f64(m32.get_weights()));
  Shape xs = {batch};
  xs.insert(xs.end(), input.begin(), input.end());
  TensorData x = TensorData::random_normal(xs, 0.f, 1.f, 9);
  auto xv = x.to_vector<float>();
  TensorData x64 = TensorData::from_vector<double>(std::vector<double>(xv.begin(), xv.end()), x.shape());
  auto y32 = m32.predict(x).to_vector<float>();
  auto y64 = m64.predict(x64).to_vector<double>();
  ASSERT_EQ(y32.size(), static_cast<size_t>(batch * 10));
  double scale = 0;
  for (double v : y64) scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0);
  for (size_t i = 0; i < y32.size(); ++i) {
    EXPECT_NEAR(y32[i], y64[i], kF32VsF64Rtol * scale) << name << " logit " << i;
  }
}

TEST(Zoo, ResNet18ForwardF32MatchesF64) { expect_f32_matches_f64("resnet18", {32, 32, 3}, 2); }

// The check: ResNet-50 (v1.5, 53 convolutions) f32 (oneDNN) against the f64 path.
TEST(Zoo, ResNet50ForwardF32MatchesF64) { expect_f32_matches_f64("resnet50", {64, 64, 3}, 1); }

TEST(Zoo, ResNet18NchwMatchesNhwc) {
  Model a = zoo::resnet18({.input_shape = {32, 32, 3}, .num_classes = 10});
  Model b = zoo::resnet18({.input_shape = {3, 32, 32}, .num_classes = 10, .layout = Layout::nchw});
  // hwio [kh, kw, i, o] -> oihw [o, i, kh, kw]; other weights are equal.
  auto ws = a.get_weights();
  for (auto& [name, v] : ws) {
    if (v.rank() != 4) continue;
    const Shape& s = v.shape();
    auto src = v.to_vector<float>();
    std::vector<float> dst(src.size());
    for (int64_t h = 0; h < s[0]; ++h)
      for (int64_t w = 0; w < s[1]; ++w)
        for (int64_t i = 0; i < s[2]; ++i)
          for (int64_t o = 0; o < s[3]; ++o)
            dst[((o * s[2] + i) * s[0] + h) * s[1] + w] = src[((h * s[1] + w) * s[2] + i) * s[3] + o];
    v = TensorData::from_vector<float>(dst, {s[3], s[2], s[0], s[1]});
  }
  b.set_weights(ws);
  TensorData x = TensorData::random_normal({1, 32, 32, 3}, 0.f, 1.f, 4);
  auto xv = x.to_vector<float>();
  std::vector<float> xc(xv.size());
  for (int64_t h = 0; h < 32; ++h)
    for (int64_t w = 0; w < 32; ++w)
      for (int64_t c = 0; c < 3; ++c) xc[(c * 32 + h) * 32 + w] = xv[(h * 32 + w) * 3 + c];
  auto ya = a.predict(x).to_vector<float>();
  auto yb = b.predict(TensorData::from_vector<float>(xc, {1, 3, 32, 32})).to_vector<float>();
  double scale = 0;
  for (float v : ya) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < ya.size(); ++i) EXPECT_NEAR(ya[i], yb[i], 1e-4 * scale) << i;
}

TEST(Zoo, MnistCnnTrainsOnATinyBatch) {
  // 16 random images of 4 classes: the CNN's loss falls quickly (BN, dropout and pooling
  // gradients all take part).
  Model m = zoo::mnist_cnn({.num_classes = 4, .seed = 1});
  m.compile(Optimizer::adam(1e-3));
  TensorData x = TensorData::random_uniform({16, 28, 28, 1}, 0.f, 1.f, 3);
  std::vector<int64_t> labels(16);
  for (int i = 0; i < 16; ++i) labels[i] = i % 4;
  TensorData y = TensorData::from_vector<int64_t>(labels, {16});
  History h = m.fit(x, y, {.epochs = 8, .batch_size = 8, .verbose = 0});
  EXPECT_LT(h["loss"].back(), 0.5 * h["loss"].front());
  EXPECT_GE(h["accuracy"].back(), 0.75);
}

}  // namespace
}  // namespace tg::nn
