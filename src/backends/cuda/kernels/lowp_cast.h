// Casts between float32 and a 16-bit float type (bf16 or f16) for the reduced-precision paths of
// matmul and conv (CompileOptions::precision bf16/f16 on float32 tensors): inputs rounded to the
// 16-bit type (round to nearest even), results widened back. Launchers run on `stream`; n may be 0.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// dst[i] = round_to_16bit(src[i]) (bf16 when `bf16`, else f16); dst holds n 16-bit values.
void launch_f32_to_lowp(const float* src, void* dst, int64_t n, bool bf16, cudaStream_t stream);
/// dst[i] = float(src[i]); src holds n 16-bit values (bf16 when `bf16`, else f16).
void launch_lowp_to_f32(const void* src, float* dst, int64_t n, bool bf16, cudaStream_t stream);

}  // namespace tg::cuda::kernels
