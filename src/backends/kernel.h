// What every backend's kernels see, and the per-backend kernel table. The runtime
// (src/runtime/executor.h) runs a planned graph step by step through such a table, giving each
// kernel its inputs, its outputs (already placed in the run's arena) and the run's services.
#pragma once
#include <array>
#include <functional>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "tg/tensor_data.h"

namespace tg::backends {

/// Where a kernel's device code reports bad input it finds (an out-of-range index, a division by
/// zero): one record per run in device memory, zeroed when the run starts. The first failing
/// kernel sets `tag` (atomically, from 0) to its slot's tag and may fill `detail`; the runtime
/// reads the record after the run, skips the commit of variables on the device when it is set,
/// and raises the error the slot's formatter builds. Layout shared with device code.
struct DeviceErrorRecord {
  unsigned long long tag = 0;  ///< 0: no error
  long long detail[3] = {0, 0, 0};
};

/// Builds the tg::Error of a failed check from the record the device wrote.
using DeviceErrorFormatter = std::function<Error(const DeviceErrorRecord&)>;

/// A kernel's handle on the run's record: device code writes `tag` into record->tag.
struct DeviceErrorSlot {
  DeviceErrorRecord* record = nullptr;  ///< device memory
  unsigned long long tag = 0;
};

/// Services of the run a kernel is part of (given by the runtime to every kernel of a run).
class RunServices {
 public:
  virtual ~RunServices() = default;
  /// The stream (a cudaStream_t on CUDA, null on the CPU) the kernel queues all its device work
  /// on. While the runtime captures a CUDA graph it is the capturing stream, so a kernel that
  /// queues work anywhere else would be missing from the graph's replays.
  virtual void* stream() = 0;
  /// Scratch memory of at least `bytes` bytes (256-byte aligned) on the run's device, valid for
  /// the work the kernel queues (stream order: the next kernel may reuse it). This is how kernels
  /// declare scratch: the runtime sizes each arena's scratch region from what the kernels asked
  /// for in earlier runs, so steady-state runs allocate nothing.
  virtual void* workspace(size_t bytes) = 0;
  /// A slot of the run's device error record for a check done on the device; `describe` turns
  /// the record into the tg::Error to raise (it is kept with a captured graph, so it must capture
  /// what it needs by value).
  virtual DeviceErrorSlot device_error(DeviceErrorFormatter describe) = 0;
  /// Null, or the run's device error record when this kernel writes outputs that are variables'
  /// buffers (the runtime's direct writes): then the kernel must write nothing when the record's
  /// tag is set when it runs (a check earlier in the run failed), checked on the device. Only the
  /// kernels the runtime asks this of (fused_elementwise) implement it.
  virtual const DeviceErrorRecord* write_guard() = 0;
};

/// What a kernel sees: the node (attributes, output types), its inputs, and its outputs, which
/// the runtime has already placed on `device` (in the run's arena) with the node's static output
/// types. A kernel writes its outputs and must never write into its inputs; the kernels of ops
/// that return a view of an input (reshape, stop_gradient) set the output to it instead (the
/// memory plan knows them: runtime/memory_plan.cpp). Inputs are on `device`.
struct KernelContext {
  const ir::Node& node;
  std::span<const TensorData> inputs;
  std::vector<TensorData>& outputs;
  /// The device the program runs on (outputs are there).
  Device device = Device::cpu();
  /// CompileOptions::precision of the executable (conv/matmul on f32 tensors).
  ComputePrecision precision = ComputePrecision::f32;
  /// The run's services; null only for CPU kernels run outside a program (constant folding).
  RunServices* run = nullptr;
  /// CompileOptions::deterministic (or TG_DETERMINISTIC=1): deterministic algorithms only.
  bool deterministic = false;
  /// LoadOptions::first_run_kernels of a loaded executable (CUDA conv2d / matmul in walked runs:
  /// backends/cuda/first_run.h; TG_FIRST_RUN_KERNELS overrides it).
  bool first_run_kernels = false;
  const char* op_name() const;
};

using Kernel = void (*)(KernelContext& ctx);

struct KernelTable {
  std::array<Kernel, ir::kNumOpKinds> kernels{};
  void set(ir::OpKind kind, Kernel k) { kernels[static_cast<size_t>(kind)] = k; }
  Kernel get(ir::OpKind kind) const { return kernels[static_cast<size_t>(kind)]; }
};

}  // namespace tg::backends
