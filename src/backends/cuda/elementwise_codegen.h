// Generated elementwise kernels for the CUDA backend (NVRTC, see nvrtc/compiler.h).
//
// An ElementwiseSpec describes y_j[i] = expr_j(v_0, ..., v_{k-1}) for every element i of the
// outputs (all of one shape), where v_m is input m's element for i under NumPy broadcasting,
// loaded in its storage type (device/elementwise.cuh: bool, signed char, unsigned char, int,
// long long, tg_dev::f16, tg_dev::bf16, float, double). An expression is C++ device code over
// v0..v{k-1}, the flat output index `i`, the int64 parameters p0..p{n-1} and `flag` (an int* set
// to 1 by integer division by zero; see tg_dev::bin_checked), producing output j's storage type,
// e.g. "tg_dev::bin<tg_dev::Add, float>(v0, v1)". Several ops can be fused into one expression.
//
// run_elementwise() classifies each input as contiguous (its element count equals the output's:
// offset == i), scalar (one element: loaded once) or broadcast (read through tg_dev::Strided
// element strides, 0 on broadcast dims, after dropping size-1 dims and merging adjacent dims as the
// CPU's plan_broadcast does). Kernels, generated once per (expressions, dtypes, input kinds) and
// cached:
//   - no broadcast input: a grid-stride loop over 16-byte packs (VEC = 16 / the widest contiguous
//     operand's size elements a thread an iteration, aligned vector loads/stores), then a scalar
//     tail; when a pointer is not aligned, the same loop with VEC = 1. int64 indices.
//   - broadcast inputs: when the innermost merged dim is a multiple of VEC, n < 2^31 and the
//     pointers are aligned, VEC elements of one row a step: offsets computed once per pack, inputs
//     that are contiguous along the row ('r') read as packs, inputs broadcast along it ('b') read
//     once (bias adds, batch-norm scales, softmax's x - max); a row vector broadcast over every
//     other dim ('h': a per-channel bias or scale in NHWC) is loaded once per thread, the grid
//     (~8 blocks per SM) keeping each thread on the same columns; otherwise element by element,
//     decomposing i into the merged dims (32-bit index math when n < 2^31, else 64-bit).
// Zero-element outputs launch nothing. Limits: 8 merged dims (tg_dev::kMaxRank).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/kernel.h"
#include "tg/tensor_data.h"

namespace tg::cuda {

struct ElementwiseSpec {
  std::vector<DType> inputs;        ///< storage dtypes of the inputs, in order
  std::vector<DType> outputs;       ///< storage dtypes of the outputs
  std::vector<std::string> exprs;   ///< one expression per output
  int num_params = 0;               ///< int64 parameters p0..p{n-1} (values given at launch)
  bool uses_flag = false;           ///< integer division: report the zero-divisor flag afterwards
  /// Device code placed before the kernels (helper functions the expressions call; fused.cpp
  /// puts a fused chain's program here).
  std::string prelude;
  /// When set, stands for `exprs` and `prelude` in the kernel cache's key (a caller's unique
  /// name for them, e.g. a fused program's key), so a launch does not hash the source.
  std::string key;
};

/// Dtype groups an op accepts (as the CPU's dispatch).
enum class DTypeGroup { all, numeric, floating, integer, boolean };
/// Raises tg::Error(dtype_mismatch) "[op] dtype X is not supported" unless `dtype` is in `group`.
void require_dtype(DTypeGroup group, DType dtype, std::string_view op);

/// Row-major element strides of `in` laid over `out` (right-aligned), 0 on broadcast dims;
/// raises tg::Error(shape_mismatch) naming `op` when `in` does not broadcast to `out` (as the CPU
/// does).
std::vector<int64_t> broadcast_strides(const Shape& out, const Shape& in, std::string_view op);

/// The device type name of a storage dtype ("float", "tg_dev::f16", "bool", ...).
const char* device_type(DType dtype);

/// The full CUDA source of the kernels of `spec` for the given input kinds (one a input: 'c'
/// contiguous, 's' scalar, 'r' strided with innermost stride 1, 'b' strided with innermost
/// stride 0), exposed for tests and debugging.
std::string elementwise_source(const ElementwiseSpec& spec, std::string_view kinds);

/// Runs `spec` on ctx's device and stream: inputs broadcast to outputs[0]'s shape (every output
/// must have that shape). Raises tg::Error(shape_mismatch) naming ctx's op when an input does
/// not broadcast; with spec.uses_flag, a zero divisor is reported in the run's device error
/// record, and the runtime raises tg::Error(invalid_argument) "[op] integer division by zero"
/// after the run.
void run_elementwise(const backends::KernelContext& ctx, const ElementwiseSpec& spec,
                     std::span<const TensorData> inputs, std::span<TensorData> outputs,
                     std::span<const int64_t> params = {});

}  // namespace tg::cuda
