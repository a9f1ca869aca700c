// Choosing among a library's candidate algorithms by timing them (XLA's GEMM autotuner, PyTorch
// inductor's max-autotune): the heuristics' first answer is a model's guess, and for small,
// latency-bound problems (batch-1 transformer projections: a few CTAs on 132 SMs) another of its
// candidates is often faster. Used when a plan is built, in a walked run (never while a stream
// captures): by the cuBLASLt GEMMs (matmul.cpp; not under CompileOptions::deterministic, where
// the choice must not depend on timing, nor with TG_MATMUL_AUTOTUNE=0) and the cuDNN graph-API
// convolutions (cudnn_conv_graph.cpp: the heuristics' engine configurations).
#pragma once
#include <functional>

#include <cuda_runtime.h>

namespace tg::cuda {

/// The index in [0, count) of the fastest candidate. `launch(i)` enqueues candidate i once on
/// `stream` and returns false when the library refuses it (then it is skipped). Waits for
/// `stream` (its earlier work must not share the GPU with the timing), then per candidate: one
/// untimed launch (loads its kernels), one timed launch, and, unless candidate 0's took more than
/// 20 ms (a large problem, where the heuristics' first answer is kept: tuning would cost
/// seconds), as many more as fit in 1 ms (at most 16, timed together; CUDA events: about 0.5 us
/// resolution). A candidate replaces the best so far only when it is at least 3% faster, so that
/// noise keeps the heuristics' order. Returns -1 when every candidate was refused; 0 when
/// count < 2, the stream is capturing, or a CUDA call fails (the error is cleared; the caller's
/// run reports its own). Waits for `stream` before it returns. Never throws.
/// Writes the candidates' outputs: `launch` must use the run's own buffers or scratch.
int fastest_candidate(int count, const std::function<bool(int)>& launch, cudaStream_t stream);

}  // namespace tg::cuda
