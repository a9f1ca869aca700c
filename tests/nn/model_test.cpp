// Tests of the Keras-like model API (include/tg/model.h): layer shapes and values on
// hand-computed inputs, training, save/load, callbacks, progress output, errors.
#include <limits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "nn/init_random.h"
#include "nn/progress.h"
#include "test_util.h"
#include "tg/interrupt.h"
#include "tg/model.h"

namespace tg::nn {
namespace {

using ::tg::testing::expect_close;

TensorData f32(std::vector<float> v, Shape s) { return TensorData::from_vector<float>(v, s); }

// A model x -> layer(x) with one input of `shape`.
Model single(const Layer& layer, Shape shape, DType dtype = DType::f32) {
  SymbolicTensor x = Input(shape, {.dtype = dtype});
  return Model(x, layer(x));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tg_model_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Reads a FILE written by the progress display.
std::string slurp(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

// Three well-separated 2-D clusters at angles 0, 120 and 240 degrees (labels 0, 1, 2).
std::pair<TensorData, TensorData> clusters(int64_t n, uint64_t seed) {
  TensorData noise = TensorData::random_normal({n, 2}, 0.f, 0.35f, seed);
  const float* z = noise.data<float>();
  std::vector<float> x(static_cast<size_t>(2 * n));
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int c = static_cast<int>(i % 3);
    double a = 2.0943951023931953 * c;
    x[2 * i] = static_cast<float>(2 * std::cos(a)) + z[2 * i];
    x[2 * i + 1] = static_cast<float>(2 * std::sin(a)) + z[2 * i + 1];
    y[i] = c;
  }
  return {f32(x, {n, 2}), TensorData::from_vector<int32_t>(y, {n})};
}

Model small_mlp(uint64_t seed = 0) {
  return Sequential({2}, {Dense(16, {.activation = Act::relu}), Dense(3)}, {.seed = seed});
}

// ---------------------------------------------------------------------------------------------
// Layers: shapes and values.

TEST(ModelLayers, DenseValuesAndNames) {
  SymbolicTensor x = Input({2});
  Dense d(2, {.activation = Act::relu});
  Model m(x, d(x));
  EXPECT_EQ(d.name(), "dense");
  EXPECT_EQ(m.parameter_count(), 6);
  m.set_weights({{"dense/kernel", f32({1, 2, 3, 4}, {2, 2})}, {"dense/bias", f32({0.5f, -1}, {2})}});
  // [1,1] @ k = [4, 6] + b = [4.5, 5]; [2,-1] @ k = [-1, 0] + b = [-0.5, -1] -> relu [0, 0].
  expect_close(m.predict(f32({1, 1, 2, -1}, {2, 2})), {4.5, 5, 0, 0}, {2, 2});
  EXPECT_EQ(m.layers().size(), 1u);
  EXPECT_EQ(m.layer("dense").type_name(), "Dense");
}

TEST(ModelLayers, DefaultNamesAreUniquePerModel) {
  SymbolicTensor x = Input({4});
  Dense a(3), b(3);
  SymbolicTensor y = b(a(x));
  EXPECT_EQ(a.name(), "dense");
  EXPECT_EQ(b.name(), "dense_1");
  Dense c(2, {.name = "head"});
  Model m(x, c(y));
  EXPECT_EQ(m.layer("head").parameter_count(), 3 * 2 + 2);
  EXPECT_EQ(m.parameter_count(), (4 * 3 + 3) + (3 * 3 + 3) + 8);
  // A second model gets its own counters.
  SymbolicTensor x2 = Input({4});
  Dense d(1);
  d(x2);
  EXPECT_EQ(d.name(), "dense");
}

TEST(ModelLayers, SharedLayerReusesWeights) {
  SymbolicTensor x = Input({2});
  Dense d(2, {.use_bias = false});
  Model m(x, d(d(x)));
  EXPECT_EQ(m.parameter_count(), 4);
  m.set_weights({{"dense/kernel", f32({0, 1, 1, 0}, {2, 2})}});  // swaps twice: identity
  expect_close(m.predict(f32({3, 7}, {1, 2})), {3, 7}, {1, 2});
}

TEST(ModelLayers, Conv2DValuesBothLayouts) {
  // x = 1..9 in a 3x3 single-channel image; kernel [[1, 0], [0, -1]]: x[i,j] - x[i+1,j+1] = -4.
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    Shape in = layout == Layout::nhwc ? Shape{3, 3, 1} : Shape{1, 3, 3};
    Conv2D conv(1, 2, {.layout = layout});
    Model m = single(conv, in);
    Shape kshape = layout == Layout::nhwc ? Shape{2, 2, 1, 1} : Shape{1, 1, 2, 2};
    m.set_weights({{"conv2d/kernel", f32({1, 0, 0, -1}, kshape)}, {"conv2d/bias", f32({1}, {1})}});
    Shape out = layout == Layout::nhwc ? Shape{1, 2, 2, 1} : Shape{1, 1, 2, 2};
    Shape xs = in;
    xs.insert(xs.begin(), 1);
    expect_close(m.predict(f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, xs)), {-3, -3, -3, -3}, out);
  }
}

TEST(ModelLayers, Conv2DShapes) {
  SymbolicTensor x = Input({32, 32, 3});
  EXPECT_EQ(Conv2D(8, 3)(x).shape(), (Shape{-1, 30, 30, 8}));
  EXPECT_EQ(Conv2D(8, 3, {.strides = 2, .padding = Padding::same})(x).shape(), (Shape{-1, 16, 16, 8}));
  EXPECT_EQ(Conv2D(8, {7, 1}, {.padding = Padding::explicit_padding,
                               .explicit_padding = {3, 3, 0, 0}})(x).shape(),
            (Shape{-1, 32, 32, 8}));
  SymbolicTensor xc = Input({3, 32, 32});
  Conv2D c(4, 5, {.strides = {1, 2}, .layout = Layout::nchw});
  EXPECT_EQ(c(xc).shape(), (Shape{-1, 4, 28, 14}));
  EXPECT_EQ(c.trainable_weights()[0].shape(), (Shape{4, 3, 5, 5}));  // oihw
  EXPECT_EQ(c.parameter_count(), 4 * 3 * 25 + 4);
}

TEST(ModelLayers, PoolingValues) {
  // 4x4 image 1..16, 2x2 windows.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  TensorData x = f32(v, {1, 4, 4, 1});
  expect_close(single(MaxPool2D(2), {4, 4, 1}).predict(x), {6, 8, 14, 16}, {1, 2, 2, 1});
  expect_close(single(AvgPool2D(2), {4, 4, 1}).predict(x), {3.5, 5.5, 11.5, 13.5}, {1, 2, 2, 1});
  expect_close(single(MaxPool2D(3, {.strides = 1}), {4, 4, 1}).predict(x), {11, 12, 15, 16},
               {1, 2, 2, 1});
  expect_close(single(GlobalAvgPool2D(), {4, 4, 1}).predict(x), {8.5}, {1, 1});
  // nchw, two channels: channel means 2.5 and 6.5.
  TensorData xc = f32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  expect_close(single(GlobalAvgPool2D(Layout::nchw), {2, 2, 2}).predict(xc), {2.5, 6.5}, {1, 2});
}

TEST(ModelLayers, ShapeLayers) {
  SymbolicTensor x = Input({2, 3, 4});
  EXPECT_EQ(Flatten()(x).shape(), (Shape{-1, 24}));
  EXPECT_EQ(Reshape({4, -1})(x).shape(), (Shape{-1, 4, 6}));
  SymbolicTensor a = Input({2});
  Model m(a, Concatenate()({a, Add()({a, a})}));
  expect_close(m.predict(f32({1, 2}, {1, 2})), {1, 2, 2, 4}, {1, 4});
  EXPECT_EQ(m.parameter_count(), 0);
}

TEST(ModelLayers, ActivationValues) {
  TensorData x = f32({-2, 0, 3}, {1, 3});
  expect_close(single(Activation(Act::relu), {3}).predict(x), {0, 0, 3}, {1, 3});
  expect_close(single(Activation(Act::leaky_relu, {.alpha = 0.5}), {3}).predict(x), {-1, 0, 3}, {1, 3});
  expect_close(single(Activation(Act::tanh), {3}).predict(x), {std::tanh(-2.0), 0, std::tanh(3.0)},
               {1, 3}, 1e-6, 1e-6);
  expect_close(single(Activation(Act::sigmoid), {3}).predict(x),
               {1 / (1 + std::exp(2.0)), 0.5, 1 / (1 + std::exp(-3.0))}, {1, 3}, 1e-6, 1e-6);
  double s = std::exp(-2.0) + 1 + std::exp(3.0);
  expect_close(single(Activation(Act::softmax), {3}).predict(x),
               {std::exp(-2.0) / s, 1 / s, std::exp(3.0) / s}, {1, 3}, 1e-6, 1e-7);
  expect_close(single(Activation(Act::elu), {3}).predict(x), {std::expm1(-2.0), 0, 3}, {1, 3}, 1e-6, 1e-6);
  expect_close(single(Activation(Act::silu), {3}).predict(x),
               {-2 / (1 + std::exp(2.0)), 0, 3 / (1 + std::exp(-3.0))}, {1, 3}, 1e-6, 1e-6);
  expect_close(single(Activation(Act::gelu), {3}).predict(x),
               {-2 * 0.5 * std::erfc(2 / std::sqrt(2.0)), 0, 3 * 0.5 * std::erfc(-3 / std::sqrt(2.0))},
               {1, 3}, 1e-5, 1e-6);
  EXPECT_EQ(act_from_name("gelu"), Act::gelu);
  EXPECT_EQ(act_name(Act::leaky_relu), "leaky_relu");
}

TEST(ModelLayers, BatchNormInferenceAndDropoutIdentity) {
  SymbolicTensor x = Input({2});
  BatchNorm bn;
  Model m(x, Dropout(0.5)(bn(x)));
  EXPECT_EQ(m.parameter_count(), 4);              // gamma, beta
  EXPECT_EQ(m.non_trainable_parameter_count(), 4);  // moving mean, variance
  m.set_weights({{"batch_norm/gamma", f32({2, 1}, {2})},
                 {"batch_norm/beta", f32({1, 0}, {2})},
                 {"batch_norm/moving_mean", f32({1, -1}, {2})},
                 {"batch_norm/moving_variance", f32({4, 0.25f}, {2})}});
  // y = gamma * (x - mean) / sqrt(var + 1e-5) + beta, dropout is the identity at inference.
  double e = 1e-5;
  expect_close(m.predict(f32({3, 0}, {1, 2})), {2 * 2 / std::sqrt(4 + e) + 1, 1 / std::sqrt(0.25 + e)},
               {1, 2}, 1e-6, 1e-6);
}

TEST(ModelLayers, InitializersAreSeededAndScaled) {
  auto weights = [](uint64_t seed) {
    SymbolicTensor x = Input({100}, {.seed = seed});
    Model m(x, Dense(200)(x));
    return m.get_weights()[0].second;
  };
  TensorData a = weights(1), b = weights(1), c = weights(2);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
  // glorot_uniform: U(-l, l), l = sqrt(6 / 300); variance l^2 / 3 = 2 / 300.
  const double limit = std::sqrt(6.0 / 300);
  double sum2 = 0;
  for (float v : a.to_vector<float>()) {
    EXPECT_LE(std::abs(v), limit);
    sum2 += double(v) * v;
  }
  EXPECT_NEAR(sum2 / 20000, 2.0 / 300, 0.1 * 2.0 / 300);
  // he_normal(fan_out) of a 3x3 conv with 64 filters: stddev sqrt(2 / (9 * 64)).
  SymbolicTensor x = Input({8, 8, 16});
  Conv2D conv(64, 3, {.kernel_initializer = Initializer::he_normal(Initializer::FanMode::fan_out)});
  Model m(x, conv(x));
  double s2 = 0;
  auto w = m.get_weights()[0].second.to_vector<float>();
  for (float v : w) s2 += double(v) * v;
  EXPECT_NEAR(std::sqrt(s2 / double(w.size())), std::sqrt(2.0 / 576), 0.05 * std::sqrt(2.0 / 576));
}

TEST(ModelLayers, FastInitMatchesTensorDataRandom) {
  // The initializers' fast generator is bit-identical to TensorData::random_* (f32).
  for (Shape shape : {Shape{100003}, Shape{3, 3, 2}, Shape{1}, Shape{0}}) {
    EXPECT_EQ(detail::fast_random_normal(shape, 0.5f, 0.02f, 42).to_vector<float>(),
              TensorData::random_normal(shape, 0.5f, 0.02f, 42).to_vector<float>());
    EXPECT_EQ(detail::fast_random_uniform(shape, -0.3f, 0.7f, 7).to_vector<float>(),
              TensorData::random_uniform(shape, -0.3f, 0.7f, 7).to_vector<float>());
  }
  // A rounding carry to `high` steps back below it as TensorData does.
  EXPECT_EQ(detail::fast_random_uniform({4099}, 1e7f, 1e7f + 1, 3).to_vector<float>(),
            TensorData::random_uniform({4099}, 1e7f, 1e7f + 1, 3).to_vector<float>());
}

// ---------------------------------------------------------------------------------------------
// Training.

TEST(ModelTrain, MlpLearnsSeparableClusters) {
  auto [x, y] = clusters(300, 7);
  auto [xt, yt] = clusters(90, 8);
  Model m = small_mlp();
  m.compile(Optimizer::adam(0.05));
  History h = m.fit(x, y, {.epochs = 15, .batch_size = 32, .verbose = 0});
  ASSERT_EQ(h["loss"].size(), 15u);
  EXPECT_LT(h["loss"].back(), h["loss"].front() / 4);
  EXPECT_GE(h["accuracy"].back(), 0.97);
  Logs test = m.evaluate(xt, yt);
  EXPECT_GE(test.at("accuracy"), 0.97);
  // 300 / 32 = 10 steps per epoch (the last of 12 examples).
  EXPECT_EQ(m.global_step(), 150);
  // predict agrees with evaluate's accuracy.
  TensorData p = m.predict(xt, 64);
  ASSERT_EQ(p.shape(), (Shape{90, 3}));
  int correct = 0;
  auto pv = p.to_vector<float>();
  auto yv = yt.to_vector<int32_t>();
  for (int i = 0; i < 90; ++i) {
    int best = 0;
    for (int c = 1; c < 3; ++c) best = pv[i * 3 + c] > pv[i * 3 + best] ? c : best;
    correct += best == yv[i];
  }
  EXPECT_DOUBLE_EQ(correct / 90.0, test.at("accuracy"));
}

TEST(ModelTrain, ValidationSplitScheduleAndLazySequential) {
  auto [x, y] = clusters(100, 3);
  Sequential m({Dense(8, {.activation = Act::tanh}), Dense(3)});
  EXPECT_FALSE(m.built());
  Optimizer opt = Optimizer::sgd(0.1, {.momentum = 0.9});
  std::vector<std::pair<int64_t, int64_t>> calls;
  opt.schedule = [&](int64_t step, int64_t total) {
    calls.emplace_back(step, total);
    return 0.1;
  };
  m.compile(opt);
  History h = m.fit(x, y, {.epochs = 2, .batch_size = 30, .validation_split = 0.2, .verbose = 0});
  EXPECT_TRUE(m.built());
  // 80 training examples: 3 steps per epoch (30, 30, 20), 6 in all.
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls.front(), (std::pair<int64_t, int64_t>{0, 6}));
  EXPECT_EQ(calls.back(), (std::pair<int64_t, int64_t>{5, 6}));
  for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"}) EXPECT_EQ(h[k].size(), 2u) << k;
  EXPECT_EQ(h.epochs, (std::vector<int64_t>{0, 1}));
  // The validation logs equal an evaluation of the held-out last 20 examples.
  std::vector<float> xv(x.data<float>() + 160, x.data<float>() + 200);
  std::vector<int32_t> yv(y.data<int32_t>() + 80, y.data<int32_t>() + 100);
  Logs v = m.evaluate(f32(xv, {20, 2}), TensorData::from_vector<int32_t>(yv, {20}), {.batch_size = 7});
  EXPECT_NEAR(v.at("loss"), h["val_loss"].back(), 1e-6);
  EXPECT_DOUBLE_EQ(v.at("accuracy"), h["val_accuracy"].back());
}

// set_interrupt_check: evaluate, predict and fit's validation pass call the hook after each
// batch (as fit's training steps do), so Ctrl-C ends them within a batch, not at the pass's end.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
int g_checks = 0, g_interrupt_at = 0;
void interrupt_at_nth_check() {
  if (++g_checks == g_interrupt_at) throw Interrupted();
}
struct InterruptHook {
  explicit InterruptHook(int at) {
    g_checks = 0;
    g_interrupt_at = at;
    set_interrupt_check(&interrupt_at_nth_check);
  }
  ~InterruptHook() { set_interrupt_check(nullptr); }
};

TEST(ModelTrain, InterruptCheckRunsPerBatchOfEvaluatePredictAndValidation) {
  auto [x, y] = clusters(60, 3);
  Model m = small_mlp();
  m.compile(Optimizer::sgd(0.1));
  {  // 60 examples in batches of 8: 8 batches, interrupted after the 3rd.
    InterruptHook hook(3);
    EXPECT_THROW(m.evaluate(x, y, {.batch_size = 8, .verbose = 0}), Interrupted);
    EXPECT_EQ(g_checks, 3);
  }
  {
    InterruptHook hook(2);
    EXPECT_THROW(m.predict(x, 8), Interrupted);
    EXPECT_EQ(g_checks, 2);
  }
  {  // 1 epoch: 48 training examples = 6 steps, then 12 validation examples = 2 batches.
    InterruptHook hook(7);
    EXPECT_THROW(m.fit(x, y, {.epochs = 1, .batch_size = 8, .validation_split = 0.2, .verbose = 0}),
                 Interrupted);
    EXPECT_EQ(g_checks, 7);
    EXPECT_EQ(m.global_step(), 6);
  }
  {  // Without an interrupt, one check per batch.
    InterruptHook hook(-1);
    m.evaluate(x, y, {.batch_size = 8, .verbose = 0});
    m.predict(x, 8);
    EXPECT_EQ(g_checks, 16);
  }
}

TEST(ModelTrain, TrainOnBatchChangesWeightsAndOtherLosses) {
  SymbolicTensor x = Input({2});
  Model m(x, Dense(1)(x));
  m.compile(Optimizer::sgd(0.5), Loss::mean_squared_error, {});
  auto before = m.get_weights()[0].second.to_vector<float>();
  // One SGD step on mse (prediction p, target t): dL/dk = 2 (p - t) x / n.
  TensorData xb = f32({1, 2}, {1, 2}), yb = f32({3}, {1, 1});
  double p = before[0] + 2 * before[1];
  Logs l = m.train_on_batch(xb, yb);
  EXPECT_NEAR(l.at("loss"), (p - 3) * (p - 3), 1e-5);
  auto after = m.get_weights()[0].second.to_vector<float>();
  EXPECT_NEAR(after[0], before[0] - 0.5 * 2 * (p - 3) * 1, 1e-5);
  EXPECT_NEAR(after[1], before[1] - 0.5 * 2 * (p - 3) * 2, 1e-5);
  EXPECT_EQ(m.global_step(), 1);

  // Binary cross entropy with per-element accuracy.
  SymbolicTensor xb2 = Input({2});
  Model b(xb2, Dense(2)(xb2));
  b.compile(Optimizer::adam(0.01), Loss::binary_crossentropy);
  Logs lb = b.evaluate(f32({1, 0, 0, 1}, {2, 2}), f32({1, 0, 0, 1}, {2, 2}));
  EXPECT_TRUE(lb.count("loss") && lb.count("accuracy"));
}

TEST(ModelTrain, ReproducibleFromSeeds) {
  auto [x, y] = clusters(60, 5);
  auto run = [&](uint64_t shuffle_seed) {
    Model m = small_mlp(3);
    m.compile(Optimizer::adam(0.01));
    m.fit(x, y, {.epochs = 2, .batch_size = 16, .seed = shuffle_seed, .verbose = 0});
    return m.get_weights()[0].second.to_vector<float>();
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

// ---------------------------------------------------------------------------------------------
// Save, load, callbacks.

TEST(ModelIO, SaveLoadRestoresPredictionsAndOptimizerState) {
  auto [x, y] = clusters(60, 11);
  Model m = small_mlp(1);
  m.compile(Optimizer::adam(0.02));
  m.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
  TensorData p = m.predict(x);
  const std::string path = temp_path("roundtrip.safetensors");
  m.save(path);

  Model fresh = small_mlp(99);  // other initial weights, not compiled
  EXPECT_NE(fresh.predict(x).to_vector<float>(), p.to_vector<float>());
  fresh.load(path);
  EXPECT_EQ(fresh.predict(x).to_vector<float>(), p.to_vector<float>());

  Model resumed = small_mlp(98);
  resumed.compile(Optimizer::adam(0.02));
  resumed.load(path);
  EXPECT_EQ(resumed.global_step(), 8);
  // The same next step from the same state (weights and Adam moments) gives the same weights.
  m.train_on_batch(x, y);
  resumed.train_on_batch(x, y);
  EXPECT_EQ(resumed.get_weights()[0].second.to_vector<float>(),
            m.get_weights()[0].second.to_vector<float>());
  std::filesystem::remove(path);
}

TEST(ModelIO, LoadAndSetWeightsErrors) {
  Model m = small_mlp();
  const std::string path = temp_path("other.safetensors");
  Model other = Sequential({2}, {Dense(5), Dense(3)});
  other.save(path);
  EXPECT_TG_ERROR(m.load(path), ErrorCode::shape_mismatch, "[load]");
  EXPECT_TG_ERROR(m.load(path), ErrorCode::shape_mismatch, "'dense/kernel' is f32[2,5] in the file");
  std::filesystem::remove(path);
  EXPECT_TG_ERROR(m.load(temp_path("missing.safetensors")), ErrorCode::io_error, "");
  EXPECT_TG_ERROR(m.set_weights({{"nope", f32({1}, {1})}}), ErrorCode::shape_mismatch, "'nope'");
  EXPECT_TG_ERROR(m.set_weights({{"dense/bias", f32({1}, {1})}}), ErrorCode::shape_mismatch,
                  "[set_weights]");
  // f64 values are converted to the f32 weights.
  std::vector<double> b(16, 0.25);
  m.set_weights({{"dense/bias", TensorData::from_vector<double>(b, {16})}});
  EXPECT_EQ(m.get_weights()[1].second.to_vector<float>(), std::vector<float>(16, 0.25f));
}

TEST(ModelIO, LoadSaysWhenTheMismatchesLookLikeTheOtherLayout) {
  const std::string path = temp_path("nhwc.safetensors");
  zoo::lenet5({.input_shape = {28, 28, 1}, .layout = Layout::nhwc}).save(path);
  Model nchw = zoo::lenet5({.input_shape = {1, 28, 28}, .layout = Layout::nchw});
  // Both kernels (hwio in the file, oihw in the model) mismatch; nothing else does.
  EXPECT_TG_ERROR(nchw.load(path), ErrorCode::shape_mismatch, "2 mismatches, nothing changed");
  EXPECT_TG_ERROR(nchw.load(path), ErrorCode::shape_mismatch,
                  "saved by a model built with the other image layout, nhwc or nchw");
  // Other mismatches get no such hint.
  Model other = Sequential({2}, {Dense(5), Dense(3)});
  const std::string dense_path = temp_path("dense.safetensors");
  other.save(dense_path);
  Model m = small_mlp();
  try {
    m.load(dense_path);
    ADD_FAILURE() << "load accepted a checkpoint of another model";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("layout"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  std::filesystem::remove(dense_path);
}

TEST(ModelIO, CheckpointAndEarlyStopping) {
  auto [x, y] = clusters(30, 2);
  Model m = small_mlp();
  m.compile(Optimizer::sgd(0.0));  // no progress: the loss stays put
  auto every = std::make_shared<ModelCheckpoint>(temp_path("ckpt_{epoch}.safetensors"));
  auto best = std::make_shared<ModelCheckpoint>(
      temp_path("best.safetensors"), CheckpointOptions{.monitor = "loss", .save_best_only = true});
  auto stop = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "loss", .patience = 2});
  History h = m.fit(x, y, {.epochs = 10, .batch_size = 30, .shuffle = false,
                           .callbacks = {every, best, stop}, .verbose = 0});
  // Epoch 0 sets the best; epochs 1 and 2 do not improve (patience 2): stop after epoch 2.
  EXPECT_EQ(h.epochs.size(), 3u);
  EXPECT_EQ(stop->stopped_epoch(), 2);
  ASSERT_EQ(every->saved().size(), 3u);
  EXPECT_EQ(every->saved()[2], temp_path("ckpt_3.safetensors"));
  EXPECT_EQ(best->saved().size(), 1u);
  EXPECT_EQ(best->best_epoch(), 0);
  for (const auto& p : every->saved()) EXPECT_TRUE(std::filesystem::exists(p)) << p;
  for (const auto& p : every->saved()) std::filesystem::remove(p);
  std::filesystem::remove(best->saved()[0]);
  // A monitor that is not logged.
  Model m2 = small_mlp();
  m2.compile(Optimizer::sgd(0.1));
  auto bad = std::make_shared<ModelCheckpoint>(temp_path("x"), CheckpointOptions{.save_best_only = true});
  EXPECT_TG_ERROR(m2.fit(x, y, {.callbacks = {bad}, .verbose = 0}), ErrorCode::not_found,
                  "[ModelCheckpoint] monitor 'val_loss'");
}

// ---------------------------------------------------------------------------------------------
// Progress output.

TEST(ModelProgress, PlainLinesWhenNotATerminal) {
  auto [x, y] = clusters(40, 4);
  Model m = small_mlp();
  m.compile(Optimizer::adam(0.01));
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  m.fit(x, y, {.epochs = 2, .batch_size = 8, .validation_split = 0.25, .verbose = 1, .out = f});
  std::string s = slurp(f);
  std::fclose(f);
  // Not a terminal, and fast: exactly one line per epoch, no carriage returns.
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2) << s;
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_NE(s.find("Epoch 1/2 4/4 - "), std::string::npos) << s;
  EXPECT_NE(s.find("loss: "), std::string::npos);
  EXPECT_NE(s.find("val_accuracy: "), std::string::npos);
  EXPECT_NE(s.find("samples/s"), std::string::npos);
}

TEST(ModelProgress, BarRedrawnInPlaceOnATerminal) {
  std::FILE* f = std::tmpfile();
  detail::Progress p(f, 1, 4, "Epoch 1/1", /*tty=*/true);
  p.update(1, 8, {{"loss", 1.5}, {"accuracy", 0.25}});
  p.finish(32, {{"loss", 1.25}, {"accuracy", 0.5}, {"val_loss", 2}});
  std::string s = slurp(f);
  std::fclose(f);
  EXPECT_EQ(s.rfind("\rEpoch 1/1 1/4 [=======>......................] - ETA ", 0), 0u) << s;
  EXPECT_NE(s.find("loss: 1.5000 - accuracy: 0.2500"), std::string::npos) << s;
  EXPECT_NE(s.find("\rEpoch 1/1 4/4 [==============================] - "), std::string::npos) << s;
  EXPECT_NE(s.find("loss: 1.2500 - accuracy: 0.5000 - val_loss: 2.0000"), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(detail::Progress::duration(125), "2m 05s");
  EXPECT_EQ(detail::Progress::duration(3.14159, true), "3.14s");
  EXPECT_EQ(detail::Progress::duration(7300), "2h 01m");
}

// ---------------------------------------------------------------------------------------------
// Errors.

TEST(ModelErrors, LayerErrorsNameTheLayer) {
  SymbolicTensor x = Input({4});
  Dense d(3, {.name = "proj"});
  d(x);
  SymbolicTensor x5 = Input({5});
  EXPECT_TG_ERROR(d(x5), ErrorCode::invalid_argument, "[proj] Dense: the layer belongs to another model");
  SymbolicTensor img = Input({8, 8, 3});
  Conv2D c(4, 3);
  SymbolicTensor y = c(img);
  EXPECT_TG_ERROR(c(y), ErrorCode::shape_mismatch, "[conv2d] Conv2D: input [?,6,6,4] has 4 channels");
  EXPECT_TG_ERROR(Conv2D(4, 3)(x), ErrorCode::shape_mismatch, "[conv2d] Conv2D: expects a rank-4");
  EXPECT_TG_ERROR(Conv2D(4, 9)(img), ErrorCode::invalid_argument, "[conv2d_1] Conv2D: [conv2d]");
  EXPECT_TG_ERROR(Add()({x, Dense(2)(x)}), ErrorCode::shape_mismatch, "[add] Add: input 1");
  EXPECT_TG_ERROR(MaxPool2D(2)(x), ErrorCode::shape_mismatch, "[max_pool2d] MaxPool2D");
  EXPECT_TG_ERROR(Dense(0), ErrorCode::invalid_argument, "[Dense] units = 0");
  EXPECT_TG_ERROR(Dropout(1.0), ErrorCode::invalid_argument, "[Dropout] rate = 1");
  EXPECT_TG_ERROR(Conv2D(4, 3, {.layout = Layout::hwio}), ErrorCode::invalid_argument, "[Conv2D] layout");
  EXPECT_TG_ERROR(Input({-1, 3}), ErrorCode::invalid_argument, "[Input]");
  EXPECT_TG_ERROR(Input({3}, {.dtype = DType::i32}), ErrorCode::dtype_mismatch, "[Input]");
  EXPECT_TG_ERROR(Dense(2, {.name = "proj"})(x), ErrorCode::invalid_argument, "already called 'proj'");
  EXPECT_TG_ERROR(act_from_name("swish"), ErrorCode::invalid_argument, "unknown activation 'swish'");
}

TEST(ModelErrors, ModelApiErrors) {
  SymbolicTensor a = Input({2}), b = Input({2});
  EXPECT_TG_ERROR(Model(a, Dense(1)(b)), ErrorCode::invalid_argument, "[Model] input and output belong");
  Model m = small_mlp();
  auto [x, y] = clusters(10, 1);
  EXPECT_TG_ERROR(m.fit(x, y), ErrorCode::invalid_argument, "[fit] model 'sequential' is not compiled");
  m.compile(Optimizer::adam());
  EXPECT_TG_ERROR(m.compile(Optimizer::adam()), ErrorCode::invalid_argument, "[compile] model");
  EXPECT_TG_ERROR(m.fit(f32({1, 2, 3}, {1, 3}), y), ErrorCode::shape_mismatch,
                  "[fit] x is f32[1,3], the model 'sequential' takes [N,2]");
  EXPECT_TG_ERROR(m.fit(x, f32(std::vector<float>(10, 0), {10})), ErrorCode::dtype_mismatch,
                  "[fit] y is f32[10], sparse_categorical_crossentropy needs integer labels");
  EXPECT_TG_ERROR(m.evaluate(x, TensorData::from_vector<int32_t>({1, 2}, {2})),
                  ErrorCode::shape_mismatch, "[evaluate] y is i32[2]");
  EXPECT_TG_ERROR(m.fit(x, y, {.batch_size = 0}), ErrorCode::invalid_argument, "[fit] batch_size");
  EXPECT_TG_ERROR(m.fit(x, y, {.validation_split = 0.01, .verbose = 0}), ErrorCode::invalid_argument,
                  "[fit] validation_split");
  // A label out of range (negative ones too: they must not count from the end) fails before any
  // step, naming the example; nothing is updated.
  auto before = m.get_weights()[0].second.to_vector<float>();
  EXPECT_TG_ERROR(m.train_on_batch(f32({1, 2}, {1, 2}), TensorData::from_vector<int32_t>({7}, {1})),
                  ErrorCode::out_of_range, "[train_on_batch] label 7 of example 0 is outside [0, ");
  std::vector<int32_t> labels(10, 0);
  labels[6] = -1;
  EXPECT_TG_ERROR(m.fit(x, TensorData::from_vector<int32_t>(labels, {10}), {.verbose = 0}),
                  ErrorCode::out_of_range, "[fit] label -1 of example 6 is outside [0, ");
  EXPECT_TG_ERROR(m.train_on_batch(f32({1, 2}, {1, 2}),
                                   TensorData::from_vector<int64_t>({std::numeric_limits<int64_t>::max()}, {1})),
                  ErrorCode::out_of_range, "label 9223372036854775807 of example 0");
  labels[6] = 0;
  std::vector<int32_t> bad_val(10, 0);
  bad_val[3] = 5;
  EXPECT_TG_ERROR(m.fit(x, TensorData::from_vector<int32_t>(labels, {10}),
                        {.validation_x = x, .validation_y = TensorData::from_vector<int32_t>(bad_val, {10}),
                         .verbose = 0}),
                  ErrorCode::out_of_range, "label 5 of example 3 of the validation data");
  EXPECT_EQ(m.get_weights()[0].second.to_vector<float>(), before);
  SymbolicTensor r = Input({2});
  Model reg(r, Dense(1)(r));
  EXPECT_TG_ERROR(reg.compile(Optimizer::sgd(), Loss::mean_squared_error, {Metric::accuracy}),
                  ErrorCode::invalid_argument, "[compile] accuracy is not defined");
  Sequential empty;
  EXPECT_TG_ERROR(empty.summary(), ErrorCode::invalid_argument, "not built yet");
  EXPECT_TG_ERROR(Optimizer::from_name("rmsprop", 0.1), ErrorCode::invalid_argument, "rmsprop");
  EXPECT_TG_ERROR(loss_from_name("hinge"), ErrorCode::invalid_argument, "hinge");
  EXPECT_TG_ERROR(m.layer("nope"), ErrorCode::not_found, "no layer 'nope'");
}

TEST(ModelLayers, SummaryListsLayers) {
  Model m = small_mlp();
  std::string s = m.summary();
  EXPECT_NE(s.find("Model: \"sequential\""), std::string::npos) << s;
  EXPECT_NE(s.find("dense (Dense)"), std::string::npos) << s;
  EXPECT_NE(s.find("[?,16]"), std::string::npos) << s;
  EXPECT_NE(s.find("Trainable params: 99"), std::string::npos) << s;  // 2*16+16 + 16*3+3
}

}  // namespace
}  // namespace tg::nn
