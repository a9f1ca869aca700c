// Tests of the collective op family (include/tg/collective.h): single-rank identities, values of
// 2 and 3 ranks simulated by threads (in_process communicators) against hand-computed results,
// build-time and run-time errors, and gradients against central finite differences of the sum of
// every rank's loss (float64).
#include <functional>
#include <thread>

#include "ranks_util.h"
#include "test_util.h"

namespace tg {
namespace {

using ::tg::testing::expect_close;
using ::tg::testing::expect_equal;

TG_COVERS(value, all_reduce);
TG_COVERS(value, all_gather);
TG_COVERS(value, reduce_scatter);
TG_COVERS(value, broadcast);
TG_COVERS(error, all_reduce);
TG_COVERS(error, all_gather);
TG_COVERS(error, reduce_scatter);
TG_COVERS(error, broadcast);
TG_COVERS(gradient, all_reduce);
TG_COVERS(gradient, all_gather);
TG_COVERS(gradient, reduce_scatter);
TG_COVERS(gradient, broadcast);

using ::tg::testing::on_ranks;

TensorData f32(std::vector<float> v, Shape s) { return TensorData::from_vector<float>(v, s); }

// Rank r's x: [2,3] with values 10 * r + i (f32).
TensorData rank_x(int r, Shape shape = {2, 3}) {
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(10 * r + static_cast<int>(i));
  return f32(v, shape);
}

// Runs op(x) on every rank with x = rank_x(r, shape); returns every rank's result.
std::vector<TensorData> run_op(int world, Shape shape, const std::function<Tensor(Tensor, const Communicator&)>& op) {
  return on_ranks<TensorData>(world, [&](int r, const Communicator& comm) {
    Graph g;
    Tensor x = g.placeholder(shape, DType::f32, "x");
    return g.run({{x, rank_x(r, shape)}}, {op(x, comm)}, {}, Device::cpu())[0];
  });
}

TEST(Collective, SingleRankIsTheIdentity) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  const Communicator one;
  EXPECT_EQ(one.world_size(), 1);
  EXPECT_EQ(one.rank(), 0);
  EXPECT_EQ(one.backend(), CommBackend::single);
  std::vector<Tensor> ys = {all_reduce(x, one), all_reduce(x, one, {CollectiveReduction::mean}),
                            all_reduce(x, one, {CollectiveReduction::max}), all_gather(x, one, {.axis = 1}),
                            reduce_scatter(x, one), broadcast(x, one)};
  auto out = g.run({{x, rank_x(0)}}, ys, {}, Device::cpu());
  for (const TensorData& y : out) expect_equal(y, {0, 1, 2, 3, 4, 5}, {2, 3});
  // An in_process group of one rank is the identity too.
  auto solo = run_op(1, {2, 3}, [](Tensor t, const Communicator& c) { return all_reduce(t, c); });
  expect_equal(solo[0], {0, 1, 2, 3, 4, 5}, {2, 3});
}

TEST(Collective, AllReduceOfTwoRanks) {
  // rank 0: 0..5, rank 1: 10..15
  for (auto [red, expected] : std::vector<std::pair<CollectiveReduction, std::vector<double>>>{
           {CollectiveReduction::sum, {10, 12, 14, 16, 18, 20}},
           {CollectiveReduction::mean, {5, 6, 7, 8, 9, 10}},
           {CollectiveReduction::max, {10, 11, 12, 13, 14, 15}},
           {CollectiveReduction::min, {0, 1, 2, 3, 4, 5}}}) {
    auto out = run_op(2, {2, 3}, [red](Tensor t, const Communicator& c) { return all_reduce(t, c, {red}); });
    for (const TensorData& y : out) expect_equal(y, expected, {2, 3});
  }
}

TEST(Collective, AllReduceOfThreeRanksIntegersAndNaN) {
  auto out = on_ranks<TensorData>(3, [](int r, const Communicator& c) {
    Graph g;
    Tensor x = g.constant(TensorData::from_vector<int32_t>({r + 1, -r, 1 << 30}, {3}));
    return g.run({}, {all_reduce(x, c)}, {}, Device::cpu())[0];
  });
  // 1+2+3, 0-1-2, 3 * 2^30 wraps modulo 2^32 to -2^30
  for (const TensorData& y : out) expect_equal(y, {6, -3, -1073741824}, {3});
  auto mx = on_ranks<TensorData>(3, [](int r, const Communicator& c) {
    Graph g;
    Tensor x = g.constant(f32({static_cast<float>(r), r == 1 ? NAN : 1.f}, {2}));
    return g.run({}, {all_reduce(x, c, {CollectiveReduction::max})}, {}, Device::cpu())[0];
  });
  for (const TensorData& y : mx) expect_equal(y, {2, NAN}, {2});
}

TEST(Collective, AllGatherAlongEachAxis) {
  auto a0 = run_op(2, {2, 3}, [](Tensor t, const Communicator& c) { return all_gather(t, c); });
  for (const TensorData& y : a0) expect_equal(y, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}, {4, 3});
  auto a1 = run_op(2, {2, 3}, [](Tensor t, const Communicator& c) { return all_gather(t, c, {.axis = -1}); });
  for (const TensorData& y : a1) expect_equal(y, {0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15}, {2, 6});
}

TEST(Collective, ReduceScatterAlongEachAxis) {
  // sums: [[10,12,14],[16,18,20]] over 2 ranks
  auto r0 = run_op(2, {2, 3}, [](Tensor t, const Communicator& c) { return reduce_scatter(t, c); });
  expect_equal(r0[0], {10, 12, 14}, {1, 3});
  expect_equal(r0[1], {16, 18, 20}, {1, 3});
  // [2,4] per rank, axis 1 split in 2 blocks of 2; mean
  auto r1 = run_op(2, {2, 4}, [](Tensor t, const Communicator& c) {
    return reduce_scatter(t, c, {.reduction = CollectiveReduction::mean, .axis = 1});
  });
  // rank 0 x: [[0,1,2,3],[4,5,6,7]], rank 1: +10 -> mean = x0 + 5
  expect_equal(r1[0], {5, 6, 9, 10}, {2, 2});
  expect_equal(r1[1], {7, 8, 11, 12}, {2, 2});
}

TEST(Collective, BroadcastFromRoot) {
  auto out = run_op(3, {2, 3}, [](Tensor t, const Communicator& c) { return broadcast(t, c, {.root = 2}); });
  for (const TensorData& y : out) expect_equal(y, {20, 21, 22, 23, 24, 25}, {2, 3});
}

TEST(Collective, BuildTimeErrorsNameTheOpAndShapes) {
  auto comms = Communicator::in_process(4);
  Graph g;
  Tensor x = g.placeholder({6, 4}, DType::f32, "x");
  EXPECT_TG_ERROR(reduce_scatter(x, comms[1]), ErrorCode::shape_mismatch,
                  "[reduce_scatter] dim 0 of x f32[6,4] (6) is not divisible by the world size 4");
  EXPECT_EQ(reduce_scatter(x, comms[1], {.axis = 1}).shape(), (Shape{6, 1}));
  EXPECT_EQ(all_gather(x, comms[3], {.axis = 1}).shape(), (Shape{6, 16}));
  Tensor dyn = g.placeholder({-1, 4}, DType::f32, "dyn");
  EXPECT_EQ(reduce_scatter(dyn, comms[0]).shape(), (Shape{-1, 4}));
  Tensor i = g.placeholder({3}, DType::i32, "i");
  EXPECT_TG_ERROR(all_reduce(i, comms[0], {CollectiveReduction::mean}), ErrorCode::dtype_mismatch,
                  "[all_reduce] x is i32[3]: mean needs a floating dtype");
  Tensor b = g.placeholder({3}, DType::bool_, "b");
  EXPECT_TG_ERROR(all_reduce(b, comms[0]), ErrorCode::dtype_mismatch, "[all_reduce] x is bool[3]");
  EXPECT_EQ(all_gather(b, comms[0]).shape(), (Shape{12}));  // data movement takes any dtype
  Tensor s = g.constant(1.0, DType::f32);
  EXPECT_TG_ERROR(all_gather(s, comms[0]), ErrorCode::invalid_argument, "[all_gather] x is a scalar f32[]");
  EXPECT_TG_ERROR(reduce_scatter(s, comms[0]), ErrorCode::invalid_argument, "[reduce_scatter] x is a scalar");
  EXPECT_TG_ERROR(all_gather(x, comms[0], {.axis = 2}), ErrorCode::invalid_argument, "all_gather");
  EXPECT_TG_ERROR(broadcast(x, comms[0], {.root = 4}), ErrorCode::invalid_argument,
                  "[broadcast] root 4 is not a rank of a world of 4 (x f32[6,4])");
  EXPECT_TG_ERROR(broadcast(x, comms[0], {.root = -1}), ErrorCode::invalid_argument, "[broadcast] root -1");
  EXPECT_TG_ERROR(Communicator::in_process(0), ErrorCode::invalid_argument, "world_size = 0");
}

TEST(Collective, RanksThatDisagreeRaiseOnEveryRank) {
  std::vector<std::string> messages(2);
  EXPECT_NO_THROW(on_ranks<int>(2, [&](int r, const Communicator& c) {
    Graph g;
    Tensor x = g.placeholder({r == 0 ? 4 : 5}, DType::f32, "x");
    try {
      g.run({{x, TensorData::zeros({r == 0 ? 4 : 5}, DType::f32)}}, {all_reduce(x, c)}, {}, Device::cpu());
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
      messages[r] = e.what();
    }
    return 0;
  }));
  for (const std::string& m : messages) {
    EXPECT_EQ(m, "[all_reduce] ranks disagree: rank 0 runs all_reduce(sum) f32[4], rank 1 runs all_reduce(sum) f32[5]");
  }
}

TEST(Collective, AMissingRankTimesOutAndBreaksTheCommunicator) {
  auto comms = Communicator::in_process(2, {.timeout_seconds = 0.2});
  Graph g;
  Tensor x = g.constant(f32({1, 2}, {2}));
  Tensor y = all_reduce(x, comms[0]);
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::io_error, "[all_reduce] rank 0 timed out after 0.2 s");
  // Broken: the next collective raises at once instead of waiting.
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::io_error, "is broken: rank 0 timed out");
}

TEST(Collective, AGraphWhoseCommunicatorIsGoneRaises) {
  Graph g;
  Tensor x = g.constant(f32({1, 2}, {2}));
  Tensor y;
  {
    auto comms = Communicator::in_process(2);
    y = all_reduce(x, comms[0]);
  }
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::not_found, "[all_reduce] communicator group");
}

TEST(Collective, LaunchEnvironmentReadsTheLaunchersVariables) {
  // This test process is not launched by torchrun, Open MPI or Slurm (the variables are unset).
  if (std::getenv("RANK") || std::getenv("OMPI_COMM_WORLD_RANK") || std::getenv("SLURM_PROCID")) GTEST_SKIP();
  LaunchEnvironment e = launch_environment();
  EXPECT_EQ(e.launcher, "none");
  EXPECT_EQ(e.world_size, 1);
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("LOCAL_RANK", "3", 1);
  e = launch_environment();
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 3);
  ::setenv("RANK", "4", 1);
  EXPECT_TG_ERROR(launch_environment(), ErrorCode::invalid_argument, "RANK=4 is not a rank of WORLD_SIZE=4");
  ::setenv("RANK", "x1", 1);
  EXPECT_TG_ERROR(launch_environment(), ErrorCode::invalid_argument, "RANK='x1' is not a non-negative integer");
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  ::unsetenv("LOCAL_RANK");
  ::setenv("SLURM_PROCID", "2", 1);
  ::setenv("SLURM_NTASKS", "3", 1);
  ::setenv("SLURM_LOCALID", "0", 1);
  e = launch_environment();
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 3);
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
  ::unsetenv("SLURM_LOCALID");
}

// ---- gradients ------------------------------------------------------------------------------

// F(x_0, ..., x_{N-1}) = sum_r sum(w_r * op(x_r)), every rank's x of `shape` (f64). Returns F and,
// with `grads`, every rank's gradient of its own loss as autodiff builds it (which, through the
// collectives' transposes, is dF/dx_r).
double objective(int world, const Shape& shape, const std::vector<std::vector<double>>& xs,
                 const std::function<Tensor(Tensor, const Communicator&)>& op,
                 std::vector<std::vector<double>>* grads) {
  struct Out {
    double loss = 0;
    std::vector<double> grad;
  };
  auto outs = on_ranks<Out>(world, [&](int r, const Communicator& c) {
    Graph g;
    Tensor x = g.placeholder(shape, DType::f64, "x");
    Tensor y = op(x, c);
    // fixed weights, different per rank and element
    std::vector<double> w(static_cast<size_t>(num_elements(y.shape())));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.3 + 0.7 * static_cast<double>((i * 7 + r * 5) % 11) / 11.0;
    Tensor loss = reduce_sum(mul(y, g.constant(TensorData::from_vector<double>(w, y.shape()))), {});
    std::vector<Tensor> targets = {loss};
    if (grads) targets.push_back(gradients(loss, {x})[0]);
    auto v = g.run({{x, TensorData::from_vector<double>(xs[r], shape)}}, targets, {}, Device::cpu());
    Out o;
    o.loss = v[0].element_as_double(0);
    if (grads) o.grad = v[1].to_vector<double>();
    return o;
  });
  double total = 0;
  if (grads) grads->clear();
  for (const Out& o : outs) {
    total += o.loss;
    if (grads) grads->push_back(o.grad);
  }
  return total;
}

// Autodiff against central differences of F in float64.
void check_gradient(int world, const Shape& shape, const std::function<Tensor(Tensor, const Communicator&)>& op) {
  std::vector<std::vector<double>> xs(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    for (int64_t i = 0; i < num_elements(shape); ++i) {
      xs[r].push_back(std::sin(1.3 * static_cast<double>(i) + 2.1 * r) * 2.0);  // distinct: no ties
    }
  }
  std::vector<std::vector<double>> grads;
  objective(world, shape, xs, op, &grads);
  const double h = 1e-6;
  for (int r = 0; r < world; ++r) {
    for (size_t i = 0; i < xs[r].size(); ++i) {
      auto plus = xs, minus = xs;
      plus[r][i] += h;
      minus[r][i] -= h;
      const double fd = (objective(world, shape, plus, op, nullptr) - objective(world, shape, minus, op, nullptr)) / (2 * h);
      EXPECT_NEAR(grads[r][i], fd, 1e-6 + 1e-6 * std::fabs(fd)) << "rank " << r << " element " << i;
    }
  }
}

TEST(CollectiveGradient, AllReduceMatchesFiniteDifferences) {
  for (auto red : {CollectiveReduction::sum, CollectiveReduction::mean, CollectiveReduction::max,
                   CollectiveReduction::min}) {
    SCOPED_TRACE(collective_reduction_name(red));
    check_gradient(2, {2, 2}, [red](Tensor x, const Communicator& c) { return all_reduce(x, c, {red}); });
  }
}

TEST(CollectiveGradient, AllGatherAndReduceScatterMatchFiniteDifferences) {
  check_gradient(2, {2, 2}, [](Tensor x, const Communicator& c) { return all_gather(x, c, {.axis = 1}); });
  for (auto red : {CollectiveReduction::sum, CollectiveReduction::mean, CollectiveReduction::max}) {
    SCOPED_TRACE(collective_reduction_name(red));
    check_gradient(2, {2, 2}, [red](Tensor x, const Communicator& c) {
      return reduce_scatter(x, c, {.reduction = red, .axis = 0});
    });
  }
}

TEST(CollectiveGradient, BroadcastMatchesFiniteDifferences) {
  check_gradient(3, {3}, [](Tensor x, const Communicator& c) { return broadcast(x, c, {.root = 1}); });
}

TEST(CollectiveGradient, SingleRankGradientIsTheCotangent) {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f64, "x");
  const Communicator one;
  Tensor y = all_reduce(x, one, {CollectiveReduction::mean});
  Tensor loss = reduce_sum(mul(y, g.constant(TensorData::from_vector<double>({1, 2, 3}, {3}))), {});
  auto out = g.run({{x, TensorData::from_vector<double>({5, 6, 7}, {3})}}, {gradients(loss, {x})[0]}, {}, Device::cpu());
  expect_equal(out[0], {1, 2, 3}, {3});
}

}  // namespace
}  // namespace tg
