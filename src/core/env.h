// Every TG_* environment variable the library reads, in one place (runtime/crc32.cpp,
// core/communicator.cpp and core/phase_times.cpp still read theirs).
//
// Integer variables are whole numbers: a value that is not one (TG_SPECIALIZATIONS=abc) is
// reported once on stderr and gives the default; a whole number outside the variable's range
// raises tg::Error(invalid_argument) naming the variable, the value and the range.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace tg::env {

/// TG_DEVICE: "cpu" or "cuda" overrides Device::default_device(); unset: nullopt.
std::optional<std::string> device_override();

/// TG_FUSION: "0" turns the elementwise fusion pass off, "1" on, for every backend; unset or
/// empty: the backend decides (on for CUDA). Read at every compile.
std::optional<bool> fusion_override();

/// TG_CHANNELS_LAST: "1" makes compile run the channels-last layout pass
/// (passes::convert_to_channels_last: NCHW convolutions and pooling run NHWC) on every backend,
/// "0" never; unset or empty: compile decides where it was measured faster (runtime/compile.cpp,
/// docs/cuda.md). Read at every compile.
std::optional<bool> channels_last_override();

/// TG_CUDNN_GRAPH=0: every CUDA convolution through cuDNN's legacy API (for comparisons; default:
/// tensor-core convolutions through the graph API, backends/cuda/cudnn_conv_graph.h). Read once.
bool cudnn_graph_enabled();

/// TG_CUDA_GRAPHS=0: CUDA executables are never captured into a CUDA graph (every run walks the
/// nodes on the host, as the first run does), for debugging. Default on. Read at every compile.
bool cuda_graphs_enabled();

/// TG_LOOP_UNROLL: body copies per iteration of a while node when control flow is recorded into a
/// CUDA graph (runtime/control_flow_graph.cpp): a for loop with a fixed trip count runs that many
/// copies per iteration, a while loop whose body has no side effects runs that many iterations
/// speculatively and keeps the state of the first whose condition is false. 1..32 (above 8 only
/// while the speculated state copies fit 256 MiB), default 32. Read at every recording.
int loop_unroll();
/// TG_CONDITION_STREAMS: side streams that run a speculated while loop's conditions (`before`)
/// beside its next iterations' updates (`after`) in a recorded WHILE node; iteration j's
/// condition runs on side stream j mod n, each with a workspace of its own. 0: one stream. 0..8,
/// default 6. Read at every recording.
int condition_streams();
/// TG_UNROLL_LIMIT: a for loop with a fixed trip count is unrolled into plain graph nodes when
/// its trip count times its body's node count (constants and parameters aside) is at most this
/// (default 8192; 0: never). Read at every recording.
int64_t unroll_limit();
/// TG_BRANCH_SELECT=0: every if_else stays a conditional branch (otherwise, on backends that fuse,
/// an if_else of a few elementwise ops a branch and a bool predicate becomes a select of both
/// sides: passes::select_cheap_branches). Read at every compile.
bool branch_select();

/// TG_PDL=0 (read once): no dependent launches anywhere, not even inside recorded WHILE bodies.
bool dependent_launch_disabled();
/// TG_CODE_SINK_DEDUP=0: a first-run program's kernel image is copied into the code sink at every
/// use, not once per key and run (backends/cuda/nvrtc/compiler.cpp; the cold-start A/B). Default
/// on. Read once.
bool code_sink_dedup();

/// TG_NCCL_OVERLAP=0: CUDA collectives never run on NCCL's stream beside the run's next kernels
/// (backends/cuda/side_work.h). Default on. Read once.
bool nccl_overlap();

/// TG_PRELOAD_MODULES: "1" or "early" (backends/cuda/module_preload.h); unset: "0". Read at every
/// load.
std::string preload_modules();

/// TG_PREPARE_CHOICES=0: a loaded executable's stored library choices are not prepared on
/// background threads (backends/cuda/algo_choices.h). Default on. Read at every load.
bool prepare_choices();
/// TG_PREPARE_THREADS: the background workers that prepare a loaded executable's stored library
/// choices (backends/cuda/algo_choices.h), 1..16, default 4. Read at every load.
int prepare_threads();
/// TG_PREPARE_DELAY_MS: how long those workers wait after the load before their first choice,
/// 0..2147483647 ms; unset or empty: nullopt (the backend's default). Read at every load.
std::optional<int> prepare_delay_ms();

/// TG_PREFETCH_CONSTANTS=1: a loaded executable's constants are copied to the device ahead of
/// the first run (backends/cuda/runtime.cpp). Default off. Read at every load.
bool prefetch_constants();

/// TG_CUDNN_PLAN_JSON=1: cuDNN's serialized plans are stored in saved executables and used at
/// load (backends/cuda/conv_plans.cpp). Default off. Read at every use.
bool cudnn_plan_json();
/// The compile-time rewrites of batch-1 attention (runtime/compile.cpp, docs/torch.md), each on
/// unless its variable is "0" (measurements with and without it): TG_PROJECT_HEADS
/// (passes::project_heads), TG_MATMUL_FOLDS (passes::fold_into_matmul), TG_MERGE_PROJECTIONS
/// (passes::merge_projections), TG_MERGE_SIBLINGS (passes::merge_siblings). Read at every compile.
bool project_heads();
bool matmul_folds();
bool merge_projections();
bool merge_siblings();
/// TG_MATMUL_WEIGHTS_TN=1: constant matmul weights stored transposed and read with transpose_b
/// (passes::store_matmul_weights_transposed). Default off. Read at every compile.
bool matmul_weights_tn();
/// TG_DUMP_GRAPH=path: each compiled graph after the passes is appended to that file
/// (diagnostics); unset or empty: "" (none). Read at every compile.
std::string dump_graph_path();
/// TG_MATMUL_AUTOTUNE=1: a new cuBLASLt plan takes the fastest of the heuristics' first 8
/// algorithms, timed on the call's operands (backends/cuda/autotune.h), instead of their first.
/// Default off: on the H200 it took no kernel time off BERT-base or ResNet-50 at batch 1
/// (docs/torch.md, session 25). Never under CompileOptions::deterministic. Read at every plan.
bool matmul_autotune();
/// TG_TRUST_STORED_ALGOS=0: stored cuDNN / cuBLASLt choices of this library version are checked
/// again (numerical notes, cublasLtMatmulAlgoCheck) before use. Default on (trusted). Read at
/// every use.
bool trust_stored_algos();

/// TG_FIRST_RUN_KERNELS: set, "1" turns first-run kernels on and anything else off; unset:
/// nullopt (the caller's choice). Read at every call (backends/cuda/first_run.h).
std::optional<bool> first_run_kernels_override();

/// TG_STREAM_UPLOAD: how a loaded file's pieces reach the device ("0": no streamed upload,
/// "pinned", "register", otherwise pageable; backends/cuda/file_upload.cpp); unset: "1". Read at
/// every load.
std::string stream_upload();
/// TG_UPLOAD_STREAMS: the streams a streamed upload spreads its copies over, a whole number in
/// 1..16 (outside: tg::Error(invalid_argument)); unset or empty: 1. Read at every load.
int upload_streams();
/// TG_STAGING_EARLY=1: a streamed upload's thread makes its staging buffers during the read.
/// Default off. Read at every load.
bool staging_early();

/// TG_PDL: "1" launches the generated elementwise and reduction kernels as programmatic dependent
/// launches on devices of compute capability 9.0 and later (a kernel's blocks are scheduled while
/// the kernel before it finishes, and wait for it before touching memory); unset: only inside
/// recorded WHILE bodies (nvrtc::DependentLaunchScope); "0": nowhere. Read once.
bool dependent_launch();
/// TG_DETERMINISTIC=1: every executable compiles as with CompileOptions::deterministic. Read at
/// every compile.
bool deterministic();

/// Where generated GPU kernels are cached on disk: TG_KERNEL_CACHE_DIR, else
/// $XDG_CACHE_HOME/tg/kernels, else $HOME/.cache/tg/kernels; nullopt when none is set.
std::optional<std::string> kernel_cache_dir();

/// TG_PROFILE=1: the runtime times every kernel of every run after an executable's first
/// (GPU: device events around each kernel, read after the run, plus the device's idle time
/// between kernels; CPU: wall time) and prints a table per op kind to stderr at exit. Off when
/// unset, empty or "0". Read once. TG_PROFILE=shapes: one row per op kind and operand types
/// (e.g. each convolution shape on its own row). Profiled and traced runs are never captured.
bool profile();
bool profile_shapes();

/// TG_TRACE=1: the runtime prints each node (id, op kind, input types) to stderr before it
/// runs and waits for the device after it, so the last line names a kernel that fails or hangs.
/// Slow: for debugging. Off when unset, empty or "0". Read once; TG_PROFILE takes precedence.
bool trace();

/// TG_SPECIALIZATIONS: input signatures whose lowered programs an executable compiled with
/// CompileOptions::disable_type_inference keeps (LRU; runtime/specialize.h). 1..4096, default 16.
/// Read at every compile.
int specialization_cache_size();

/// TG_STENCIL_TILE="by,ry,rz,min_blocks,stages,vector,skip,march,bx,col": overrides the tile shape of the
/// generated stencil and max-pool kernels of the CUDA backend (backends/cuda/stencil_codegen.cpp)
/// for tuning: threads along y, outputs per thread along y and z, the resident blocks per
/// SM the kernel is compiled for (__launch_bounds__), the planes in flight (1: loads through
/// registers, 2..4: a cp.async ring of that many shared-memory stages), the copy width (1: an
/// element, 2: 16 bytes), the run-time zero-tap skipping of sums (1 off, 2 on) and marching along z
/// (1 off, 2 on; rz is then the run of z outputs a tile), and threads along x in units of 32 (2-D
/// and wider windows; default 1), and the column march's memory options plus 1 (col: 1 none; see
/// TiledStencilSpec::col_flags); a field 0 or missing keeps the planner's choice. Empty: nothing
/// overridden. Read at every plan (benchmarks switch it). Each field 0..64.
std::array<int, 10> stencil_tile_override();

}  // namespace tg::env
