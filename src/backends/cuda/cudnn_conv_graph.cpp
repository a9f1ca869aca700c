// cuDNN graph-API convolutions (cudnn_conv_graph.h).
#include "backends/cuda/cudnn_conv_graph.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <vector>

#include "backends/cuda/autotune.h"
#include "backends/cuda/context.h"
#include "core/phase_times.h"
#include "tg/error.h"

namespace tg::cuda::cudnn_graph {
namespace {

constexpr int64_t kX = 1, kW = 2, kY = 3;  // unique ids of the operation's tensors
constexpr size_t kMaxCandidates = 12;      // engine configurations timed per problem

/// The operation descriptor of each pass and its attribute names for x (dx), w (dw), y (dy), the
/// convolution descriptor, alpha and beta; indexed by ConvPass.
struct OperationAttrs {
  cudnnBackendDescriptorType_t kind;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};
constexpr OperationAttrs kOperations[3] = {
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

/// An owned backend descriptor.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  Desc(cudnnBackendDescriptorType_t type, const char* op) {
    check(cudnnBackendCreateDescriptor(type, &d), op, "cudnnBackendCreateDescriptor");
  }
  ~Desc() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
};

void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         int64_t count, const void* values, const char* op) {
  check(cudnnBackendSetAttribute(d, name, type, count, values), op, "cudnnBackendSetAttribute");
}

std::array<int64_t, 4> strides_of(const std::array<int64_t, 4>& d, bool nhwc) {
  if (nhwc) return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

std::shared_ptr<Desc> tensor(const std::array<int64_t, 4>& dims, bool nhwc, cudnnDataType_t type, int64_t uid,
                             const char* op) {
  auto t = std::make_shared<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR, op);
  const std::array<int64_t, 4> strides = strides_of(dims, nhwc);
  const int64_t alignment = 16;
  set(t->d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, op);
  set(t->d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), op);
  set(t->d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), op);
  set(t->d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, op);
  set(t->d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, op);
  check(cudnnBackendFinalize(t->d), op, "cudnnBackendFinalize(tensor)");
  return t;
}

// Whether an engine configuration keeps the requested arithmetic: no down-conversion of f32
// inputs below TF32, no reduced-precision accumulation.
bool arithmetic_ok(cudnnBackendDescriptor_t cfg, cudnnDataType_t io, bool deterministic, const char* op) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, op);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                               &engine.d) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) return false;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && deterministic) return false;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS && io == CUDNN_DATA_FLOAT) return false;
  }
  return true;
}

}  // namespace

class ConvPlan {
 public:
  ConvPass pass;
  std::vector<std::shared_ptr<Desc>> keep;  // descriptors the plan was built from
  std::shared_ptr<Desc> cfg;                // its engine configuration
  std::shared_ptr<Desc> plan;
  size_t workspace = 0;
  // The last variant pack and its pointers (x, w, y, workspace): the caching allocator hands a
  // layer the same buffers run after run, so most calls reuse it (no descriptor work per call).
  std::mutex mu;
  std::array<void*, 4> last{};
  std::unique_ptr<Desc> pack;
};

size_t workspace_size(const ConvPlan& plan) { return plan.workspace; }

void execute(cudnnHandle_t handle, ConvPlan& plan, const void* a, const void* b, void* out, void* ws,
             const char* op) {
  const void* x = a;
  const void* w = b;
  const void* y = out;
  if (plan.pass == ConvPass::backward_data) {
    y = a;
    x = out;
  } else if (plan.pass == ConvPass::backward_weights) {
    y = b;
    w = out;
  }
  void* ptrs[3] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  const std::array<void*, 4> key{ptrs[0], ptrs[1], ptrs[2], ws};
  std::lock_guard<std::mutex> lock(plan.mu);
  if (!plan.pack || plan.last != key) {
    const int64_t uids[3] = {kX, kW, kY};
    auto pack = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, op);
    set(pack->d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs, op);
    set(pack->d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, op);
    set(pack->d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, op);
    check(cudnnBackendFinalize(pack->d), op, "cudnnBackendFinalize(variant pack)");
    plan.pack = std::move(pack);
    plan.last = key;
  }
  phases::Scope timed("cudnn_execute");
  check(cudnnBackendExecute(handle, plan.plan->d, plan.pack->d), op, "cudnnBackendExecute");
}

namespace {

// The operation graph of `s` (its descriptors appended to `keep`): null when cuDNN refuses it.
std::shared_ptr<Desc> operation_graph(cudnnHandle_t handle, const ConvSpec& s, std::vector<std::shared_ptr<Desc>>& keep,
                                      const char* op) {
  phases::Scope timed("cudnn_op_graph");
  auto x = tensor(s.x, s.nhwc, s.io, kX, op);
  auto w = tensor(s.w, s.nhwc, s.io, kW, op);
  auto y = tensor(s.y, s.nhwc, s.io, kY, op);
  keep.insert(keep.end(), {x, w, y});

  auto conv = std::make_shared<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, op);
  keep.push_back(conv);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const int64_t pad[2] = {s.pad_h, s.pad_w}, stride[2] = {s.stride_h, s.stride_w}, dil[2] = {s.dil_h, s.dil_w};
  set(conv->d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute, op);
  set(conv->d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, op);
  set(conv->d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, op);
  set(conv->d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, op);
  set(conv->d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, op);
  set(conv->d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride, op);
  set(conv->d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil, op);
  check(cudnnBackendFinalize(conv->d), op, "cudnnBackendFinalize(convolution)");

  const OperationAttrs& names = kOperations[static_cast<int>(s.pass)];
  auto operation = std::make_shared<Desc>(names.kind, op);
  keep.push_back(operation);
  const float alpha = 1.0f, beta = 0.0f;
  set(operation->d, names.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x->d, op);
  set(operation->d, names.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w->d, op);
  set(operation->d, names.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y->d, op);
  set(operation->d, names.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv->d, op);
  set(operation->d, names.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, op);
  set(operation->d, names.beta, CUDNN_TYPE_FLOAT, 1, &beta, op);
  if (cudnnBackendFinalize(operation->d) != CUDNN_STATUS_SUCCESS) return nullptr;

  auto graph = std::make_shared<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, op);
  keep.push_back(graph);
  set(graph->d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, op);
  set(graph->d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &operation->d, op);
  if (cudnnBackendFinalize(graph->d) != CUDNN_STATUS_SUCCESS) return nullptr;
  return graph;
}

// The execution plan of engine configuration `cfg` with its workspace size: null when cuDNN
// refuses it or it needs more than `max_workspace` bytes.
std::shared_ptr<ConvPlan> finalize_plan(cudnnHandle_t handle, const ConvSpec& s,
                                        const std::vector<std::shared_ptr<Desc>>& keep,
                                        const std::shared_ptr<Desc>& cfg, size_t max_workspace, const char* op) {
  phases::Scope timed("cudnn_plan_finalize");
  auto plan = std::make_shared<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, op);
  set(plan->d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, op);
  set(plan->d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg->d, op);
  if (cudnnBackendFinalize(plan->d) != CUDNN_STATUS_SUCCESS) return nullptr;
  int64_t ws = 0, n = 0;
  check(cudnnBackendGetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws),
        op, "cudnnBackendGetAttribute(workspace size)");
  if (ws < 0 || static_cast<size_t>(ws) > max_workspace) return nullptr;
  auto p = std::make_shared<ConvPlan>();
  p->pass = s.pass;
  p->keep = keep;
  p->keep.push_back(cfg);
  p->cfg = cfg;
  p->plan = std::move(plan);
  p->workspace = static_cast<size_t>(ws);
  return p;
}

}  // namespace

std::shared_ptr<ConvPlan> make_conv_plan(cudnnHandle_t handle, cudaStream_t stream, const ConvSpec& s,
                                         const void* a, const void* b, void* out,
                                         const std::function<void*(size_t)>& workspace,
                                         size_t max_workspace, bool measure, const char* op) {
  std::vector<std::shared_ptr<Desc>> keep;
  std::shared_ptr<Desc> graph = operation_graph(handle, s, keep, op);
  if (!graph) return nullptr;

  phases::Scope heuristics_time("cudnn_heuristics");
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, op);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  set(heur.d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph->d, op);
  set(heur.d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode, op);
  if (cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) return nullptr;
  int64_t count = 0;
  check(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                 nullptr),
        op, "cudnnBackendGetAttribute(heuristics count)");
  if (count <= 0) return nullptr;
  std::vector<std::shared_ptr<Desc>> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.push_back(std::make_shared<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, op));
    raw.push_back(cfgs.back()->d);
  }
  int64_t got = 0;
  check(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                 raw.data()),
        op, "cudnnBackendGetAttribute(heuristics)");

  // Usable plans in the heuristics' order (best guess first).
  heuristics_time.stop();
  std::vector<std::shared_ptr<ConvPlan>> plans;
  for (int64_t i = 0; i < got && plans.size() < (measure ? kMaxCandidates : 1); ++i) {
    if (!arithmetic_ok(raw[i], s.io, s.deterministic, op)) continue;
    if (auto p = finalize_plan(handle, s, keep, cfgs[static_cast<size_t>(i)], max_workspace, op)) {
      plans.push_back(std::move(p));
    }
  }
  if (plans.empty()) return nullptr;
  if (!measure || plans.size() == 1) return plans.front();
  // Time each candidate on the real buffers (autotune.h); an engine that fails at run time is
  // not a candidate.
  std::vector<void*> ws(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) ws[i] = plans[i]->workspace > 0 ? workspace(plans[i]->workspace) : nullptr;
  const int pick = fastest_candidate(static_cast<int>(plans.size()), [&](int i) {
    try {
      execute(handle, *plans[static_cast<size_t>(i)], a, b, out, ws[static_cast<size_t>(i)], op);
      return true;
    } catch (const Error&) {
      cudaGetLastError();
      return false;
    }
  }, stream);
  return pick < 0 ? nullptr : plans[static_cast<size_t>(pick)];
}

std::optional<EngineChoice> engine_choice(const ConvPlan& plan, const char* op) {
  if (!plan.cfg) return std::nullopt;
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, op);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(plan.cfg->d, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                               &engine.d) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  EngineChoice c;
  if (cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &c.engine) !=
      CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  constexpr int64_t kMaxKnobs = CUDNN_KNOB_TYPE_COUNTS;
  std::vector<std::unique_ptr<Desc>> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < kMaxKnobs; ++i) {
    knobs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, op));
    raw.push_back(knobs.back()->d);
  }
  int64_t count = 0;
  if (cudnnBackendGetAttribute(plan.cfg->d, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxKnobs,
                               &count, raw.data()) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  for (int64_t i = 0; i < std::min(count, kMaxKnobs); ++i) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0;
    if (cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value) !=
            CUDNN_STATUS_SUCCESS) {
      return std::nullopt;
    }
    c.knobs.emplace_back(static_cast<int64_t>(type), value);
  }
  return c;
}

std::shared_ptr<ConvPlan> make_conv_plan_from_choice(cudnnHandle_t handle, const ConvSpec& s, const EngineChoice& c,
                                                     size_t max_workspace, bool trusted, const char* op) {
  phases::Scope timed("cudnn_plan_from_choice");
  std::vector<std::shared_ptr<Desc>> keep;
  std::shared_ptr<Desc> graph = operation_graph(handle, s, keep, op);
  if (!graph) return nullptr;
  phases::Scope engine_time("cudnn_engine_from_index");
  auto engine = std::make_shared<Desc>(CUDNN_BACKEND_ENGINE_DESCRIPTOR, op);
  if (cudnnBackendSetAttribute(engine->d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &graph->d) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(engine->d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &c.engine) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(engine->d) != CUDNN_STATUS_SUCCESS) {
    return nullptr;
  }
  keep.push_back(engine);
  engine_time.stop();
  phases::Scope cfg_time("cudnn_engine_cfg");
  phases::Scope knob_time("cudnn_knobs");
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& [type, value] : c.knobs) {
    if (type < 0 || type >= CUDNN_KNOB_TYPE_COUNTS) return nullptr;
    auto k = std::make_shared<Desc>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, op);
    const auto t = static_cast<cudnnBackendKnobType_t>(type);
    if (cudnnBackendSetAttribute(k->d, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &t) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(k->d, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(k->d) != CUDNN_STATUS_SUCCESS) {
      return nullptr;
    }
    raw.push_back(k->d);
    keep.push_back(std::move(k));
  }
  knob_time.stop();
  phases::Scope cfg_finalize_time("cudnn_cfg_finalize");
  auto cfg = std::make_shared<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, op);
  if (cudnnBackendSetAttribute(cfg->d, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine->d) !=
      CUDNN_STATUS_SUCCESS) {
    return nullptr;
  }
  if (!raw.empty() && cudnnBackendSetAttribute(cfg->d, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                               static_cast<int64_t>(raw.size()), raw.data()) != CUDNN_STATUS_SUCCESS) {
    return nullptr;
  }
  if (cudnnBackendFinalize(cfg->d) != CUDNN_STATUS_SUCCESS) return nullptr;
  cfg_finalize_time.stop();
  // The stored engine keeps the arithmetic asked for (a file cannot pick a down-converting one),
  // unless it was chosen (and checked) by this cuDNN version.
  if (!trusted) {
    phases::Scope notes_time("cudnn_arithmetic_check");
    if (!arithmetic_ok(cfg->d, s.io, s.deterministic, op)) return nullptr;
  }
  cfg_time.stop();
  return finalize_plan(handle, s, keep, cfg, max_workspace, op);
}

std::optional<std::string> plan_json(const ConvPlan& plan) {
  if (!plan.plan) return std::nullopt;
  phases::Scope timed("cudnn_plan_json");
  int64_t size = 0;
  if (cudnnBackendGetAttribute(plan.plan->d, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0,
                               &size, nullptr) != CUDNN_STATUS_SUCCESS ||
      size <= 0 || size > (int64_t{1} << 24)) {
    phases::Scope refused("cudnn_plan_json_refused");
    return std::nullopt;
  }
  std::string json(static_cast<size_t>(size), '\0');
  int64_t got = 0;
  if (cudnnBackendGetAttribute(plan.plan->d, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, size,
                               &got, json.data()) != CUDNN_STATUS_SUCCESS ||
      got <= 0 || got > size) {
    phases::Scope refused("cudnn_plan_json_refused");
    return std::nullopt;
  }
  json.resize(static_cast<size_t>(got));
  while (!json.empty() && json.back() == '\0') json.pop_back();
  return json;
}

std::shared_ptr<ConvPlan> make_conv_plan_from_json(cudnnHandle_t handle, const ConvSpec& s, const std::string& json,
                                                   size_t max_workspace, const char* op) {
  phases::Scope timed("cudnn_plan_from_json");
  auto plan = std::make_shared<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, op);
  if (cudnnBackendSetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
                               static_cast<int64_t>(json.size()), json.data()) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(plan->d) != CUDNN_STATUS_SUCCESS) {
    phases::Scope refused("cudnn_plan_json_load_refused");
    return nullptr;
  }
  int64_t ws = 0, n = 0;
  if (cudnnBackendGetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) !=
          CUDNN_STATUS_SUCCESS ||
      ws < 0 || static_cast<size_t>(ws) > max_workspace) {
    return nullptr;
  }
  auto p = std::make_shared<ConvPlan>();
  p->pass = s.pass;
  p->plan = std::move(plan);
  p->workspace = static_cast<size_t>(ws);
  return p;
}

}  // namespace tg::cuda::cudnn_graph
