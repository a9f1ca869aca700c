// What every backend's kernels see, and the per-backend kernel table. The interpreter
// (backends/interpreter.h) runs a planned graph node by node through such a table; the CPU and
// CUDA backends differ only in their tables and the device their outputs live on.
#pragma once
#include <array>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/variables.h"
#include "tg/tensor_data.h"

namespace tg::backends {

/// Runs the regions of control-flow nodes for their kernels (implemented by the interpreter).
class RegionRunner {
 public:
  virtual ~RegionRunner() = default;
  /// Runs `region` (of a node of the program being run) with its parameters bound in order to
  /// `args`, in this run's variable transaction; returns its results.
  virtual std::vector<TensorData> run_region(const ir::Region& region, std::span<const TensorData> args,
                                             ir::VariableTransaction& variables) const = 0;
};

/// What a kernel sees: the node (attributes, output types), its inputs, and its outputs, which
/// the interpreter has already allocated on `device` with the node's static output types. A
/// kernel may replace an output with another TensorData of the same type (for example a view
/// sharing its input's storage) but must never write into its inputs. Inputs are on `device`.
struct KernelContext {
  const ir::Node& node;
  std::span<const TensorData> inputs;
  std::vector<TensorData>& outputs;
  /// This run's view of the graph's variables (see ir::VariableTransaction).
  ir::VariableTransaction& variables;
  /// Runs regions (set by the interpreter; control-flow kernels replace `outputs` with the results).
  const RegionRunner* regions = nullptr;
  /// The device the program runs on (outputs are allocated there).
  Device device = Device::cpu();
  /// CompileOptions::precision of the executable (conv/matmul on f32 tensors).
  ComputePrecision precision = ComputePrecision::f32;
  /// Host copies of inputs known to the interpreter without a device read (small host feeds such
  /// as a batch norm's is_training flag): empty span or empty entries where unknown. Lets
  /// control-flow kernels branch without waiting for the GPU.
  std::span<const TensorData> host_inputs = {};
  const char* op_name() const;
};

using Kernel = void (*)(KernelContext& ctx);

struct KernelTable {
  std::array<Kernel, ir::kNumOpKinds> kernels{};
  /// Waits for the device's queued work (asynchronous backends; used by TG_PROFILE timing).
  void (*synchronize)(Device device) = nullptr;
  /// TG_PROFILE on asynchronous backends: records a timing event on the device's queue (an
  /// opaque handle); event_ms gives the milliseconds between two recorded events once both have
  /// completed (after synchronize); release_event returns a handle. Null where wall time is used.
  void* (*record_event)(Device device) = nullptr;
  double (*event_ms)(void* from, void* to) = nullptr;
  void (*release_event)(void* event) = nullptr;
  void set(ir::OpKind kind, Kernel k) { kernels[static_cast<size_t>(kind)] = k; }
  Kernel get(ir::OpKind kind) const { return kernels[static_cast<size_t>(kind)]; }
};

}  // namespace tg::backends
