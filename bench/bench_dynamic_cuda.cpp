// Compile once for varying sizes on the GPU (issue 17): BERT-base imported from PyTorch's ONNX
// export with dynamic axes (batch, sequence), compiled once (CompileOptions::disable_type_inference)
// and run over sequence lengths 16, 32, ..., 128, against executables compiled for each fixed shape
// and against torch.compile's first calls over the same lengths (bench/dynamic_torch.py), in the
// same invocation.
//
// Printed: (1) the first calls: import + compile + the first run at each length (batch 1), their
// sum, and the runtime statistics over them (pass-pipeline runs, generated-kernel compiles,
// autotuning runs); run it with TG_KERNEL_CACHE_DIR set to an empty directory for the cold
// figure; (2) per batch and length, the largest relative difference to the fixed-shape
// executable's outputs (max |a - b| / max |b|) and the steady-state latencies (median of --iters
// runs with the result read back), with their ratio; (3) torch.compile's first calls.
//
// Usage: tg_bench_dynamic_cuda [--dir /tmp/tg-bert-dyn] [--lengths 16,32,...,128] [--batches 1,32]
//                              [--iters 50] [--mode tf32|f16] [--no-peer]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tg/onnx.h"
#include "tg/tg.h"

namespace {

using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Args {
  std::string dir = "/tmp/tg-bert-dyn";
  std::vector<int64_t> lengths = {16, 32, 48, 64, 80, 96, 112, 128};
  std::vector<int64_t> batches = {1, 32};
  int64_t iters = 50;
  std::string mode = "tf32";
  bool peer = true;
};

std::vector<int64_t> int_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) out.push_back(std::stoll(x));
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--dir")) a.dir = f.value();
    else if (f.is("--lengths")) a.lengths = int_list(f.value());
    else if (f.is("--batches")) a.batches = int_list(f.value());
    else if (f.is("--iters")) a.iters = std::stoll(f.value());
    else if (f.is("--mode")) a.mode = f.value();
    else if (f.is("--no-peer")) a.peer = false;
    else f.unknown();
  }
  return a;
}

std::string python(const std::string& args) {
  return tg::bench::run_python(std::string(TG_SOURCE_DIR) + "/bench/dynamic_torch.py", args);
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

tg::TensorData token_ids(int64_t batch, int64_t length) {
  tg::TensorData ids({batch, length}, tg::DType::i64);
  uint64_t state = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(batch * 1000 + length);
  for (int64_t i = 0; i < ids.num_elements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    ids.data<int64_t>()[i] = static_cast<int64_t>((state >> 33) % 30522);
  }
  return ids;
}

std::vector<tg::TensorData> to_host(std::vector<tg::TensorData> v) {
  for (tg::TensorData& t : v) t = t.to(tg::Device::cpu());
  return v;
}

// max |a - b| / max |b| over every output.
double relative_difference(const std::vector<tg::TensorData>& a, const std::vector<tg::TensorData>& b) {
  double worst = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < b[k].num_elements(); ++i) {
      diff = std::max(diff, std::fabs(a[k].element_as_double(i) - b[k].element_as_double(i)));
      scale = std::max(scale, std::fabs(b[k].element_as_double(i)));
    }
    worst = std::max(worst, diff / std::max(scale, 1e-30));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (tg::Device::cuda_device_count() == 0) {
    std::fprintf(stderr, "tg_bench_dynamic_cuda: no CUDA GPU usable here\n");
    return 1;
  }
  const fs::path model = fs::path(a.dir) / "bert_dyn.onnx";
  if (!fs::exists(model)) std::printf("%s", python("export " + a.dir).c_str());
  const tg::Device gpu = tg::Device::cuda(0);
  const tg::CompileOptions fixed_options{
      .precision = a.mode == "f16" ? tg::ComputePrecision::f16 : tg::ComputePrecision::tf32};
  tg::CompileOptions once_options = fixed_options;
  once_options.disable_type_inference = true;

  // (1) First calls: one compile, the first run at each length (batch 1); the import before
  // (its shape computations evaluate small graphs: not counted as the model's compile).
  auto t0 = clock_type::now();
  tg::onnx::ImportResult m = tg::onnx::import(model);
  const tg::Tensor input = m.inputs.at(0).tensor;
  const double import_ms = ms_since(t0);
  const tg::RuntimeStats s0 = tg::runtime_stats();
  t0 = clock_type::now();
  tg::Executable once = m.graph.compile(gpu, {{input, {{-1, -1}, tg::DType::i64}}}, m.targets(), {}, once_options);
  const double compile_ms = ms_since(t0);
  std::printf("bert-base %s, compile once: input %s, import %.0f ms, compile %.0f ms\n", a.mode.c_str(),
              once.input_types().at(0).to_string().c_str(), import_ms, compile_ms);
  double total_ms = compile_ms;
  for (int64_t n : a.lengths) {
    const tg::TensorData ids = token_ids(1, n).to(gpu);
    auto t1 = clock_type::now();
    to_host(once.run({ids}));
    const double ms = ms_since(t1);
    total_ms += ms;
    std::printf("  first call seq %lld: %.1f ms\n", static_cast<long long>(n), ms);
  }
  const tg::RuntimeStats s1 = tg::runtime_stats();
  std::printf("  tg first calls over %zu lengths, compile included (import not): %.0f ms (target <= 2000); compiles %lld, "
              "generated kernels compiled %lld, autotune runs %lld\n",
              a.lengths.size(), total_ms, static_cast<long long>(s1.compiles - s0.compiles),
              static_cast<long long>(s1.kernel_compiles - s0.kernel_compiles),
              static_cast<long long>(s1.autotune_runs - s0.autotune_runs));
  std::fflush(stdout);

  // (2) Against fixed-shape executables: values and steady-state latency.
  int failures = 0;
  for (int64_t batch : a.batches) {
    for (int64_t n : a.lengths) {
      const std::vector<tg::TensorData> in{token_ids(batch, n).to(gpu)};
      tg::Executable fixed = m.graph.compile(gpu, {{input, in[0].type()}}, m.targets(), {}, fixed_options);
      const double diff = relative_difference(to_host(once.run(in)), to_host(fixed.run(in)));
      const tg::bench::Timing t_once = tg::bench::time_calls([&] { to_host(once.run(in)); }, a.iters, 5);
      const tg::bench::Timing t_fixed = tg::bench::time_calls([&] { to_host(fixed.run(in)); }, a.iters, 5);
      const double ratio = t_once.median_ms / t_fixed.median_ms;
      failures += diff > 1e-5 || ratio > 1.15;
      std::printf("  batch %lld seq %lld: rel diff %.1e (<= 1e-5), once %.3f ms vs fixed %.3f ms = %.3fx (<= 1.15), "
                  "launches per run %.2f\n",
                  static_cast<long long>(batch), static_cast<long long>(n), diff, t_once.median_ms, t_fixed.median_ms,
                  ratio, t_once.launches_per_run);
      std::fflush(stdout);
    }
  }

  // (3) The peer's first calls.
  if (a.peer) {
    std::string lengths;
    for (int64_t n : a.lengths) lengths += (lengths.empty() ? "" : ",") + std::to_string(n);
    std::printf("%s", python("compile " + lengths + " 1").c_str());
  }
  return failures ? 1 : 0;
}
