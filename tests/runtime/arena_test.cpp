// Executables as compiled programs on the CPU: the static memory plan and its arenas (one per
// concurrent caller, allocated once), runtime statistics, the memory budget, and transactional
// runs with variables updated in place.
#include <atomic>
#include <thread>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;

constexpr int64_t kN = 4096;

// y = sqrt(exp(-x*x) + 1) * 3, through five intermediates (no fusion on the CPU).
struct Chain {
  Graph g;
  Tensor x = g.placeholder({kN}, DType::f32, "x");
  Tensor y = sqrt(exp(neg(x * x)) + 1.0) * 3.0;
  static double expected(double v) { return std::sqrt(std::exp(-v * v) + 1.0) * 3.0; }
  TensorData input(float base) const {
    std::vector<float> v(kN);
    for (int64_t i = 0; i < kN; ++i) v[static_cast<size_t>(i)] = base + 0.001f * static_cast<float>(i % 1000);
    return TensorData::from_vector<float>(v, {kN});
  }
  void check(const TensorData& out, float base) const {
    ASSERT_EQ(out.shape(), (Shape{kN}));
    std::vector<float> got = out.to_vector<float>();
    for (int64_t i = 0; i < kN; i += 97) {
      const double v = static_cast<double>(base + 0.001f * static_cast<float>(i % 1000));
      ASSERT_NEAR(got[static_cast<size_t>(i)], expected(v), 1e-5 * expected(v)) << "element " << i;
    }
  }
};

TEST(Arena, IntermediatesShareMemoryAndRunsReuseTheArena) {
  Chain c;
  Executable exe = c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y});
  // Five f32[4096] intermediates and the target; at most three are alive at once.
  EXPECT_EQ(exe.unplanned_bytes(), 6u * kN * 4);
  EXPECT_LE(exe.arena_bytes(), 3u * kN * 4);
  const RuntimeStats before = runtime_stats();
  for (int r = 0; r < 10; ++r) {
    const float base = 0.1f * static_cast<float>(r);
    c.check(exe.run({c.input(base)})[0], base);  // each run overwrites the last one's arena
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(exe.arena_count(), 1);
  EXPECT_EQ(after.arena_allocations - before.arena_allocations, 1);
  EXPECT_EQ(after.interpreted_runs - before.interpreted_runs, 10);
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_GE(after.arena_bytes, static_cast<int64_t>(exe.arena_bytes()));
}

TEST(Arena, ResultsAreNotOverwrittenByLaterRuns) {
  Chain c;
  Executable exe = c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y});
  TensorData first = exe.run({c.input(0.5f)})[0];
  TensorData second = exe.run({c.input(-1.0f)})[0];
  c.check(first, 0.5f);
  c.check(second, -1.0f);
}

// A run that walks the nodes (every CPU run) has each result's kernel write straight into the
// buffer handed to the caller: nothing is copied out of the arena for it. A feed, a view or a
// repeated target is still copied (they are not the run's own buffers). A result buffer the
// caller has released is reused by the next run: the same address run after run.
TEST(Arena, WalkingRunsHandOutResultsWithoutACopy) {
  Chain c;
  Tensor view = reshape(c.y, {64, 64});
  Executable exe = c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y, c.x, c.y, view});
  const RuntimeStats before = runtime_stats();
  std::vector<TensorData> first = exe.run({c.input(0.5f)});
  ASSERT_EQ(first.size(), 4u);
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 3 * kN * 4);  // feed, repeat, view
  EXPECT_EQ(after.input_copy_bytes - before.input_copy_bytes, 0);              // the feed read in place
  c.check(first[0], 0.5f);
  c.check(first[2], 0.5f);
  c.check(first[3].reshaped({kN}), 0.5f);
  EXPECT_EQ(first[1].to_vector<float>(), c.input(0.5f).to_vector<float>());
  EXPECT_NE(first[0].storage_ptr(), first[2].storage_ptr());  // a repeat is its own copy
  const void* y_at = first[0].storage_ptr();

  // While the caller holds the results, the next run writes elsewhere.
  std::vector<TensorData> second = exe.run({c.input(-1.0f)});
  EXPECT_NE(second[0].storage_ptr(), y_at);
  c.check(first[0], 0.5f);
  c.check(first[3].reshaped({kN}), 0.5f);
  c.check(second[0], -1.0f);
  c.check(second[3].reshaped({kN}), -1.0f);
  EXPECT_EQ(second[1].to_vector<float>(), c.input(-1.0f).to_vector<float>());

  // Released: the next run writes into the same buffer again.
  const void* second_at = second[0].storage_ptr();
  second.clear();
  std::vector<TensorData> third = exe.run({c.input(2.0f)});
  EXPECT_EQ(third[0].storage_ptr(), second_at);
  c.check(third[0], 2.0f);
  c.check(first[0], 0.5f);
}

// A graph whose results are all its kernels' own outputs copies no byte across the run's
// boundary: feeds are read in place and results handed out as written.
TEST(Arena, WalkingRunsCopyNothingForKernelResults) {
  Chain c;
  Tensor sq = c.x * c.x;
  Executable exe = c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y, sq});
  const RuntimeStats before = runtime_stats();
  for (int r = 0; r < 4; ++r) {
    const float base = 0.25f * static_cast<float>(r);
    std::vector<TensorData> out = exe.run({c.input(base)});
    c.check(out[0], base);
    std::vector<float> got = out[1].to_vector<float>();
    const float v = base + 0.001f * 123.0f;
    EXPECT_FLOAT_EQ(got[123], v * v);
  }
  const RuntimeStats after = runtime_stats();
  EXPECT_EQ(after.result_copy_bytes - before.result_copy_bytes, 0);
  EXPECT_EQ(after.input_copy_bytes - before.input_copy_bytes, 0);
  EXPECT_EQ(after.interpreted_runs - before.interpreted_runs, 4);
}

TEST(Arena, ConcurrentCallersGetTheirOwnArena) {
  Chain c;
  Executable exe = c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y});
  constexpr int kThreads = 8, kRuns = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const float base = 0.25f * static_cast<float>(t) - 0.01f * static_cast<float>(r);
        std::vector<float> got = exe.run({c.input(base)})[0].to_vector<float>();
        for (int64_t i = 0; i < kN; i += 131) {
          const double v = static_cast<double>(base + 0.001f * static_cast<float>(i % 1000));
          if (std::abs(got[static_cast<size_t>(i)] - Chain::expected(v)) > 1e-5 * Chain::expected(v)) failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(exe.arena_count(), 1);
  EXPECT_LE(exe.arena_count(), kThreads);
}

TEST(Arena, MemoryBudgetBoundsTheArenas) {
  Chain c;
  Executable probe = c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y});
  const size_t one = probe.arena_bytes();
  EXPECT_TG_ERROR(c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y}, {},
                              CompileOptions{.memory_budget_bytes = one - 1}),
                  ErrorCode::out_of_memory, "memory_budget_bytes");
  // A budget of one arena: concurrent callers wait for it instead of allocating more.
  Executable exe =
      c.g.compile(Device::cpu(), {{c.x, {{kN}, DType::f32}}}, {c.y}, {}, CompileOptions{.memory_budget_bytes = one});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 10; ++r) {
        const float base = 0.3f * static_cast<float>(t);
        std::vector<float> got = exe.run({c.input(base)})[0].to_vector<float>();
        if (std::abs(got[0] - Chain::expected(static_cast<double>(base))) > 1e-4) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(exe.arena_count(), 1);
}

TEST(Arena, ExecutablesOfOneArenaGroupShareTheLargestArena) {
  Chain c;
  Tensor small = exp(c.x);  // one value: a smaller arena than the chain's
  const TensorType feed{{kN}, DType::f32};
  const CompileOptions group{.arena_group = "steps"};
  const RuntimeStats start = runtime_stats();
  Executable a = c.g.compile(Device::cpu(), {{c.x, feed}}, {small}, {}, group);
  Executable b = c.g.compile(Device::cpu(), {{c.x, feed}}, {c.y}, {}, group);
  ASSERT_LT(a.arena_bytes(), b.arena_bytes());
  for (int r = 0; r < 4; ++r) {  // interleaved: each run overwrites the other's intermediates
    const float base = 0.2f * static_cast<float>(r);
    TensorData ya = a.run({c.input(base)})[0];
    TensorData yb = b.run({c.input(base)})[0];
    c.check(yb, base);
    std::vector<float> got = ya.to_vector<float>();
    EXPECT_NEAR(got[5], std::exp(static_cast<double>(base + 0.005f)), 1e-5);
  }
  const RuntimeStats end = runtime_stats();
  // One arena of the larger size (a's first run made a smaller one; b's made it grow once).
  EXPECT_EQ(end.arena_allocations - start.arena_allocations, 2);
  EXPECT_EQ(end.arena_bytes - start.arena_bytes, static_cast<int64_t>(b.arena_bytes()));
  // Without a group each has its own.
  Executable c1 = c.g.compile(Device::cpu(), {{c.x, feed}}, {small});
  c1.run({c.input(0.f)});
  EXPECT_EQ(runtime_stats().arena_bytes - end.arena_bytes, static_cast<int64_t>(c1.arena_bytes()));
}

TEST(Arena, VariablesUpdateInPlaceAndSnapshotsStayPut) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2, 3}, {3}), "v");
  Operation inc = assign_variable(v, v * 2.0 + 1.0);
  Executable exe = g.compile(Device::cpu(), {}, {v}, {inc});
  TensorData snapshot = g.variable_value(v);
  std::vector<TensorData> starts;
  for (int r = 0; r < 3; ++r) starts.push_back(exe.run({})[0]);
  expect_equal(starts[0], {1, 2, 3}, {3});   // the value at the start of each run
  expect_equal(starts[1], {3, 5, 7}, {3});
  expect_equal(starts[2], {7, 11, 15}, {3});
  expect_equal(g.variable_value(v), {15, 23, 31}, {3});
  expect_equal(snapshot, {1, 2, 3}, {3});  // a snapshot: later runs do not change it
}

TEST(Arena, SwappingTwoVariablesInOneRun) {
  Graph g;
  Tensor a = g.variable(TensorData::from_vector<float>({1, 2}, {2}), "a");
  Tensor b = g.variable(TensorData::from_vector<float>({3, 4}, {2}), "b");
  Operation set_a = assign_variable(a, b);
  Operation set_b = assign_variable(b, a);
  Executable exe = g.compile(Device::cpu(), {}, {}, {set_a, set_b});
  exe.run({});
  expect_equal(g.variable_value(a), {3, 4}, {2});
  expect_equal(g.variable_value(b), {1, 2}, {2});
  exe.run({});
  expect_equal(g.variable_value(a), {1, 2}, {2});
  expect_equal(g.variable_value(b), {3, 4}, {2});
}

TG_COVERS(error, gather);
TEST(Arena, AFailedRunLeavesEveryVariableUnchanged) {
  // w is assigned before the gather runs, v after it: an out-of-range index fails the run and
  // neither changes (CPU: the kernel raises; the commit never happens).
  Graph g;
  Tensor idx = g.placeholder({2}, DType::i32, "idx");
  Tensor table = g.constant(TensorData::from_vector<float>({10, 20, 30}, {3}));
  Tensor w = g.variable(TensorData::from_vector<float>({0}, {1}), "w");
  Tensor v = g.variable(TensorData::from_vector<float>({0}, {1}), "v");
  Operation bump = assign_variable(w, w + 1.0);
  Tensor picked = g.control_dependency({bump}, [&] { return std::vector{reduce_sum(gather(table, idx), {.axes = {0}, .keep_dims = true})}; })[0];
  Operation add = assign_variable(v, v + picked);
  Executable exe = g.compile(Device::cpu(), {{idx, {{2}, DType::i32}}}, {picked}, {add, bump});
  expect_equal(exe.run({TensorData::from_vector<int32_t>({0, 2}, {2})})[0], {40}, {1});
  expect_equal(g.variable_value(v), {40}, {1});
  expect_equal(g.variable_value(w), {1}, {1});
  EXPECT_TG_ERROR(exe.run({TensorData::from_vector<int32_t>({1, 7}, {2})}), ErrorCode::out_of_range, "[gather]");
  expect_equal(g.variable_value(v), {40}, {1});
  expect_equal(g.variable_value(w), {1}, {1});
  // A bad feed fails before anything runs; then a good run goes on from the same state.
  EXPECT_TG_ERROR(exe.run({TensorData::from_vector<int64_t>({0, 1}, {2})}), ErrorCode::dtype_mismatch, "'idx'");
  expect_equal(exe.run({TensorData::from_vector<int32_t>({1, 1}, {2})})[0], {40}, {1});
  expect_equal(g.variable_value(v), {80}, {1});
  expect_equal(g.variable_value(w), {2}, {1});
}

}  // namespace
}  // namespace tg
