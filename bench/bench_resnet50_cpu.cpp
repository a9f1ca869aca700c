// ResNet-50 training step on the CPU, timed against PyTorch in the same invocation.
//
// One step = forward + sparse softmax cross-entropy + backward + Adam update of torchvision's
// ResNet-50 architecture (tg::nn::zoo::resnet50, 25,557,032 parameters), f32, synthetic data,
// batch 8 at 224x224x3 by default. After `warmup` steps, `steps` steps are timed and the median is
// reported. Then bench/resnet50_cpu_torch.py runs the same step in PyTorch (Debian's
// python3-torch; torchvision's resnet50, torch.optim.Adam) with the same number of threads, and
// the ratio PyTorch time / our time is printed (>= 1.0 means we are at least as fast).
//
// Usage: tg_bench_resnet50_cpu [--batch B] [--size S] [--steps K] [--warmup W]
//                              [--layout nhwc|nchw] [--torch-layout nchw|nhwc] [--no-peer]
// Threads: OMP_NUM_THREADS, else every core (both sides use the same count).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tg/tg.h"
#include "tg/model.h"

namespace {

struct Args {
  int64_t batch = 8, size = 224, steps = 3, warmup = 1;
  std::string layout = "nhwc", torch_layout = "nchw";
  bool peer = true;
};

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--batch")) a.batch = std::stoll(f.value());
    else if (f.is("--size")) a.size = std::stoll(f.value());
    else if (f.is("--steps")) a.steps = std::stoll(f.value());
    else if (f.is("--warmup")) a.warmup = std::stoll(f.value());
    else if (f.is("--layout")) a.layout = f.value();
    else if (f.is("--torch-layout")) a.torch_layout = f.value();
    else if (f.is("--no-peer")) a.peer = false;
    else f.unknown();
  }
  return a;
}

using tg::bench::median;

// Runs the PyTorch script; returns its median step time in ms (or -1).
double run_peer(const Args& a, int threads) {
  int rc = 0;
  const std::string out = tg::bench::run_python(
      std::string(TG_SOURCE_DIR) + "/bench/resnet50_cpu_torch.py",
      std::to_string(a.batch) + " " + std::to_string(a.size) + " " + std::to_string(a.steps) + " " +
          std::to_string(threads) + " " + a.torch_layout,
      &rc, "/usr/bin/python3");
  auto pos = out.find("\"step_ms\": ");
  if (rc != 0 || pos == std::string::npos) {
    std::fprintf(stderr, "PyTorch peer failed (is python3-torch installed? "
                         "scripts/bench-setup.sh installs it):\n%s\n", out.c_str());
    return -1;
  }
  std::printf("peer: %s", out.c_str());
  return std::atof(out.c_str() + pos + 11);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  const int threads = omp_get_max_threads();
  tg::Layout layout = a.layout == "nchw" ? tg::Layout::nchw : tg::Layout::nhwc;
  tg::Shape in = layout == tg::Layout::nhwc ? tg::Shape{a.size, a.size, 3}
                                            : tg::Shape{3, a.size, a.size};
  tg::nn::Model model = tg::nn::zoo::resnet50({.input_shape = in, .layout = layout});
  model.compile(tg::nn::Optimizer::adam(1e-3));
  tg::Shape xs = {a.batch};
  xs.insert(xs.end(), in.begin(), in.end());
  tg::TensorData x = tg::TensorData::random_normal(xs, 0.f, 1.f, 1);
  std::vector<int64_t> labels(static_cast<size_t>(a.batch));
  for (int64_t i = 0; i < a.batch; ++i) labels[static_cast<size_t>(i)] = (i * 37) % 1000;
  tg::TensorData y = tg::TensorData::from_vector<int64_t>(labels, {a.batch});

  std::printf("ResNet-50 training step on the CPU: batch %lld, %lldx%lld, %s, %d threads, f32, "
              "Adam, %lld parameters\n",
              static_cast<long long>(a.batch), static_cast<long long>(a.size),
              static_cast<long long>(a.size), a.layout.c_str(), threads,
              static_cast<long long>(model.parameter_count()));
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  model.train_on_batch(x, y);  // compiles
  std::printf("first step (compile + run): %.0f ms\n",
              std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  for (int64_t i = 1; i < a.warmup; ++i) model.train_on_batch(x, y);
  std::vector<double> times;
  for (int64_t i = 0; i < a.steps; ++i) {
    auto s = clock::now();
    model.train_on_batch(x, y);
    times.push_back(std::chrono::duration<double, std::milli>(clock::now() - s).count());
  }
  double ours = median(times);
  std::printf("tg: step %.1f ms (median of %lld), %.2f images/s\n", ours,
              static_cast<long long>(a.steps), 1e3 * static_cast<double>(a.batch) / ours);
  if (!a.peer) return 0;
  double peer = run_peer(a, threads);
  if (peer <= 0) return 1;
  std::printf("pytorch: step %.1f ms, %.2f images/s\n", peer,
              1e3 * static_cast<double>(a.batch) / peer);
  std::printf("ratio (pytorch step time / tg step time): %.2f\n", peer / ours);
  return 0;
}
