// CUDA kernels of the conv family: conv2d, conv2d_backward_data, conv2d_backward_weights
// (conv_transpose2d is built from conv2d_backward_data in the graph), with the CPU backend's
// semantics (backends/cpu/conv.cpp), on cuDNN 9: tensor-core problems (bf16/f16, TF32) through the
// graph API (cudnn_conv_graph.cpp: the legacy API misses the sm90 engines), the rest (true f32,
// f64, grouped) through the legacy convolution API.
//
// Algorithm:
//  - Physical layout: NHWC data with KRSC (OHWI) filters when the data is nhwc, NCHW with KCRS
//    (OIHW) otherwise; f64 always runs NCHW. Data in the other layout is permuted into it (and
//    results back); other weights layouts are permuted into OHWI/OIHW (and weight gradients back) by
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
#include "backends/cuda/conv_plans.h"
#include "backends/cuda/cudnn_conv_graph.h"
#include "backends/cuda/first_run.h"
#include "backends/cuda/kernels/conv_layout.h"
#include "backends/cuda/kernels/lowp_cast.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"
#include "core/stats.h"
#include "ir/attrs.h"
#include "ops/conv_geometry.h"

namespace tg::cuda {
namespace {

using namespace conv_plans;

// Memory order of the logical axes: data (n, c, h, w), weights (o, i, kh, kw).
using Axes = std::array<int, 4>;
constexpr Axes kNCHW{0, 1, 2, 3}, kNHWC{0, 2, 3, 1};
constexpr Axes kOIHW{0, 1, 2, 3}, kHWIO{2, 3, 1, 0}, kOHWI{0, 2, 3, 1};

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

// The plan cache key of the op in layout s.nhwc.
PlanKey key_of(const KernelContext& ctx, int device, const Problem& pr, const Setup& s) {
  const ops::ConvGeometry& g = pr.g;
  const Dims xp{g.x.n, g.x.c, g.x.h + pr.extra[0] + pr.extra[1], g.x.w + pr.extra[2] + pr.extra[3]};
  const Dims yd{g.y.n, g.y.c, g.y.h, g.y.w};
  const Dims wd{g.w.o, g.w.i, g.w.kh, g.w.kw};
  const cudnnMathType_t math = math_of(s, ctx.precision);
  // Tensor-core problems go through the graph API (the legacy API misses the sm90 engines);
  // its plans assume 16-byte aligned buffers (scratch buffers always are).
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool graph = env::cudnn_graph_enabled() && g.groups == 1 && math != CUDNN_FMA_MATH &&
                     s.rdt != DType::f64 && aligned(ptr(ctx.inputs[0])) && aligned(ptr(ctx.inputs[1])) &&
                     aligned(ptr(ctx.outputs[0]));
  return PlanKey{device, pr.pass, s.rdt, math, s.nhwc, xp, wd, yd,
                 g.groups, pr.ph, pr.pw, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w, graph,
                 ctx.deterministic};
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
  const PlanKey key = key_of(e.ctx, e.dc.device, pr, s);
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

// TensorGraph's own implicit-GEMM conv2d instead of cuDNN (docs/design/0011-first-run-kernels.md):
// with first-run kernels on (first_run::enabled), in a walked run, for a forward problem whose plan a preparation
// worker is still building (a stored choice for one of the two layouts, no plan cached for
// either). Also compiles the program while a code sink is set (the runs before
// Executable::save), so that a saved executable carries it. True when it ran.
bool first_run_conv(KernelContext& ctx, int device, const Problem& pr, Setup s) {
  if (!first_run::enabled(ctx.first_run_kernels)) return false;
  first_run::Round r{};
  if (!first_run::rounding_of(s.dt, ctx.precision, &r)) return false;
  if (pr.g.w.kh * pr.g.w.kw * pr.g.w.i > INT32_MAX) return false;  // the kernel's window index is 32-bit
  const char* op = ctx.op_name();
  if (nvrtc::code_sink_set()) first_run::prepare_conv2d(device, s.dt, r, op);
  const cudaStream_t stream = stream_of(ctx);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capture), op, "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone) return false;
  bool stored = false;
  for (const bool nhwc : {s.nhwc, !s.nhwc}) {
    s.nhwc = nhwc;
    const PlanKey key = key_of(ctx, device, pr, s);
    {
      std::lock_guard<std::mutex> lock(g_plans_mu);
      if (g_plans.count(key)) return false;  // built (or known not to build): the library path
    }
    stored = stored || algo_choices::find(choice_key(key)).has_value();
  }
  if (!stored) return false;
  phases::Scope timed("first_run_conv2d");
  first_run::ConvArgs args = first_run::conv_args(pr.g, pr.d.data_layout, pr.d.weights_layout);
  const size_t ws_bytes = first_run::plan(args);
  first_run::launch_conv2d(device, s.dt, r, ptr(ctx.inputs[0]), ptr(ctx.inputs[1]), ptr(ctx.outputs[0]), args,
                           ws_bytes ? workspace_of(ctx, ws_bytes) : nullptr, stream, op);
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
  Setup s;
  s.dt = dt;
  s.rdt = dt;
  if (dt == DType::f32 && ctx.precision == ComputePrecision::bf16) s.rdt = DType::bf16;
  if (dt == DType::f32 && ctx.precision == ComputePrecision::f16) s.rdt = DType::f16;
  s.cast = s.rdt != dt;
  s.user_nhwc = pr.d.data_layout == Layout::nhwc;
  s.user_w = pr.d.weights_layout == Layout::oihw ? kOIHW : pr.d.weights_layout == Layout::ohwi ? kOHWI : kHWIO;
  s.nhwc = s.user_nhwc && s.rdt != DType::f64;
  if (P == Pass::forward && first_run_conv(ctx, dc.device, pr, s)) return;
  phases::Scope wait_time("cudnn_handle_wait");
  CudnnUse cudnn = dc.cudnn(stream);  // held by this kernel (one thread at a time queues cuDNN work)
  wait_time.stop();
  Env e{ctx, dc, stream, ctx.op_name(), cudnn.handle};
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

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t.set(ir::OpKind::conv2d, conv_kernel<Pass::forward>);
  t.set(ir::OpKind::conv2d_backward_data, conv_kernel<Pass::backward_data>);
  t.set(ir::OpKind::conv2d_backward_weights, conv_kernel<Pass::backward_weights>);
}

}  // namespace tg::cuda
