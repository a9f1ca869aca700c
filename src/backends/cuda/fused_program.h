// Device code of a fused elementwise program (ir::FusedAttrs::steps), shared by the CUDA kernels of
// fused_elementwise (fused.cpp) and fused_reduce (fused_reduce.cpp).
//
// The program becomes one device function computing every step in registers, in the steps'
// storage types (so values round exactly as the single-op kernels do, through the expressions of
// elementwise_ops.h):
//   struct tg_fused_out { T0 o0; T1 o1; ... };
//   TG_DEVICE_INLINE tg_fused_out tg_fused(I0 v0, I1 v1, ..., int* flag);
// where v<m> is input m's element (storage type) and o<k> the program value FusedAttrs::outputs[k]
// (a step, or directly an input: "r.o0 = v1"). `flag` is written only by integer division steps
// (uses_flag; see tg_dev::bin_checked).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/kernel.h"
#include "ir/attrs.h"

namespace tg::cuda {

struct FusedProgramSource {
  std::string prelude;         ///< definitions of struct tg_fused_out and tg_fused(...)
  std::vector<DType> outputs;  ///< storage dtype of each program output o<k>
  bool uses_flag = false;      ///< some step is an integer division (writes *flag)
  /// The first step using the flag (errors of an integer division name that op).
  ir::OpKind flag_op = ir::OpKind::fused_elementwise;
  /// Short key standing for (program, input dtypes) in kernel caches ("P<n>"; set by
  /// cached_fused_program only).
  std::string key;
};

/// The device code of `a`'s program for inputs of storage dtypes `inputs`. Raises the dtype errors
/// of the single-op kernels (naming the step's op) and tg::Error(internal) naming `op` for a step
/// that is not elementwise.
FusedProgramSource fused_program_source(const ir::FusedAttrs& a, std::span<const DType> inputs,
                                        std::string_view op);

/// fused_program_source memoized per (program, input dtypes), with FusedProgramSource::key set:
/// a launch costs a lookup by a compact fingerprint instead of regenerating the source (the
/// host time per fused kernel matters at batch 1). Thread-safe; entries live for the process.
const FusedProgramSource& cached_fused_program(const ir::FusedAttrs& a, std::span<const DType> inputs,
                                               std::string_view op);

/// The CUDA kernel of fused_reduce (fused_reduce.cpp), registered by register_fused_kernels.
void fused_reduce_kernel(backends::KernelContext& ctx);
/// The CUDA kernel of a fused_elementwise row program (ir/fused_rows.h; fused_rows.cpp): one
/// kernel, a warp or block per row. tg::Error(unsupported) for rows over ir::kMaxFusedRowLength.
void fused_rows_kernel(backends::KernelContext& ctx);
/// The CUDA kernel of fused_stencil (fused_stencil.cpp): one generated tiled stencil kernel with
/// the prologue and epilogue programs inside. tg::Error(internal) for a window the tiled kernel
/// does not take (the fusion pass does not make such nodes).
void fused_stencil_kernel(backends::KernelContext& ctx);

}  // namespace tg::cuda
