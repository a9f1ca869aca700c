// Synchronized batch norm (tg::sync_batch_norm, BatchNormLayerOptions::sync; issue 24): a small
// ResNet-like CNN on 2 ranks simulated by threads with sync batch norm equals, after 3 steps, one
// rank on the doubled batch with ordinary batch norm (weights and running statistics), and the
// gradient through the synchronized statistics matches central differences of the sum of every
// rank's loss in float64.
#include <cmath>
#include <cstdio>

#include "nn/model_impl.h"
#include "ranks_util.h"
#include "test_util.h"
#include "tg/autodiff.h"
#include "tg/model.h"
#include "tg/sync_batch_norm.h"

namespace tg::nn {
namespace {

using Weights = std::vector<std::pair<std::string, TensorData>>;
using ::tg::testing::on_ranks;

using ::tg::testing::max_relative;  // tests/ranks_util.h

// 48 images 6x6x3 (nhwc), 3 classes from a fixed rule.
std::pair<TensorData, TensorData> images(int64_t n) {
  TensorData x = TensorData::random_normal({n, 6, 6, 3}, 0.5f, 1.f, 11);  // mean 0.5: BN has work to do
  std::vector<int64_t> y(static_cast<size_t>(n));
  const float* v = x.data<float>();
  for (int64_t i = 0; i < n; ++i) y[i] = (v[108 * i] + v[108 * i + 4] > 1) + (v[108 * i + 50] > 0.5f);
  return {x, TensorData::from_vector<int64_t>(y, {n})};
}

// ResNet-18's pieces at toy sizes: stem conv 3x3 (8) + BN + relu, a basic block (8), a
// downsampling basic block (16, stride 2, 1x1 conv + BN projection), global average pool, dense.
Model tiny_resnet(bool sync) {
  auto conv = [](int64_t f, int64_t k, int64_t stride) {
    return Conv2D(f, k, {.strides = stride, .padding = Padding::same, .use_bias = false,
                         .kernel_initializer = Initializer::he_normal()});
  };
  auto bn = [sync] { return BatchNorm({.sync = sync}); };
  auto relu = [] { return Activation(Act::relu); };
  SymbolicTensor x = Input({6, 6, 3}, {.seed = 5});
  SymbolicTensor y = relu()(bn()(conv(8, 3, 1)(x)));
  SymbolicTensor b = relu()(bn()(conv(8, 3, 1)(y)));
  b = bn()(conv(8, 3, 1)(b));
  y = relu()(Add()({b, y}));
  b = relu()(bn()(conv(16, 3, 2)(y)));
  b = bn()(conv(16, 3, 1)(b));
  SymbolicTensor s = bn()(conv(16, 1, 2)(y));
  y = relu()(Add()({b, s}));
  y = Dense(3)(GlobalAvgPool2D()(y));
  return Model(x, y, "tiny_resnet");
}

Weights train(bool sync, const Communicator& comm) {
  auto [x, y] = images(48);
  Model m = tiny_resnet(sync);
  m.compile(Optimizer::sgd(0.1, {.momentum = 0.9}), Loss::sparse_categorical_crossentropy, {}, Device::cpu(), {},
            {.communicator = comm});
  m.fit(x, y, {.epochs = 1, .batch_size = 16, .seed = 3, .verbose = 0});
  return m.get_weights();
}

TEST(SyncBatchNorm, TwoRanksMatchOneRankOnTheDoubledBatchResNetBlocks) {
  // One rank, plain batch norm, batch 16: 3 steps. Two ranks, global batch 16 (8 each): 3 steps.
  const Weights one = train(false, Communicator());
  auto two = on_ranks<Weights>(2, [](int, const Communicator& c) { return train(true, c); },
                               {.timeout_seconds = 300});
  auto local = on_ranks<Weights>(2, [](int, const Communicator& c) { return train(false, c); },
                                 {.timeout_seconds = 300});
  EXPECT_GT(max_relative(one, tiny_resnet(false).get_weights()), 1e-3);  // the weights moved
  const double rel = max_relative(two[0], one);
  const double rel_local = max_relative(local[0], one);
  std::printf("[sync-bn] tiny ResNet, 2 ranks with sync batch norm vs 1 rank on the doubled batch after 3 "
              "steps: max relative difference %.3g (weights and running statistics); without sync: %.3g\n",
              rel, rel_local);
  EXPECT_LE(rel, 1e-5);
  EXPECT_LE(max_relative(two[1], one), 1e-5);
  EXPECT_EQ(max_relative(two[1], two[0]), 0.0);  // identical replicas, running statistics included
  // Per-rank statistics train another model: the check above is not vacuous.
  EXPECT_GT(rel_local, 1e-3);
}

TEST(SyncBatchNorm, LayerDescribesSyncAndBindsToTheCompileCommunicator) {
  using ::tg::testing::count_occurrences;
  auto comms = Communicator::in_process(2);
  Model m = tiny_resnet(true);
  EXPECT_NE(m.summary().find("axis -1, sync"), std::string::npos) << m.summary();
  // 6 batch norms: 2 all_reduces each in the forward (sums and counts, squared deviations), built
  // on the single communicator, then bound to rank 0 of the 2 at compile.
  const std::string built = m.graph().to_string();
  EXPECT_EQ(count_occurrences(built, "comm=single rank 0 of 1"), 12) << built;
  EXPECT_EQ(count_occurrences(built, "comm=in_process"), 0);
  m.compile(Optimizer::sgd(0.1), Loss::sparse_categorical_crossentropy, {}, Device::cpu(), {},
            {.communicator = comms[0]});
  const std::string text = m.graph().to_string();
  EXPECT_EQ(count_occurrences(text, "comm=single"), 0) << text;
  // the 12 forward ones, their 12 transposes, the gradient bucket and the loss
  EXPECT_GE(count_occurrences(text, "comm=in_process rank 0 of 2"), 26) << text;
}

// sum over ranks of loss_r, loss_r = sum(w_r * sync_batch_norm(x_r; gamma_r, beta)); with the
// gradients of x_r and gamma_r on each rank when asked.
struct Objective {
  double total = 0;
  std::vector<std::vector<double>> dx, dgamma;
};
Objective objective(const std::vector<std::vector<double>>& xs, const std::vector<std::vector<double>>& gammas,
                    bool grads) {
  const Shape shape{3, 2, 3};
  struct Out {
    double loss = 0;
    std::vector<double> dx, dgamma;
  };
  auto outs = on_ranks<Out>(2, [&](int r, const Communicator& c) {
    Graph g;
    Tensor x = g.placeholder(shape, DType::f64, "x");
    Tensor gamma = g.placeholder({3}, DType::f64, "gamma");
    Tensor beta = g.constant(TensorData::from_vector<double>({0.1, -0.2, 0.3}, {3}));
    Tensor rm = g.variable(TensorData::zeros({3}, DType::f64), "rm");
    Tensor rv = g.variable(TensorData::full({3}, DType::f64, 1.0), "rv");
    Tensor on = g.constant(TensorData::from_vector<bool>({true}, {}));
    Tensor y = sync_batch_norm(x, gamma, beta, rm, rv, on, c);
    std::vector<double> w(18);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.3 + 0.7 * static_cast<double>((i * 7 + r * 5) % 11) / 11.0;
    Tensor loss = reduce_sum(y * g.constant(TensorData::from_vector<double>(w, shape)) + square(y) * 0.25);
    std::vector<Tensor> targets = {loss};
    if (grads) {
      auto gs = gradients(loss, {x, gamma});
      targets.insert(targets.end(), gs.begin(), gs.end());
    }
    auto v = g.run({{x, TensorData::from_vector<double>(xs[r], shape)},
                    {gamma, TensorData::from_vector<double>(gammas[r], {3})}},
                   targets, {}, Device::cpu());
    Out o;
    o.loss = v[0].element_as_double(0);
    if (grads) {
      o.dx = v[1].to_vector<double>();
      o.dgamma = v[2].to_vector<double>();
    }
    return o;
  });
  Objective f;
  for (const Out& o : outs) {
    f.total += o.loss;
    f.dx.push_back(o.dx);
    f.dgamma.push_back(o.dgamma);
  }
  return f;
}

TEST(SyncBatchNorm, GradientMatchesFiniteDifferencesThroughTheSyncedStatistics) {
  std::vector<std::vector<double>> xs(2), gammas = {{1.0, 0.7, 1.4}, {1.0, 0.7, 1.4}};
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 18; ++i) xs[r].push_back(std::sin(1.3 * i + 2.1 * r) * 2.0 + 0.5 * r);
  }
  const Objective at = objective(xs, gammas, true);
  const double h = 1e-6;
  double worst = 0;
  auto check = [&](double analytic, double fd, const std::string& what) {
    EXPECT_NEAR(analytic, fd, 1e-6 + 1e-6 * std::fabs(fd)) << what;
    worst = std::max(worst, std::fabs(analytic - fd) / std::max(std::fabs(fd), 1e-3));
  };
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < 18; ++i) {
      auto plus = xs, minus = xs;
      plus[r][i] += h;
      minus[r][i] -= h;
      const double fd = (objective(plus, gammas, false).total - objective(minus, gammas, false).total) / (2 * h);
      check(at.dx[r][i], fd, "dx rank " + std::to_string(r) + " element " + std::to_string(i));
    }
    for (size_t i = 0; i < 3; ++i) {
      auto plus = gammas, minus = gammas;
      plus[r][i] += h;
      minus[r][i] -= h;
      const double fd = (objective(xs, plus, false).total - objective(xs, minus, false).total) / (2 * h);
      check(at.dgamma[r][i], fd, "dgamma rank " + std::to_string(r) + " element " + std::to_string(i));
    }
  }
  std::printf("[sync-bn] gradient vs central differences (f64, 2 ranks, x and gamma): max relative error %.3g\n",
              worst);
}

TEST(SyncBatchNorm, RunningStatisticsAreTheGlobalOnes) {
  // Rank r holds the 2 rows {r, r + 2} of channel 0: the global mean is 1.5, the unbiased
  // variance 5/3; momentum 0.5 moves the running statistics halfway from 0 and 1.
  auto out = on_ranks<std::vector<double>>(2, [](int r, const Communicator& c) {
    Graph g;
    Tensor x = g.placeholder({2, 1}, DType::f64, "x");
    Tensor one = g.constant(TensorData::from_vector<double>({1.0}, {1}));
    Tensor zero = g.constant(TensorData::from_vector<double>({0.0}, {1}));
    Tensor rm = g.variable(TensorData::zeros({1}, DType::f64), "rm");
    Tensor rv = g.variable(TensorData::full({1}, DType::f64, 1.0), "rv");
    Tensor y = sync_batch_norm(x, one, zero, rm, rv, g.constant(TensorData::from_vector<bool>({true}, {})), c,
                               {.momentum = 0.5, .epsilon = 0});
    auto v = g.run({{x, TensorData::from_vector<double>({double(r), double(r + 2)}, {2, 1})}}, {y}, {}, Device::cpu());
    std::vector<double> res = v[0].to_vector<double>();
    res.push_back(g.variable_value(rm).element_as_double(0));
    res.push_back(g.variable_value(rv).element_as_double(0));
    return res;
  });
  const double sd = std::sqrt(1.25);  // biased variance of {0, 1, 2, 3}
  EXPECT_NEAR(out[0][0], (0 - 1.5) / sd, 1e-12);
  EXPECT_NEAR(out[0][1], (2 - 1.5) / sd, 1e-12);
  EXPECT_NEAR(out[1][0], (1 - 1.5) / sd, 1e-12);
  EXPECT_NEAR(out[1][1], (3 - 1.5) / sd, 1e-12);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NEAR(out[r][2], 0.75, 1e-12);
    EXPECT_NEAR(out[r][3], 0.5 + 0.5 * 5.0 / 3.0, 1e-12);
  }
}

}  // namespace
}  // namespace tg::nn
