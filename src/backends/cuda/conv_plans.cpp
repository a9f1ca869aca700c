// The conv family's cuDNN plans (conv_plans.h): descriptors, the choices saved executables store
// (algo_choices.h) and their preparation on the background workers.
#include "backends/cuda/conv_plans.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "backends/cuda/algo_choices.h"
#include "backends/cuda/context.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda {
namespace conv_plans {

std::mutex g_plans_mu;
std::map<PlanKey, std::unique_ptr<Plan>> g_plans;

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::f64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

namespace {

int to_int(int64_t v, const char* op) {
  if (v > INT_MAX) fail(ErrorCode::unsupported, op, "a dimension of {} exceeds cuDNN's int range", v);
  return static_cast<int>(v);
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

// Whether cuDNN's serialized plans are stored and used: only with TG_CUDNN_PLAN_JSON=1. Measured on
// the H200 (cuDNN 9.14, ResNet-50): cuDNN serialized all 23 plans (~1.8 KB each) and loads
// rebuilt them, but deserializing paid the same one-time cost inside cuDNN as building from the
// engine configuration (23 plans: 520-611 ms of worker time against 514; first result 198-231 ms
// against 191), so it is off.
bool plan_json_enabled() { return env::cudnn_plan_json(); }

// Whether stored choices of this cuDNN version skip the numerical-notes check
// (TG_TRUST_STORED_ALGOS=0: never; A/B).
bool trust_stored() { return env::trust_stored_algos(); }

}  // namespace

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

std::string encode_choice(const Plan& p, const char* op) {
  if (!p.ok) return "none";
  if (p.graph) {
    const std::optional<cudnn_graph::EngineChoice> c = cudnn_graph::engine_choice(*p.graph, op);
    if (!c) return "";
    std::string s = fmt::format("graph {}", c->engine);
    for (const auto& [t, v] : c->knobs) s += fmt::format(" {}:{}", t, v);
    s += fmt::format(" v={}", cudnnGetVersion());
    if (plan_json_enabled()) {
      if (std::optional<std::string> json = cudnn_graph::plan_json(*p.graph)) s += " json=" + *json;
    }
    return s;
  }
  cudnnMathType_t m = CUDNN_DEFAULT_MATH;
  cudnnGetConvolutionMathType(p.conv, &m);
  return fmt::format("legacy {} {}", p.algo, static_cast<int>(m));
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
    // "<engine> <type>:<value>... [v=<cuDNN version> [json=<serialized plan, to the end>]]"
    std::string head = choice, json;
    if (const size_t at = choice.find(" json="); at != std::string::npos) {
      head = choice.substr(0, at);
      json = choice.substr(at + 6);
    }
    std::istringstream hin(head);
    hin >> kind;
    cudnn_graph::EngineChoice c;
    if (!(hin >> c.engine)) return false;
    long long version = 0;
    std::string knob;
    while (hin >> knob) {
      if (knob.starts_with("v=")) {
        if (std::sscanf(knob.c_str(), "v=%lld", &version) != 1 || !(hin >> std::ws).eof()) return false;
        break;
      }
      int64_t t = 0, v = 0;
      char colon = 0;
      std::istringstream kin(knob);
      if (!(kin >> t >> colon >> v) || colon != ':' || c.knobs.size() >= 64) return false;
      c.knobs.emplace_back(t, v);
    }
    const bool same_version = version > 0 && static_cast<size_t>(version) == cudnnGetVersion();
    if (!json.empty() && same_version && plan_json_enabled()) {
      p.graph = cudnn_graph::make_conv_plan_from_json(handle, spec_of(k), json, kFindWorkspace, op);
    }
    if (!p.graph) {
      p.graph = cudnn_graph::make_conv_plan_from_choice(handle, spec_of(k), c, kFindWorkspace,
                                                        same_version && trust_stored(), op);
    }
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

namespace {

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

}  // namespace conv_plans

using namespace conv_plans;

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

}  // namespace tg::cuda
