// Row programs: fused_elementwise programs (ir::FusedAttrs) with row-reduction steps, made by
// passes/fuse_rows.cpp (LayerNorm, softmax: one kernel a call). A step of kind reduce_sum or
// reduce_max (one argument, a floating dtype, the step's dtype the argument's) is the argument's
// value reduced over the last axis of FusedAttrs::shape (a row) and broadcast back along it:
// every element of a row holds its row's result, so every program value still has `shape`.
// Sums accumulate as reduce_sum does (f32 and f64 in double, f16/bf16 in float; rounded once to
// the dtype), max as reduce_max (exact, NaN propagates).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ir/attrs.h"

namespace tg::ir {

/// The longest row of a row program (elements): the CUDA kernel keeps a row in registers (at most
/// 8 elements a thread of 1024). passes::fuse_rows makes nothing longer; the CUDA kernel raises
/// tg::Error(unsupported) beyond it.
inline constexpr int64_t kMaxFusedRowLength = 8192;

/// Whether `k` is a row-reduction step kind (reduce_sum, reduce_max).
inline bool is_row_reduction_step(OpKind k) { return k == OpKind::reduce_sum || k == OpKind::reduce_max; }

/// Whether the program has row-reduction steps (a row program).
inline bool has_row_reductions(const FusedAttrs& a) {
  for (const FusedStep& s : a.steps) {
    if (is_row_reduction_step(s.kind)) return true;
  }
  return false;
}

/// Which program values vary along the row, given the node's input shapes (broadcast to `shape`):
/// an input whose last dim is not 1 (rank >= 1) does; a row reduction does not; another step does
/// when one of its arguments does. One entry per value (inputs, then steps); the caller checks
/// that arguments are in range. The CUDA kernel keeps a varying value as one register per element
/// a thread holds and the others as one register.
inline std::vector<bool> row_value_varies(const FusedAttrs& a, std::span<const Shape> input_shapes) {
  std::vector<bool> full;
  full.reserve(input_shapes.size() + a.steps.size());
  for (const Shape& s : input_shapes) full.push_back(!s.empty() && s.back() != 1);
  for (const FusedStep& s : a.steps) {
    bool f = false;
    if (!is_row_reduction_step(s.kind)) {
      for (int v : s.args) f = f || (v >= 0 && static_cast<size_t>(v) < full.size() && full[static_cast<size_t>(v)]);
    }
    full.push_back(f);
  }
  return full;
}

}  // namespace tg::ir
