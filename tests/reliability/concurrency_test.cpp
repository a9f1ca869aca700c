// Concurrency (issue 19): one Executable run from 8 threads at once with different inputs gives
// every thread the results a single thread gets (bit for bit; CPU and CUDA, CUDA graphs on), two
// graphs built and compiled on two threads at once, Graph::run from several threads on one
// graph, and concurrent runs of an executable that assigns a variable end in the state of some
// sequential order of them. ThreadSanitizer runs these in a build without OpenMP
// (docs/reliability.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <thread>
#include <vector>

#include "reliability_util.h"
#include "test_util.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::bit_identical;
using testing::expect_close;
using testing::expect_equal;

constexpr int kThreads = 8;

// A small network: matmul, bias, tanh, a reduction and a softmax-like normalization.
// float64 reference of Net's y and s for input x.
struct NetReference {
  std::vector<double> y, s;
};
NetReference reference(const TensorData& x, const TensorData& w, const TensorData& b) {
  std::vector<float> xv = x.to_vector<float>(), wv = w.to_vector<float>(), bv = b.to_vector<float>();
  NetReference r{std::vector<double>(16 * 24), std::vector<double>(24, 0.0)};
  for (int i = 0; i < 16; ++i) {
    std::vector<double> h(24), e(24);
    double z = 0;
    for (int j = 0; j < 24; ++j) {
      double acc = bv[j];
      for (int k = 0; k < 32; ++k) acc += double(xv[i * 32 + k]) * wv[k * 24 + j];
      h[j] = std::tanh(acc);
      e[j] = std::exp(h[j]);
      z += e[j];
      r.s[j] += h[j] * h[j];
    }
    for (int j = 0; j < 24; ++j) r.y[i * 24 + j] = e[j] / z;
  }
  return r;
}

struct Net {
  Graph g;
  Tensor x = g.placeholder({16, 32}, DType::f32, "x");
  TensorData wv = TensorData::random_normal({32, 24}, 0.f, 0.2f, 5);
  TensorData bv = TensorData::random_uniform({24}, -0.1f, 0.1f, 6);
  Tensor w = g.constant(wv);
  Tensor b = g.constant(bv);
  Tensor h = tanh(matmul(x, w) + b);
  Tensor e = exp(h);
  Tensor y = e / reduce_sum(e, {.axes = {1}, .keep_dims = true});
  Tensor s = reduce_sum(square(h), {.axes = {0}});
};

TEST(Concurrency, OneExecutableFromEightThreadsEqualsSingleThreaded) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    Net n;
    Executable exe = n.g.compile(dev, {{n.x, {{16, 32}, DType::f32}}}, {n.y, n.s});
    constexpr int kRuns = 12;
    std::vector<std::vector<TensorData>> inputs(kThreads);
    std::vector<std::vector<std::vector<TensorData>>> expected(kThreads);
    for (int t = 0; t < kThreads; ++t) {  // single-threaded results first
      for (int r = 0; r < kRuns; ++r) {
        inputs[t].push_back(TensorData::random_uniform({16, 32}, -2.f, 2.f, static_cast<uint64_t>(1000 * t + r)));
        expected[t].push_back(exe.run({inputs[t].back()}));
      }
    }
    const RuntimeStats before = runtime_stats();
    std::atomic<int> mismatches{0}, errors{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRuns; ++r) {
          try {
            std::vector<TensorData> got = exe.run({inputs[t][r]});
            if (!bit_identical(got[0], expected[t][r][0]) || !bit_identical(got[1], expected[t][r][1])) mismatches++;
          } catch (const Error&) {
            errors++;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_EQ(errors.load(), 0);
    EXPECT_LE(exe.arena_count(), kThreads);
    const NetReference want = reference(inputs[3][5], n.wv, n.bv);  // and the values are right
    expect_close(expected[3][5][0].to(Device::cpu()), want.y, {16, 24}, 1e-4, 1e-6);
    expect_close(expected[3][5][1].to(Device::cpu()), want.s, {24}, 1e-4, 1e-5);
    if (dev.is_cuda()) {  // every concurrent run replayed a CUDA graph
      const RuntimeStats after = runtime_stats();
      EXPECT_GE(after.graph_launches - before.graph_launches, kThreads * kRuns - (after.graph_captures - before.graph_captures));
      EXPECT_EQ(after.capture_fallbacks, before.capture_fallbacks);
    }
  }
}

// Two graphs built and compiled on two threads at once, each checked against float64 values.
TEST(Concurrency, TwoGraphsBuiltAndCompiledOnTwoThreads) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    std::vector<TensorData> results(2);
    std::vector<std::string> failures(2);
    auto build = [&](int which) {
      try {
        for (int round = 0; round < 5; ++round) {
          Graph g;
          Tensor x = g.placeholder({3, 4}, DType::f32, "x");
          Tensor y = which == 0 ? reduce_sum(x * x + 1.0, {.axes = {1}})
                                : reduce_max(exp(x) - x, {.axes = {0}});
          Executable exe = g.compile(dev, {{x, {{3, 4}, DType::f32}}}, {y});
          std::vector<float> v(12);
          for (int i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i - 5 + round);
          results[static_cast<size_t>(which)] = exe.run({TensorData::from_vector<float>(v, {3, 4})})[0].to(Device::cpu());
          // float64 reference
          std::vector<double> want;
          if (which == 0) {
            for (int r = 0; r < 3; ++r) {
              double s = 0;
              for (int c = 0; c < 4; ++c) s += double(v[r * 4 + c]) * v[r * 4 + c] + 1.0;
              want.push_back(s);
            }
          } else {
            for (int c = 0; c < 4; ++c) {
              double m = -1e300;
              for (int r = 0; r < 3; ++r) m = std::max(m, std::exp(double(v[r * 4 + c])) - v[r * 4 + c]);
              want.push_back(m);
            }
          }
          std::vector<float> got = results[static_cast<size_t>(which)].to_vector<float>();
          for (size_t i = 0; i < want.size(); ++i) {
            if (std::abs(got[i] - want[i]) > 1e-5 * (1 + std::abs(want[i]))) {
              failures[static_cast<size_t>(which)] = "graph " + std::to_string(which) + " element " + std::to_string(i);
            }
          }
        }
      } catch (const std::exception& e) {
        failures[static_cast<size_t>(which)] = e.what();
      }
    };
    std::thread a(build, 0), b(build, 1);
    a.join();
    b.join();
    EXPECT_EQ(failures[0], "");
    EXPECT_EQ(failures[1], "");
  }
}

// Graph::run (compile on first use, cached) from several threads on one graph, with feeds of two
// shapes so that threads race to fill the cache as well as to run.
TEST(Concurrency, GraphRunFromSeveralThreads) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    Graph g;
    Tensor x = g.placeholder({-1, 3}, DType::f32, "x");
    Tensor y = reduce_sum(x * 2.0 + 1.0, {.axes = {1}});
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < 10; ++r) {
          const int64_t rows = 1 + (t + r) % 2;
          std::vector<float> v(static_cast<size_t>(rows * 3));
          for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t * 100 + r * 10 + static_cast<int>(i));
          try {
            std::vector<float> got = g.run({{x, TensorData::from_vector<float>(v, {rows, 3})}}, {y}, {}, dev)[0]
                                         .to_vector<float>();
            for (int64_t row = 0; row < rows; ++row) {
              float want = 3.f;
              for (int c = 0; c < 3; ++c) want += 2.f * v[static_cast<size_t>(row * 3 + c)];
              if (got[static_cast<size_t>(row)] != want) bad++;
            }
          } catch (const Error&) {
            bad++;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0);
  }
}

// One thread: every run returns the value it read (its start value) and the value it wrote. On
// CUDA the runs after the first replay a graph whose kernel writes the new value straight into
// the variable's buffer: the start value, a result, was then copied out after that write and
// read as the new value (found by the test below; runtime/executor.cpp plan_direct_writes).
TEST(Concurrency, RecordedRunsReturnTheStartValueOfAnAssignedVariable) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    Graph g;
    Tensor k = g.placeholder({}, DType::i64, "k");
    Tensor v = g.variable(TensorData::scalar<int64_t>(1), "v");
    Tensor old = read_variable(v);
    Tensor next = old * g.constant(TensorData::scalar<int64_t>(3)) + k;
    Operation set = assign_variable(v, next);
    Executable exe = g.compile(dev, {{k, {{}, DType::i64}}}, {old, next}, {set});
    int64_t want = 1;
    for (int r = 0; r < 5; ++r) {
      std::vector<TensorData> out = exe.run({TensorData::scalar<int64_t>(r)});
      expect_equal(out[0].to(Device::cpu()), {static_cast<double>(want)}, {});
      want = 3 * want + r;
      expect_equal(out[1].to(Device::cpu()), {static_cast<double>(want)}, {});
    }
    expect_equal(g.variable_value(v), {static_cast<double>(want)}, {});
  }
}

// Each run does v <- 3 v + k (i64, exact) and returns the value it read and the value it wrote.
// The order of the updates matters, so the end state is that of some sequential order exactly
// when the runs' (read, written) pairs chain from the initial value to the final one, each run
// once: checked for 8 threads x 4 runs.
TEST(Concurrency, ConcurrentAssignmentsEqualSomeSequentialOrder) {
  for (Device dev : testing::test_devices()) {
    SCOPED_TRACE(dev.to_string());
    Graph g;
    Tensor k = g.placeholder({}, DType::i64, "k");
    Tensor v = g.variable(TensorData::scalar<int64_t>(1), "v");
    Tensor old = read_variable(v);
    Tensor next = old * g.constant(TensorData::scalar<int64_t>(3)) + k;
    Operation set = assign_variable(v, next);
    Executable exe = g.compile(dev, {{k, {{}, DType::i64}}}, {old, next}, {set});
    constexpr int kRuns = 4;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> seen(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRuns; ++r) {
          std::vector<TensorData> out = exe.run({TensorData::scalar<int64_t>(t * kRuns + r + 1)});
          seen[static_cast<size_t>(t)].emplace_back(out[0].to(Device::cpu()).to_vector<int64_t>()[0],
                                                    out[1].to(Device::cpu()).to_vector<int64_t>()[0]);
        }
      });
    }
    for (auto& th : threads) th.join();
    std::map<int64_t, int64_t> step;  // read -> written
    int pairs = 0;
    for (const auto& s : seen) {
      for (const auto& [from, to] : s) {
        EXPECT_TRUE(step.emplace(from, to).second) << "two runs read the same value " << from;
        ++pairs;
      }
    }
    ASSERT_EQ(pairs, kThreads * kRuns);
    int64_t cur = 1;
    for (int i = 0; i < pairs; ++i) {
      auto it = step.find(cur);
      ASSERT_NE(it, step.end()) << "no run read " << cur << " after " << i << " runs";
      cur = it->second;
    }
    expect_equal(g.variable_value(v), {static_cast<double>(cur)}, {});
  }
}

}  // namespace
}  // namespace tg
