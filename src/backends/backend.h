// The narrow contract every backend implements for the runtime (src/runtime): its kernels, its
// memory, stream-ordered copies, the predicated commit of variables, and the capture of a run
// into something it can replay (a CUDA graph). The runtime owns execution (program, memory plan,
// variable store, control flow, profiler); a backend never sees those.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/kernel.h"
#include "ir/graph.h"
#include "tg/tensor_data.h"

namespace tg::backends {

/// One copy of the commit at the end of a run: a staged variable value into its buffer.
struct CommitCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

/// A generated kernel compiled by a backend (saved executables, docs/design/0008): the key the
/// backend caches it under (compiler version, options, source) and its binary image.
struct CodeObject {
  std::string key;
  std::string image;
};

/// A run recorded by Backend::record, replayed by Backend::replay (a CUDA graph).
class RecordedRun {
 public:
  virtual ~RecordedRun() = default;
};

/// Streams are opaque handles (a cudaStream_t on CUDA); null is the device's own stream. On the
/// CPU everything happens when it is called.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  /// The backend's kernels, one per op kind it implements.
  virtual const KernelTable& kernels() const = 0;
  /// True when `node` can run here: its kind has a kernel, or the runtime runs it (placeholders,
  /// variables, control flow: runtime/executor.h).
  bool supports(const ir::Node& node) const;
  /// True when compile should run the elementwise fusion pass for this backend (TG_FUSION=0/1
  /// overrides).
  virtual bool fuses_elementwise() const { return false; }
  /// The weights layout this backend's conv2d reads without permuting them, for a convolution
  /// `desc` on tensors of `dtype`; nullopt when it reads every layout alike. Compile stores
  /// constant weights in it (passes::pack_conv_weights).
  virtual std::optional<Layout> packed_conv_weights(const Conv2dDesc& desc, DType dtype) const {
    return std::nullopt;
  }
  /// True when output 0 of `node` may take the memory of its input `input` (of type `type`, the
  /// same byte size, read last by this node): the kernel reads each element of that input before
  /// it writes the same element of the output, and nothing else in between.
  virtual bool writes_in_place(const ir::Node& node, int input, const TensorType& type) const { return false; }

  // ---- memory and copies
  /// `bytes` bytes (256-byte aligned) for arenas, scratch and records, freed when the pointer
  /// goes. Raises tg::Error(out_of_memory) with the sizes.
  virtual std::shared_ptr<void> allocate(size_t bytes) const = 0;
  /// Copies `bytes` bytes in the order of `stream` (src or dst may be on the host). A copy to the
  /// host is complete on return.
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes,
                    void* stream) const = 0;
  /// Zeroes `bytes` bytes at `dst` (on this device) in the order of `stream`.
  virtual void fill_zero(void* dst, size_t bytes, void* stream) const = 0;

  // ---- streams
  /// The stream the runtime runs on: the device's own (null on the CPU).
  virtual void* own_stream() const { return nullptr; }
  /// RunOptions::cuda_stream: orders the device's own stream after the work queued on `caller`
  /// so far (enter), or `caller` after the work queued on the own stream so far (leave).
  virtual void enter_stream(void* caller) const {}
  virtual void leave_stream(void* caller) const {}
  /// Waits for the work queued on `stream` so far; raises the device's error if it failed.
  virtual void synchronize(void* stream) const {}
  /// Orders `stream` after the work the run's kernels queued on streams of their own (CUDA:
  /// NCCL's collectives on the group's stream, backends/cuda/side_work.h). The runtime calls it
  /// after the last kernel of a run (walked or recorded), before the results are handed out.
  virtual void join_side_streams(void* stream) const {}

  // ---- device errors and the commit of variables
  /// Queues `copies` on `stream` as one step that does nothing when `record` (device memory, may
  /// be null) holds an error. CPU: plain copies, now.
  virtual void commit(std::span<const CommitCopy> copies, const DeviceErrorRecord* record,
                      void* stream) const = 0;
  /// The record as the device wrote it (waits for `stream`). CPU: a plain read.
  virtual DeviceErrorRecord read_error(const DeviceErrorRecord* record, void* stream) const = 0;
  /// Deferred device errors (tg::set_deferred_device_errors): host memory for one record that
  /// post_error copies into without the host waiting (CUDA: pinned). Default: ordinary memory.
  virtual std::shared_ptr<DeviceErrorRecord> allocate_error_mailbox() const;
  /// Queues a copy of `record` into `mailbox` (from allocate_error_mailbox) on `stream`; the host
  /// does not wait: the mailbox holds the record once the work queued before it has run. Default
  /// (a record in host memory): a plain copy, now.
  virtual void post_error(const DeviceErrorRecord* record, DeviceErrorRecord* mailbox, void* stream) const;

  // ---- recorded runs (CUDA graphs)
  /// True when runs can be recorded once and replayed.
  virtual bool can_record() const { return false; }
  /// Records the work `enqueue` queues on the stream it is given (a capturing stream); memory the
  /// kernels allocate meanwhile comes from a pool the recording keeps. Raises tg::Error when the
  /// work cannot be recorded (nothing ran then).
  virtual std::unique_ptr<RecordedRun> record(const std::function<void(void* stream)>& enqueue) const;
  /// Queues a recorded run on `stream`.
  virtual void replay(const RecordedRun& run, void* stream) const;

  // ---- profiling (TG_PROFILE): device events around kernels; null where wall time is used
  virtual void* record_event(void* stream) const { return nullptr; }
  /// Milliseconds between two recorded events once both completed (after synchronize).
  virtual double event_ms(void* from, void* to) const { return 0; }
  virtual void release_event(void* event) const {}

  // ---- saved executables (docs/design/0008): generated code
  /// What compiled code of this backend depends on ("" where nothing: the CPU), e.g.
  /// "sm_90 cuda=12080 cudnn=90100 nvrtc=12.8": a saved executable whose target differs is
  /// recompiled from its graph instead of using its stored kernels.
  virtual std::string code_target() const { return {}; }
  /// While `sink` is set (per thread; null clears it), every generated kernel this backend's
  /// kernels compile or take from a cache on this thread is appended to it.
  virtual void set_code_sink(std::vector<CodeObject>* sink) const {}
  /// Loads `objects` (from a saved executable) so that kernels asking for the same keys use them
  /// without compiling. Raises tg::Error(io_error) "kernel <i> ..." for a binary the driver refuses.
  /// Work it starts in the background (preparing library algorithm choices) goes on while the
  /// returned handle (or another one it returned) lives; when the last one is released, what has
  /// not started is dropped (left to first use) and what is under way is waited for, so that a
  /// process never exits with a thread inside a library's initialization. Null: nothing started.
  /// `first_run_kernels`: LoadOptions::first_run_kernels of the load (the CUDA backend then holds
  /// the preparation back, docs/design/0011).
  virtual std::shared_ptr<void> preload_code(std::span<const CodeObject> objects, bool first_run_kernels = false) const {
    return nullptr;
  }
  /// Starts copying a loaded executable's constants (host tensors, in the order of their first
  /// use) to the device in the background, so that its first run does not upload them one by one
  /// (CUDA: cuda::prefetch_constants). Returns a handle whose release waits for that work (null:
  /// nothing started, e.g. on the CPU).
  virtual std::shared_ptr<void> prefetch_constants(std::span<const TensorData> values) const { return nullptr; }
};

/// The backend for `device`; raises tg::Error(unsupported) when the build has none. Defined in
/// src/backends/registry.cpp, the one file that knows every backend.
const Backend& backend_for(Device device);

/// Kinds the runtime runs itself instead of a backend's kernel: placeholder, variable,
/// read_variable, assign_variable, if_else, for_loop, while_loop.
bool runs_in_runtime(ir::OpKind kind);

}  // namespace tg::backends
