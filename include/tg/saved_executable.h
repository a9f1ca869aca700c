// Reading a saved executable's header without loading it (tg inspect). Executable::save and
// Executable::load themselves are in tg/graph.h; the format is docs/design/0008-saved-executables.md.
//
// First runs (docs/design/0011-first-run-kernels.md): LoadOptions::first_run_kernels (tg/graph.h).
// With TG_FIRST_RUN_KERNELS=1 in the environment (`tg compile` sets it unless it is given), the
// runs before Executable::save also store TensorGraph's own GEMM and implicit-GEMM convolution
// kernels in the file, which a loaded CUDA executable's walked runs then use while the cuDNN /
// cuBLASLt plans are prepared in the background.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tg/export.h"

namespace tg {

/// The "header" section of the .tgx file at `path`, as (key, value) pairs in file order: format,
/// format_version, device, arch and library versions (cuda, cudnn, cublaslt, nvrtc on CUDA),
/// precision, deterministic, arena_bytes, nodes, feeds, targets, variables, kernels; then
/// ("section <name>", "<bytes> bytes") per section. Checks the magic, the format version and every
/// section's checksum and that the sections every load needs are there. Raises tg::Error(io_error)
/// naming the file and the section for an unreadable, truncated or corrupt file or a missing
/// section, tg::Error(unsupported) for a future format version.
TG_API std::vector<std::pair<std::string, std::string>> read_executable_header(const std::string& path);

}  // namespace tg
