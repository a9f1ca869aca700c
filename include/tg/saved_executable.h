// Reading a saved executable's header without loading it (tg inspect). Executable::save and
// Executable::load themselves are in tg/graph.h; the format is docs/design/0008-saved-executables.md.
//
// First runs (docs/design/0011-first-run-kernels.md): with TG_FIRST_RUN_KERNELS=1 in the
// environment (process-wide; `tg compile` and `tg run` of a .tgx set it unless it is given), the
// runs before Executable::save also store TensorGraph's own GEMM and implicit-GEMM convolution
// kernels in the file, and a loaded CUDA executable's runs that walk the nodes (the first one;
// not the second, which records the CUDA graph) use them for each matmul / conv2d whose cuDNN or
// cuBLASLt plan is still being built on the background workers, instead of waiting for the
// libraries to initialize (~110-135 ms each on an H200). Those results are not bit-identical to
// the library kernels' (another summation order; f32 products at precision tf32), only within the
// precision's tolerance. Off (unset or 0): a loaded executable gives the saved one's bits from its
// first run, as Executable::load documents.
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
/// section's checksum. Raises tg::Error(io_error) naming the file and the section for an
/// unreadable, truncated or corrupt file, tg::Error(unsupported) for a future format version.
TG_API std::vector<std::pair<std::string, std::string>> read_executable_header(const std::string& path);

}  // namespace tg
