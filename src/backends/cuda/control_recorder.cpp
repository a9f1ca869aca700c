// CUDA graph conditional nodes for the runtime's control flow (backends/control_recording.h):
// condition handles of the graph a stream captures into, the kernels of kernels/control.h, and
// conditional nodes added to a capture (cudaStreamGetCaptureInfo, cudaGraphAddNode,
// cudaStreamUpdateCaptureDependencies) whose bodies are captured on streams of their own
// (cudaStreamBeginCaptureToGraph). Needs CUDA 12.8+ (IF nodes with an else body). A WHILE body's
// generated kernels are captured as dependent launches (nvrtc::DependentLaunchScope).
#include "backends/cuda/control_recorder.h"

#include "backends/cuda/context.h"
#include "backends/cuda/kernels/control.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "backends/cuda/side_work.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

class CudaControlRecorder final : public backends::ControlRecorder {
 public:
  uint64_t conditional_handle(void* stream) const override {
    cudaGraph_t graph = capturing_graph(stream, nullptr, nullptr, nullptr);
    cudaGraphConditionalHandle h = 0;
    check(cudaGraphConditionalHandleCreate(&h, graph, 0, 0), "control flow", "cudaGraphConditionalHandleCreate");
    return static_cast<uint64_t>(h);
  }
  void set_condition(uint64_t handle, const backends::ConditionRule& r, void* stream) const override {
    join_side_work(static_cast<cudaStream_t>(stream));  // the predicate may be a collective's output
    kernels::ConditionArgs a{};
    a.value = r.value;
    a.type = static_cast<kernels::CondType>(static_cast<int>(r.dtype));
    a.counter = r.counter;
    a.below = r.kind == backends::ConditionRule::Kind::count ? 1 : 0;
    a.increment = r.increment ? 1 : 0;
    a.limit = r.limit;
    a.rec = reinterpret_cast<kernels::ErrorRecord*>(r.overflow.record);
    a.tag = r.overflow.tag;
    a.indices = r.indices;
    a.index_count = r.index_count;
    a.index_base = r.index_base;
    kernels::launch_set_condition(handle, a, static_cast<cudaStream_t>(stream));
    check_launch("control flow", "set_condition");
  }
  void record_conditional(void* stream, uint64_t handle, bool loop, int bodies,
                          const std::function<void(int, void*)>& enqueue) const override {
    // Collectives before the node are joined (the bodies read on streams of their own); inside
    // the bodies they stay on the body's stream.
    join_side_work(static_cast<cudaStream_t>(stream));
    ConditionalBodyScope no_side_work;
    const cudaGraphNode_t* deps = nullptr;
    const cudaGraphEdgeData* edges = nullptr;
    size_t n = 0;
    cudaGraph_t graph = capturing_graph(stream, &deps, &edges, &n);
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = static_cast<cudaGraphConditionalHandle>(handle);
    p.conditional.type = loop ? cudaGraphCondTypeWhile : cudaGraphCondTypeIf;
    p.conditional.size = static_cast<unsigned>(loop ? 1 : bodies);
    cudaGraphNode_t node = nullptr;
    check(cudaGraphAddNode(&node, graph, deps, edges, n, &p), "control flow", "cudaGraphAddNode (conditional)");
    check(cudaStreamUpdateCaptureDependencies(static_cast<cudaStream_t>(stream), &node, nullptr, 1,
                                              cudaStreamSetCaptureDependencies),
          "control flow", "cudaStreamUpdateCaptureDependencies");
    for (int b = 0; b < static_cast<int>(p.conditional.size); ++b) {
      cudaStream_t body = nullptr;
      check(cudaStreamCreateWithFlags(&body, cudaStreamNonBlocking), "control flow", "cudaStreamCreate");
      struct StreamGuard {
        cudaStream_t s;
        ~StreamGuard() { cudaStreamDestroy(s); }
      } guard{body};
      check(cudaStreamBeginCaptureToGraph(body, p.conditional.phGraph_out[b], nullptr, nullptr, 0,
                                          cudaStreamCaptureModeRelaxed),
            "control flow", "cudaStreamBeginCaptureToGraph");
      cudaGraph_t done = nullptr;
      try {
        const nvrtc::DependentLaunchScope dependent(loop);
        enqueue(b, body);
      } catch (...) {
        cudaStreamEndCapture(body, &done);
        cudaGetLastError();
        throw;
      }
      check(cudaStreamEndCapture(body, &done), "control flow", "cudaStreamEndCapture (conditional body)");
    }
  }
  void select_state(uint64_t handle, std::span<const void* const> conds, DType dtype,
                    std::span<const backends::StateCopy> copies, void* stream) const override {
    if (conds.empty() || conds.size() > static_cast<size_t>(kernels::kMaxSpeculated) ||
        copies.size() > static_cast<size_t>(kernels::kMaxSelected)) {
      fail(ErrorCode::internal, "while_loop", "select_state: {} iterations, {} values", conds.size(), copies.size());
    }
    kernels::SelectArgs a{};
    a.type = static_cast<kernels::CondType>(static_cast<int>(dtype));
    a.k = static_cast<int>(conds.size());
    for (size_t i = 0; i < conds.size(); ++i) a.cond[i] = conds[i];
    a.n = static_cast<int>(copies.size());
    for (size_t v = 0; v < copies.size(); ++v) {
      TG_CHECK_INTERNAL(copies[v].src.size() == conds.size(), "select_state: a source per iteration");
      a.dst[v] = copies[v].dst;
      a.bytes[v] = copies[v].bytes;
      for (size_t i = 0; i < conds.size(); ++i) a.src[v][i] = copies[v].src[i];
    }
    join_side_work(static_cast<cudaStream_t>(stream));
    kernels::launch_select_state(handle, a, static_cast<cudaStream_t>(stream));
    check_launch("while_loop", "select_state");
  }
  void iota_i32(int32_t* dst, int64_t n, int32_t start, void* stream) const override {
    join_side_work(static_cast<cudaStream_t>(stream));
    kernels::launch_iota_i32(dst, n, start, static_cast<cudaStream_t>(stream));
    check_launch("for_loop", "iota");
  }
  void* open_stream() const override {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "control flow", "cudaStreamCreate");
    return s;
  }
  void close_stream(void* s) const override { cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
  void follow(void* waiter, void* stream) const override {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "control flow", "cudaEventCreate");
    struct EventGuard {
      cudaEvent_t e;
      ~EventGuard() { cudaEventDestroy(e); }
    } guard{e};
    check(cudaEventRecord(e, static_cast<cudaStream_t>(stream)), "control flow", "cudaEventRecord");
    check(cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter), e, 0), "control flow", "cudaStreamWaitEvent");
  }
  void hold_pool(bool hold) const override { hold_capture_pool(hold); }

 private:
  // The graph `stream` is capturing into, and (when asked) the nodes later work depends on.
  static cudaGraph_t capturing_graph(void* stream, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* n) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    check(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr, &graph, deps, edges, n),
          "control flow", "cudaStreamGetCaptureInfo");
    if (status != cudaStreamCaptureStatusActive || graph == nullptr) {
      fail(ErrorCode::internal, "control flow", "a conditional node outside a recording");
    }
    return graph;
  }
};

}  // namespace

const backends::ControlRecorder& control_recorder() {
  static const CudaControlRecorder r;
  return r;
}

}  // namespace tg::cuda
