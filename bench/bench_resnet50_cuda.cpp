// ResNet-50 on the GPU against PyTorch eager, in the same invocation on the same device.
//
// Jobs (issue 6): training images/s at batch 128, 224x224, Adam, synthetic data, in f32 (no TF32;
// NCHW on both sides), tf32 and bf16 (CompileOptions::precision; NHWC = channels-last on both
// sides); inference latency at
// batch 1 (tf32) and throughput at batch 256 (f16). For each job our median time is measured, then
// bench/resnet50_cuda_torch.py runs the same job in PyTorch (torchvision resnet50,
// cudnn.benchmark, channels-last except plain f32, autocast for bf16) and the ratio PyTorch time /
// our time is printed (>= 1.0: at least as fast as PyTorch).
//
// Our timing: training runs `fit` over `steps` batches already on the GPU (the loss is read back in
// groups, so the host enqueues ahead of the GPU), timed from the first step to the last loss read
// back, after a warm-up fit; inference times `predict` (input on the GPU, output copied back) per
// call, median of `iters`.
//
// --peers torch,jax also runs bench/resnet50_jax.py (flax + optax, bf16 NHWC) for train_bf16.
//
// Usage: tg_bench_resnet50_cuda [--jobs train_f32,train_tf32,train_bf16,infer_b1,infer_b256]
//                               [--batch 128] [--steps 10] [--iters 30] [--no-peer] [--peers torch,jax]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tg/model.h"
#include "bench_util.h"
#include "tg/tg.h"

namespace {

using clock_type = std::chrono::steady_clock;

struct Args {
  std::string jobs = "train_f32,train_tf32,train_bf16,infer_b1,infer_b256";
  int64_t batch = 128, steps = 10, iters = 30;
  bool peer = true;
  std::string peers = "torch";
};

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--jobs")) a.jobs = f.value();
    else if (f.is("--batch")) a.batch = std::stoll(f.value());
    else if (f.is("--steps")) a.steps = std::stoll(f.value());
    else if (f.is("--iters")) a.iters = std::stoll(f.value());
    else if (f.is("--no-peer")) a.peer = false;
    else if (f.is("--peers")) a.peers = f.value();
    else f.unknown();
  }
  return a;
}

using tg::bench::median;

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// The peer's (PyTorch's, or JAX's with `jax`) median ms for the job, or -1.
double run_peer(const std::string& job, int64_t batch, int64_t iters, const std::string& mode, bool jax = false) {
  const std::string dir = std::string(TG_SOURCE_DIR) + "/bench/";
  int rc = 0;
  const std::string out =
      jax ? tg::bench::run_python(dir + "resnet50_jax.py", "train " + std::to_string(batch) + " " + std::to_string(iters), &rc)
          : tg::bench::run_python(dir + "resnet50_cuda_torch.py",
                                  job + " " + std::to_string(batch) + " " + std::to_string(iters) + " " + mode, &rc);
  auto pos = out.find("\"ms\": ");
  if (rc != 0 || pos == std::string::npos) {
    std::fprintf(stderr, "PyTorch peer failed:\n%s\n", out.c_str());
    return -1;
  }
  std::printf("  peer: %s", out.c_str());
  return std::atof(out.c_str() + pos + 6);
}

tg::ComputePrecision precision_of(const std::string& mode) {
  if (mode == "tf32") return tg::ComputePrecision::tf32;
  if (mode == "bf16") return tg::ComputePrecision::bf16;
  if (mode == "f16") return tg::ComputePrecision::f16;
  return tg::ComputePrecision::f32;
}

// f32 runs NCHW, as PyTorch's f32 side does (cuDNN's FMA-only kernels are NCHW ones); the others
// NHWC (channels-last on both sides).
tg::Layout layout_of(const std::string& mode) { return mode == "f32" ? tg::Layout::nchw : tg::Layout::nhwc; }
tg::Shape image(const std::string& mode, int64_t n) {
  return mode == "f32" ? tg::Shape{n, 3, 224, 224} : tg::Shape{n, 224, 224, 3};
}

tg::nn::Model make_model(const std::string& mode) {
  tg::Shape in = image(mode, 1);
  in.erase(in.begin());
  tg::nn::Model model = tg::nn::zoo::resnet50({.input_shape = in, .layout = layout_of(mode)});
  model.compile(tg::nn::Optimizer::adam(1e-3), tg::nn::Loss::sparse_categorical_crossentropy,
                {tg::nn::Metric::accuracy}, tg::Device::cuda(0), {.precision = precision_of(mode)});
  return model;
}

// ms per training step.
double train_ms(int64_t batch, int64_t steps, const std::string& mode) {
  tg::nn::Model model = make_model(mode);
  const int64_t n = batch * steps;
  tg::TensorData x = tg::TensorData::random_normal(image(mode, n), 0.f, 1.f, 1).to(tg::Device::cuda(0));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = (i * 37) % 1000;
  tg::TensorData y = tg::TensorData::from_vector<int64_t>(labels, {n}).to(tg::Device::cuda(0));
  tg::nn::FitOptions o{.epochs = 1, .batch_size = batch, .shuffle = false, .verbose = 0};
  auto t0 = clock_type::now();
  model.fit(x, y, o);  // compiles, chooses conv algorithms, warms the caches
  std::printf("  tg first fit (compile + %lld steps): %.0f ms\n", static_cast<long long>(steps), ms_since(t0));
  std::vector<double> per_step;
  for (int r = 0; r < 3; ++r) {
    auto t = clock_type::now();
    model.fit(x, y, o);
    per_step.push_back(ms_since(t) / static_cast<double>(steps));
  }
  return median(per_step);
}

// ms per forward pass.
double infer_ms(int64_t batch, int64_t iters, const std::string& mode) {
  tg::nn::Model model = make_model(mode);
  tg::TensorData x = tg::TensorData::random_normal(image(mode, batch), 0.f, 1.f, 2).to(tg::Device::cuda(0));
  auto t0 = clock_type::now();
  model.predict(x, batch);
  std::printf("  tg first predict (compile + run): %.0f ms\n", ms_since(t0));
  for (int i = 0; i < 5; ++i) model.predict(x, batch);
  std::vector<double> times;
  for (int64_t i = 0; i < iters; ++i) {
    auto t = clock_type::now();
    model.predict(x, batch);
    times.push_back(ms_since(t));
  }
  return median(times);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  if (tg::Device::cuda_device_count() == 0) {
    std::fprintf(stderr, "tg_bench_resnet50_cuda: no CUDA GPU usable here\n");
    return 1;
  }
  std::stringstream ss(a.jobs);
  std::string job;
  int failures = 0;
  while (std::getline(ss, job, ',')) {
    try {
      bool train = job.rfind("train_", 0) == 0;
      std::string mode = train ? job.substr(6) : (job == "infer_b1" ? "tf32" : "f16");
      int64_t batch = train ? a.batch : (job == "infer_b1" ? 1 : 256);
      std::printf("%s: batch %lld, %s\n", job.c_str(), static_cast<long long>(batch), mode.c_str());
      std::fflush(stdout);
      double ours = train ? train_ms(batch, a.steps, mode) : infer_ms(batch, a.iters, mode);
      double per_s = 1e3 * static_cast<double>(batch) / ours;
      std::printf("  tg: %.2f ms, %.1f images/s\n", ours, per_s);
      std::fflush(stdout);
      if (!a.peer) continue;
      double peer = run_peer(train ? "train" : "infer", batch, train ? 15 : a.iters, mode);
      if (peer <= 0) {
        ++failures;
        continue;
      }
      std::printf("  pytorch: %.2f ms, %.1f images/s\n  ratio %s (pytorch time / tg time): %.2f\n", peer,
                  1e3 * static_cast<double>(batch) / peer, job.c_str(), peer / ours);
      if (job == "train_bf16" && a.peers.find("jax") != std::string::npos) {
        std::fflush(stdout);
        double jax = run_peer("train", batch, 10, mode, true);
        if (jax <= 0) {
          ++failures;
        } else {
          std::printf("  jax: %.2f ms, %.1f images/s\n  ratio %s (jax time / tg time): %.2f (target >= 1.05)\n", jax,
                      1e3 * static_cast<double>(batch) / jax, job.c_str(), jax / ours);
        }
      }
    } catch (const std::exception& e) {
      std::printf("  %s failed: %s\n", job.c_str(), e.what());
      ++failures;
    }
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
