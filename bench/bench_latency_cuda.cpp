// Batch-1 inference latency on the GPU against PyTorch, in the same invocation on the same device
// (issue 15): ResNet-50 of the model zoo (TF32, NHWC), torchvision's ResNet-50 imported from
// PyTorch's ONNX export (NCHW: resnet50onnx_tf32; TG_CHANNELS_LAST=1 runs it channels-last through
// passes::convert_to_channels_last) and BERT-base (seq 128) imported
// from PyTorch's ONNX export (TF32 and f16), against PyTorch eager, PyTorch CUDA-graph replay
// and, for BERT, torch.compile(mode="reduce-overhead") (bench/latency_torch.py).
//
// Our side: the compiled executable run with the input already on the GPU; a timed call is the
// run and the result read back to the host (wall clock, median of --iters after warm-up runs),
// as the peer's is its forward (or replay) and torch.cuda.synchronize(). Also printed: the host
// time per run with the waits for the device excluded (runtime_stats().run_host_ns / runs), CUDA
// graph launches per run, and the ratio best PyTorch time / ours (>= 1.11 meets "at most 0.9x").
//
// Usage: tg_bench_latency_cuda [--jobs resnet50_tf32,resnet50onnx_tf32,bert_tf32,bert_f16]
//                              [--iters 200] [--bert-dir DIR] [--resnet-dir DIR] [--no-peer]
// The imported models need DIR/bert.onnx and DIR/resnet50.onnx (made by `python3
// bench/latency_torch.py export_bert|export_resnet50 DIR`, run here first when missing).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tg/model.h"
#include "tg/onnx.h"
#include "tg/tg.h"

namespace {

using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Args {
  std::string jobs = "resnet50_tf32,bert_tf32,bert_f16";
  int64_t iters = 200;
  std::string bert_dir = "/tmp/tg-bert";
  std::string resnet_dir = "/tmp/tg-resnet50";
  bool peer = true;
};

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--jobs")) a.jobs = f.value();
    else if (f.is("--iters")) a.iters = std::stoll(f.value());
    else if (f.is("--bert-dir")) a.bert_dir = f.value();
    else if (f.is("--resnet-dir")) a.resnet_dir = f.value();
    else if (f.is("--no-peer")) a.peer = false;
    else f.unknown();
  }
  return a;
}

std::string python(const std::string& args) {
  return tg::bench::run_python(std::string(TG_SOURCE_DIR) + "/bench/latency_torch.py", args);
}

// The peer's modes and times (ms) from its JSON lines.
std::vector<std::pair<std::string, double>> peer_times(const std::string& out) {
  std::vector<std::pair<std::string, double>> r;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) {
    auto m = line.find("\"mode\": \""), t = line.find("\"ms\": ");
    if (m == std::string::npos || t == std::string::npos) continue;
    m += 9;
    r.emplace_back(line.substr(m, line.find('"', m) - m), std::atof(line.c_str() + t + 6));
    std::printf("  peer: %s\n", line.c_str());
  }
  return r;
}

using tg::bench::Timing;
using tg::bench::time_calls;

tg::ComputePrecision precision_of(const std::string& mode) {
  return mode == "f16" ? tg::ComputePrecision::f16 : mode == "bf16" ? tg::ComputePrecision::bf16
                                                                     : tg::ComputePrecision::tf32;
}

Timing resnet50(const std::string& mode, int64_t iters) {
  tg::nn::Model model = tg::nn::zoo::resnet50({.input_shape = {224, 224, 3}, .layout = tg::Layout::nhwc});
  model.compile(tg::nn::Optimizer::adam(1e-3), tg::nn::Loss::sparse_categorical_crossentropy, {},
                tg::Device::cuda(0), {.precision = precision_of(mode)});
  tg::TensorData x = tg::TensorData::random_normal({1, 224, 224, 3}, 0.f, 1.f, 2).to(tg::Device::cuda(0));
  auto t0 = clock_type::now();
  model.predict(x, 1);
  std::printf("  tg first predict (build + compile + run): %.0f ms\n",
              std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  // predict of one batch: the executable's run and the copy back (and a lookup).
  return time_calls([&] { model.predict(x, 1); }, iters);
}

/// An ONNX export of PyTorch's (`model` = bert: DIR/bert.onnx, input_ids.pb; resnet50:
/// DIR/resnet50.onnx, input_0.pb), with PyTorch's float32 output in DIR/output_0.pb.
Timing imported(const std::string& model, const std::string& mode, int64_t iters, const std::string& dir) {
  if (!fs::exists(fs::path(dir) / (model + ".onnx"))) std::printf("%s", python("export_" + model + " " + dir).c_str());
  auto t0 = clock_type::now();
  tg::onnx::ImportResult m = tg::onnx::import(fs::path(dir) / (model + ".onnx"));
  tg::TensorData ids = tg::onnx::read_tensor_proto(fs::path(dir) / (model == "bert" ? "input_ids.pb" : "input_0.pb"));
  tg::Executable exe = m.graph.compile(tg::Device::cuda(0), {{m.inputs[0].tensor, ids.type()}}, m.targets(), {},
                                       {.precision = precision_of(mode)});
  std::vector<tg::TensorData> inputs{ids.to(tg::Device::cuda(0))};
  tg::TensorData y = exe.run(inputs)[0].to(tg::Device::cpu());
  std::printf("  tg import + compile + first run: %.0f ms; %s\n",
              std::chrono::duration<double, std::milli>(clock_type::now() - t0).count(),
              "arena: see below");
  // Accuracy against PyTorch's float32 output.
  tg::TensorData ref = tg::onnx::read_tensor_proto(fs::path(dir) / "output_0.pb");
  std::vector<float> a = y.to_vector<float>(), b = ref.to_vector<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  std::printf("  tg vs PyTorch float32: relative error %.2e (|a-b|/|b|), arena %.1f MB\n", std::sqrt(num / den),
              static_cast<double>(exe.arena_bytes()) / 1e6);
  return time_calls([&] { exe.run(inputs)[0].to(tg::Device::cpu()); }, iters);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  if (tg::Device::cuda_device_count() == 0) {
    std::fprintf(stderr, "tg_bench_latency_cuda: no CUDA GPU usable here\n");
    return 1;
  }
  std::stringstream ss(a.jobs);
  std::string job;
  int failures = 0;
  while (std::getline(ss, job, ',')) {
    try {
      const std::string mode = job.substr(job.find('_') + 1);
      const bool is_bert = job.rfind("bert", 0) == 0, is_onnx_resnet = job.rfind("resnet50onnx", 0) == 0;
      std::printf("%s: batch 1, %s\n", job.c_str(), mode.c_str());
      std::fflush(stdout);
      Timing ours = is_bert          ? imported("bert", mode, a.iters, a.bert_dir)
                    : is_onnx_resnet ? imported("resnet50", mode, a.iters, a.resnet_dir)
                                     : resnet50(mode, a.iters);
      std::printf("  tg: %.3f ms (median of %lld), host %.1f us per run (waits excluded), %.2f graph launches per run\n",
                  ours.median_ms, static_cast<long long>(a.iters), ours.host_us, ours.launches_per_run);
      std::fflush(stdout);
      if (!a.peer) continue;
      auto peer = peer_times(python((is_bert ? "bert " : "resnet50 ") + mode + " " + std::to_string(a.iters) + " " +
                                    a.bert_dir));
      if (peer.empty()) {
        ++failures;
        continue;
      }
      auto best = *std::min_element(peer.begin(), peer.end(), [](auto& x, auto& y) { return x.second < y.second; });
      for (const auto& [name, ms] : peer) std::printf("  pytorch %s: %.3f ms\n", name.c_str(), ms);
      std::printf("  ratio %s (best pytorch %s / tg): %.2f (tg at %.2fx of it; target <= 0.90)\n", job.c_str(),
                  best.first.c_str(), best.second / ours.median_ms, ours.median_ms / best.second);
    } catch (const std::exception& e) {
      std::printf("  %s failed: %s\n", job.c_str(), e.what());
      ++failures;
    }
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
