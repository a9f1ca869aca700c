// Launchers of the reduction kernels (kernels/reduce.cu) of the CUDA reduce family
// (backends/cuda/reduce.cpp). Plain pointers and sizes only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace tg::cuda::kernels {

/// Element types of the device kernels (storage types: bool is one byte 0/1, f16/bf16 16-bit).
enum class ScalarType : int { bool_, i8, u8, i32, i64, f16, bf16, f32, f64 };

/// Device scratch of at least `bytes` bytes, valid until the launcher returns (the caller keeps
/// it alive until the queued work is done; stream order makes that automatic).
using ScratchFn = std::function<void*(size_t bytes)>;

enum class ReduceKind : int { sum, prod, max, min, all, any, argmax, argmin };

/// A dim group of the input after merging: its size and whether it is reduced.
struct ReduceGroup {
  int64_t size;
  bool reduced;
};

/// Reduces x (dims `groups`, at least one reduced, no size-1 groups, x non-empty) into y
/// (the kept dims in order). Value kinds write x's type; argmax/argmin (exactly one reduced
/// group) write int64 indices along it. Several reduced groups run as several passes, the last
/// group first, intermediates in the accumulator type. Deterministic (no atomics).
void reduce(ReduceKind kind, ScalarType type, const void* x, void* y,
            std::vector<ReduceGroup> groups, int sm_count, const ScratchFn& scratch,
            cudaStream_t stream);

/// Fills y[0, n) with the reduction's identity in type `type` (empty reductions).
void reduce_fill_identity(ReduceKind kind, ScalarType type, void* y, int64_t n,
                          cudaStream_t stream);

}  // namespace tg::cuda::kernels
