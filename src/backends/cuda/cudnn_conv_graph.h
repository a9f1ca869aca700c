// Convolutions through cuDNN's graph (backend) API, for the tensor-core cases (bf16/f16 data, or
// f32 data with TF32 allowed): on Hopper the legacy cudnnConvolution* API does not reach cuDNN's
// sm90 engines (warpgroup MMA, TMA), which run ResNet-50's convolutions several times faster.
// One operation graph per convolution problem; engine configurations from the heuristics (mode A)
// are finalized into execution plans and, outside stream capture, timed on the real buffers
// (like torch.backends.cudnn.benchmark); the fastest is kept. Reference: cuDNN 9 "Graph API"
// (backend descriptor types, CUDNN_BACKEND_OPERATION_CONVOLUTION_*_DESCRIPTOR).
#pragma once
#include <cudnn.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tg::cuda::cudnn_graph {

enum class ConvPass : int { forward, backward_data, backward_weights };

/// A 2-D convolution problem. Dims are logical: data (n, c, h, w), filter (k, c/groups, r, s);
/// memory order NHWC/KRSC when `nhwc`, else NCHW/KCRS; symmetric padding.
struct ConvSpec {
  ConvPass pass = ConvPass::forward;
  cudnnDataType_t io = CUDNN_DATA_FLOAT;  ///< dtype of x, w and y
  bool nhwc = true;
  std::array<int64_t, 4> x{}, w{}, y{};
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  bool deterministic = false;  ///< skip engines with the NONDETERMINISTIC numerical note
};

class ConvPlan;

/// Builds the plan of `s`: nullptr when no engine supports it. With `measure`, times each
/// candidate on the buffers (a, b: x and w forward, dy and w backward data, x and dy backward
/// weights; `out` is overwritten) on `stream`, with `workspace(bytes)` giving scratch memory of at
/// most `max_workspace` bytes; else takes the heuristics' first usable plan. Raises tg::Error on
/// cuDNN failures other than "not supported".
std::shared_ptr<ConvPlan> make_conv_plan(cudnnHandle_t handle, cudaStream_t stream, const ConvSpec& s,
                                         const void* a, const void* b, void* out,
                                         const std::function<void*(size_t)>& workspace,
                                         size_t max_workspace, bool measure, const char* op);

/// A chosen engine configuration, as saved executables store it (backends/cuda/algo_choices.h):
/// the engine's global index and its knob choices (cudnnBackendKnobType_t value, knob value).
struct EngineChoice {
  int64_t engine = 0;
  std::vector<std::pair<int64_t, int64_t>> knobs;
};

/// The engine configuration `plan` runs; nullopt when cuDNN does not report it.
std::optional<EngineChoice> engine_choice(const ConvPlan& plan, const char* op);

/// The plan of `s` with engine configuration `c` (no heuristics, no timing): nullptr when cuDNN
/// refuses the configuration for `s`, when it would change the arithmetic asked for (reduced
/// precision reduction, down-converted f32 inputs, nondeterministic engines when s.deterministic;
/// not checked when `trusted`: the configuration was chosen, and checked, by this cuDNN version)
/// or when it needs more than `max_workspace` bytes. Raises as make_conv_plan.
std::shared_ptr<ConvPlan> make_conv_plan_from_choice(cudnnHandle_t handle, const ConvSpec& s, const EngineChoice& c,
                                                     size_t max_workspace, bool trusted, const char* op);

/// cuDNN's serialized form of `plan` (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION), or nullopt
/// when cuDNN does not serialize its engine (documented for runtime-compiled engines only) or the
/// plan was not finalized here.
std::optional<std::string> plan_json(const ConvPlan& plan);

/// The plan deserialized from plan_json's text (same cuDNN version and GPU; the caller checks the
/// version): nullptr when cuDNN refuses it or it needs more than `max_workspace` bytes. Its
/// engine configuration is not known (engine_choice gives nullopt).
std::shared_ptr<ConvPlan> make_conv_plan_from_json(cudnnHandle_t handle, const ConvSpec& s, const std::string& json,
                                                   size_t max_workspace, const char* op);

/// Workspace bytes `plan` needs.
size_t workspace_size(const ConvPlan& plan);

/// Runs `plan` on a, b -> out (as in make_conv_plan), with `ws` of workspace_size(plan) bytes. The
/// plan keeps its last variant pack (reused while the buffers are the same); thread-safe.
void execute(cudnnHandle_t handle, ConvPlan& plan, const void* a, const void* b, void* out, void* ws,
             const char* op);

}  // namespace tg::cuda::cudnn_graph
