// Graphs, symbolic tensors, and executables.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tg/device.h"
#include "tg/export.h"
#include "tg/tensor_data.h"

namespace tg {

namespace ir {
class Graph;
}
class Graph;
class Operation;

/// A symbolic value: output `index` of a node of a graph. Cheap to copy. Shape and dtype are
/// known when the op is built (dims may be -1 when they depend on a dynamic feed).
class TG_API Tensor {
 public:
  Tensor() = default;
  const Shape& shape() const;
  DType dtype() const;
  TensorType type() const;
  int64_t rank() const { return static_cast<int64_t>(shape().size()); }
  /// The node that produces this tensor.
  Operation op() const;
  /// Which output of op() this is.
  int index() const { return index_; }
  /// Node id inside the graph (stable, dense, in build order).
  int node_id() const { return node_; }
  bool valid() const { return graph_ != nullptr; }
  const std::shared_ptr<ir::Graph>& graph_impl() const { return graph_; }
  /// "%3:0 f32[2,3]".
  std::string to_string() const;

  Tensor(std::shared_ptr<ir::Graph> g, int node, int index)
      : graph_(std::move(g)), node_(node), index_(index) {}

 private:
  std::shared_ptr<ir::Graph> graph_;
  int node_ = -1;
  int index_ = 0;
};

/// A handle on a node, used for target operations and control dependencies.
class TG_API Operation {
 public:
  Operation() = default;
  Operation(std::shared_ptr<ir::Graph> g, int node) : graph_(std::move(g)), node_(node) {}
  int node_id() const { return node_; }
  bool valid() const { return graph_ != nullptr; }
  /// Op kind name ("add", "matmul", ...).
  std::string kind_name() const;
  const std::string& name() const;
  int num_outputs() const;
  Tensor output(int i = 0) const;
  const std::shared_ptr<ir::Graph>& graph_impl() const { return graph_; }

 private:
  std::shared_ptr<ir::Graph> graph_;
  int node_ = -1;
};

/// Feeds for Graph::run: placeholder -> value.
using Feeds = std::vector<std::pair<Tensor, TensorData>>;
/// Feed types for Graph::compile: placeholder -> the type it will be fed with.
using FeedTypes = std::vector<std::pair<Tensor, TensorType>>;

/// Options for Graph::compile.
/// Arithmetic of conv2d (and its backward ops), conv_transpose2d and matmul on float32 tensors on
/// the CUDA backend; the CPU backend computes in float32 (unless TG_FUSION=1 forces the fusing
/// pipeline, where bf16/f16 apply as on CUDA). f32: IEEE float32 throughout (the default). tf32:
/// TensorFloat-32 tensor-core multiplies (10-bit mantissa inputs) with float32 accumulation, like
/// torch.backends.cuda.matmul.allow_tf32. bf16 / f16 (like torch.autocast; passes::autocast,
/// docs/design/0004): operands rounded to bfloat16 / float16, float32 accumulation, the result
/// rounded to 16 bits once and read as float32; weights kept in float32 (cast per run); an
/// elementwise value computed for such an op (a relu before a convolution) is stored in 16 bits, so
/// its other readers see it rounded (elementwise values that are results of the executable keep
/// float32); a max pool between them runs on the rounded values. Under bf16 (not f16, whose range
/// would flush small gradients without loss scaling), an activation or activation gradient that
/// one fused kernel writes and others read is stored in bf16 between them
/// (passes::demote_activation_storage), as torch.autocast stores it; results (and what they are
/// computed from through elementwise ops and reductions, e.g. a loss) and values that reach a
/// variable assignment through elementwise ops keep float32, while a sum that feeds the
/// optimizer (a batch-norm gamma's gradient) reads its bf16-stored input. Other dtypes compute in
/// their own dtype.
enum class ComputePrecision { f32, tf32, bf16, f16 };

struct CompileOptions {
  /// When true (MPSGraph's disableTypeInference), a feed type may give -1 or a named symbol
  /// (tg::symbolic_dim) for a dim that varies between runs (a batch or sequence length):
  /// Graph::compile runs the pass pipeline once on the graph with those dims symbolic (each -1
  /// becomes the symbol "<placeholder>.<axis>"), and run() lowers the optimized graph once per
  /// new input signature (symbols bound, types inferred for the fed shapes, memory planned, on
  /// CUDA captured after its first run; no pass pipeline: runtime_stats().compiles counts only
  /// the compile), keeping the TG_SPECIALIZATIONS most recent signatures (default 16;
  /// docs/design/0009). Symbols propagate through shape inference (input_types() and
  /// output_types() report them); two symbols an op needs equal (broadcasting, a matmul's
  /// contracted dims) are unified, as in JAX's shape polymorphism: a run whose feeds give them
  /// different sizes raises tg::Error(shape_mismatch) naming both placeholders, the symbol and
  /// the sizes before any kernel runs; other contradictions raise naming the op and both
  /// shapes. Passes fuse values of symbolic shape as they do static ones (fused row programs
  /// of at most 8192 elements); autocast applies; layout pass and constant folding need static
  /// shapes. Executable::save stores the symbols by name (section 'symbols') and the kernels.
  /// Each kept signature's program holds its own arenas, each bounded by memory_budget_bytes,
  /// so the executable may hold up to TG_SPECIALIZATIONS times that (give an arena_group to
  /// share one arena instead); arena_bytes() reports the largest. With every feed dim fixed it
  /// changes nothing.
  bool disable_type_inference = false;
  /// See ComputePrecision.
  ComputePrecision precision = ComputePrecision::f32;
  /// Upper bound, in bytes, on the memory the executable's arenas may hold together (0: none).
  /// Each concurrent caller of run() gets an arena of arena_bytes() (allocated once, then
  /// reused); a run that would need an arena beyond the budget waits for a free one instead.
  /// Compile raises tg::Error(out_of_memory) naming both sizes when one arena alone exceeds it.
  size_t memory_budget_bytes = 0;
  /// Executables of one graph compiled for one device with the same non-empty arena_group share
  /// one arena, as large as the largest of them needs: for executables that never run at the
  /// same time, such as a model's training and evaluation steps (tg::nn::Model uses it). Their
  /// runs take turns (one waits while another queues its work); on CUDA, an executable recorded
  /// against a smaller shared arena records again once it grew. Empty: arenas of its own.
  std::string arena_group = {};
  /// Deterministic algorithms only, so that every run and every process gives bit-identical
  /// results for the same inputs on the same device and build: on CUDA, cuDNN convolutions take
  /// the heuristics' first engine without NONDETERMINISTIC numerical notes instead of timing
  /// candidates (a timed choice may differ between processes), and cuBLASLt matmuls are
  /// restricted to algorithms without split-K reductions (CUBLASLT_REDUCTION_SCHEME_NONE). The
  /// reductions and gathers of TensorGraph's own kernels use no atomics on data, and the CPU
  /// backend is deterministic, in every mode. Also on when TG_DETERMINISTIC=1. May be slower.
  bool deterministic = false;
};

/// Options of one Executable::run.
struct RunOptions {
  /// A CUDA stream (a cudaStream_t, passed opaquely) the run is ordered with: the run starts
  /// after the work queued on it so far, and work queued on it after run() returns starts after
  /// the run's. Null: the device's own stream of TensorGraph, which orders after the work
  /// queued on CUDA's legacy default stream (cudaMemcpy, kernels launched without a stream), as
  /// cuBLAS's and cuDNN's default handles do. Ignored on the CPU.
  void* cuda_stream = nullptr;
};

/// Process-wide counters of the runtime since the process started: what runs cost besides their
/// kernels. Read with tg::runtime_stats(); compare two readings to measure a section.
struct RuntimeStats {
  int64_t compiles = 0;            ///< pass-pipeline runs (Graph::compile, Graph::run cache misses)
  int64_t graph_launches = 0;      ///< CUDA graph launches: one per run of a captured executable
  int64_t graph_captures = 0;      ///< CUDA graphs captured: one per executable and arena
  int64_t capture_fallbacks = 0;   ///< captures that failed, so that arena's runs are interpreted
  int64_t interpreted_runs = 0;    ///< runs that walked the nodes on the host (no graph launch)
  int64_t runs = 0;                ///< Executable::run calls that returned results
  int64_t run_host_ns = 0;         ///< host time those runs took, waits for the device excluded
  int64_t host_waits = 0;          ///< waits of the host for a device (copies to the host, checks)
  int64_t kernel_compiles = 0;     ///< generated GPU kernels compiled (NVRTC; disk-cache hits excluded)
  int64_t kernel_cache_rejects = 0;  ///< on-disk kernel cache entries whose checksum failed (rebuilt)
  int64_t autotune_runs = 0;       ///< library algorithm searches (cuDNN engines timed on a problem)
  int64_t arena_allocations = 0;   ///< arenas allocated (one per executable and concurrent caller)
  int64_t arena_bytes = 0;         ///< bytes held by arenas alive now (intermediates, I/O, scratch)
  /// Bytes of inputs copied into an executable's input slots before its runs (inputs from
  /// another device; on a GPU also device inputs that came at another address than the one its
  /// CUDA graph was recorded with: inputs that keep their address are read in place).
  int64_t input_copy_bytes = 0;
  /// Bytes of results copied out of an executable's arena for the caller. A run that walks the
  /// nodes (no CUDA graph replay) has each kernel write a result straight into the buffer it
  /// hands out, so only results that are views, feeds, variables or repeats are copied; a CUDA
  /// graph replay copies its results out of the arena. Result buffers the caller has released
  /// are reused by the next run (the same addresses run after run).
  int64_t result_copy_bytes = 0;
  /// Executables whose control flow could not be lowered to CUDA graph conditional nodes (a loop
  /// value whose shape changes per iteration): their runs are driven by the host (logged once).
  int64_t control_fallbacks = 0;
  /// Executables made by Executable::load / load_from_bytes (the saved optimized graph used as
  /// is: no pass-pipeline run, `compiles` unchanged) and those loads that had to recompile from
  /// the stored graph instead (another device kind, GPU architecture or library version).
  int64_t executable_loads = 0;
  int64_t executable_load_recompiles = 0;
  /// Generated GPU kernels loaded from a saved executable's kernels section (no NVRTC run).
  int64_t kernel_preloads = 0;
};
TG_API RuntimeStats runtime_stats();

struct CompiledProgram;

/// Options of Executable::save / save_to_bytes.
struct SaveOptions {
  /// true: the current values of the variables the executable reads or assigns are stored in
  /// the file (a safetensors block), so the loaded executable runs on its own. false: only their
  /// names and types are stored; Executable::load binds them to LoadOptions::variables.
  bool embed_variables = true;
};

/// Options of Executable::load / load_from_bytes.
struct LoadOptions {
  /// A graph whose variables of the same names are bound to the loaded executable (read and
  /// assigned in place, as by an executable compiled from it), instead of the values embedded in
  /// the file. Required for a file saved with embed_variables = false. Null: embedded values, in
  /// a variable store of the executable's own.
  const Graph* variables = nullptr;
  /// CUDA only (docs/design/0011-first-run-kernels.md): the runs that walk the nodes (the first
  /// one; not the second, which records the CUDA graph) use TensorGraph's own GEMM and
  /// implicit-GEMM convolution kernels (stored in the file by `tg compile`) for each matmul /
  /// conv2d whose cuDNN or cuBLASLt plan is still being prepared in the background, instead of
  /// waiting for those libraries' one-time initialization (~110-135 ms each on an H200); the
  /// preparation is then held back 150 ms after the load (TG_PREPARE_DELAY_MS) so that it does not
  /// slow the first run's own CUDA calls. Such runs' results are within the precision's
  /// tolerance of the library kernels', not bit-identical to them (another summation order; f32
  /// products at precision tf32): false (the default) gives the saved executable's bits from the
  /// first run. The environment overrides it: TG_FIRST_RUN_KERNELS=1 turns it on, any other
  /// value off. `tg run model.tgx` sets it.
  bool first_run_kernels = false;
};

/// An immutable compiled graph: fixed placeholders (in feed order), targets and target ops.
///
/// A compiled program runs from a static memory plan: every intermediate value has an offset in
/// one arena per run, computed at compile time from the values' lifetimes (docs/design/0005). On
/// CUDA the first run walks the nodes (choosing algorithms, compiling kernels); each later run of
/// a static-shape executable without control flow is one CUDA graph launch (TG_CUDA_GRAPHS=0: never).
/// Thread-safe: run may be called concurrently; each concurrent caller gets its own arena (and
/// CUDA graph), allocated once and reused.
///
/// Runs are transactional: a run's variable assignments are published only when the whole run
/// succeeds. Bad input found on the device (an out-of-range gather or scatter index, an integer
/// division by zero) is recorded by the kernel in a device error word, the commit of variables is
/// skipped on the device, and run() itself raises the tg::Error naming the op: programs holding
/// such checks wait for the device at the end of each run; programs without them never wait.
/// With deferred device errors (tg/deferred_errors.h) replays of the recorded CUDA graph do not
/// wait: the error is raised by a later run or by check_device_errors, as PyTorch's device asserts.
class TG_API Executable {
 public:
  Executable() = default;
  explicit Executable(std::shared_ptr<const CompiledProgram> p) : program_(std::move(p)) {}
  /// Runs with `inputs` in feed order (on any device: inputs on another device are copied, those
  /// on the executable's device read in place or copied into the arena); returns the target
  /// values in target order, on the executable's device, as new tensors the next runs do not
  /// touch. Raises tg::Error(not_found) for a wrong input count, tg::Error(dtype_mismatch /
  /// shape_mismatch) naming the placeholder for a wrong input (before anything runs), and any
  /// error a kernel raises or reports from the device (see above); after an error every
  /// variable holds its value from before the run.
  std::vector<TensorData> run(const std::vector<TensorData>& inputs) const;
  std::vector<TensorData> run(const std::vector<TensorData>& inputs, const RunOptions& options) const;
  /// Bytes of one run's arena: the planned intermediates, inputs and outputs, plus the scratch
  /// kernels declared in earlier runs (0 before a run where kernels declare scratch).
  size_t arena_bytes() const;
  /// Bytes the planned values alone would take without reuse (the sum of their sizes).
  size_t unplanned_bytes() const;
  /// Arenas allocated now (one per caller that ran concurrently, kept for reuse).
  int arena_count() const;
  /// Types the executable expects, in feed order.
  std::vector<TensorType> input_types() const;
  /// Types of the results, in target order.
  std::vector<TensorType> output_types() const;
  Device device() const;
  /// The compiled graph in the text form of Graph::to_string.
  std::string to_string() const;
  bool valid() const { return program_ != nullptr; }

  /// Writes the executable to `path` as a .tgx file (docs/design/0008-saved-executables.md): a
  /// header (magic "TGX1", format version, device kind, GPU architecture sm_XX and the CUDA,
  /// cuDNN and NVRTC versions it was compiled with, precision, arena bytes, feed and target
  /// types), then sections each with its byte length and CRC-32 checksum: the optimized graph
  /// (ops by name, attributes, types, constants, control edges, regions), the feeds and targets,
  /// the variables (values embedded in a safetensors block, or names and types only, see
  /// SaveOptions), and on CUDA the generated kernels the executable's runs have compiled so far
  /// (CUBIN/PTX images; run it once before saving to include them all). The file holds GPU code:
  /// loading it runs that code, like loading a shared library, so load only files you trust.
  /// Raises tg::Error(io_error) naming `path` when it cannot be written,
  /// tg::Error(invalid_argument) for an empty Executable.
  void save(const std::string& path, const SaveOptions& options = {}) const;
  /// The bytes save() writes.
  std::vector<uint8_t> save_to_bytes(const SaveOptions& options = {}) const;
  /// Reads an executable written by save() for `device`. When the file was compiled for the same
  /// device kind, GPU architecture and library versions, the stored optimized graph is used as is
  /// (no pass pipeline: runtime_stats().compiles does not change) and the stored kernels are
  /// loaded instead of being generated (runtime_stats().kernel_compiles does not change); else the
  /// executable is recompiled from the stored graph for `device`, with one log line on stderr
  /// saying why. Loading runs the file's GPU code (see save). Raises tg::Error(io_error) naming
  /// the file and the section for an unreadable, truncated or corrupt file (wrong magic, a
  /// checksum mismatch, a malformed section, a kernel binary the driver refuses),
  /// tg::Error(unsupported) for a future format version or an op this build does not know,
  /// tg::Error(not_found / shape_mismatch) for variables LoadOptions::variables lacks or holds
  /// with another type, and the errors of Graph::compile when a recompile fails.
  static Executable load(const std::string& path, Device device, const LoadOptions& options = {});
  /// As load, from the bytes of a .tgx file; `name` stands for the file in messages.
  static Executable load_from_bytes(std::span<const uint8_t> bytes, Device device,
                                    const LoadOptions& options = {}, const std::string& name = "<bytes>");
  const std::shared_ptr<const CompiledProgram>& program() const { return program_; }

 private:
  std::shared_ptr<const CompiledProgram> program_;
};

/// A computation graph. Copies refer to the same graph. Ops are appended by the free functions
/// of tg/ops.h, which find the graph through their tensor arguments.
class TG_API Graph {
 public:
  Graph();

  /// An input fed at run time. `shape` may hold -1 for dims given by the feed, or named symbols
  /// (tg::symbolic_dim) that shape inference keeps equal wherever they appear. Raises
  /// tg::Error(invalid_argument) for a dim below -1 that is no symbol.
  Tensor placeholder(Shape shape, DType dtype, std::string name = "");
  /// A constant holding `value` (copied into the graph).
  Tensor constant(const TensorData& value, std::string name = "");
  /// A 0-d constant of `dtype` holding `value` (converted as cast would).
  Tensor constant(double value, DType dtype = DType::f32);

  /// A variable: state that lives in this graph's variable store (on the host for now), starts as
  /// a copy of `init`, and persists across runs and across every executable compiled from this
  /// graph. The returned tensor is the variable's value at the start of a run; read_variable
  /// gives the value at a point ordered by control dependencies; assign_variable changes it.
  /// Names must be unique (tg::Error(invalid_argument)); an empty name gets "variable_<n>".
  Tensor variable(const TensorData& init, std::string name = "");
  /// The variable's current stored value (outside any run).
  TensorData variable_value(const Tensor& variable) const;
  /// Writes every variable to `path` in the safetensors format (little-endian u64 header length,
  /// JSON header with dtype, shape and data_offsets per name, raw little-endian data). Raises
  /// tg::Error(io_error) when the file cannot be written.
  void save_variables(const std::string& path) const;
  /// Loads values written by save_variables (or any safetensors file). Checks every name, dtype
  /// and shape first and raises one tg::Error(not_found / shape_mismatch) listing every mismatch
  /// (variables missing from the file, tensors the graph does not have, wrong dtype or shape);
  /// then replaces all values at once. Nothing is half-loaded. tg::Error(io_error) for an
  /// unreadable or malformed file.
  void load_variables(const std::string& path);

  /// Runs `block`; every op it builds gets `ops` as control inputs, so it runs after them, and
  /// the ops are kept whenever such an op is reached. Returns what the block returns.
  std::vector<Tensor> control_dependency(const std::vector<Operation>& ops,
                                         const std::function<std::vector<Tensor>()>& block);

  /// Runs the graph: compiles on first use for these feed types, targets and device (cached),
  /// then executes. Returns the targets' values in order. Every placeholder reached must be fed;
  /// errors as Graph::compile and Executable::run.
  std::vector<TensorData> run(const Feeds& feeds, const std::vector<Tensor>& targets,
                              const std::vector<Operation>& target_ops = {},
                              Device device = Device::default_device());

  /// Compiles the part of the graph that `targets` and `target_ops` reach (through data and
  /// control edges) for the given feed types. Raises tg::Error(not_found) when a reached
  /// placeholder has no feed type, tg::Error(invalid_argument) for a feed that is not a
  /// placeholder of this graph, and tg::Error(shape_mismatch / dtype_mismatch) naming the
  /// placeholder when a feed type does not fit its declared type.
  Executable compile(Device device, const FeedTypes& feed_types, const std::vector<Tensor>& targets,
                     const std::vector<Operation>& target_ops = {}, CompileOptions options = {});

  /// Text form of the graph, one node a line: "%2 = add(%0, %1) : f32[2,3]".
  std::string to_string() const;
  /// Number of nodes built so far.
  int num_nodes() const;

  const std::shared_ptr<ir::Graph>& impl() const { return impl_; }
  explicit Graph(std::shared_ptr<ir::Graph> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<ir::Graph> impl_;
};

/// The value of `variable` at this point of a run: after every assign_variable this read is
/// ordered after (through control_dependency), else as of its position in build order.
/// `variable` must come from Graph::variable (tg::Error(invalid_argument) otherwise).
TG_API Tensor read_variable(Tensor variable);
/// Sets `variable` to `value` (same dtype and shape: tg::Error(shape_mismatch) otherwise) when
/// the run reaches it. The new value is published when the whole run succeeds; a run that fails
/// leaves every variable as it was. Returns the op, to use as a target op or control dependency.
TG_API Operation assign_variable(Tensor variable, Tensor value);

/// Graphviz DOT rendering of a graph (nodes labelled with op and type, control edges dashed).
TG_API std::string to_dot(const Graph& g);

}  // namespace tg
