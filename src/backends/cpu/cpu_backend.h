// The CPU backend: a kernel per op (one file per op family), run in schedule order.
#pragma once
#include <array>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tg::cpu {

/// Runs the regions of control-flow nodes for their kernels (implemented by the executor).
class RegionRunner {
 public:
  virtual ~RegionRunner() = default;
  /// Runs `region` (of a node of the program being run) with its parameters bound in order to
  /// `args`, in this run's variable transaction; returns its results.
  virtual std::vector<TensorData> run_region(const ir::Region& region, std::span<const TensorData> args,
                                             ir::VariableTransaction& variables) const = 0;
};

/// What a kernel sees: the node (attributes, output types), its inputs, and its outputs, which
/// the executor has already allocated with the node's static output types. A kernel may replace
/// an output with another TensorData of the same type (for example a view sharing its input's
/// storage) but must never write into its inputs.
struct KernelContext {
  const ir::Node& node;
  std::span<const TensorData> inputs;
  std::vector<TensorData>& outputs;
  /// This run's view of the graph's variables (see ir::VariableTransaction).
  ir::VariableTransaction& variables;
  /// Runs regions (set by the executor; control-flow kernels replace `outputs` with the results).
  const RegionRunner* regions = nullptr;
  const char* op_name() const;
};

using Kernel = void (*)(KernelContext& ctx);

struct KernelTable {
  std::array<Kernel, ir::kNumOpKinds> kernels{};
  void set(ir::OpKind kind, Kernel k) { kernels[static_cast<size_t>(kind)] = k; }
  Kernel get(ir::OpKind kind) const { return kernels[static_cast<size_t>(kind)]; }
};

/// Every family's kernels.
const KernelTable& kernel_table();
const backends::Backend& cpu_backend();

#define TG_DECLARE_REGISTER_KERNELS(family) void register_##family##_kernels(KernelTable& t);
TG_OP_FAMILIES(TG_DECLARE_REGISTER_KERNELS)
#undef TG_DECLARE_REGISTER_KERNELS

}  // namespace tg::cpu
