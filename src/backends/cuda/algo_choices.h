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
#include <optional>
#include <span>
#include <string>
#include <vector>

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

/// Builds the plans of stored choices on a background thread of cuda:`device` (creating the
/// cuDNN and cuBLASLt handles: their libraries load then), so that a loaded executable's first
/// run finds them in the families' caches; Executable::load parses the rest of the file
/// meanwhile. A choice that does not build is left to its first use (which chooses as without
/// one). TG_PREPARE_CHOICES=0 turns this off (then plans are built at first use). Threads are
/// joined at process exit.
void prepare_async(int device, std::vector<backends::CodeObject> choices);

/// The families' parts of prepare_async (conv.cpp, matmul.cpp): build the plan of one stored
/// choice into the in-process cache unless it is there; nothing when the key does not parse.
void prepare_conv_choice(int device, const std::string& key, const std::string& choice);
void prepare_matmul_choice(int device, const std::string& key);

}  // namespace tg::cuda::algo_choices
