// Run-time compilation of CUDA C++ with NVRTC (the CUDA backend's generated kernels).
//
// compile(source, device, op) compiles `source` for the device's architecture (sm_XY from its
// compute capability; when this NVRTC does not know the device's architecture, PTX for the newest
// one it knows, which the driver JIT-compiles) with the device headers of
// src/backends/cuda/device/*.cuh available to `#include "common.cuh"` etc. (embedded at build time,
// see cmake/embed_sources.cmake). Options: --std=c++17 -default-device --fmad=false (no FMA
// contraction: results equal the CPU kernels' IEEE arithmetic) and precise division / sqrt (no
// fast math).
//
// Caches: in memory, (options, device headers, source) -> the loaded program, for the process'
// lifetime; on disk, the CUBIN under $TG_KERNEL_CACHE_DIR, else $XDG_CACHE_HOME/tg/kernels, else
// $HOME/.cache/tg/kernels (created on first use; when it cannot be created or written, the disk
// cache is skipped silently). A disk entry is `<64-bit hash of the key>.cubin` holding a magic line,
// the full key, a 64-bit FNV-1a checksum of the image and the image; a key mismatch (hash
// collision, other NVRTC version) is a miss, and so is a corrupted entry (checksum mismatch,
// counted in RuntimeStats::kernel_cache_rejects, or an image the driver refuses): the source is
// compiled again and the entry rewritten. Files are written to a temporary name and renamed, so
// concurrent processes never see partial files.
//
// Programs are loaded with the runtime's library API (cudaLibraryLoadData: context-independent,
// valid on every device) and launched with cudaLaunchKernel on a cudaKernel_t; the driver API is
// not used (libcuda is not a link dependency). Loaded programs are never unloaded.
// Thread-safe. Compile errors raise tg::Error(internal) "[op] NVRTC compilation failed: <log>"
// followed by the first lines of the source.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tg::cuda::nvrtc {

/// A compiled and loaded program.
class Program {
 public:
  Program(cudaLibrary_t library, std::string image, std::string key)
      : library_(library), image_(std::move(image)), key_(std::move(key)) {}
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  /// The kernel named `name` (an extern "C" __global__ function of the source); raises
  /// tg::Error(internal) naming `op` when there is none.
  cudaKernel_t kernel(std::string_view name, std::string_view op) const;
  /// The CUBIN (or PTX) loaded.
  const std::string& image() const { return image_; }
  /// The cache key it was compiled or preloaded under.
  const std::string& key() const { return key_; }

 private:
  cudaLibrary_t library_;
  std::string image_;  ///< the CUBIN (or PTX) loaded, kept alive with the library
  std::string key_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, cudaKernel_t> kernels_;
};

/// `source` compiled for cuda:`device` (cached in memory and on disk, see above).
std::shared_ptr<const Program> compile(std::string_view source, int device, std::string_view op);

/// Device code that a kernel launched with `dependent` (below) runs before anything else: waits
/// until the grids it depends on have finished and their writes are visible (griddepcontrol.wait),
/// then lets the grid after it be scheduled (griddepcontrol.launch_dependents). Defines
/// `tg_grid_dependency()`; a no-op below sm_90 and in host builds (the kernel emulators).
inline constexpr const char* kGridDependencySource =
    "__device__ __forceinline__ void tg_grid_dependency() {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "#endif\n"
    "}\n";

/// Launches `kernel` on `stream` with `args` (pointers to the argument values, in the kernel's
/// parameter order); raises tg::Error(internal) naming `op` when the launch fails. `dependent`:
/// the kernel calls tg_grid_dependency() first, so it may be launched as a programmatic dependent
/// launch (TG_PDL=1, compute capability >= 9.0): its blocks are scheduled while the work before it
/// on the stream finishes (in a captured graph: a programmatic edge), hiding the launch gap.
void launch(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, cudaStream_t stream,
            std::string_view op, size_t shared_bytes = 0, bool dependent = false);

/// While one is alive on this thread (the control recorder opens one while it records a WHILE
/// node's body, control_recorder.cpp), launch() makes `dependent` kernels programmatic dependent
/// launches also without TG_PDL=1, unless TG_PDL=0: a loop body's chain of kernels then overlaps
/// each launch with the drain of the kernel before it. `on` false: plain launches again for the
/// scope (an IF node's bodies). Scopes nest.
class DependentLaunchScope {
 public:
  explicit DependentLaunchScope(bool on);
  ~DependentLaunchScope();
  DependentLaunchScope(const DependentLaunchScope&) = delete;
  DependentLaunchScope& operator=(const DependentLaunchScope&) = delete;

 private:
  bool saved_;
};

/// The disk cache directory in use ("" when disabled), for tools and tests.
std::string cache_dir();
/// The path of the disk entry `compile(source, device)` reads and writes, for tests.
std::string cache_entry_path(std::string_view source, int device);
/// "12.8": this NVRTC's version.
std::string version();
/// Saved executables: while set (per thread), every compile() call appends the key and image of
/// the program it returns to `sink`.
void set_code_sink(std::vector<backends::CodeObject>* sink);
/// Whether a code sink is set on this thread (the runs before Executable::save).
bool code_sink_set();
/// Tells the code sink (if set on this thread) that `program` is used: the kernels' own caches
/// call it when they answer without compile(), so a saved executable gets every kernel it runs.
void note_use(const Program& program);
/// Loads programs saved with their keys (by a sink) into the in-memory cache, so that compile()
/// of the same key (source, options, NVRTC version, device headers) runs no NVRTC. Raises
/// tg::Error(io_error) "kernel <i> of <n>: ... refuses its binary ..." when image_problem finds
/// one or the driver refuses an image.
void preload(std::span<const backends::CodeObject> objects);
/// Why `image` cannot be a CUDA binary ("" when it can): a CUBIN is a 64-bit little-endian ELF
/// for EM_CUDA (190) whose section header table lies inside the image; PTX is text holding
/// ".version" and ".target". Checked before the driver sees an image, because with lazy module
/// loading (CUDA's default) the driver accepts a damaged image and fails only when one of its
/// kernels is first used.
std::string image_problem(std::string_view image);
/// Forgets the programs loaded so far (they stay alive while referenced), so that the next
/// compile of a source reads the disk cache again: for tests of the disk cache.
void forget_loaded_programs();

}  // namespace tg::cuda::nvrtc
