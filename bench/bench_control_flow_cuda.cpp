// Loops on the GPU against JAX/XLA and PyTorch, in the same invocation on the same device (the
// control-flow issue). On 2^20 floats, all 2.0 at the start:
//   while: while mean(y) > T_WHILE: y = y * 0.999 + 0.001        (T_WHILE: 1000 iterations)
//   for:   1000 times y = y * 0.999 + 0.001                       (a fixed trip count)
//   forif: 1000 times y = (mean(y) > 1.2) ? y * 0.999 + 0.001 : y * 1.001
//   forsel (ours only): forif with tg::select instead of if_else (both sides computed, no IF
//          node): what the branch's conditional node costs
// Our side: tg::while_loop / for_loop / if_else compiled for cuda:0 (recorded into one CUDA graph
// with conditional nodes from the second run on); a timed run is Executable::run and mean(y) read
// back to the host (wall clock, median of --reps after warm-up runs), as the peers' is their loop
// and the mean read back (bench/control_flow_peers.py: JAX lax.while_loop / fori_loop / cond,
// jitted; PyTorch host loops). Printed per loop: microseconds per iteration on each side, the
// ratio peer / ours, our host waits and graph launches per run, and the final means (the sides
// must agree). The checks: while <= 4 us, for <= 3 us, forif <= 8 us per iteration; JAX /
// ours >= 5 (while) and >= 2.5 (for).
//
// Usage: tg_bench_control_flow_cuda [--n 1048576] [--iters 1000] [--reps 10] [--no-peer]
//                                   [--loops while,for,forif,forsel]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_util.h"
#include "tg/tg.h"

namespace {

using clock_type = std::chrono::steady_clock;

struct Args {
  int64_t n = 1 << 20;
  int64_t iters = 1000;
  int reps = 10;
  bool peer = true;
  std::string loops = "while,for,forif,forsel";
};

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--n")) a.n = std::stoll(f.value());
    else if (f.is("--iters")) a.iters = std::stoll(f.value());
    else if (f.is("--reps")) a.reps = std::stoi(f.value());
    else if (f.is("--no-peer")) a.peer = false;
    else if (f.is("--loops")) a.loops = f.value();
    else f.unknown();
  }
  return a;
}

constexpr double kIfThreshold = 1.2;

// mean(y) > t stays true for n = 0..iters-1 and turns false at n = iters (y_n = 1 + 0.999^n).
double while_threshold(int64_t iters) { return 1.0 + std::pow(0.999, static_cast<double>(iters) - 0.5); }

struct Loop {
  tg::Graph g;
  tg::Tensor y;
  tg::Tensor mean;
};

tg::Tensor step(tg::Tensor y) { return y * 0.999f + 0.001f; }

void build(Loop& l, const std::string& which, const Args& a) {
  l.y = l.g.placeholder({a.n}, tg::DType::f32, "y");
  tg::Tensor out;
  if (which == "while") {
    tg::Tensor t = l.g.constant(while_threshold(a.iters), tg::DType::f32);
    out = tg::while_loop(
        {l.y}, [&](std::span<const tg::Tensor> v) { return std::pair{tg::greater(tg::reduce_mean(v[0]), t), std::vector{v[0]}}; },
        [&](std::span<const tg::Tensor> v) { return std::vector{step(v[0])}; })[0];
  } else if (which == "for") {
    out = tg::for_loop(a.iters, {l.y}, [&](tg::Tensor, std::span<const tg::Tensor> v) { return std::vector{step(v[0])}; })[0];
  } else if (which == "forsel") {
    tg::Tensor t = l.g.constant(kIfThreshold, tg::DType::f32);
    out = tg::for_loop(a.iters, {l.y}, [&](tg::Tensor, std::span<const tg::Tensor> v) {
      return std::vector{tg::select(tg::greater(tg::reduce_mean(v[0]), t), step(v[0]), v[0] * 1.001f)};
    })[0];
  } else {
    tg::Tensor t = l.g.constant(kIfThreshold, tg::DType::f32);
    out = tg::for_loop(a.iters, {l.y}, [&](tg::Tensor, std::span<const tg::Tensor> v) {
      tg::Tensor y = v[0];
      return tg::if_else(
          tg::greater(tg::reduce_mean(y), t), [&] { return std::vector{step(y)}; },
          [&] { return std::vector{y * 1.001f}; });
    })[0];
  }
  l.mean = tg::reduce_mean(out);
}

std::string python(const std::string& args) {
  return tg::bench::run_python(std::string(TG_SOURCE_DIR) + "/bench/control_flow_peers.py", args);
}

struct PeerResult {
  double ms = 0;
  double mean = 0;
};

// peer -> loop -> result, from the JSON lines.
std::map<std::string, std::map<std::string, PeerResult>> parse_peers(const std::string& out) {
  std::map<std::string, std::map<std::string, PeerResult>> r;
  std::stringstream ss(out);
  auto field = [](const std::string& line, const std::string& key) {
    auto k = line.find("\"" + key + "\": ");
    return k == std::string::npos ? std::string() : line.substr(k + key.size() + 4);
  };
  for (std::string line; std::getline(ss, line);) {
    const std::string peer = field(line, "peer"), loop = field(line, "loop");
    if (peer.empty() || loop.empty()) continue;
    const std::string p = peer.substr(1, peer.find('"', 1) - 1), l = loop.substr(1, loop.find('"', 1) - 1);
    r[p][l] = {std::atof(field(line, "ms").c_str()), std::atof(field(line, "mean").c_str())};
    std::printf("  peer: %s\n", line.c_str());
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (tg::Device::cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA GPU\n");
    return 1;
  }
  const tg::Device gpu = tg::Device::cuda(0);
  const tg::TensorData y0 = tg::TensorData::full({a.n}, tg::DType::f32, 2.0).to(gpu);
  std::printf("control flow on the GPU: %lld floats, %lld iterations, median of %d runs; while and for end "
              "with mean 1 + 0.999^%lld = %.6f\n",
              static_cast<long long>(a.n), static_cast<long long>(a.iters), a.reps, static_cast<long long>(a.iters),
              1 + std::pow(0.999, static_cast<double>(a.iters)));

  std::map<std::string, std::map<std::string, PeerResult>> peers;
  if (a.peer) {
    const std::string common = std::to_string(a.n) + " " + std::to_string(a.iters) + " " + std::to_string(a.reps) +
                               " " + fmt::format("{:.9f} {}", while_threshold(a.iters), kIfThreshold);
    for (const char* p : {"jax", "torch"}) {
      auto r = parse_peers(python(std::string(p) + " " + common));
      for (auto& [k, v] : r) peers[k] = v;
    }
  }

  std::stringstream loops(a.loops);
  for (std::string which; std::getline(loops, which, ',');) {
    Loop l;
    build(l, which, a);
    tg::Executable exe = l.g.compile(gpu, {{l.y, {{a.n}, tg::DType::f32}}}, {l.mean});
    double mean = 0;
    auto once = [&] { mean = exe.run({y0})[0].to(tg::Device::cpu()).element_as_double(0); };
    for (int w = 0; w < 3; ++w) once();  // walks the nodes, records, replays
    const tg::RuntimeStats s0 = tg::runtime_stats();
    std::vector<double> times;
    for (int r = 0; r < a.reps; ++r) {
      const auto t0 = clock_type::now();
      once();
      times.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    }
    const tg::RuntimeStats s1 = tg::runtime_stats();
    const double ms = tg::bench::median(times);
    // Iterations: the loop's own count for while (y_n = 1 + 0.999^n), the trip count otherwise.
    const double iterations = static_cast<double>(a.iters);
    const double us = ms * 1e3 / iterations;
    // The read-back of the mean is one host wait per run.
    std::printf("%-6s tg: %8.3f ms  %6.2f us/iteration  mean %.6f  host waits/run %.2f  graph launches/run %.2f\n",
                which.c_str(), ms, us, mean, static_cast<double>(s1.host_waits - s0.host_waits) / a.reps,
                static_cast<double>(s1.graph_launches - s0.graph_launches) / a.reps);
    for (const auto& [peer, byloop] : peers) {
      auto it = byloop.find(which);
      if (it == byloop.end()) continue;
      const double pus = it->second.ms * 1e3 / iterations;
      std::printf("%-6s %-5s %8.3f ms  %6.2f us/iteration  mean %.6f  %s / tg = %.2fx\n", which.c_str(), peer.c_str(),
                  it->second.ms, pus, it->second.mean, peer.c_str(), pus / us);
    }
    if (which == "forsel") continue;
    const double limit = which == "while" ? 4 : which == "for" ? 3 : 8;
    std::printf("%-6s check: %.2f us/iteration <= %.0f: %s", which.c_str(), us, limit, us <= limit ? "met" : "NOT met");
    auto jax = peers.find("jax");
    if (jax != peers.end() && jax->second.count(which) && which != "forif") {
      const double ratio = jax->second.at(which).ms / ms, want = which == "while" ? 5 : 2.5;
      std::printf("; JAX / tg %.2fx >= %.1fx: %s", ratio, want, ratio >= want ? "met" : "NOT met");
    }
    std::printf("\n");
  }
  return 0;
}
