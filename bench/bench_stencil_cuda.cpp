// Stencil, pooling and gather kernels on the GPU against PyTorch, in the same invocation on the
// same device (issue 18). Rows (fp32):
//   laplacian   5-point Laplacian on 8192x8192, reflect boundary (tg::stencil, 3x3 window;
//               PyTorch: F.pad(reflect) + conv2d)
//   stencil3d   7-point stencil on 512^3, zero boundary (tg::stencil, 3x3x3 window;
//               PyTorch: conv3d, padding 1)
//   maxpool     3x3 max pool, stride 1, padding 1, on [1, 1, 8192, 8192] NCHW
//   gather_nd   [32, 256, 256, 16] by [32, 65536, 2] (y, x) pairs, batch_dims 1 (PyTorch:
//               advanced indexing x[b, y, x])
//   gather      1M rows of 64 floats from a 256 MB table (PyTorch: index_select)
//   laplacian_const, stencil3d_const
//               the same with the weights a graph constant: what a compiled
//               `stencil(x, g.constant(w))` runs, the fused_stencil kernel with the weights
//               folded into the code (passes/fuse_stencil.cpp; its zero taps skipped). PyTorch: the
//               row without the suffix.
//   lrn         sum of squares over a 5-channel window of [16, 64, 128, 128] NCHW: the window
//               sum of x*x (tg::stencil, [5, 1, 1] window, zero boundary; PyTorch: avg_pool3d of
//               the same squares, i.e. the sum / 5 in one kernel), on a tensor standing
//               for the squares (made beforehand)
// Indices are int64 and uniformly random (Philox) over tables larger than the 60 MB L2.
//
// What is timed: the op's kernels only, as PyTorch's side times its op's kernels: the CUDA
// backend's kernel for the op (the same function the runtime calls) run through a minimal set of
// run services (the stream, scratch allocated once, a device error record), 20 calls between two
// CUDA events after warm-up calls (which compile the generated kernels), the median of 7 such
// rounds. Effective TB/s = (bytes the op must read once + bytes it writes) / time. Each row
// also checks 4096 random outputs against a float64 evaluation on the host.
//
// Usage: tg_bench_stencil_cuda [--jobs laplacian,laplacian_const,stencil3d,stencil3d_const,maxpool,gather_nd,
//                               gather,lrn] [--no-peer]
//                              [--tiles "by,ry,rz,min_blocks,stages,vector,skip,march,bx,col;..."]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "bench_util.h"
#include "ir/graph.h"
#include "ops/boundary.h"
#include "tg/tg.h"

namespace {

using tg::DType;
using tg::Shape;
using tg::TensorData;

struct Args {
  std::string jobs = "laplacian,laplacian_const,stencil3d,stencil3d_const,maxpool,gather_nd,gather,lrn";
  bool peer = true;
  /// --tiles "by,ry,rz,min_blocks,stages,vector,skip,march,bx,col;...": stencil rows also timed under each
  /// (TG_STENCIL_TILE values)
  std::string tiles;
};

/// Tile shapes (TG_STENCIL_TILE values) the stencil and max-pool rows are also timed under.
std::vector<std::string> g_tiles;

Args parse(int argc, char** argv) {
  Args a;
  tg::bench::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--jobs")) a.jobs = f.value();
    else if (f.is("--no-peer")) a.peer = false;
    else if (f.is("--tiles")) a.tiles = f.value();
    else f.unknown();
  }
  return a;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

/// The run services a kernel sees (backends/kernel.h), for kernels run outside an executable.
class BenchRun : public tg::backends::RunServices {
 public:
  BenchRun() {
    cuda_ok(cudaStreamCreate(&stream_), "cudaStreamCreate");
    cuda_ok(cudaMalloc(&record_, sizeof(tg::backends::DeviceErrorRecord)), "cudaMalloc");
    cuda_ok(cudaMemset(record_, 0, sizeof(tg::backends::DeviceErrorRecord)), "cudaMemset");
  }
  void* stream() override { return stream_; }
  /// Grows only during the warm-up calls (the timed ones ask for what they asked before).
  void* workspace(size_t bytes) override {
    if (bytes > bytes_) {
      if (scratch_) cuda_ok(cudaFree(scratch_), "cudaFree");
      cuda_ok(cudaMalloc(&scratch_, bytes), "cudaMalloc");
      bytes_ = bytes;
    }
    return scratch_;
  }
  tg::backends::DeviceErrorSlot device_error(tg::backends::DeviceErrorFormatter) override { return {record_, 1}; }
  const tg::backends::DeviceErrorRecord* write_guard() override { return nullptr; }
  /// The device error record's tag (0: no kernel found bad input).
  unsigned long long error_tag() {
    tg::backends::DeviceErrorRecord r;
    cuda_ok(cudaMemcpy(&r, record_, sizeof r, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return r.tag;
  }
  cudaStream_t cuda_stream() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  tg::backends::DeviceErrorRecord* record_ = nullptr;
  void* scratch_ = nullptr;
  size_t bytes_ = 0;
};

/// Runs the CUDA kernel of `node` on `inputs` into a new output of the node's output type.
struct KernelCall {
  tg::ir::Node node;
  std::vector<TensorData> inputs;
  std::vector<TensorData> outputs;
  BenchRun* run = nullptr;
  void operator()() {
    const auto& backend = tg::backends::backend_for(tg::Device::cuda(0));
    tg::backends::Kernel k = backend.kernels().get(node.kind);
    tg::backends::KernelContext ctx{node, inputs, outputs, tg::Device::cuda(0), tg::ComputePrecision::f32, run};
    k(ctx);
  }
};

KernelCall make_call(tg::ir::OpKind kind, tg::ir::Attrs attrs, std::vector<TensorData> inputs, tg::TensorType out,
                     BenchRun& run) {
  KernelCall c;
  c.node.kind = kind;
  c.node.attrs = std::move(attrs);
  c.node.outputs = {out};
  c.inputs = std::move(inputs);
  c.outputs.emplace_back(out.shape, out.dtype, tg::Device::cuda(0));
  c.run = &run;
  return c;
}

/// Median over 7 rounds of the mean time of 20 calls (ms), after 3 warm-up calls.
double time_ms(KernelCall& call) {
  cudaStream_t s = call.run->cuda_stream();
  for (int i = 0; i < 3; ++i) call();
  cuda_ok(cudaStreamSynchronize(s), "warm-up");
  cudaEvent_t a, b;
  cuda_ok(cudaEventCreate(&a), "event");
  cuda_ok(cudaEventCreate(&b), "event");
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    cuda_ok(cudaEventRecord(a, s), "record");
    for (int i = 0; i < 20; ++i) call();
    cuda_ok(cudaEventRecord(b, s), "record");
    cuda_ok(cudaEventSynchronize(b), "sync");
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
    rounds.push_back(ms / 20.0);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return tg::bench::median(rounds);
}

/// time_ms of the planner's tile shape (under the TG_STENCIL_TILE the bench was started with, if
/// any), after printing the time under each of g_tiles (tuning: TG_STENCIL_TILE, read at each
/// call; the generated kernels are cached per tile shape).
double time_tiles(KernelCall& call) {
  const char* outer = std::getenv("TG_STENCIL_TILE");
  const std::string saved = outer != nullptr ? outer : "";
  for (const std::string& t : g_tiles) {
    setenv("TG_STENCIL_TILE", t.c_str(), 1);
    std::printf("  tile %s: %.4f ms\n", t.c_str(), time_ms(call));
  }
  if (outer != nullptr) {
    setenv("TG_STENCIL_TILE", saved.c_str(), 1);
  } else {
    unsetenv("TG_STENCIL_TILE");
  }
  return time_ms(call);
}

/// Uniform floats in [-1, 1) on the GPU (Philox on the host, uploaded).
TensorData device_uniform(Shape shape, uint64_t seed) {
  return TensorData::random_uniform(std::move(shape), -1.f, 1.f, seed).to(tg::Device::cuda(0));
}

/// Uniform int64 indices in [0, bound) for `count` entries, each `period` entries cycling through
/// `bounds`.
TensorData device_indices(Shape shape, const std::vector<int64_t>& bounds, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = bounds[static_cast<size_t>(i) % bounds.size()];
    v[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % static_cast<uint64_t>(b));
  }
  return TensorData::from_vector<int64_t>(v, std::move(shape)).to(tg::Device::cuda(0));
}

/// The number of sampled outputs whose value differs from `want(i)` (float64) beyond a relative
/// 1e-5 (|d| <= 1e-5 * (1 + |want|)); `got` is the output copied to the host.
int check_samples(const TensorData& got, const std::function<double(int64_t)>& want) {
  const std::vector<float> y = got.to_vector<float>();
  std::mt19937_64 rng(7);
  int bad = 0;
  for (int s = 0; s < 4096; ++s) {
    const int64_t i = static_cast<int64_t>(rng() % y.size());
    const double w = want(i), g = y[static_cast<size_t>(i)];
    if (!(std::fabs(g - w) <= 1e-5 * (1 + std::fabs(w)))) {
      if (bad < 3) std::printf("  mismatch at %lld: got %.8g, want %.8g\n", static_cast<long long>(i), g, w);
      ++bad;
    }
  }
  return bad;
}

struct Result {
  double ms = 0;
  double bytes = 0;
  int mismatches = 0;
};

/// A window sum over the last dims of x (host float64): out index i of y (shape ys), window w
/// (row-major), padding `before`, boundary `mode`.
double window_sum(const std::vector<float>& x, const Shape& xs, const Shape& ys, const std::vector<double>& w,
                  const Shape& ws, const std::vector<int64_t>& before, tg::BoundaryMode mode, int64_t i) {
  const size_t k = ws.size(), lead = xs.size() - k;
  std::vector<int64_t> o(ys.size());
  for (size_t d = ys.size(); d-- > 0;) {
    o[d] = i % ys[d];
    i /= ys[d];
  }
  int64_t base = 0;
  for (size_t d = 0; d < lead; ++d) base = base * xs[d] + o[d];
  int64_t block = 1;
  for (size_t d = lead; d < xs.size(); ++d) block *= xs[d];
  double acc = 0;
  std::vector<int64_t> t(k, 0);
  for (size_t n = 0; n < w.size(); ++n) {
    int64_t off = 0;
    bool outside = false;
    for (size_t d = 0; d < k; ++d) {
      const int64_t c = tg::ops::boundary_index(o[lead + d] + t[d] - before[d], xs[lead + d], mode);
      outside = outside || c < 0;
      off = off * xs[lead + d] + std::max<int64_t>(c, 0);
    }
    if (!outside) acc += w[n] * x[static_cast<size_t>(base * block + off)];
    for (size_t d = k; d-- > 0 && ++t[d] == ws[d];) t[d] = 0;
  }
  return acc;
}

Result stencil_job(BenchRun& run, Shape xs, Shape ws, std::vector<double> weights, tg::BoundaryMode mode,
                   bool constant_weights = false) {
  const size_t k = ws.size();
  TensorData x = device_uniform(xs, 1);
  std::vector<float> wf(weights.begin(), weights.end());
  TensorData w = TensorData::from_vector<float>(wf, ws).to(tg::Device::cuda(0));
  tg::StencilDesc d;
  d.strides.assign(k, 1);
  d.dilations.assign(k, 1);
  d.explicit_padding.clear();
  std::vector<int64_t> before;
  for (size_t i = 0; i < k; ++i) {
    d.explicit_padding.push_back(ws[i] / 2);
    d.explicit_padding.push_back(ws[i] / 2);
    before.push_back(ws[i] / 2);
  }
  d.boundary_mode = mode;
  KernelCall call = make_call(tg::ir::OpKind::stencil, d, {x, w}, {xs, DType::f32}, run);
  if (constant_weights) {
    tg::ir::FusedStencilAttrs f;
    f.stencil = d;
    f.window = ws;
    f.weights = weights;
    f.prologue.shape = xs;
    f.prologue.outputs = {0};
    f.epilogue.shape = xs;
    f.epilogue.outputs = {0};
    call = make_call(tg::ir::OpKind::fused_stencil, f, {x}, {xs, DType::f32}, run);
  }
  Result r;
  r.ms = time_tiles(call);
  r.bytes = 2.0 * static_cast<double>(x.nbytes());
  const std::vector<float> xh = x.to(tg::Device::cpu()).to_vector<float>();
  r.mismatches = check_samples(call.outputs[0].to(tg::Device::cpu()), [&](int64_t i) {
    return window_sum(xh, xs, xs, weights, ws, before, mode, i);
  });
  return r;
}

Result maxpool_job(BenchRun& run) {
  const Shape xs{1, 1, 8192, 8192};
  TensorData x = device_uniform(xs, 2);
  tg::Pool2dDesc d;
  d.kernel_size = {3, 3};
  d.strides = {1, 1};
  d.dilations = {1, 1};
  d.padding = tg::Padding::explicit_padding;
  d.explicit_padding = {1, 1, 1, 1};
  d.data_layout = tg::Layout::nchw;
  KernelCall call = make_call(tg::ir::OpKind::max_pool2d, d, {x}, {xs, DType::f32}, run);
  Result r;
  r.ms = time_tiles(call);
  r.bytes = 2.0 * static_cast<double>(x.nbytes());
  const std::vector<float> xh = x.to(tg::Device::cpu()).to_vector<float>();
  r.mismatches = check_samples(call.outputs[0].to(tg::Device::cpu()), [&](int64_t i) {
    const int64_t oy = i / 8192, ox = i % 8192;
    double m = -INFINITY;
    for (int64_t dy = -1; dy <= 1; ++dy)
      for (int64_t dx = -1; dx <= 1; ++dx) {
        const int64_t y = oy + dy, xx = ox + dx;
        if (y >= 0 && y < 8192 && xx >= 0 && xx < 8192) m = std::max<double>(m, xh[static_cast<size_t>(y * 8192 + xx)]);
      }
    return m;
  });
  return r;
}

Result gather_nd_job(BenchRun& run) {
  const Shape xs{32, 256, 256, 16};
  TensorData x = device_uniform(xs, 3);
  TensorData idx = device_indices({32, 65536, 2}, {256, 256}, 4);
  tg::GatherNdDesc d;
  d.batch_dims = 1;
  KernelCall call = make_call(tg::ir::OpKind::gather_nd, d, {x, idx}, {{32, 65536, 16}, DType::f32}, run);
  Result r;
  r.ms = time_ms(call);
  r.bytes = 2.0 * static_cast<double>(call.outputs[0].nbytes()) + static_cast<double>(idx.nbytes());
  const std::vector<float> xh = x.to(tg::Device::cpu()).to_vector<float>();
  const std::vector<int64_t> ih = idx.to(tg::Device::cpu()).to_vector<int64_t>();
  r.mismatches = check_samples(call.outputs[0].to(tg::Device::cpu()), [&](int64_t i) {
    const int64_t row = i / 16, c = i % 16, b = row / 65536;
    const int64_t y = ih[static_cast<size_t>(row * 2)], xx = ih[static_cast<size_t>(row * 2 + 1)];
    return static_cast<double>(xh[static_cast<size_t>(((b * 256 + y) * 256 + xx) * 16 + c)]);
  });
  if (run.error_tag() != 0) r.mismatches += 1;
  return r;
}

Result gather_job(BenchRun& run) {
  const int64_t rows = 1 << 20, cols = 64;
  TensorData table = device_uniform({rows, cols}, 5);
  TensorData idx = device_indices({rows}, {rows}, 6);
  tg::GatherDesc d;
  d.axis = 0;
  KernelCall call = make_call(tg::ir::OpKind::gather, d, {table, idx}, {{rows, cols}, DType::f32}, run);
  Result r;
  r.ms = time_ms(call);
  r.bytes = 2.0 * static_cast<double>(call.outputs[0].nbytes()) + static_cast<double>(idx.nbytes());
  const std::vector<float> th = table.to(tg::Device::cpu()).to_vector<float>();
  const std::vector<int64_t> ih = idx.to(tg::Device::cpu()).to_vector<int64_t>();
  r.mismatches = check_samples(call.outputs[0].to(tg::Device::cpu()), [&](int64_t i) {
    return static_cast<double>(th[static_cast<size_t>(ih[static_cast<size_t>(i / cols)] * cols + i % cols)]);
  });
  if (run.error_tag() != 0) r.mismatches += 1;
  return r;
}

std::string python(const std::string& args) {
  return tg::bench::run_python(std::string(TG_SOURCE_DIR) + "/bench/stencil_torch.py", args);
}

/// job -> PyTorch ms, from the peer's JSON lines {"job": "...", "ms": ...}.
std::map<std::string, double> peer_times(const std::string& out) {
  std::map<std::string, double> r;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);) {
    auto j = line.find("\"job\": \""), t = line.find("\"ms\": ");
    if (j == std::string::npos || t == std::string::npos) {
      if (!line.empty()) std::printf("  peer: %s\n", line.c_str());
      continue;
    }
    j += 8;
    r[line.substr(j, line.find('"', j) - j)] = std::atof(line.c_str() + t + 6);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  {
    std::stringstream ts(a.tiles);
    for (std::string t; std::getline(ts, t, ';');) {
      if (!t.empty()) g_tiles.push_back(t);
    }
  }
  if (tg::Device::cuda_device_count() == 0) {
    std::fprintf(stderr, "tg_bench_stencil_cuda: no CUDA GPU usable here\n");
    return 1;
  }
  BenchRun run;
  std::map<std::string, Result> ours;
  std::vector<std::string> order;
  std::stringstream ss(a.jobs);
  int failures = 0;
  for (std::string job; std::getline(ss, job, ',');) {
    try {
      Result r;
      using B = tg::BoundaryMode;
      if (job == "laplacian" || job == "laplacian_const") {
        r = stencil_job(run, {8192, 8192}, {3, 3}, {0, 1, 0, 1, -4, 1, 0, 1, 0}, B::reflect, job != "laplacian");
      } else if (job == "stencil3d" || job == "stencil3d_const") {
        std::vector<double> w(27, 0.0);
        for (int i : {4, 10, 12, 14, 16, 22}) w[static_cast<size_t>(i)] = 1;
        w[13] = -6;
        r = stencil_job(run, {512, 512, 512}, {3, 3, 3}, w, B::zero, job != "stencil3d");
      } else if (job == "maxpool") {
        r = maxpool_job(run);
      } else if (job == "gather_nd") {
        r = gather_nd_job(run);
      } else if (job == "gather") {
        r = gather_job(run);
      } else if (job == "lrn") {
        r = stencil_job(run, {16, 64, 128, 128}, {5, 1, 1}, {1, 1, 1, 1, 1}, B::zero);
      } else {
        std::printf("unknown job %s\n", job.c_str());
        ++failures;
        continue;
      }
      std::printf("%s: tg %.4f ms, %.2f TB/s effective, %d of 4096 sampled outputs wrong\n", job.c_str(), r.ms,
                  r.bytes / (r.ms * 1e-3) / 1e12, r.mismatches);
      std::fflush(stdout);
      if (r.mismatches) ++failures;
      ours[job] = r;
      order.push_back(job);
    } catch (const std::exception& e) {
      std::printf("%s failed: %s\n", job.c_str(), e.what());
      ++failures;
    }
  }
  if (!a.peer) return failures ? 1 : 0;
  // The _const rows compare with PyTorch's row of the same job.
  auto base = [](const std::string& job) {
    const size_t at = job.find("_const");
    return at == std::string::npos ? job : job.substr(0, at);
  };
  std::string peer_jobs;
  for (const std::string& job : order) {
    if (("," + peer_jobs + ",").find("," + base(job) + ",") == std::string::npos) {
      peer_jobs += (peer_jobs.empty() ? "" : ",") + base(job);
    }
  }
  const std::map<std::string, double> peer = peer_times(python(peer_jobs));
  std::printf("\n| job | tg ms | tg TB/s | PyTorch ms | PyTorch TB/s | PyTorch / tg |\n|---|---|---|---|---|---|\n");
  for (const std::string& job : order) {
    const Result& r = ours[job];
    auto it = peer.find(base(job));
    const double p = it == peer.end() ? 0 : it->second;
    std::printf("| %s | %.4f | %.2f | %.4f | %.2f | %.2f |\n", job.c_str(), r.ms, r.bytes / (r.ms * 1e-3) / 1e12, p,
                p > 0 ? r.bytes / (p * 1e-3) / 1e12 : 0.0, p > 0 ? p / r.ms : 0.0);
  }
  return failures ? 1 : 0;
}
