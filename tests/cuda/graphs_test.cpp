// Executables as compiled programs on a GPU (issue 15): every run after the first is one CUDA
// graph launch, arenas are allocated once per caller, concurrent callers get correct results,
// failed runs (bad feeds, out-of-range indices found on the device) leave every variable
// unchanged, and a run orders with the caller's stream. Skipped (with a message) without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "runtime/slice_views_check.h"
#include "test_util.h"
#include "cuda/require_gpu.h"
#include "tg/tg.h"
#ifdef TG_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;

// TG_CUDA_GRAPHS set for one scope (compile reads it).
struct GraphsEnv {
  explicit GraphsEnv(const char* v) { setenv("TG_CUDA_GRAPHS", v, 1); }
  ~GraphsEnv() { unsetenv("TG_CUDA_GRAPHS"); }
};

// A small training step: a matmul, a reduction, an elementwise chain and an Adam-like update of
// two variables, so every kind of kernel (cuBLASLt, generated elementwise and reduction kernels)
// is in the captured graph.
struct Step {
  Graph g;
  Tensor x = g.placeholder({64, 32}, DType::f32, "x");
  Tensor w = g.variable(TensorData::random_normal({32, 16}, 0.f, 0.1f, 3), "w");
  Tensor m = g.variable(TensorData::zeros({32, 16}), "m");
  Tensor loss = mean(square(tanh(matmul(x, w)) - 0.25));
  Tensor grad = gradients(loss, {w})[0];
  Operation set_m = assign_variable(m, m * 0.9 + grad * 0.1);
  Tensor new_m = g.control_dependency({set_m}, [&] { return std::vector{read_variable(m)}; })[0];
  Operation set_w = assign_variable(w, w - new_m * 0.5);
  TensorData batch(uint64_t seed) const { return TensorData::random_uniform({64, 32}, -1.f, 1.f, seed); }
};

TEST(CudaGraphs, EveryRunAfterTheFirstIsOneGraphLaunch) {
  REQUIRE_GPU();
  Step gpu, cpu;  // the same step on the GPU and on the CPU, side by side
  Executable eg = gpu.g.compile(Device::cuda(0), {{gpu.x, {{64, 32}, DType::f32}}}, {gpu.loss}, {gpu.set_m, gpu.set_w});
  Executable ec = cpu.g.compile(Device::cpu(), {{cpu.x, {{64, 32}, DType::f32}}}, {cpu.loss}, {cpu.set_m, cpu.set_w});
  const RuntimeStats start = runtime_stats();
  eg.run({gpu.batch(1)});  // walks the nodes: chooses algorithms, compiles kernels
  ec.run({cpu.batch(1)});
  const RuntimeStats warm = runtime_stats();
  EXPECT_EQ(warm.graph_launches - start.graph_launches, 0);
  for (uint64_t r = 2; r < 12; ++r) {
    TensorData lg = eg.run({gpu.batch(r)})[0];
    TensorData lc = ec.run({cpu.batch(r)})[0];
    EXPECT_NEAR(lg.element_as_double(0), lc.element_as_double(0), 1e-4) << "run " << r;
  }
  const RuntimeStats end = runtime_stats();
  EXPECT_EQ(end.graph_launches - warm.graph_launches, 10);  // one launch per run
  EXPECT_EQ(end.graph_captures - warm.graph_captures, 1);
  EXPECT_EQ(end.capture_fallbacks, start.capture_fallbacks);
  EXPECT_EQ(end.arena_allocations - start.arena_allocations, 2);  // one per executable
  EXPECT_EQ(end.compiles, start.compiles);
  EXPECT_EQ(end.kernel_compiles - warm.kernel_compiles, 0);
  EXPECT_EQ(eg.arena_count(), 1);
  // The variables followed the same trajectory on both devices.
  expect_close(gpu.g.variable_value(gpu.w).to(Device::cpu()),
               [&] {
                 auto v = cpu.g.variable_value(cpu.w).to_vector<float>();
                 return std::vector<double>(v.begin(), v.end());
               }(),
               {32, 16}, 1e-3, 1e-4);
}

TEST(CudaGraphs, SlicesOfABlockAreViewsInRecordedRuns) {
  REQUIRE_GPU();
  testing::check_slice_views(Device::cuda(0), 4);  // a recording, then replays
}

// A result and a slice of it (a view starting inside the result's buffer) as targets: replays
// after the recording, one capture (the slice must not keep the buffer looking held by the
// caller, which records again and copies the result out of the arena on every run; neither may
// the slice kernel's inputs, kept by the run's step scratch: RecordedRuns.ASliceOfAResult...).
TEST(CudaGraphs, ASliceOfAResultDoesNotRecordAgain) {
  REQUIRE_GPU();
  Graph g;
  Tensor x = g.placeholder({4, 64}, DType::f32, "x");
  Tensor a = x * 3.0f;
  Tensor rows = slice(a, {.begin = {1}, .end = {3}, .axes = {0}});
  Executable exe = g.compile(Device::cuda(0), {{x, {{4, 64}, DType::f32}}}, {a, rows});
  std::vector<float> xs(4 * 64);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.5f * static_cast<float>(i);
  const TensorData xv = TensorData::from_vector<float>(xs, {4, 64});
  const int64_t captures = runtime_stats().graph_captures;
  for (int r = 0; r < 6; ++r) {  // walked, recorded, then replays
    const std::vector<TensorData> out = exe.run({xv});
    const std::vector<float> av = out[0].to_vector<float>(), rv = out[1].to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(av[i], 3.0f * xs[i]);
    for (size_t i = 0; i < rv.size(); ++i) ASSERT_EQ(rv[i], 3.0f * xs[64 + i]);
  }
  EXPECT_EQ(runtime_stats().graph_captures - captures, 1);
}

TEST(CudaGraphs, CaptureOffGivesTheSameResults) {
  REQUIRE_GPU();
  Step on, off;
  Executable e_on = on.g.compile(Device::cuda(0), {{on.x, {{64, 32}, DType::f32}}}, {on.loss}, {on.set_m, on.set_w});
  Executable e_off;
  {
    GraphsEnv env("0");
    e_off = off.g.compile(Device::cuda(0), {{off.x, {{64, 32}, DType::f32}}}, {off.loss}, {off.set_m, off.set_w});
  }
  const RuntimeStats start = runtime_stats();
  for (uint64_t r = 1; r < 6; ++r) {
    EXPECT_EQ(e_on.run({on.batch(r)})[0].to_vector<float>(), e_off.run({off.batch(r)})[0].to_vector<float>());
  }
  EXPECT_EQ(runtime_stats().graph_launches - start.graph_launches, 4);  // e_on only, after its first
  EXPECT_EQ(on.g.variable_value(on.w).to_vector<float>(), off.g.variable_value(off.w).to_vector<float>());
}

TEST(CudaGraphs, InputsOnTheDeviceAndOnTheHost) {
  REQUIRE_GPU();
  Graph g;
  Tensor x = g.placeholder({1000}, DType::f32, "x");
  Tensor y = exp(x) * 2.0 + sin(x);
  Executable exe = g.compile(Device::cuda(0), {{x, {{1000}, DType::f32}}}, {y, x});
  for (int r = 0; r < 4; ++r) {
    TensorData h = TensorData::random_uniform({1000}, -1.f, 1.f, static_cast<uint64_t>(r));
    TensorData in = r % 2 ? h.to(Device::cuda(0)) : h;
    std::vector<TensorData> out = exe.run({in});
    std::vector<float> xv = h.to_vector<float>(), yv = out[0].to_vector<float>();
    for (size_t i = 0; i < xv.size(); i += 37) {
      EXPECT_NEAR(yv[i], std::exp(xv[i]) * 2 + std::sin(xv[i]), 1e-5) << "run " << r;
    }
    EXPECT_EQ(out[1].to_vector<float>(), xv);  // a feed as a target: a copy
  }
}

#ifdef TG_HAVE_CUDA
// A device input that comes at the same address every run (a dataset, a reused batch buffer) is
// read in place by the recorded graph; one that moves makes the executable record again once and
// copy that input into its slot from then on. The values are right either way.
TEST(CudaGraphs, DeviceInputsThatKeepTheirAddressAreReadInPlace) {
  REQUIRE_GPU();
  constexpr int64_t n = 4096;
  Graph g;
  Tensor x = g.placeholder({n}, DType::f32, "x");
  Tensor y = x * 3.0 + 1.0;
  Executable exe = g.compile(Device::cuda(0), {{x, {{n}, DType::f32}}}, {y});
  auto write = [](const TensorData& t, float v) {
    std::vector<float> host(n, v);
    host[n - 1] = -v;
    ASSERT_EQ(cudaMemcpy(const_cast<void*>(t.storage_ptr()), host.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  };
  auto run_and_check = [&](const TensorData& in, float v) {
    std::vector<float> out = exe.run({in})[0].to_vector<float>();
    EXPECT_FLOAT_EQ(out[0], 3 * v + 1) << "input " << v;
    EXPECT_FLOAT_EQ(out[n - 1], -3 * v + 1) << "input " << v;
  };
  TensorData d = TensorData::zeros({n}).to(Device::cuda(0));
  TensorData e = TensorData::zeros({n}).to(Device::cuda(0));
  write(d, 0.5f);
  run_and_check(d, 0.5f);  // walks the nodes
  const RuntimeStats warm = runtime_stats();
  for (int r = 1; r <= 3; ++r) {  // new contents, same buffer
    write(d, static_cast<float>(r));
    run_and_check(d, static_cast<float>(r));
  }
  const RuntimeStats same = runtime_stats();
  EXPECT_EQ(same.graph_captures - warm.graph_captures, 1);
  EXPECT_EQ(same.graph_launches - warm.graph_launches, 3);
  EXPECT_EQ(same.input_copy_bytes - warm.input_copy_bytes, 0);  // read in place
  for (int r = 4; r <= 7; ++r) {  // alternating buffers
    const TensorData& in = r % 2 ? d : e;
    write(in, static_cast<float>(r));
    run_and_check(in, static_cast<float>(r));
  }
  const RuntimeStats moved = runtime_stats();
  EXPECT_EQ(moved.graph_captures - same.graph_captures, 1);  // recorded again once
  EXPECT_EQ(moved.graph_launches - same.graph_launches, 4);
  EXPECT_EQ(moved.input_copy_bytes - same.input_copy_bytes, 4 * n * 4);  // then copied
}
#endif

TEST(CudaGraphs, EightThreadsRunOneExecutable) {
  REQUIRE_GPU();
  Graph g;
  Tensor x = g.placeholder({256, 64}, DType::f32, "x");
  Tensor w = g.constant(TensorData::random_normal({64, 64}, 0.f, 0.2f, 9));
  Tensor y = reduce_sum(relu(matmul(x, w)) * 0.5, {.axes = {1}});
  Executable exe = g.compile(Device::cuda(0), {{x, {{256, 64}, DType::f32}}}, {y});
  Executable ref = g.compile(Device::cpu(), {{x, {{256, 64}, DType::f32}}}, {y});
  exe.run({TensorData::zeros({256, 64})});  // the first run: algorithms, kernels
  constexpr int kThreads = 8, kRuns = 20;
  std::vector<std::vector<TensorData>> inputs(kThreads), expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRuns; ++r) {
      inputs[t].push_back(TensorData::random_uniform({256, 64}, -1.f, 1.f, static_cast<uint64_t>(100 * t + r)));
      expected[t].push_back(ref.run({inputs[t].back()})[0]);
    }
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        std::vector<float> got = exe.run({inputs[t][r]})[0].to_vector<float>();
        std::vector<float> want = expected[t][r].to_vector<float>();
        for (size_t i = 0; i < got.size(); ++i) {
          if (std::abs(got[i] - want[i]) > 1e-3f + 1e-3f * std::abs(want[i])) {
            bad++;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(exe.arena_count(), kThreads);
}

// The out-of-range index is computed on the device (idx + shift), so only the device can see it.
TEST(CudaGraphs, AFailedRunLeavesEveryVariableUnchanged) {
  REQUIRE_GPU();
  for (const char* graphs : {"1", "0"}) {
    GraphsEnv env(graphs);
    Graph g;
    Tensor idx = g.placeholder({2}, DType::i32, "idx");
    Tensor shift = g.placeholder({}, DType::i32, "shift");
    Tensor table = g.constant(TensorData::from_vector<float>({10, 20, 30}, {3}));
    Tensor w = g.variable(TensorData::from_vector<float>({0}, {1}), "w");
    Tensor v = g.variable(TensorData::from_vector<float>({0}, {1}), "v");
    Operation bump = assign_variable(w, w + 1.0);
    Tensor picked = g.control_dependency({bump}, [&] {
      return std::vector{reduce_sum(gather(table, idx + shift), {.axes = {0}, .keep_dims = true})};
    })[0];
    Operation add = assign_variable(v, v + picked);
    Executable exe = g.compile(Device::cuda(0), {{idx, {{2}, DType::i32}}, {shift, {{}, DType::i32}}}, {picked},
                               {add, bump});
    auto feeds = [](std::vector<int32_t> i, int32_t s) {
      return std::vector<TensorData>{TensorData::from_vector<int32_t>(i, {2}), TensorData::scalar<int32_t>(s)};
    };
    float v0 = 0, w0 = 0;
    for (int round = 0; round < 3; ++round) {  // the first run walks the nodes, later ones replay
      expect_equal(exe.run(feeds({0, 1}, 1))[0], {50}, {1});  // 20 + 30
      expect_equal(g.variable_value(v), {v0 + 50}, {1});
      expect_equal(g.variable_value(w), {w0 + 1}, {1});
      EXPECT_TG_ERROR(exe.run(feeds({1, 1}, 2)), ErrorCode::out_of_range,
                      "[gather] index 3 at indices position [0] is out of range for dim 0 of x (size 3");
      expect_equal(g.variable_value(v), {v0 + 50}, {1});
      expect_equal(g.variable_value(w), {w0 + 1}, {1});
      EXPECT_TG_ERROR(exe.run({TensorData::zeros({2}), TensorData::scalar<int32_t>(0)}), ErrorCode::dtype_mismatch,
                      "'idx'");
      expect_equal(exe.run(feeds({-1, -3}, 0))[0], {40}, {1});  // 30 + 10: a later run succeeds again
      v0 += 90;
      w0 += 2;
      expect_equal(g.variable_value(v), {v0}, {1});
      expect_equal(g.variable_value(w), {w0}, {1});
    }
  }
}

TEST(CudaGraphs, IntegerDivisionByZeroOnTheDeviceRaises) {
  REQUIRE_GPU();
  Graph g;
  Tensor a = g.placeholder({4}, DType::i32, "a");
  Tensor b = g.placeholder({4}, DType::i32, "b");
  Tensor v = g.variable(TensorData::from_vector<int32_t>({0, 0, 0, 0}, {4}), "v");
  Tensor q = div(a, b + 1);
  Operation set = assign_variable(v, v + q);
  Executable exe = g.compile(Device::cuda(0), {{a, {{4}, DType::i32}}, {b, {{4}, DType::i32}}}, {q}, {set});
  for (int r = 0; r < 3; ++r) {
    expect_equal(exe.run({TensorData::from_vector<int32_t>({6, 8, 9, 12}, {4}),
                          TensorData::from_vector<int32_t>({1, 3, 2, 5}, {4})})[0],
                 {3, 2, 3, 2}, {4});
    EXPECT_TG_ERROR(exe.run({TensorData::from_vector<int32_t>({6, 8, 9, 12}, {4}),
                             TensorData::from_vector<int32_t>({1, -1, 2, 5}, {4})}),
                    ErrorCode::invalid_argument, "integer division by zero");
    expect_equal(g.variable_value(v), {3.0 * (r + 1), 2.0 * (r + 1), 3.0 * (r + 1), 2.0 * (r + 1)}, {4});
  }
}

#ifdef TG_HAVE_CUDA
TEST(CudaGraphs, ARunOrdersWithTheCallersStream) {
  REQUIRE_GPU();
  Graph g;
  Tensor x = g.placeholder({1 << 20}, DType::f32, "x");
  Tensor y = sqrt(x * x + 1.0);
  Executable exe = g.compile(Device::cuda(0), {{x, {{1 << 20}, DType::f32}}}, {y});
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  TensorData in = TensorData::zeros({1 << 20}).to(Device::cuda(0));
  std::vector<float> host(1 << 20);
  for (int r = 0; r < 3; ++r) {
    // The caller's stream writes the input; the run must see it.
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(r + 1) * 0.5f;
    ASSERT_EQ(cudaMemcpyAsync(const_cast<void*>(in.storage_ptr()), host.data(), host.size() * 4,
                              cudaMemcpyHostToDevice, s),
              cudaSuccess);
    std::vector<TensorData> out = exe.run({in}, RunOptions{.cuda_stream = s});
    // The caller's stream, after the run, reads the result.
    std::vector<float> back(host.size());
    ASSERT_EQ(cudaMemcpyAsync(back.data(), out[0].storage_ptr(), back.size() * 4, cudaMemcpyDeviceToHost, s),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const float h = static_cast<float>(r + 1) * 0.5f;
    EXPECT_NEAR(back[0], std::sqrt(h * h + 1), 1e-6);
    EXPECT_NEAR(back.back(), std::sqrt(h * h + 1), 1e-6);
  }
  cudaStreamDestroy(s);
}
#endif

}  // namespace
}  // namespace tg
