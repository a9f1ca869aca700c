// CPU benchmarks (Google Benchmark): TensorGraph executables against the hardware baselines.
//   1. Elementwise add of two contiguous 16M-element f32 tensors vs memcpy of the 64 MB output.
//      Bytes/s count the traffic: add reads two inputs and writes one output (3 x 64 MB),
//      memcpy reads and writes 64 MB (2 x 64 MB).
//   2. A 1024x1024x1024 f32 matmul vs a direct dnnl_sgemm call on the same data (FLOP/s, 2MNK
//      per product).
// After the runs it prints the ratios "add bandwidth / memcpy bandwidth" and "matmul / sgemm".
// Every benchmark measures wall-clock time (the work is multi-threaded).
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "tg/tg.h"

namespace {

constexpr int64_t kAddElements = int64_t{16} << 20;
constexpr int64_t kAddBytes = kAddElements * static_cast<int64_t>(sizeof(float));  // 64 MB
constexpr int64_t kGemmSize = 1024;
constexpr double kGemmFlops = 2.0 * kGemmSize * kGemmSize * kGemmSize;

// Compiles `build(a, b)` for two f32 placeholders of `shape`; inputs are random.
struct Compiled {
  tg::Executable exe;
  std::vector<tg::TensorData> inputs;
};

template <typename F>
Compiled compile_binary(const tg::Shape& shape, F build) {
  tg::Graph g;
  tg::Tensor a = g.placeholder(shape, tg::DType::f32, "a");
  tg::Tensor b = g.placeholder(shape, tg::DType::f32, "b");
  tg::TensorType type{shape, tg::DType::f32};
  Compiled c;
  c.exe = g.compile(tg::Device::cpu(), {{a, type}, {b, type}}, {build(a, b)});
  c.inputs = {tg::TensorData::random_uniform(shape, -1, 1, 1),
              tg::TensorData::random_uniform(shape, -1, 1, 2)};
  return c;
}

// Runs the executable once outside the timed loop; reports a failure (e.g. a missing kernel)
// as the benchmark's error instead of aborting the whole program.
bool warm_up(benchmark::State& state, const Compiled& c) {
  try {
    c.exe.run(c.inputs);
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

void BM_AddExecutable(benchmark::State& state) {
  Compiled c;
  try {
    c = compile_binary({kAddElements}, [](tg::Tensor a, tg::Tensor b) { return tg::add(a, b); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  if (!warm_up(state, c)) return;
  for (auto _ : state) {
    std::vector<tg::TensorData> out = c.exe.run(c.inputs);
    benchmark::DoNotOptimize(out[0].raw_data());
  }
  state.SetBytesProcessed(state.iterations() * 3 * kAddBytes);
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<char> src(static_cast<size_t>(kAddBytes), 1), dst(static_cast<size_t>(kAddBytes), 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), dst.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kAddBytes);
}

void set_flops(benchmark::State& state) {
  state.counters["FLOP/s"] = benchmark::Counter(kGemmFlops, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

void BM_MatmulExecutable(benchmark::State& state) {
  Compiled c;
  try {
    c = compile_binary({kGemmSize, kGemmSize},
                       [](tg::Tensor a, tg::Tensor b) { return tg::matmul(a, b); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  if (!warm_up(state, c)) return;
  for (auto _ : state) {
    std::vector<tg::TensorData> out = c.exe.run(c.inputs);
    benchmark::DoNotOptimize(out[0].raw_data());
  }
  set_flops(state);
}

void BM_Sgemm(benchmark::State& state) {
  const tg::Shape shape{kGemmSize, kGemmSize};
  tg::TensorData a = tg::TensorData::random_uniform(shape, -1, 1, 1);
  tg::TensorData b = tg::TensorData::random_uniform(shape, -1, 1, 2);
  std::vector<float> c(static_cast<size_t>(kGemmSize * kGemmSize));
  for (auto _ : state) {
    dnnl_status_t st = dnnl_sgemm('N', 'N', kGemmSize, kGemmSize, kGemmSize, 1.0f, a.data<float>(),
                                  kGemmSize, b.data<float>(), kGemmSize, 0.0f, c.data(), kGemmSize);
    if (st != dnnl_success) {
      state.SkipWithError("dnnl_sgemm failed");
      break;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state);
}

BENCHMARK(BM_AddExecutable)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulExecutable)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sgemm)->UseRealTime()->Unit(benchmark::kMillisecond);

// Console output as usual, plus each successful run's rate counter (bytes/s or FLOP/s), by
// benchmark name.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  // Colours only on a terminal (as the library's own console reporter decides by default).
  CollectingReporter() : ConsoleReporter(isatty(fileno(stdout)) ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      // With --benchmark_repetitions the mean (reported after the repetitions) wins.
      bool mean = r.run_type == Run::RT_Aggregate && r.aggregate_name == "mean";
      if (r.error_occurred || (r.run_type != Run::RT_Iteration && !mean)) continue;
      for (const char* key : {"bytes_per_second", "FLOP/s"}) {
        auto it = r.counters.find(key);
        if (it != r.counters.end()) rates_[r.run_name.function_name] = it->second.value;
      }
    }
  }
  // The ratio of two collected rates, or a reason why there is none.
  std::string ratio(const std::string& num, const std::string& den) const {
    auto n = rates_.find(num), d = rates_.find(den);
    if (n == rates_.end() || d == rates_.end() || d->second <= 0) {
      return "n/a (" + std::string(n == rates_.end() ? num : den) + " did not run or failed)";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", n->second / d->second);
    return buf;
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::printf("add bandwidth / memcpy bandwidth = %s\n",
              reporter.ratio("BM_AddExecutable", "BM_Memcpy").c_str());
  std::printf("matmul / sgemm = %s\n", reporter.ratio("BM_MatmulExecutable", "BM_Sgemm").c_str());
  return 0;
}
