// Device expressions of the elementwise ops (unary, binary, ternary, cast families) over the
// tg_dev functors of device/elementwise.cuh: what the single-op kernels and the fused kernels
// (fused.cpp) generate, so both compute exactly the same values.
#pragma once
#include <span>
#include <string>

#include "backends/cuda/elementwise_codegen.h"
#include "ir/op_info.h"

namespace tg::cuda {

/// C++ device expression of `kind` applied to `args` (expressions of the storage types `in`),
/// giving the storage type of `out`. Checks the dtypes as the single-op kernels do (raises
/// tg::Error(dtype_mismatch) naming `op`); sets *uses_flag for integer division (the expression
/// then writes `flag`). Returns "" for an op that is not elementwise.
std::string elementwise_expression(ir::OpKind kind, std::span<const DType> in, DType out,
                                   std::span<const std::string> args, std::string_view op, bool* uses_flag);

}  // namespace tg::cuda
