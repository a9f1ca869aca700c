// Device-side pieces of control flow recorded as CUDA graph conditional nodes (the runtime's
// lowering, src/runtime/control_flow_graph.cpp): the kernel that sets a conditional node's
// condition from a one-element device tensor and a loop counter, the kernel that picks the state
// of a speculatively unrolled while loop, and an iota for the indices of unrolled for loops.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels/status.h"

namespace tg::cuda::kernels {

/// Element types a condition value may have (the order of tg::DType).
enum class CondType : int { b8, i8, u8, i32, i64, f16, bf16, f32, f64 };

/// How set_condition computes the condition (see launch_set_condition).
struct ConditionArgs {
  const void* value;        ///< one element of `type`, or null (then `limit` is the bound)
  CondType type;
  int* counter;             ///< i32 iteration counter, or null
  int below;                ///< 1: count rule; 0: truthy rule
  int increment;            ///< see launch_set_condition
  long long limit;          ///< truthy rule: the counter must stay below it (< 0: no limit)
  ErrorRecord* rec;         ///< count rule: where a bound above 2^31-1 is reported (may be null)
  unsigned long long tag;
  int* indices;             ///< count rule: indices[4 * j] = index_base + c * index_count + j (c before ++;
                            ///< 16 bytes apart), or null
  int index_count;
  int index_base;
};

/// One thread sets `handle` (a cudaGraphConditionalHandle):
///  - truthy rule: c = value != 0 (NaN counts as true) && (limit < 0 || *counter < limit); when
///    c and `increment`, ++*counter;
///  - count rule: first the loop indices of this iteration when `indices` is set, then, when
///    `increment`, ++*counter; c = *counter < bound, the bound being the
///    value read as an integer (or `limit` when value is null). A bound above 2^31-1 sets the
///    error record (detail[0] = the bound) and c = 0.
void launch_set_condition(unsigned long long handle, const ConditionArgs& a, cudaStream_t stream);

constexpr int kMaxSpeculated = 32;   ///< body copies one while iteration may run (TG_LOOP_UNROLL's cap)
constexpr int kMaxSelected = 16;     ///< loop values one select copies

/// The state after k speculated iterations of a while loop: the first j in [1, k] whose
/// condition cond[j - 1] is false (else k); copies src[v][j - 1] to dst[v] for every value v and
/// sets `handle` to 1 when every condition was true (the loop goes on), else 0. The arguments
/// (~4.6 KB at the caps) exceed the classic 4 KB parameter limit: kernels built with CUDA 12.1+
/// for sm_70+ take up to 32 KB (the project builds for sm_90).
struct SelectArgs {
  const void* cond[kMaxSpeculated];
  CondType type;
  int k;
  int n;  ///< values
  void* dst[kMaxSelected];
  const void* src[kMaxSelected][kMaxSpeculated];
  unsigned long long bytes[kMaxSelected];
};
void launch_select_state(unsigned long long handle, const SelectArgs& a, cudaStream_t stream);

/// out[4 * i] = start + i for i in [0, n) (i32, 16 bytes apart).
void launch_iota_i32(int* out, long long n, int start, cudaStream_t stream);

}  // namespace tg::cuda::kernels
