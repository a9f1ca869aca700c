// Control flow on the GPU without the host (the control-flow issue): if_else, for_loop and
// while_loop recorded into the run's CUDA graph as conditional nodes. Each model is built twice,
// compiled for cuda:0 and for the CPU, and run several times with changing feeds: the GPU's
// results and variables equal the CPU's on every run, and every GPU run after the first (which
// walks the nodes, reading predicates on the host) is one graph launch with zero host waits.
// Skipped (with a message) without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "core/stats.h"
#include "test_util.h"
#include "cuda/require_gpu.h"
#include "tg/tg.h"

namespace tg {
namespace {

// TG_* variables set for one scope (read at each recording).
struct Env {
  const char* name;
  Env(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~Env() { unsetenv(name); }
};

struct Model {
  std::vector<Tensor> feeds;
  std::vector<Tensor> targets;
  std::vector<Operation> ops;
  std::vector<Tensor> variables;  ///< compared after every run
};
using Builder = std::function<Model(Graph&)>;
using FeedsOf = std::function<std::vector<TensorData>(int run)>;

void expect_same(const TensorData& gpu, const TensorData& cpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  const TensorData g = gpu.to(Device::cpu());
  for (int64_t i = 0; i < g.num_elements(); ++i) {
    const double a = g.element_as_double(i), e = cpu.element_as_double(i);
    EXPECT_NEAR(a, e, tol * (1 + std::fabs(e))) << what << " element " << i;
  }
}

// Runs the model `runs` times on both devices; returns the GPU runs' host waits after the first.
struct Outcome {
  int64_t host_waits = -1;
  int64_t graph_launches = 0;
  int64_t interpreted = 0;
  int64_t fallbacks = 0;
};
Outcome expect_gpu_matches_cpu(const Builder& build, const FeedsOf& feeds, int runs = 5, double tol = 1e-5) {
  Graph gg, gc;
  Model mg = build(gg), mc = build(gc);
  FeedTypes tg_types, tc_types;
  std::vector<TensorData> f0 = feeds(0);
  for (size_t i = 0; i < mg.feeds.size(); ++i) {
    tg_types.push_back({mg.feeds[i], f0[i].type()});
    tc_types.push_back({mc.feeds[i], f0[i].type()});
  }
  Outcome o;
  const int64_t fallbacks0 = stats::get(stats::Counter::control_fallbacks);
  Executable eg = gg.compile(Device::cuda(0), tg_types, mg.targets, mg.ops);
  Executable ec = gc.compile(Device::cpu(), tc_types, mc.targets, mc.ops);
  int64_t waits = 0, launches = 0, interpreted = 0;
  for (int r = 0; r < runs; ++r) {
    const std::vector<TensorData> in = feeds(r);
    std::vector<TensorData> on_gpu;
    for (const TensorData& t : in) on_gpu.push_back(t.to(Device::cuda(0)));
    const RuntimeStats before = runtime_stats();
    std::vector<TensorData> yg = eg.run(on_gpu);
    const RuntimeStats after = runtime_stats();
    if (r > 0) {
      waits += after.host_waits - before.host_waits;
      launches += after.graph_launches - before.graph_launches;
      interpreted += after.interpreted_runs - before.interpreted_runs;
    }
    std::vector<TensorData> yc = ec.run(in);
    for (size_t i = 0; i < yc.size(); ++i) expect_same(yg[i], yc[i], tol, fmt::format("run {} target {}", r, i));
    for (size_t v = 0; v < mg.variables.size(); ++v) {
      expect_same(gg.variable_value(mg.variables[v]), gc.variable_value(mc.variables[v]), tol,
                  fmt::format("run {} variable {}", r, v));
    }
  }
  o.fallbacks = stats::get(stats::Counter::control_fallbacks) - fallbacks0;
  o.host_waits = waits;
  o.graph_launches = launches;
  o.interpreted = interpreted;
  return o;
}

void expect_on_device(const Outcome& o, int runs = 5) {
  EXPECT_EQ(o.fallbacks, 0);
  EXPECT_EQ(o.host_waits, 0) << "host waits in GPU runs after the first";
  EXPECT_EQ(o.graph_launches, runs - 1);
  EXPECT_EQ(o.interpreted, 0);
}

TensorData vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return TensorData::from_vector<float>(std::move(v), {n});
}

TEST(CudaControlFlow, IfElseOnADevicePredicate) {
  REQUIRE_GPU();
  // Both branches taken across the runs; the predicate is computed on the device (mean > 0).
  Builder build = [](Graph& g) {
    Tensor x = g.placeholder({64}, DType::f32, "x");
    Tensor p = greater(reduce_mean(x), g.constant(0.0, DType::f32));
    std::vector<Tensor> r = if_else(
        p, [&] { return std::vector{x * 2.f + 1.f, reduce_sum(x)}; },
        [&] { return std::vector{exp(x) - 3.f, reduce_sum(x * x)}; });
    return Model{{x}, {r[0], r[1]}, {}, {}};
  };
  FeedsOf feeds = [](int r) { return std::vector{TensorData::random_uniform({64}, r % 2 ? -1.5f : -0.5f, 1.f, 11 + r)}; };
  expect_on_device(expect_gpu_matches_cpu(build, feeds, 6), 6);
}

TEST(CudaControlFlow, OneElementPredicateShapes) {
  REQUIRE_GPU();
  Builder build = [](Graph& g) {
    Tensor x = g.placeholder({8}, DType::f32, "x");
    Tensor p = g.placeholder({1, 1}, DType::i32, "p");
    std::vector<Tensor> r = if_else(p, [&] { return std::vector{x - 5.f}; }, [&] { return std::vector{x * x}; });
    return Model{{x, p}, {r[0]}, {}, {}};
  };
  FeedsOf feeds = [](int r) {
    return std::vector{TensorData::random_uniform({8}, -1.f, 1.f, 5 + r), TensorData::full({1, 1}, DType::i32, r % 3 == 0 ? 0 : 7)};
  };
  expect_on_device(expect_gpu_matches_cpu(build, feeds));
}

TEST(CudaControlFlow, ForLoopFixedTripCountUnrolledAndInWhileNodes) {
  REQUIRE_GPU();
  // y = y * 0.999 + 0.001 plus the index: 37 iterations. Unrolled (the default limit), then as a
  // WHILE node with 32, 4 and 8 copies per iteration and the 37 mod 32 (mod 4, mod 8) remainder
  // unrolled first, then with 1.
  Builder build = [](Graph& g) {
    Tensor y = g.placeholder({256}, DType::f32, "y");
    std::vector<Tensor> r = for_loop(37, {y, g.constant(0.0, DType::f32)}, [&](Tensor i, std::span<const Tensor> v) {
      Tensor fi = cast(i, DType::f32);
      return std::vector{v[0] * 0.999f + 0.001f + fi * 1e-3f, v[1] + fi};
    });
    return Model{{y}, {r[0], r[1]}, {}, {}};
  };
  FeedsOf feeds = [](int r) { return std::vector{TensorData::random_uniform({256}, -1.f, 1.f, 100 + r)}; };
  expect_on_device(expect_gpu_matches_cpu(build, feeds));
  {
    Env limit("TG_UNROLL_LIMIT", "0");
    expect_on_device(expect_gpu_matches_cpu(build, feeds));  // 32 copies (the default), 5 unrolled first
    for (const char* copies : {"4", "8"}) {
      Env k("TG_LOOP_UNROLL", copies);
      expect_on_device(expect_gpu_matches_cpu(build, feeds));
    }
    Env one("TG_LOOP_UNROLL", "1");
    expect_on_device(expect_gpu_matches_cpu(build, feeds));
  }
}

TEST(CudaControlFlow, ForLoopTripCountFedOnTheDevice) {
  REQUIRE_GPU();
  Builder build = [](Graph& g) {
    Tensor n = g.placeholder({}, DType::i32, "n");
    Tensor y = g.placeholder({16}, DType::f32, "y");
    std::vector<Tensor> r = for_loop(n, {y}, [&](Tensor i, std::span<const Tensor> v) {
      return std::vector{v[0] * 0.5f + cast(i, DType::f32)};
    });
    return Model{{n, y}, {r[0]}, {}, {}};
  };
  // 0 iterations (the initial value comes back), then 1, 5, 2, 9.
  FeedsOf feeds = [](int r) {
    const int counts[] = {3, 0, 1, 5, 2, 9};
    return std::vector{TensorData::scalar<int32_t>(counts[r]), TensorData::random_uniform({16}, -1.f, 1.f, 7 + r)};
  };
  expect_on_device(expect_gpu_matches_cpu(build, feeds, 6), 6);
}

// A TG_* loop variable out of range raises invalid_argument, on the GPU too: it is read while a
// run is recorded into a CUDA graph, where the error was taken for a capture failure (one log
// line, and the runs walked the nodes with the default).
TEST(CudaControlFlow, AnOutOfRangeLoopVariableRaises) {
  REQUIRE_GPU();
  Graph g;
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor y = g.placeholder({16}, DType::f32, "y");
  Tensor r = for_loop(n, {y}, [&](Tensor i, std::span<const Tensor> v) {
    return std::vector{v[0] * 0.5f + cast(i, DType::f32)};
  })[0];
  const std::vector<TensorData> feeds{TensorData::scalar<int32_t>(5), TensorData::random_uniform({16}, -1.f, 1.f, 3)};
  Env bad("TG_LOOP_UNROLL", "0");
  EXPECT_TG_ERROR(
      {
        Executable exe = g.compile(Device::cuda(0), {{n, feeds[0].type()}, {y, feeds[1].type()}}, {r});
        for (int k = 0; k < 4; ++k) exe.run(feeds);  // the first runs walk; then one is recorded
      },
      ErrorCode::invalid_argument, "TG_LOOP_UNROLL=0");
}

// The while loop, small: halve-and-add until the mean falls under a fed threshold.
Builder mean_while(std::optional<int64_t> max_iterations) {
  return [max_iterations](Graph& g) {
    Tensor y = g.placeholder({512}, DType::f32, "y");
    Tensor t = g.placeholder({}, DType::f32, "t");
    WhileLoopOptions o;
    o.max_iterations = max_iterations;
    std::vector<Tensor> r = while_loop(
        {y, g.constant(TensorData::scalar<int32_t>(0))},
        [&](std::span<const Tensor> a) { return std::pair{greater(reduce_mean(a[0]), t), std::vector{a[0], a[1]}}; },
        [&](std::span<const Tensor> a) { return std::vector{a[0] * 0.9f + 0.001f, a[1] + 1.0}; }, o);
    return Model{{y, t}, {r[0], r[1]}, {}, {}};
  };
}
FeedsOf mean_feeds = [](int r) {
  // Exits after 0, then many, iteration counts (not multiples of the unroll factor).
  const float t[] = {0.2f, 0.9f, 0.05f, 0.013f, 0.3f, 0.0111f};
  return std::vector{TensorData::full({512}, DType::f32, 0.5 + 0.05 * r), TensorData::scalar<float>(t[r])};
};

TEST(CudaControlFlow, WhileLoopSpeculatedAndPlain) {
  REQUIRE_GPU();
  expect_on_device(expect_gpu_matches_cpu(mean_while(std::nullopt), mean_feeds, 6), 6);  // speculated, k = 32 on 6 side streams (the defaults)
  {
    Env k("TG_LOOP_UNROLL", "3");
    expect_on_device(expect_gpu_matches_cpu(mean_while(std::nullopt), mean_feeds, 6), 6);
  }
  {
    Env k("TG_LOOP_UNROLL", "1");  // one iteration per WHILE iteration
    expect_on_device(expect_gpu_matches_cpu(mean_while(std::nullopt), mean_feeds, 6), 6);
  }
  expect_on_device(expect_gpu_matches_cpu(mean_while(7), mean_feeds, 6), 6);  // max_iterations: plain
  // The speculated conditions on one stream, on one side stream, on three beside 8 updates and
  // on eight beside 32 (the caps).
  for (const char* streams : {"0", "1", "3", "8"}) {
    Env n("TG_CONDITION_STREAMS", streams);
    Env k("TG_LOOP_UNROLL", streams[0] == '3' ? "8" : streams[0] == '8' ? "32" : "4");
    expect_on_device(expect_gpu_matches_cpu(mean_while(std::nullopt), mean_feeds, 6), 6);
  }
}

TEST(CudaControlFlow, WhileLoopOnALongVectorWithTwoReductions) {
  REQUIRE_GPU();
  // The benchmark's loop at 2^17 + 3 floats (the condition's full sum in stream mode: vector
  // loads, a tail, the last block's finish), and a second condition over per-row sums of 64 rows
  // (a reduction with split partials in the workspace): both reductions run on the side streams
  // beside the next updates. Trip counts differ per run (fed thresholds); the loop also counts.
  constexpr int64_t n = (1 << 17) + 3;
  Builder build = [](Graph& g) {
    Tensor y = g.placeholder({n}, DType::f32, "y");
    Tensor t = g.placeholder({}, DType::f32, "t");
    std::vector<Tensor> r = while_loop(
        {y, g.constant(TensorData::scalar<int32_t>(0))},
        [&](std::span<const Tensor> a) {
          Tensor rows = reduce_sum(reshape(slice(a[0], {.begin = {0}, .end = {64 * 2048}}), {64, 2048}), {.axes = {1}});
          Tensor ok = logical_and(greater(reduce_mean(a[0]), t), less(reduce_max(rows), g.constant(1e9, DType::f32)));
          return std::pair{ok, std::vector{a[0], a[1]}};
        },
        [&](std::span<const Tensor> a) { return std::vector{a[0] * 0.99f + 0.001f, a[1] + 1.0}; });
    return Model{{y, t}, {r[0], r[1]}, {}, {}};
  };
  FeedsOf feeds = [](int r) {
    const float t[] = {1.5f, 0.9f, 3.f, 0.5f, 1.2f, 0.7f};  // 3.f: no iteration
    return std::vector{TensorData::random_uniform({n}, 1.f, 3.f, 60 + r), TensorData::scalar<float>(t[r])};
  };
  expect_on_device(expect_gpu_matches_cpu(build, feeds, 6), 6);
  {
    Env k("TG_LOOP_UNROLL", "8");
    Env s("TG_CONDITION_STREAMS", "3");
    expect_on_device(expect_gpu_matches_cpu(build, feeds, 6), 6);
  }
  Env k("TG_LOOP_UNROLL", "20");
  Env s("TG_CONDITION_STREAMS", "6");
  expect_on_device(expect_gpu_matches_cpu(build, feeds, 6), 6);
}

TEST(CudaControlFlow, WhileLoopWhoseValuesSwap) {
  REQUIRE_GPU();
  // (a, b) -> (b, a + b) until a > limit: the results are the other value's buffer each time.
  Builder build = [](Graph& g) {
    Tensor a = g.placeholder({4}, DType::f32, "a");
    Tensor limit = g.placeholder({}, DType::f32, "limit");
    std::vector<Tensor> r = while_loop(
        {a, a * 2.f},
        [&](std::span<const Tensor> v) { return std::pair{less(reduce_max(v[0]), limit), std::vector{v[0], v[1]}}; },
        [&](std::span<const Tensor> v) { return std::vector{v[1], v[0] + v[1]}; });
    return Model{{a, limit}, {r[0], r[1]}, {}, {}};
  };
  FeedsOf feeds = [](int r) {
    return std::vector{TensorData::random_uniform({4}, 0.5f, 1.f, 3 + r), TensorData::scalar<float>(10.f + 40.f * r)};
  };
  expect_on_device(expect_gpu_matches_cpu(build, feeds));
}

TEST(CudaControlFlow, NestedLoopsAndBranches) {
  REQUIRE_GPU();
  // A for loop holding an if_else on a device predicate and a while loop inside the else branch.
  Builder build = [](Graph& g) {
    Tensor y = g.placeholder({32}, DType::f32, "y");
    Tensor ten = g.constant(10.0, DType::f32);
    std::vector<Tensor> r = for_loop(6, {y}, [&](Tensor i, std::span<const Tensor> v) {
      Tensor p = greater(reduce_sum(v[0]), g.constant(0.0, DType::f32));
      return if_else(
          p, [&] { return std::vector{v[0] - 1.f - cast(i, DType::f32)}; },
          [&] {
            return std::vector{while_loop(
                {v[0]},
                [&](std::span<const Tensor> a) { return std::pair{less(reduce_sum(a[0]), ten), std::vector{a[0]}}; },
                [&](std::span<const Tensor> a) { return std::vector{a[0] + 0.75f}; })[0]};
          });
    });
    return Model{{y}, {r[0]}, {}, {}};
  };
  FeedsOf feeds = [](int r) { return std::vector{TensorData::random_uniform({32}, -1.f, 1.f, 40 + r)}; };
  expect_on_device(expect_gpu_matches_cpu(build, feeds));
  Env limit("TG_UNROLL_LIMIT", "0");  // the for loop as a WHILE node too
  expect_on_device(expect_gpu_matches_cpu(build, feeds));
}

TEST(CudaControlFlow, VariableAssignmentsInsideBodies) {
  REQUIRE_GPU();
  // A counter variable bumped in the taken branch only, and an accumulator assigned in every
  // iteration of a while loop: values equal the CPU's after every run.
  Builder build = [](Graph& g) {
    Tensor x = g.placeholder({8}, DType::f32, "x");
    Tensor taken = g.variable(TensorData::scalar<int32_t>(0), "taken");
    Tensor acc = g.variable(TensorData::zeros({8}), "acc");
    Tensor p = greater(reduce_sum(x), g.constant(0.0, DType::f32));
    Tensor r = if_else(
        p,
        [&] {
          assign_variable(taken, read_variable(taken) + 1.0);
          return std::vector{x + 1.f};
        },
        [&] { return std::vector{x - 1.f}; })[0];
    std::vector<Tensor> w = while_loop(
        {r, g.constant(TensorData::scalar<int32_t>(0))},
        [&](std::span<const Tensor> a) { return std::pair{less(a[1], g.constant(TensorData::scalar<int32_t>(3))), std::vector{a[0], a[1]}}; },
        [&](std::span<const Tensor> a) {
          assign_variable(acc, read_variable(acc) * 0.5f + a[0]);
          return std::vector{a[0] * 2.f, a[1] + 1.0};
        });
    return Model{{x}, {w[0], w[1]}, {}, {taken, acc}};
  };
  FeedsOf feeds = [](int r) { return std::vector{TensorData::random_uniform({8}, r % 2 ? -1.f : -0.2f, 1.f, 60 + r)}; };
  expect_on_device(expect_gpu_matches_cpu(build, feeds, 6), 6);
}

TEST(CudaControlFlow, RandomOpsInsideBodies) {
  REQUIRE_GPU();
  // Dropout-like masks keyed by the loop index: a new stream per iteration, on the device.
  Builder build = [](Graph& g) {
    Tensor y = g.placeholder({128}, DType::f32, "y");
    Tensor n = g.placeholder({}, DType::i32, "n");
    std::vector<Tensor> r = for_loop(n, {y}, [&](Tensor i, std::span<const Tensor> v) {
      Tensor u = random_uniform_like(v[0], i, 0, 1, {7});
      return std::vector{v[0] * 0.9f + u};
    });
    return Model{{y, n}, {r[0]}, {}, {}};
  };
  FeedsOf feeds = [](int r) { return std::vector{TensorData::random_uniform({128}, -1.f, 1.f, r), TensorData::scalar<int32_t>(3 + r)}; };
  expect_on_device(expect_gpu_matches_cpu(build, feeds));
}

TEST(CudaControlFlow, BatchNormTrainAndInferenceStepsFromOneExecutable) {
  REQUIRE_GPU();
  // is_training fed per run: training steps update the running statistics (an assignment inside
  // the if_else's branch), inference steps read them; one executable, no host waits.
  Builder build = [](Graph& g) {
    Tensor x = g.placeholder({16, 4}, DType::f32, "x");
    Tensor training = g.placeholder({}, DType::bool_, "training");
    Tensor gamma = g.constant(TensorData::from_vector<float>({1.f, 2.f, 0.5f, -1.f}, {4}));
    Tensor beta = g.constant(TensorData::from_vector<float>({0.f, 0.1f, -0.2f, 0.3f}, {4}));
    Tensor mean = g.variable(TensorData::zeros({4}), "running_mean");
    Tensor var = g.variable(TensorData::full({4}, DType::f32, 1.0), "running_var");
    Tensor y = batch_norm(x, gamma, beta, mean, var, training);
    return Model{{x, training}, {y}, {}, {mean, var}};
  };
  FeedsOf feeds = [](int r) {
    return std::vector{TensorData::random_normal({16, 4}, 0.5f * r, 1.f + r, 90 + r), TensorData::scalar<bool>(r % 3 != 2)};
  };
  expect_on_device(expect_gpu_matches_cpu(build, feeds, 7, 1e-4), 7);
}

TEST(CudaControlFlow, ShapesThatChangePerIterationRunHostDriven) {
  REQUIRE_GPU();
  // A loop value that grows: its shape is known only at run time, so the executable says so once
  // and runs host-driven, with the CPU's values.
  Builder build = [](Graph& g) {
    Tensor x = g.placeholder({2}, DType::f32, "x");
    std::vector<Tensor> r = for_loop(3, {x}, [&](Tensor, std::span<const Tensor> v) { return std::vector{concat({v[0], v[0]}, 0)}; });
    return Model{{x}, {r[0]}, {}, {}};
  };
  FeedsOf feeds = [](int r) { return std::vector{TensorData::from_vector<float>({1.f + r, 2.f}, {2})}; };
  const Outcome o = expect_gpu_matches_cpu(build, feeds, 3);
  EXPECT_EQ(o.fallbacks, 1);
  EXPECT_EQ(o.graph_launches, 0);
}

}  // namespace
}  // namespace tg
