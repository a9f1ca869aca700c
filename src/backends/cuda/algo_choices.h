// Library algorithm choices that saved executables store and reuse (issue 23, docs/design/
// 0008-saved-executables.md): the cuDNN engine configuration (graph API: engine global index and
// knob choices; legacy API: algorithm and math type) of each convolution problem and the
// cuBLASLt algorithm of each GEMM, so that a loaded executable on the same GPU architecture and
// library versions runs no autotuning and no heuristics query.
//
// Each choice travels as a backends::CodeObject whose key starts with kPrefix: "algo:<family>/v1
// <the family's plan-cache key, without the device index>", and whose image is the family's text
// encoding of the choice. During a program's interpreted runs the families report the choices
// they use to the code sink (nvrtc::set_code_sink's, per thread); Executable::save writes them to
// the file's "algorithms" section; Executable::load hands them to Backend::preload_code, which
// stores them here; a family missing a problem in its in-process cache looks here before
// choosing, and builds the stored choice (falling back to choosing when the library refuses it).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backends/backend.h"

namespace tg::cuda::algo_choices {

/// Keys of algorithm choices start with this; every other CodeObject is an NVRTC program.
inline constexpr std::string_view kPrefix = "algo:";

inline bool is_choice(const backends::CodeObject& o) { return o.key.starts_with(kPrefix); }

/// Appends (key, choice) to this thread's code sink, when one is set (nvrtc/compiler.cpp).
void note(const std::string& key, const std::string& choice);

/// Stores choices from a saved executable (keys must start with kPrefix and name a known family,
/// "algo:cudnn_conv/v1 " or "algo:cublaslt/v1 "): raises tg::Error(io_error) "choice <i> of <n>:
/// ..." for another key. A key already stored keeps its first choice.
void preload(std::span<const backends::CodeObject> objects);

/// The stored choice for `key`, if any.
std::optional<std::string> find(const std::string& key);

/// Builds the plans of stored choices on background threads of cuda:`device` (creating the
/// cuDNN and cuBLASLt handles: their libraries load then), so that a loaded executable's first
/// run finds them in the families' caches; Executable::load parses the rest of the file
/// meanwhile. Choices are taken in their order (the order of their first use in the saved run) by
/// TG_PREPARE_THREADS workers (default 4), which build without holding the cuDNN handle's lock or
/// a family's cache lock (so the run goes on with the plans already built), then run each new
/// plan once on scratch buffers on a stream of their own, so that the library's kernels are
/// loaded (CUDA loads a module's kernels lazily, at their first launch: tens of ms for cuDNN's
/// and cuBLASLt's) before the run needs them. A choice that does not build is left to its first
/// use (which chooses as without one). Choices already handed over are skipped.
/// TG_PREPARE_CHOICES=0 turns this off (then plans are built at first use). The workers start
/// TG_PREPARE_DELAY_MS after the load (default 150 ms when `first_run_kernels`, docs/design/0011,
/// else 0), or at the first claim(). Returns a handle (null when nothing was started): when the
/// last handle is released, the choices no worker has taken are dropped (left to their first use)
/// and those under way are waited for, so that a process does not exit with a worker inside a
/// library's first-use initialization (a crash at exit, seen on the H200). Threads are joined at
/// process exit.
std::shared_ptr<void> prepare_async(int device, std::vector<backends::CodeObject> choices, bool first_run_kernels);

/// Whether the caller must build the plan of stored choice `key` itself: true when no worker
/// has it (taken off the queue if it was queued); when a worker is building it, waits until the
/// plan is in the family's cache (or the worker gave up) and returns false: the caller then looks
/// in its cache again. The caller must not hold the cuDNN handle's lock or its family's cache
/// lock (the worker takes them).
bool claim(const std::string& key);

/// The families' parts of prepare_async (conv.cpp, matmul.cpp): build the plan of one stored
/// choice into the in-process cache unless it is there (nothing when the key does not parse),
/// call `built()` once it is in the cache or known not to build, then, for a new plan, run it
/// once on scratch buffers on `warm_stream` (waiting for it).
void prepare_conv_choice(int device, const std::string& key, const std::string& choice, cudaStream_t warm_stream,
                         const std::function<void()>& built);
void prepare_matmul_choice(int device, const std::string& key, cudaStream_t warm_stream,
                           const std::function<void()>& built);

}  // namespace tg::cuda::algo_choices
