// CUDA kernels of the conv family: conv2d, conv2d_backward_data, conv2d_backward_weights
// (conv_transpose2d is built from conv2d_backward_data in the graph), with the CPU backend's
// semantics (backends/cpu/conv.cpp), on cuDNN 9: tensor-core problems (bf16/f16, TF32) through the
// graph API (cudnn_conv_graph.cpp: the legacy API misses the sm90 engines), the rest (true f32,
// f64, grouped) through the legacy convolution API.
//
// Algorithm:
//  - Physical layout: NHWC data with KRSC (OHWI) filters when the data is nhwc, NCHW with KCRS
//    (OIHW) otherwise; f64 always runs NCHW. Data in the other layout is permuted into it (and
//    results back); HWIO weights are permuted into OHWI/OIHW (and weight gradients back) by
//    kernels/conv_layout.cu. When cuDNN has no algorithm in the chosen layout, the other one is
//    tried (the negative answer is cached).
//  - Padding: cuDNN pads symmetrically. Asymmetric pads (same with an odd total, explicit) use
//    the smaller pad of each dim in cuDNN and zero-pad the input explicitly by the difference
//    first: conv(x) = conv_sym(pad(x)); backward data computes the padded input's gradient and
//    crops it; backward weights reads the padded input.
//  - Arithmetic: f32 tensors at precision f32 run with CUDNN_FMA_MATH (true f32, no TF32);
//    precision tf32 lets cuDNN use TF32 tensor cores (CUDNN_DEFAULT_MATH); precision bf16/f16
//    rounds input and weights to bf16/f16 (kernels/lowp_cast.cu), runs cuDNN with f32 compute
//    and widens the (16-bit) result back to f32. f16/bf16 tensors: f32 compute, tensor cores.
//    f64: double compute, NCHW.
//  - The algorithm is chosen once per (device, pass, shapes, layout, dtype, math) by measurement
//    (graph API: heuristics' candidates timed; legacy: cudnnFind*AlgorithmEx; on the real
//    buffers, at most 256 MiB of workspace) and cached with
//    its descriptors in a mutex-protected map. While the stream is being captured into a CUDA
//    graph (Find would synchronize) the heuristic cudnnGet*Algorithm_v7 answer is used, not
//    cached. Deterministic executables (CompileOptions::deterministic) take the heuristics'
//    first deterministic algorithm/engine, untimed (the same in every process), and cache it. Workspace and scratch buffers from the run's workspace (declared scratch); the
//    search's workspace is a transient block of the caching allocator.
// Limits: tensors of at most 2^31 - 1 elements (cuDNN's legacy API takes int dims).
// Empty outputs launch nothing; an empty input gives zeros.
#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "backends/cuda/algo_choices.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cudnn_conv_graph.h"
#include "backends/cuda/kernels/conv_layout.h"
#include "backends/cuda/kernels/lowp_cast.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"
#include "core/stats.h"
#include "ir/attrs.h"
#include "ops/conv_geometry.h"

namespace tg::cuda {
namespace {

enum class Pass : int { forward, backward_data, backward_weights };

constexpr size_t kFindWorkspace = size_t{256} << 20;

// Memory order of the logical axes: data (n, c, h, w), weights (o, i, kh, kw).
using Axes = std::array<int, 4>;
constexpr Axes kNCHW{0, 1, 2, 3}, kNHWC{0, 2, 3, 1};
constexpr Axes kOIHW{0, 1, 2, 3}, kHWIO{2, 3, 1, 0}, kOHWI{0, 2, 3, 1};
using Dims = std::array<int64_t, 4>;  // logical order

// Element strides, in logical order, of a contiguous tensor of logical dims `d` stored in `axes`.
Dims logical_strides(const Dims& d, const Axes& axes) {
  Dims s{};
  int64_t stride = 1;
  for (int j = 3; j >= 0; --j) {
    s[axes[j]] = stride;
    stride *= d[axes[j]];
  }
  return s;
}

int64_t count(const Dims& d) { return d[0] * d[1] * d[2] * d[3]; }

// A device buffer the next step reads; `hold` keeps a scratch block alive until the work is queued.
struct Buf {
  const void* p = nullptr;
  std::shared_ptr<void> hold;
};

struct Env {
  KernelContext& ctx;
  DeviceContext& dc;
  cudaStream_t stream;
  const char* op;
  cudnnHandle_t cudnn;  ///< locked for this kernel and bound to `stream`
};

void* scratch(Env& e, Buf&, size_t bytes) { return workspace_of(e.ctx, std::max<size_t>(bytes, 1)); }

// src (logical dims d, layout `from`) -> dst in layout `to`; elements of `esize` bytes.
void permute(Env& e, const void* src, void* dst, const Dims& d, const Axes& from, const Axes& to,
             int esize) {
  const Dims ls = logical_strides(d, from);
  int64_t dims[4], strides[4];
  for (int j = 0; j < 4; ++j) {
    dims[j] = d[to[j]];
    strides[j] = ls[to[j]];
  }
  kernels::launch_permute4(src, dst, dims, strides, esize, e.stream);
  check_launch(e.op, "permute4");
}

// src (logical dims s) -> dst (logical dims d), shifted by `offset` (logical), zero outside src.
void window(Env& e, const void* src, void* dst, const Dims& s, const Dims& d, const Dims& offset,
            const Axes& axes, int esize) {
  int64_t sd[4], dd[4], off[4];
  for (int j = 0; j < 4; ++j) {
    sd[j] = s[axes[j]];
    dd[j] = d[axes[j]];
    off[j] = offset[axes[j]];
  }
  kernels::launch_window_copy4(src, dst, sd, dd, off, esize, e.stream);
  check_launch(e.op, "window_copy4");
}

// How the op runs: storage dtype, the dtype cuDNN sees, layouts.
struct Setup {
  DType dt;                 // tensors' dtype
  DType rdt;                // what cuDNN computes on (bf16/f16 for reduced precision f32)
  bool cast = false;        // dt f32, rdt 16-bit
  bool user_nhwc = true;    // data layout of the op
  Axes user_w = kHWIO;      // weights layout of the op
  bool nhwc = true;         // cuDNN's layout
  int esize() const { return static_cast<int>(dtype_size(rdt)); }
  Axes data_axes() const { return nhwc ? kNHWC : kNCHW; }
  Axes user_data_axes() const { return user_nhwc ? kNHWC : kNCHW; }
  Axes filter_axes() const { return nhwc ? kOHWI : kOIHW; }
};

// The op's data tensor `src` (logical dims d) as cuDNN reads it: cast, permuted, padded by
// (top, bottom, left, right).
// `src` (logical dims d, layout `from`) cast to the compute dtype when the policy asks for it and
// permuted to layout `to`: the tensor itself when neither applies.
Buf cast_and_permute(Env& e, const Setup& s, const void* src, const Dims& d, const Axes& from, const Axes& to) {
  Buf cur{src, nullptr};
  if (s.cast) {
    Buf next;
    void* p = scratch(e, next, static_cast<size_t>(count(d)) * 2);
    kernels::launch_f32_to_lowp(static_cast<const float*>(cur.p), p, count(d), s.rdt == DType::bf16,
                                e.stream);
    check_launch(e.op, "f32_to_lowp");
    next.p = p;
    cur = std::move(next);
  }
  if (from != to) {
    Buf next;
    void* p = scratch(e, next, static_cast<size_t>(count(d)) * s.esize());
    permute(e, cur.p, p, d, from, to, s.esize());
    next.p = p;
    cur = std::move(next);
  }
  return cur;
}

Buf prepare_data(Env& e, const Setup& s, const void* src, const Dims& d,
                 const std::array<int64_t, 4>& pad) {
  Buf cur = cast_and_permute(e, s, src, d, s.user_data_axes(), s.data_axes());
  if (pad[0] + pad[1] + pad[2] + pad[3] > 0) {
    const Dims pd{d[0], d[1], d[2] + pad[0] + pad[1], d[3] + pad[2] + pad[3]};
    Buf next;
    void* p = scratch(e, next, static_cast<size_t>(count(pd)) * s.esize());
    window(e, cur.p, p, d, pd, {0, 0, pad[0], pad[2]}, s.data_axes(), s.esize());
    next.p = p;
    cur = std::move(next);
  }
  return cur;
}

// The op's weights (logical dims d) in cuDNN's filter layout and dtype, made in this run's
// scratch. (They are not cached across runs: variables are updated in place and arena values are
// rewritten every run, so a buffer's address says nothing about its contents.)
Buf prepare_weights(Env& e, const Setup& s, const TensorData& w, const Dims& d) {
  if (!s.cast && s.user_w == s.filter_axes()) return Buf{w.storage_ptr(), nullptr};
  return cast_and_permute(e, s, w.storage_ptr(), d, s.user_w, s.filter_axes());
}


// ---- cuDNN plans ----------------------------------------------------------------------------

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::f64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

struct PlanKey {
  int device;
  Pass pass;
  DType rdt;
  cudnnMathType_t math;
  bool nhwc;
  Dims x, w, y;  // cuDNN's (padded) input, filter and output dims, logical order
  int64_t groups, ph, pw, sh, sw, dh, dw;
  bool graph;  // through cuDNN's graph API (cudnn_conv_graph.h), else the legacy API
  bool deterministic;  // CompileOptions::deterministic: heuristic choice, deterministic engines
  auto tie() const {
    return std::tie(device, pass, rdt, math, nhwc, x, w, y, groups, ph, pw, sh, sw, dh, dw, graph, deterministic);
  }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

struct Plan {
  std::string choice_key, choice;  // as saved executables store it (algo_choices.h); "" while unknown
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  bool ok = false;  // false: cuDNN has no algorithm for this key
  std::shared_ptr<cudnn_graph::ConvPlan> graph;  // set: run through the graph API
  int algo = 0;
  size_t workspace = 0;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

std::mutex g_plans_mu;
std::map<PlanKey, std::unique_ptr<Plan>> g_plans;

int to_int(int64_t v, const char* op) {
  if (v > INT_MAX) fail(ErrorCode::unsupported, op, "a dimension of {} exceeds cuDNN's int range", v);
  return static_cast<int>(v);
}

void make_descriptors(Plan& p, const PlanKey& k, const char* op) {
  const cudnnTensorFormat_t fmt = k.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const cudnnDataType_t t = cudnn_type(k.rdt);
  for (const Dims* d : {&k.x, &k.y, &k.w}) {
    if (count(*d) > INT_MAX) {
      fail(ErrorCode::unsupported, op, "tensors of more than 2^31 - 1 elements are not supported");
    }
  }
  check(cudnnCreateTensorDescriptor(&p.x), op, "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&p.y), op, "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&p.w), op, "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&p.conv), op, "cudnnCreateConvolutionDescriptor");
  check(cudnnSetTensor4dDescriptor(p.x, fmt, t, to_int(k.x[0], op), to_int(k.x[1], op),
                                   to_int(k.x[2], op), to_int(k.x[3], op)),
        op, "cudnnSetTensor4dDescriptor(x)");
  check(cudnnSetTensor4dDescriptor(p.y, fmt, t, to_int(k.y[0], op), to_int(k.y[1], op),
                                   to_int(k.y[2], op), to_int(k.y[3], op)),
        op, "cudnnSetTensor4dDescriptor(y)");
  check(cudnnSetFilter4dDescriptor(p.w, t, fmt, to_int(k.w[0], op), to_int(k.w[1], op),
                                   to_int(k.w[2], op), to_int(k.w[3], op)),
        op, "cudnnSetFilter4dDescriptor");
  check(cudnnSetConvolution2dDescriptor(p.conv, to_int(k.ph, op), to_int(k.pw, op), to_int(k.sh, op),
                                        to_int(k.sw, op), to_int(k.dh, op), to_int(k.dw, op),
                                        CUDNN_CROSS_CORRELATION,
                                        k.rdt == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
        op, "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionGroupCount(p.conv, to_int(k.groups, op)), op,
        "cudnnSetConvolutionGroupCount");
  check(cudnnSetConvolutionMathType(p.conv, k.math), op, "cudnnSetConvolutionMathType");
  int n = 0, c = 0, h = 0, w = 0;
  check(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &n, &c, &h, &w), op,
        "cudnnGetConvolution2dForwardOutputDim");
  if (n != k.y[0] || c != k.y[1] || h != k.y[2] || w != k.y[3]) {
    fail(ErrorCode::internal, op, "cuDNN's output dims [{},{},{},{}] differ from [{},{},{},{}]", n,
         c, h, w, k.y[0], k.y[1], k.y[2], k.y[3]);
  }
}

// Whether a result with math type `m` keeps the requested arithmetic (f32: no tensor cores).
bool math_allowed(const PlanKey& k, cudnnMathType_t m) {
  if (k.math != CUDNN_FMA_MATH) return true;
  return m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// Picks the first usable result (results come fastest first) into `p`.
template <typename Perf>
void pick(Plan& p, const PlanKey& k, const Perf* perf, int n, size_t max_workspace) {
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > max_workspace) continue;
    if (!math_allowed(k, perf[i].mathType)) continue;
    if (k.deterministic && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
    p.ok = true;
    p.algo = static_cast<int>(perf[i].algo);
    p.workspace = perf[i].memory;
    // Run with the math type the algorithm was measured with (f32 keeps FMA only).
    const cudnnMathType_t m = k.math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : perf[i].mathType;
    cudnnSetConvolutionMathType(p.conv, m);
    return;
  }
}

cudnn_graph::ConvSpec spec_of(const PlanKey& k);

// Chooses the algorithm: measured (Find, on the real buffers a, b and the output) or, while the
// stream is being captured, heuristic. a/b: x and w (forward), dy and w (backward data), x and dy
// (backward weights).
void choose(Env& e, Plan& p, const PlanKey& k, const void* a, const void* b, void* out,
            bool measure) {
  cudnnHandle_t h = e.cudnn;
  // The search's workspace: transient (only the chosen algorithm's size is declared scratch).
  std::shared_ptr<void> search_ws;
  auto search_workspace = [&](size_t bytes) {
    search_ws = device_allocate(e.dc.device, std::max<size_t>(bytes, 1));
    return search_ws.get();
  };
  if (measure) stats::add(stats::Counter::autotune_runs);
  if (k.graph) {
    const cudnn_graph::ConvSpec spec = spec_of(k);
    p.graph = cudnn_graph::make_conv_plan(h, e.stream, spec, a, b, out, search_workspace, kFindWorkspace, measure,
                                          e.op);
    if (p.graph) {
      p.ok = true;
      p.workspace = cudnn_graph::workspace_size(*p.graph);
      return;
    }
  }
  constexpr int kMax = 16;
  int n = 0;
  void* ws = measure ? search_workspace(kFindWorkspace) : nullptr;
  const size_t limit = kFindWorkspace;
  switch (k.pass) {
    case Pass::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kMax];
      const cudnnStatus_t st =
          measure ? cudnnFindConvolutionForwardAlgorithmEx(h, p.x, a, p.w, b, p.conv, p.y, out,
                                                           kMax, &n, perf, ws, limit)
                  : cudnnGetConvolutionForwardAlgorithm_v7(h, p.x, p.w, p.conv, p.y, kMax, &n, perf);
      if (st == CUDNN_STATUS_SUCCESS) pick(p, k, perf, n, limit);
      break;
    }
    case Pass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
      const cudnnStatus_t st =
          measure ? cudnnFindConvolutionBackwardDataAlgorithmEx(h, p.w, b, p.y, a, p.conv, p.x, out,
                                                                kMax, &n, perf, ws, limit)
                  : cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w, p.y, p.conv, p.x, kMax, &n,
                                                                perf);
      if (st == CUDNN_STATUS_SUCCESS) pick(p, k, perf, n, limit);
      break;
    }
    case Pass::backward_weights: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
      const cudnnStatus_t st =
          measure ? cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p.x, a, p.y, b, p.conv, p.w,
                                                                  out, kMax, &n, perf, ws, limit)
                  : cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x, p.y, p.conv, p.w, kMax,
                                                                  &n, perf);
      if (st == CUDNN_STATUS_SUCCESS) pick(p, k, perf, n, limit);
      break;
    }
  }
}

// ---- stored choices (saved executables, algo_choices.h) ---------------------------------------

std::string dims_text(const Dims& d) { return fmt::format("{},{},{},{}", d[0], d[1], d[2], d[3]); }

// The plan cache key without the device, as algo_choices stores it.
std::string choice_key(const PlanKey& k) {
  return fmt::format("algo:cudnn_conv/v1 pass={} rdt={} math={} nhwc={} x={} w={} y={} groups={} pad={},{} "
                     "stride={},{} dil={},{} graph={} det={}",
                     static_cast<int>(k.pass), dtype_name(k.rdt), static_cast<int>(k.math), k.nhwc ? 1 : 0,
                     dims_text(k.x), dims_text(k.w), dims_text(k.y), k.groups, k.ph, k.pw, k.sh, k.sw, k.dh, k.dw,
                     k.graph ? 1 : 0, k.deterministic ? 1 : 0);
}

// "none" (no algorithm), "graph <engine> <knob type>:<value>...", "legacy <algo> <math type>".
std::string encode_choice(const Plan& p, const char* op) {
  if (!p.ok) return "none";
  if (p.graph) {
    const std::optional<cudnn_graph::EngineChoice> c = cudnn_graph::engine_choice(*p.graph, op);
    if (!c) return "";
    std::string s = fmt::format("graph {}", c->engine);
    for (const auto& [t, v] : c->knobs) s += fmt::format(" {}:{}", t, v);
    return s;
  }
  cudnnMathType_t m = CUDNN_DEFAULT_MATH;
  cudnnGetConvolutionMathType(p.conv, &m);
  return fmt::format("legacy {} {}", p.algo, static_cast<int>(m));
}

// Workspace bytes of legacy algorithm `algo` for p's descriptors; false when cuDNN refuses it.
bool legacy_workspace(cudnnHandle_t h, const Plan& p, Pass pass, int algo, size_t* bytes) {
  switch (pass) {
    case Pass::forward:
      return cudnnGetConvolutionForwardWorkspaceSize(h, p.x, p.w, p.conv, p.y,
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes) ==
             CUDNN_STATUS_SUCCESS;
    case Pass::backward_data:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w, p.y, p.conv, p.x,
                                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes) ==
             CUDNN_STATUS_SUCCESS;
    case Pass::backward_weights:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                 h, p.x, p.y, p.conv, p.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes) ==
             CUDNN_STATUS_SUCCESS;
  }
  return false;
}

cudnn_graph::ConvSpec spec_of(const PlanKey& k) {
  cudnn_graph::ConvSpec spec;
  spec.pass = static_cast<cudnn_graph::ConvPass>(k.pass);
  spec.io = cudnn_type(k.rdt);
  spec.nhwc = k.nhwc;
  spec.x = k.x;
  spec.w = k.w;
  spec.y = k.y;
  spec.pad_h = k.ph;
  spec.pad_w = k.pw;
  spec.stride_h = k.sh;
  spec.stride_w = k.sw;
  spec.dil_h = k.dh;
  spec.dil_w = k.dw;
  spec.deterministic = k.deterministic;
  return spec;
}

// Sets `p` (descriptors made) from a stored choice; false when the text is malformed or cuDNN
// refuses the choice (the caller then chooses as without one).
bool apply_choice(cudnnHandle_t handle, const char* op, Plan& p, const PlanKey& k, const std::string& choice) {
  std::istringstream in(choice);
  std::string kind;
  in >> kind;
  if (kind == "none") {
    p.ok = false;
    return in.eof() || (in >> std::ws).eof();
  }
  if (kind == "graph") {
    if (!k.graph) return false;
    cudnn_graph::EngineChoice c;
    if (!(in >> c.engine)) return false;
    std::string knob;
    while (in >> knob) {
      int64_t t = 0, v = 0;
      char colon = 0;
      std::istringstream kin(knob);
      if (!(kin >> t >> colon >> v) || colon != ':' || c.knobs.size() >= 64) return false;
      c.knobs.emplace_back(t, v);
    }
    p.graph = cudnn_graph::make_conv_plan_from_choice(handle, spec_of(k), c, kFindWorkspace, op);
    if (!p.graph) return false;
    p.ok = true;
    p.workspace = cudnn_graph::workspace_size(*p.graph);
    return true;
  }
  if (kind == "legacy") {
    int algo = -1, math = -1;
    if (!(in >> algo >> math) || algo < 0 || algo > 64 || math < 0 || math > 3) return false;
    const auto m = static_cast<cudnnMathType_t>(math);
    if (!math_allowed(k, m)) return false;
    if (cudnnSetConvolutionMathType(p.conv, k.math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : m) != CUDNN_STATUS_SUCCESS) {
      return false;
    }
    size_t ws = 0;
    if (!legacy_workspace(handle, p, k.pass, algo, &ws) || ws > kFindWorkspace) return false;
    p.ok = true;
    p.algo = algo;
    p.workspace = ws;
    return true;
  }
  return false;
}

// Runs plan `p` with handle `h` (on its stream); ws: p.workspace bytes.
void execute_with(cudnnHandle_t h, const Plan& p, Pass pass, DType rdt, const void* a, const void* b, void* out,
                  void* ws, const char* op) {
  if (p.graph) {
    cudnn_graph::execute(h, *p.graph, a, b, out, ws, op);
    return;
  }
  const float af = 1.0f, bf = 0.0f;
  const double ad = 1.0, bd = 0.0;
  const void* alpha = rdt == DType::f64 ? static_cast<const void*>(&ad) : &af;
  const void* beta = rdt == DType::f64 ? static_cast<const void*>(&bd) : &bf;
  switch (pass) {
    case Pass::forward:
      check(cudnnConvolutionForward(h, alpha, p.x, a, p.w, b, p.conv,
                                    static_cast<cudnnConvolutionFwdAlgo_t>(p.algo), ws, p.workspace,
                                    beta, p.y, out),
            op, "cudnnConvolutionForward");
      break;
    case Pass::backward_data:
      check(cudnnConvolutionBackwardData(h, alpha, p.w, b, p.y, a, p.conv,
                                         static_cast<cudnnConvolutionBwdDataAlgo_t>(p.algo), ws,
                                         p.workspace, beta, p.x, out),
            op, "cudnnConvolutionBackwardData");
      break;
    case Pass::backward_weights:
      check(cudnnConvolutionBackwardFilter(h, alpha, p.x, a, p.y, b, p.conv,
                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.algo), ws,
                                           p.workspace, beta, p.w, out),
            op, "cudnnConvolutionBackwardFilter");
      break;
  }
}

void execute(Env& e, const Plan& p, Pass pass, DType rdt, const void* a, const void* b, void* out) {
  void* ws = p.workspace > 0 ? workspace_of(e.ctx, p.workspace) : nullptr;
  execute_with(e.cudnn, p, pass, rdt, a, b, out, ws, e.op);
}

// ---- one op ---------------------------------------------------------------------------------

struct Problem {
  Pass pass;
  ops::ConvGeometry g;
  Conv2dDesc d;
  std::array<int64_t, 4> extra{};  // explicit zero padding of x (top, bottom, left, right)
  int64_t ph = 0, pw = 0;          // cuDNN's symmetric padding
};

Problem problem_of(const KernelContext& ctx, Pass pass) {
  Problem p;
  p.pass = pass;
  p.d = pass == Pass::forward ? std::get<Conv2dDesc>(ctx.node.attrs)
                              : std::get<ir::ConvBackwardAttrs>(ctx.node.attrs).conv;
  const Shape& a = ctx.inputs[0].shape();
  const Shape& b = ctx.inputs[1].shape();
  const Shape& out = ctx.outputs[0].shape();
  switch (pass) {
    case Pass::forward: p.g = ops::conv_geometry(a, b, p.d); break;
    case Pass::backward_data: p.g = ops::conv_geometry(out, b, p.d); break;
    case Pass::backward_weights: p.g = ops::conv_geometry(b, out, p.d); break;
  }
  const Shape y = ops::data_shape(p.g.y, p.d.data_layout);
  TG_CHECK_INTERNAL(y == (pass == Pass::forward ? out : a),
                    fmt::format("{}: shapes disagree with the geometry", ctx.op_name()));
  p.ph = std::min(p.g.pad_top, p.g.pad_bottom);
  p.pw = std::min(p.g.pad_left, p.g.pad_right);
  p.extra = {p.g.pad_top - p.ph, p.g.pad_bottom - p.ph, p.g.pad_left - p.pw, p.g.pad_right - p.pw};
  return p;
}

cudnnMathType_t math_of(const Setup& s, ComputePrecision precision) {
  if (s.rdt == DType::f64) return CUDNN_DEFAULT_MATH;
  if (s.rdt == DType::f16 || s.rdt == DType::bf16) return CUDNN_TENSOR_OP_MATH;
  return precision == ComputePrecision::tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// Runs the op with cuDNN in layout s.nhwc; false (nothing run) when cuDNN has no algorithm.
bool run(Env& e, const Problem& pr, const Setup& s) {
  const ops::ConvGeometry& g = pr.g;
  const Dims xd{g.x.n, g.x.c, g.x.h, g.x.w};
  const Dims xp{g.x.n, g.x.c, g.x.h + pr.extra[0] + pr.extra[1], g.x.w + pr.extra[2] + pr.extra[3]};
  const Dims yd{g.y.n, g.y.c, g.y.h, g.y.w};
  const Dims wd{g.w.o, g.w.i, g.w.kh, g.w.kw};
  const bool padded = xp != xd;
  const void* in0 = ptr(e.ctx.inputs[0]);
  const void* in1 = ptr(e.ctx.inputs[1]);
  void* user_out = ptr(e.ctx.outputs[0]);
  const cudnnMathType_t math = math_of(s, e.ctx.precision);
  // Tensor-core problems go through the graph API (the legacy API misses the sm90 engines);
  // its plans assume 16-byte aligned buffers (scratch buffers always are).
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool graph = env::cudnn_graph_enabled() && g.groups == 1 && math != CUDNN_FMA_MATH &&
                     s.rdt != DType::f64 && aligned(in0) && aligned(in1) && aligned(user_out);
  PlanKey key{e.dc.device, pr.pass, s.rdt, math, s.nhwc, xp, wd, yd,
              g.groups, pr.ph, pr.pw, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, graph,
              e.ctx.deterministic};
  Plan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_plans_mu);
    auto it = g_plans.find(key);
    if (it != g_plans.end()) {
      plan = it->second.get();
      if (!plan->choice.empty()) algo_choices::note(plan->choice_key, plan->choice);
      if (!plan->ok) return false;
    }
  }
  const std::array<int64_t, 4> no_pad{0, 0, 0, 0};
  // Operands as cuDNN reads them (a, b as in choose()) and the buffer cuDNN writes.
  Buf a, b;
  Dims out_dims{};  // logical dims of cuDNN's output
  bool out_is_data = true;
  switch (pr.pass) {
    case Pass::forward:
      a = prepare_data(e, s, in0, xd, pr.extra);
      b = prepare_weights(e, s, e.ctx.inputs[1], wd);
      out_dims = yd;
      break;
    case Pass::backward_data:
      a = prepare_data(e, s, in0, yd, no_pad);
      b = prepare_weights(e, s, e.ctx.inputs[1], wd);
      out_dims = xp;
      break;
    case Pass::backward_weights:
      a = prepare_data(e, s, in1, xd, pr.extra);
      b = prepare_data(e, s, in0, yd, no_pad);
      out_dims = wd;
      out_is_data = false;
      break;
  }
  const bool crop = pr.pass == Pass::backward_data && padded;  // the padded input's gradient
  const bool relayout = out_is_data ? s.user_nhwc != s.nhwc : s.user_w != s.filter_axes();
  const bool direct = !s.cast && !crop && !relayout;
  Buf out_buf;
  void* out = direct ? user_out : scratch(e, out_buf, static_cast<size_t>(count(out_dims)) * s.esize());

  std::unique_ptr<Plan> transient;  // a heuristic plan while capturing (not cached)
  if (!plan) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(e.stream, &capture), e.op, "cudaStreamIsCapturing");
    // Deterministic plans are the heuristics' answer, the same in every process: cached always.
    const bool measure = capture == cudaStreamCaptureStatusNone && !key.deterministic;
    const bool cache_it = measure || key.deterministic;
    // A preparation worker building this plan from a saved executable's choice: wait for it (the
    // lookup below then finds it).
    if (const std::string ckey = choice_key(key); algo_choices::find(ckey)) algo_choices::claim(ckey);
    auto fresh = std::make_unique<Plan>();
    make_descriptors(*fresh, key, e.op);
    {
      std::lock_guard<std::mutex> lock(g_plans_mu);  // one Find at a time (it times kernels)
      auto it = g_plans.find(key);
      if (it != g_plans.end()) {
        plan = it->second.get();
      } else {
        // A choice stored by a saved executable (same library versions): built, not searched.
        const std::string ckey = choice_key(key);
        const std::optional<std::string> stored = algo_choices::find(ckey);
        bool from_file = stored && apply_choice(e.cudnn, e.op, *fresh, key, *stored);
        if (!from_file) {
          if (stored) {  // refused: start again from fresh descriptors
            fresh = std::make_unique<Plan>();
            make_descriptors(*fresh, key, e.op);
          }
          phases::Scope timed(measure ? "cudnn_choose_measured" : "cudnn_choose_heuristic");
          choose(e, *fresh, key, a.p, b.p, out, measure);
        }
        if (cache_it || from_file) {
          fresh->choice_key = ckey;
          fresh->choice = from_file ? *stored : encode_choice(*fresh, e.op);
          plan = fresh.get();
          g_plans.emplace(key, std::move(fresh));
        }
      }
    }
    if (!plan) {
      transient = std::move(fresh);
      plan = transient.get();
    } else if (!plan->choice.empty()) {
      algo_choices::note(plan->choice_key, plan->choice);
    }
    if (!plan->ok) return false;
  }
  execute(e, *plan, pr.pass, s.rdt, a.p, b.p, out);
  if (direct) return true;

  // Back to the op's size, layout and dtype: crop (padded input's gradient), permute, cast; the
  // last of these writes the op's output.
  const Dims final_dims = pr.pass == Pass::forward ? yd : pr.pass == Pass::backward_data ? xd : wd;
  const size_t final_bytes = static_cast<size_t>(count(final_dims)) * s.esize();
  Buf cur{out, nullptr};
  if (crop) {
    Buf next;
    void* p = relayout || s.cast ? scratch(e, next, final_bytes) : user_out;
    window(e, cur.p, p, xp, xd, {0, 0, -pr.extra[0], -pr.extra[2]}, s.data_axes(), s.esize());
    next.p = p;
    cur = std::move(next);
  }
  if (relayout) {
    Buf next;
    void* p = s.cast ? scratch(e, next, final_bytes) : user_out;
    if (out_is_data) {
      permute(e, cur.p, p, final_dims, s.data_axes(), s.user_data_axes(), s.esize());
    } else {
      permute(e, cur.p, p, final_dims, s.filter_axes(), s.user_w, s.esize());
    }
    next.p = p;
    cur = std::move(next);
  }
  if (s.cast) {
    kernels::launch_lowp_to_f32(cur.p, static_cast<float*>(user_out), count(final_dims),
                                s.rdt == DType::bf16, e.stream);
    check_launch(e.op, "lowp_to_f32");
  }
  return true;
}

template <Pass P>
void conv_kernel(KernelContext& ctx) {
  const Problem pr = problem_of(ctx, P);
  TensorData& out = ctx.outputs[0];
  const DType dt = out.dtype();
  if (!is_floating(dt)) {
    fail(ErrorCode::dtype_mismatch, ctx.op_name(), "dtype {} is not supported", dtype_name(dt));
  }
  if (out.num_elements() == 0) return;
  DeviceContext& dc = context_of(ctx);
  const cudaStream_t stream = stream_of(ctx);
  if (ctx.inputs[0].num_elements() == 0 || ctx.inputs[1].num_elements() == 0) {
    check(cudaMemsetAsync(ptr(out), 0, out.nbytes(), stream), ctx.op_name(), "cudaMemsetAsync");
    return;  // all-zero bits are 0.0 in every float type
  }
  phases::Scope wait_time("cudnn_handle_wait");
  CudnnUse cudnn = dc.cudnn(stream);  // held by this kernel (one thread at a time queues cuDNN work)
  wait_time.stop();
  Env e{ctx, dc, stream, ctx.op_name(), cudnn.handle};
  Setup s;
  s.dt = dt;
  s.rdt = dt;
  if (dt == DType::f32 && ctx.precision == ComputePrecision::bf16) s.rdt = DType::bf16;
  if (dt == DType::f32 && ctx.precision == ComputePrecision::f16) s.rdt = DType::f16;
  s.cast = s.rdt != dt;
  s.user_nhwc = pr.d.data_layout == Layout::nhwc;
  s.user_w = pr.d.weights_layout == Layout::oihw ? kOIHW : kHWIO;
  s.nhwc = s.user_nhwc && s.rdt != DType::f64;
  if (run(e, pr, s)) return;
  if (s.rdt != DType::f64) {  // try the other layout
    s.nhwc = !s.nhwc;
    if (run(e, pr, s)) return;
  }
  fail(ErrorCode::unsupported, ctx.op_name(),
       "cuDNN has no algorithm for this convolution (dtype {}, x [{},{},{},{}], w [{},{},{},{}], "
       "groups {})",
       dtype_name(s.rdt), pr.g.x.n, pr.g.x.c, pr.g.x.h, pr.g.x.w, pr.g.w.o, pr.g.w.i, pr.g.w.kh,
       pr.g.w.kw, pr.g.groups);
}

// The plan key of a stored choice's key (choice_key's inverse); false when it does not parse.
bool parse_choice_key(const std::string& text, int device, PlanKey* k) {
  int pass = 0, math = 0, nhwc = 0, graph = 0, det = 0;
  char rdt[16] = {};
  long long v[21] = {};
  const int n = std::sscanf(text.c_str(),
                            "algo:cudnn_conv/v1 pass=%d rdt=%15s math=%d nhwc=%d x=%lld,%lld,%lld,%lld "
                            "w=%lld,%lld,%lld,%lld y=%lld,%lld,%lld,%lld groups=%lld pad=%lld,%lld stride=%lld,%lld "
                            "dil=%lld,%lld graph=%d det=%d",
                            &pass, rdt, &math, &nhwc, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
                            &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17], &v[18], &graph, &det);
  if (n != 25 || pass < 0 || pass > 2 || math < 0 || math > 3) return false;
  for (long long x : v) {
    if (x < 0 || x > (int64_t{1} << 40)) return false;
  }
  k->device = device;
  k->pass = static_cast<Pass>(pass);
  try {
    k->rdt = dtype_from_name(rdt);
  } catch (const Error&) {
    return false;
  }
  if (!is_floating(k->rdt)) return false;
  k->math = static_cast<cudnnMathType_t>(math);
  k->nhwc = nhwc != 0;
  for (int j = 0; j < 4; ++j) {
    k->x[j] = v[j];
    k->w[j] = v[4 + j];
    k->y[j] = v[8 + j];
  }
  k->groups = v[12];
  k->ph = v[13];
  k->pw = v[14];
  k->sh = v[15];
  k->sw = v[16];
  k->dh = v[17];
  k->dw = v[18];
  k->graph = graph != 0;
  k->deterministic = det != 0;
  return choice_key(*k) == text;  // exactly what this build writes
}

}  // namespace

void algo_choices::prepare_conv_choice(int device, const std::string& key, const std::string& choice,
                                       cudaStream_t warm_stream, const std::function<void()>& built) {
  PlanKey k{};
  if (!parse_choice_key(key, device, &k)) return;
  activate(device);
  {
    std::lock_guard<std::mutex> lock(g_plans_mu);
    if (g_plans.count(k)) return;
  }
  // This worker's own handle, bound to its stream: plans are built with it and run once with it;
  // runs execute them with the device's handle (the handle supplies the stream at execution; XLA
  // likewise builds with per-thread handles and executes with one shared handle).
  thread_local std::map<int, cudnnHandle_t> owns;  // a handle belongs to the device it was made on
  cudnnHandle_t& own = owns[device];
  if (own == nullptr) {
    phases::Scope timed("cudnnCreate");
    check(cudnnCreate(&own), "conv2d", "cudnnCreate");  // never destroyed: lives as the thread
  }
  check(cudnnSetStream(own, warm_stream), "conv2d", "cudnnSetStream");
  auto fresh = std::make_unique<Plan>();
  make_descriptors(*fresh, k, "conv2d");
  if (!apply_choice(own, "conv2d", *fresh, k, choice)) return;  // chosen at first use instead
  fresh->choice_key = key;
  fresh->choice = choice;
  Plan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_plans_mu);
    auto [it, inserted] = g_plans.emplace(k, std::move(fresh));
    if (!inserted) return;
    plan = it->second.get();
  }
  built();
  if (!plan->ok) return;
  // One run on scratch buffers, so that the engine's kernels are loaded before the run needs them.
  phases::Scope timed("cudnn_warm_run");
  const size_t esize = static_cast<size_t>(dtype_size(k.rdt));
  const auto bytes = [&](const Dims& d) { return (static_cast<size_t>(count(d)) * esize + 255) / 256 * 256; };
  const size_t xb = bytes(k.x), wb = bytes(k.w), yb = bytes(k.y);
  std::shared_ptr<void> buf = device_allocate(device, xb + wb + yb + std::max<size_t>(plan->workspace, 1));
  auto* x = static_cast<char*>(buf.get());
  char* w = x + xb;
  char* y = w + wb;
  char* ws = plan->workspace > 0 ? y + yb : nullptr;
  switch (k.pass) {  // a, b and the output as run() passes them
    case Pass::forward: execute_with(own, *plan, k.pass, k.rdt, x, w, y, ws, "conv2d"); break;
    case Pass::backward_data: execute_with(own, *plan, k.pass, k.rdt, y, w, x, ws, "conv2d"); break;
    case Pass::backward_weights: execute_with(own, *plan, k.pass, k.rdt, x, y, w, ws, "conv2d"); break;
  }
  check(cudaStreamSynchronize(warm_stream), "conv2d", "cudaStreamSynchronize (warm-up)");  // before buf is reused
}

void register_conv_kernels(KernelTable& t) {
  t.set(ir::OpKind::conv2d, conv_kernel<Pass::forward>);
  t.set(ir::OpKind::conv2d_backward_data, conv_kernel<Pass::backward_data>);
  t.set(ir::OpKind::conv2d_backward_weights, conv_kernel<Pass::backward_weights>);
}

}  // namespace tg::cuda
