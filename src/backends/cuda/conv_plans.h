// The conv family's cuDNN plans (internal to backends/cuda: conv.cpp runs the op, conv_plans.cpp
// builds plans from descriptors and from the choices saved executables store, and prepares them
// ahead of a loaded executable's first run; see conv.cpp for the algorithm and
// backends/cuda/algo_choices.h for the stored choices).
#pragma once
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "backends/cuda/cudnn_conv_graph.h"
#include "tg/dtype.h"

namespace tg::cuda::conv_plans {

enum class Pass : int { forward, backward_data, backward_weights };

/// Workspace limit of a search and of a stored choice, bytes.
constexpr size_t kFindWorkspace = size_t{256} << 20;

using Dims = std::array<int64_t, 4>;  // logical order: data (n, c, h, w), weights (o, i, kh, kw)

inline int64_t count(const Dims& d) { return d[0] * d[1] * d[2] * d[3]; }

/// cuDNN's data type of dtype `t` (f16, bf16, f64; f32 for the rest).
cudnnDataType_t cudnn_type(DType t);

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

/// The plan cache (never freed), guarded by g_plans_mu.
extern std::mutex g_plans_mu;
extern std::map<PlanKey, std::unique_ptr<Plan>> g_plans;

/// Creates p's legacy descriptors for `k` (also used to check the graph API's output dims); raises
/// tg::Error(unsupported) naming `op` for tensors beyond cuDNN's int range.
void make_descriptors(Plan& p, const PlanKey& k, const char* op);

/// Whether a result with math type `m` keeps the requested arithmetic (f32: no tensor cores).
bool math_allowed(const PlanKey& k, cudnnMathType_t m);

/// The graph API's problem for `k`.
cudnn_graph::ConvSpec spec_of(const PlanKey& k);

/// The plan cache key without the device, as algo_choices stores it.
std::string choice_key(const PlanKey& k);

/// p's choice as stored: "none" (no algorithm), "graph <engine> <knob type>:<value>... v=<cuDNN
/// version> [json=<cuDNN's serialized plan>, with TG_CUDNN_PLAN_JSON=1]" or "legacy <algo> <math
/// type>"; "" when cuDNN does not report the engine configuration.
std::string encode_choice(const Plan& p, const char* op);

/// Sets `p` (descriptors made) from a stored choice; false when the text is malformed or cuDNN
/// refuses the choice (the caller then chooses as without one). A graph choice written by this
/// cuDNN version is built from its engine configuration without re-checking its numerical notes
/// (TG_TRUST_STORED_ALGOS=0: checked), or, with TG_CUDNN_PLAN_JSON=1, from its serialized plan
/// when it has one.
bool apply_choice(cudnnHandle_t handle, const char* op, Plan& p, const PlanKey& k, const std::string& choice);

/// Runs plan `p` with handle `h` (on its stream): a, b and out as conv.cpp's run() passes them; ws:
/// p.workspace bytes.
void execute_with(cudnnHandle_t h, const Plan& p, Pass pass, DType rdt, const void* a, const void* b, void* out,
                  void* ws, const char* op);

}  // namespace tg::cuda::conv_plans
