#include "backends/cuda/cuda_backend.h"

#include <deque>
#include <mutex>
#include <new>
#include <vector>

#include "backends/cuda/algo_choices.h"
#include "backends/cuda/context.h"
#include "backends/cuda/first_run.h"
#include "backends/cuda/side_work.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "backends/cuda/kernels/status.h"
#include "core/error_util.h"
#include "core/stats.h"

namespace tg::cuda {

namespace {

// Events, reused: timing ones for TG_PROFILE, plain ones for stream ordering.
struct EventPool {
  unsigned flags;
  std::mutex mu;
  std::vector<cudaEvent_t> free;
  cudaEvent_t take() {
    {
      std::lock_guard lock(mu);
      if (!free.empty()) {
        cudaEvent_t e = free.back();
        free.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, flags), "cuda", "cudaEventCreate");
    return e;
  }
  void give(cudaEvent_t e) {
    std::lock_guard lock(mu);
    free.push_back(e);
  }
};
EventPool& timing_events() {
  static auto* p = new EventPool{cudaEventDefault, {}, {}};
  return *p;
}
EventPool& order_events() {
  static auto* p = new EventPool{cudaEventDisableTiming, {}, {}};
  return *p;
}

// `waiter` waits for the work queued on `on` so far.
void order_after(cudaStream_t waiter, cudaStream_t on) {
  cudaEvent_t e = order_events().take();
  check(cudaEventRecord(e, on), "cuda", "cudaEventRecord");
  check(cudaStreamWaitEvent(waiter, e, 0), "cuda", "cudaStreamWaitEvent");
  order_events().give(e);  // the wait captured the event's state: it may be recorded again
}

// A captured run: the instantiated CUDA graph and the memory pool its kernels allocated from.
struct CudaGraphRun final : backends::RecordedRun {
  cudaGraphExec_t exec = nullptr;
  std::shared_ptr<CapturePool> pool;
  ~CudaGraphRun() override {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

class CudaBackend final : public backends::Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {}
  Device device() const override { return Device::cuda(device_); }
  const KernelTable& kernels() const override { return kernel_table(); }
  bool fuses_elementwise() const override { return true; }
  // cuDNN reads NHWC data with KRSC (OHWI) filters and NCHW data (and every f64 convolution,
  // run NCHW) with KCRS (OIHW) ones; conv.cpp permutes other weights in every run.
  std::optional<Layout> packed_conv_weights(const Conv2dDesc& d, DType dtype) const override {
    return d.data_layout == Layout::nhwc && dtype != DType::f64 ? Layout::ohwi : Layout::oihw;
  }
  // The generated elementwise kernels (elementwise_codegen.h) read an input of the output's shape
  // at the index they write, and a single output has no other store in between.
  bool writes_in_place(const ir::Node& n, int input, const TensorType& type) const override {
    return n.kind == ir::OpKind::fused_elementwise && n.outputs.size() == 1 && type.shape == n.outputs[0].shape &&
           dtype_size(type.dtype) == dtype_size(n.outputs[0].dtype) && input >= 0;
  }

  std::shared_ptr<void> allocate(size_t bytes) const override { return device_allocate(device_, bytes); }
  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes,
            void* stream) const override {
    join_side_work(stream_or_own(stream));
    cuda::copy(dst, dst_device, src, src_device, bytes, stream);
  }
  void fill_zero(void* dst, size_t bytes, void* stream) const override {
    join_side_work(stream_or_own(stream));
    check(cudaMemsetAsync(dst, 0, bytes, stream_or_own(stream)), "cuda", "cudaMemsetAsync");
  }

  void* own_stream() const override { return activate(device_).stream; }
  void enter_stream(void* caller) const override {
    order_after(activate(device_).stream, static_cast<cudaStream_t>(caller));
  }
  void leave_stream(void* caller) const override {
    join_side_work(activate(device_).stream);
    order_after(static_cast<cudaStream_t>(caller), activate(device_).stream);
  }
  void join_side_streams(void* stream) const override { join_side_work(stream_or_own(stream)); }
  void synchronize(void* stream) const override {
    join_side_work(stream_or_own(stream));
    stats::add(stats::Counter::host_waits);
    check(cudaStreamSynchronize(stream_or_own(stream)), "cuda", "a kernel on the stream failed");
  }

  void commit(std::span<const backends::CommitCopy> copies, const backends::DeviceErrorRecord* record,
              void* stream) const override {
    join_side_work(stream_or_own(stream));
    std::vector<kernels::CommitEntry> entries;
    entries.reserve(copies.size());
    for (const auto& c : copies) entries.push_back({c.dst, c.src, c.bytes});
    kernels::launch_commit(entries.data(), static_cast<int>(entries.size()),
                           reinterpret_cast<const kernels::ErrorRecord*>(record), stream_or_own(stream));
    check_launch("commit", "commit");
  }
  backends::DeviceErrorRecord read_error(const backends::DeviceErrorRecord* record, void* stream) const override {
    backends::DeviceErrorRecord r;
    join_side_work(stream_or_own(stream));
    cuda::copy(&r, Device::cpu(), record, device(), sizeof r, stream);
    return r;
  }
  std::shared_ptr<backends::DeviceErrorRecord> allocate_error_mailbox() const override {
    activate(device_);
    void* p = nullptr;
    check(cudaHostAlloc(&p, sizeof(backends::DeviceErrorRecord), cudaHostAllocDefault), "cuda",
          "cudaHostAlloc (device error mailbox)");
    auto* r = new (p) backends::DeviceErrorRecord();
    return {r, [](backends::DeviceErrorRecord* q) { cudaFreeHost(q); }};
  }
  // No host wait: a copy into pinned memory is asynchronous (the staging paths of cuda::copy wait).
  void post_error(const backends::DeviceErrorRecord* record, backends::DeviceErrorRecord* mailbox,
                  void* stream) const override {
    join_side_work(stream_or_own(stream));
    check(cudaMemcpyAsync(mailbox, record, sizeof *mailbox, cudaMemcpyDeviceToHost, stream_or_own(stream)), "cuda",
          "device error record to the host");
  }

  bool can_record() const override { return true; }
  std::unique_ptr<backends::RecordedRun> record(const std::function<void(void*)>& enqueue) const override {
    activate(device_);
    cudaStream_t capture = nullptr;
    check(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking), "cuda", "cudaStreamCreate");
    struct StreamGuard {
      cudaStream_t s;
      ~StreamGuard() { cudaStreamDestroy(s); }
    } guard{capture};
    auto run = std::make_unique<CudaGraphRun>();
    run->pool = make_capture_pool(device_);
    CapturePoolScope scope(run->pool);
    // Relaxed: kernels may still allocate (cudaMalloc) and load modules while the stream captures.
    check(cudaStreamBeginCapture(capture, cudaStreamCaptureModeRelaxed), "cuda", "cudaStreamBeginCapture");
    cudaGraph_t graph = nullptr;
    try {
      enqueue(capture);
      join_side_work(capture);  // NCCL's stream joined back before the capture ends
    } catch (...) {
      drop_side_work();
      cudaStreamEndCapture(capture, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    const cudaError_t ended = cudaStreamEndCapture(capture, &graph);
    if (ended != cudaSuccess || graph == nullptr) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      fail(ErrorCode::unsupported, "cuda", "the run could not be captured into a CUDA graph: {}",
           cudaGetErrorString(ended));
    }
    const cudaError_t made = cudaGraphInstantiate(&run->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
      cudaGetLastError();
      run->exec = nullptr;
      fail(ErrorCode::unsupported, "cuda", "cudaGraphInstantiate: {}", cudaGetErrorString(made));
    }
    return run;
  }
  void replay(const backends::RecordedRun& run, void* stream) const override {
    const auto& g = static_cast<const CudaGraphRun&>(run);
    check(cudaGraphLaunch(g.exec, stream_or_own(stream)), "cuda", "cudaGraphLaunch");
  }

  void* record_event(void* stream) const override {
    cudaEvent_t e = timing_events().take();
    check(cudaEventRecord(e, stream_or_own(stream)), "profile", "cudaEventRecord");
    return e;
  }
  double event_ms(void* from, void* to) const override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(from), static_cast<cudaEvent_t>(to)), "profile",
          "cudaEventElapsedTime");
    return static_cast<double>(ms);
  }
  void release_event(void* e) const override { timing_events().give(static_cast<cudaEvent_t>(e)); }

  std::string code_target() const override {
    const DeviceContext& dc = activate(device_);
    int runtime_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    return fmt::format("sm_{}{} cuda={} cudnn={} cublaslt={} nvrtc={}", dc.cc_major, dc.cc_minor, runtime_version,
                       cudnnGetVersion(), cublasLtGetVersion(), nvrtc::version());
  }
  void set_code_sink(std::vector<backends::CodeObject>* sink) const override { nvrtc::set_code_sink(sink); }
  std::shared_ptr<void> preload_code(std::span<const backends::CodeObject> objects,
                                     bool first_run_kernels) const override {
    activate(device_);
    // Library algorithm choices (algo_choices.h) and NVRTC programs; a saved executable hands
    // each group in its own call (its 'algorithms' and 'kernels' sections).
    std::vector<backends::CodeObject> choices, programs;
    for (const auto& o : objects) (algo_choices::is_choice(o) ? choices : programs).push_back(o);
    std::shared_ptr<void> handle;
    if (!choices.empty()) {
      algo_choices::preload(choices);
      handle = algo_choices::prepare_async(device_, std::move(choices), first_run::enabled(first_run_kernels));
    }
    if (!programs.empty()) nvrtc::preload(programs);
    return handle;
  }
  std::shared_ptr<void> prefetch_constants(std::span<const TensorData> values) const override {
    return cuda::prefetch_constants(values, device_);
  }

 private:
  cudaStream_t stream_or_own(void* s) const {
    return s != nullptr ? static_cast<cudaStream_t>(s) : activate(device_).stream;
  }
  int device_;
};

}  // namespace

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
#define TG_CALL_CUDA_REGISTER_KERNELS(family) register_##family##_kernels(t);
    TG_OP_FAMILIES(TG_CALL_CUDA_REGISTER_KERNELS)
#undef TG_CALL_CUDA_REGISTER_KERNELS
    return t;
  }();
  return table;
}

const backends::Backend& cuda_backend(int device) {
  check_device(device);
  static std::mutex mu;
  static auto* backends = new std::deque<CudaBackend>;
  std::lock_guard<std::mutex> lock(mu);
  for (const CudaBackend& b : *backends) {
    if (b.device().index == device) return b;
  }
  return backends->emplace_back(device);
}

}  // namespace tg::cuda
