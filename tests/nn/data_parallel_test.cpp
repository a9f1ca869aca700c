// Data-parallel fit (Model::compile's DataParallel): 2 ranks simulated by threads on the CPU
// (in_process communicator) give, after 3 steps, the weights of one rank trained on the doubled
// batch (issue 24's CPU check), for SGD and Adam; rank 0 alone prints progress and writes
// checkpoints; the gradient buckets keep every weight's gradient.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "nn/model_impl.h"
#include "ranks_util.h"
#include "test_util.h"
#include "tg/model.h"

namespace tg::nn {
namespace {

using Weights = std::vector<std::pair<std::string, TensorData>>;

// 48 examples of 5 features, 3 classes (labels from a fixed rule so the loss moves).
std::pair<TensorData, TensorData> data(int64_t n) {
  TensorData x = TensorData::random_normal({n, 5}, 0.f, 1.f, 42);
  std::vector<int64_t> y(static_cast<size_t>(n));
  const float* v = x.data<float>();
  for (int64_t i = 0; i < n; ++i) y[i] = (v[5 * i] + v[5 * i + 1] > 0) + (v[5 * i + 2] > 0.5f);
  return {x, TensorData::from_vector<int64_t>(y, {n})};
}

// An MLP without batch norm: 5 -> 16 (tanh) -> 8 (relu) -> 3.
Model mlp() {
  return Sequential({5}, {Dense(16, {.activation = Act::tanh}), Dense(8, {.activation = Act::relu}), Dense(3)},
                    {.seed = 7});
}

struct Trained {
  Weights weights;
  History history;
  std::string progress;
};

std::string slurp(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t k;
  while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, k);
  return s;
}

Trained train(const Optimizer& opt, const Communicator& comm, int64_t batch, int64_t n, int64_t bucket_bytes,
              std::vector<std::shared_ptr<Callback>> callbacks = {}) {
  auto [x, y] = data(n);
  Model m = mlp();
  m.compile(opt, Loss::sparse_categorical_crossentropy, {Metric::accuracy}, Device::cpu(), {},
            {.communicator = comm, .bucket_bytes = bucket_bytes});
  std::FILE* out = std::tmpfile();
  Trained t;
  t.history = m.fit(x, y, {.epochs = 1, .batch_size = batch, .seed = 3, .callbacks = callbacks, .verbose = 2,
                           .out = out});
  t.progress = slurp(out);
  std::fclose(out);
  t.weights = m.get_weights();
  return t;
}

// Every rank on its own thread; rethrows a rank's error.
std::vector<Trained> train_ranks(int world, const Optimizer& opt, int64_t batch, int64_t n, int64_t bucket_bytes,
                                 const std::function<std::vector<std::shared_ptr<Callback>>(int)>& callbacks = {}) {
  return testing::on_ranks<Trained>(
      world,
      [&](int r, const Communicator& comm) {
        return train(opt, comm, batch, n, bucket_bytes, callbacks ? callbacks(r) : std::vector<std::shared_ptr<Callback>>{});
      },
      {.timeout_seconds = 120});
}

// The largest relative difference of a weight tensor: max_i |a_i - b_i| / max_i |b_i| over each
// tensor (0 when identical). Per tensor, not per element: an element near zero (a bias of 7e-4 of
// a mostly inactive unit) differs by float32 rounding (2e-8, ~1 ulp of the weights it depends on)
// that is 3e-5 of itself.
using ::tg::testing::max_relative;  // tests/ranks_util.h

void check_matches_doubled_batch(const char* name, const Optimizer& opt, int64_t bucket_bytes) {
  // One rank, batch 16, 48 examples: 3 steps. Two ranks, global batch 16 (8 rows each): 3 steps.
  const Trained one = train(opt, Communicator(), 16, 48, bucket_bytes);
  const std::vector<Trained> two = train_ranks(2, opt, 16, 48, bucket_bytes);
  // The weights moved (so equality below means something).
  Model fresh = mlp();
  EXPECT_GT(max_relative(one.weights, fresh.get_weights()), 1e-3);
  const double rel = max_relative(two[0].weights, one.weights);
  std::printf("[data-parallel] %s: 2 ranks vs 1 rank on the doubled batch after 3 steps: max relative weight "
              "difference %.3g\n", name, rel);
  EXPECT_LE(rel, 1e-5);
  EXPECT_LE(max_relative(two[1].weights, one.weights), 1e-5);
  // Every rank applied the same averaged gradient: identical replicas.
  EXPECT_EQ(max_relative(two[1].weights, two[0].weights), 0.0);
  // The loss every rank reports is the global one.
  EXPECT_NEAR(two[0].history["loss"][0], one.history["loss"][0], 1e-5 * std::fabs(one.history["loss"][0]));
  EXPECT_EQ(two[1].history["loss"][0], two[0].history["loss"][0]);
  EXPECT_NEAR(two[0].history["accuracy"][0], one.history["accuracy"][0], 1.0 / 48 + 1e-12);  // a near tie may flip
  // Progress on rank 0 only.
  EXPECT_NE(two[0].progress.find("Epoch 1/1"), std::string::npos) << two[0].progress;
  EXPECT_EQ(two[1].progress, "");
}

TEST(DataParallelFit, TwoRanksMatchOneRankOnTheDoubledBatchSgd) {
  check_matches_doubled_batch("sgd", Optimizer::sgd(0.5, {.momentum = 0.9}), 25 << 20);
}

TEST(DataParallelFit, TwoRanksMatchOneRankOnTheDoubledBatchAdam) {
  check_matches_doubled_batch("adam", Optimizer::adam(0.01), 25 << 20);
}

TEST(DataParallelFit, SmallBucketsAndOneAllReducePerWeightGiveTheSameWeights) {
  const auto opt = Optimizer::sgd(0.5);
  const Trained one = train(opt, Communicator(), 16, 48, 0);
  for (int64_t bucket : {int64_t{0}, int64_t{200}}) {
    auto two = train_ranks(2, opt, 16, 48, bucket);
    EXPECT_LE(max_relative(two[0].weights, one.weights), 1e-5) << "bucket_bytes " << bucket;
  }
}

TEST(DataParallelFit, BucketsReduceEveryGradientOnce) {
  // grads of 4, 12 and 2 floats (16, 48, 8 bytes): buckets of <= 56 bytes from the last one:
  // {g2, g1} (56 bytes), {g0}: two all_reduce nodes.
  auto comms = Communicator::in_process(2);
  Graph g;
  std::vector<Tensor> grads = {g.placeholder({4}, DType::f32, "a"), g.placeholder({3, 4}, DType::f32, "b"),
                               g.placeholder({2}, DType::f32, "c")};
  auto out = detail::all_reduce_mean_in_buckets(grads, comms[0], 56);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i].shape(), grads[i].shape());
  EXPECT_EQ(::tg::testing::count_occurrences(g.to_string(), "all_reduce"), 2);
}

// The line numbers (in schedule order) of the nodes of `op` typed `type` in an executable's text.
std::vector<int> lines_of(const std::string& text, const std::string& op, const std::string& type) {
  std::vector<int> out;
  int line = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(begin, end - begin);
    if (l.find("= " + op + "(") != std::string::npos && l.size() >= type.size() &&
        l.compare(l.size() - type.size(), type.size(), type) == 0) {
      out.push_back(line);
    }
    ++line;
    begin = end + 1;
  }
  return out;
}

TEST(DataParallelFit, BucketAllReduceIsScheduledBeforeTheBackwardOfEarlierLayers) {
  // One all_reduce per weight (bucket_bytes 0): the last Dense's kernel gradient f32[8,3] is
  // reduced as soon as it is complete, before the backward of the first two Dense layers (their
  // kernel gradients f32[16,8] and f32[5,16] come later in the schedule), as DDP's hooks do.
  auto comms = Communicator::in_process(2);
  Model m = mlp();
  m.compile(Optimizer::sgd(0.1), Loss::sparse_categorical_crossentropy, {}, Device::cpu(), {},
            {.communicator = comms[0], .bucket_bytes = 0});
  const std::string text = detail::executable(*m.state(), detail::ExeKind::train, 8).to_string();
  const std::vector<int> last = lines_of(text, "all_reduce", "f32[8,3]");
  const std::vector<int> middle = lines_of(text, "all_reduce", "f32[16,8]");
  const std::vector<int> first = lines_of(text, "all_reduce", "f32[5,16]");
  const std::vector<int> first_grad = lines_of(text, "matmul", "f32[5,16]");
  const std::vector<int> middle_grad = lines_of(text, "matmul", "f32[16,8]");
  ASSERT_EQ(last.size(), 1u) << text;
  ASSERT_EQ(middle.size(), 1u) << text;
  ASSERT_EQ(first.size(), 1u) << text;
  ASSERT_FALSE(first_grad.empty()) << text;
  ASSERT_FALSE(middle_grad.empty()) << text;
  EXPECT_LT(last[0], middle_grad.back()) << text;
  EXPECT_LT(last[0], first_grad.back()) << text;
  EXPECT_LT(middle[0], first_grad.back()) << text;
  // Each is reduced right after its own gradient.
  EXPECT_GT(middle[0], middle_grad.back()) << text;
  EXPECT_GT(first[0], first_grad.back()) << text;
  std::printf("[data-parallel] schedule: all_reduce of dense_2's kernel gradient at node %d, the first layer's "
              "kernel gradient computed at node %d (of %d)\n", last[0], first_grad.back(),
              ::tg::testing::count_occurrences(text, "\n"));
}

TEST(DataParallelFit, BucketsStartWhenTheirLastGradientIsReady) {
  // grads of 4, 12 and 2 floats; buckets of <= 56 bytes from the last: {g2, g1}, {g0}. The first
  // bucket starts when g1 (its last member) is reported, not before.
  auto comms = Communicator::in_process(2);
  Graph g;
  std::vector<Tensor> grads = {g.placeholder({4}, DType::f32, "a"), g.placeholder({3, 4}, DType::f32, "b"),
                               g.placeholder({2}, DType::f32, "c")};
  std::vector<TensorType> types;
  for (const Tensor& t : grads) types.push_back(t.type());
  detail::GradientBuckets buckets(types, comms[0], 56);
  EXPECT_EQ(buckets.bucket_count(), 2u);
  buckets.ready(2, grads[2]);
  EXPECT_EQ(buckets.started(), 0u);
  buckets.ready(1, grads[1]);
  EXPECT_EQ(buckets.started(), 1u);
  EXPECT_EQ(::tg::testing::count_occurrences(g.to_string(), "all_reduce"), 1);
  buckets.ready(0, grads[0]);
  EXPECT_EQ(buckets.started(), 2u);
  auto out = buckets.finish();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i].shape(), grads[i].shape());
}

TEST(DataParallelFit, OnlyRankZeroWritesCheckpoints) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("tg_dp_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  std::vector<std::shared_ptr<ModelCheckpoint>> cps;
  for (int r = 0; r < 2; ++r) cps.push_back(std::make_shared<ModelCheckpoint>(dir + "/rank" + std::to_string(r) + ".st"));
  train_ranks(2, Optimizer::sgd(0.1), 16, 32, 25 << 20, [&](int r) { return std::vector<std::shared_ptr<Callback>>{cps[r]}; });
  EXPECT_TRUE(std::filesystem::exists(dir + "/rank0.st"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/rank1.st"));
  EXPECT_EQ(cps[0]->saved().size(), 1u);
  EXPECT_TRUE(cps[1]->saved().empty());
  std::filesystem::remove_all(dir);
}

TEST(DataParallelFit, BadBucketSizeIsACompileError) {
  Model m = mlp();
  EXPECT_TG_ERROR(m.compile(Optimizer::sgd(), Loss::sparse_categorical_crossentropy, {}, Device::cpu(), {},
                            {.bucket_bytes = -1}),
                  ErrorCode::invalid_argument, "[compile] DataParallel::bucket_bytes = -1 must be >= 0");
  EXPECT_FALSE(m.compiled());
}

}  // namespace
}  // namespace tg::nn
