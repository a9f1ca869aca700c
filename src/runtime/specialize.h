// Compile once for inputs whose sizes vary (CompileOptions::disable_type_inference, issue 17;
// docs/design/0009-compile-once.md). Graph::compile runs the pass pipeline once on the graph
// with the fed dims symbolic (runtime/symbols.h); each new input signature (the fed shapes) then
// gets its own lowered program: the optimized graph copied, its symbols bound and substituted,
// its types inferred for the fed shapes (passes::infer_types; a
// contradiction raises there, before any kernel runs), and lowered (runtime::lower_graph: memory
// plan, CUDA graph capture after its first run) — no pass pipeline, so runtime_stats().compiles
// counts the compile only. Programs are kept per signature in a bounded LRU cache
// (TG_SPECIALIZATIONS, default 16).
#pragma once
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/compile.h"
#include "runtime/symbols.h"

namespace tg::runtime {

class Specializations {
 public:
  Specializations(std::shared_ptr<const ir::Graph> graph, std::vector<int> feeds, std::vector<ir::ValueRef> roots,
                  std::vector<int> root_ops, Device device, CompileOptions options,
                  std::shared_ptr<SharedArena> shared, SymbolAliases aliases = {});
  /// The program for inputs of `types` (feed order; each checked against the feed types by the
  /// caller): the cached one, or one lowered now (outside the lock: a run never waits for another
  /// signature's lowering): symbols bound from the fed shapes (bind_symbols: two sizes for one
  /// symbol raise tg::Error(shape_mismatch) naming both placeholders, the symbol and the sizes),
  /// substituted, types inferred (raising what passes::infer_types raises for shapes the graph
  /// contradicts, naming the op and the shapes), then lowered.
  std::shared_ptr<const CompiledProgram> get(const std::vector<TensorType>& types) const;
  /// The largest arena_bytes of the programs kept now (0 before the first run).
  size_t arena_bytes() const;
  int arena_count() const;
  /// The largest unplanned bytes (values without reuse) of the programs kept now.
  size_t unplanned_bytes() const;
  /// Signatures kept now.
  size_t size() const;
  /// The generated kernels and library choices of the programs kept now (each key once): what a
  /// saved executable stores, so that a loaded one compiles nothing for these signatures' code.
  std::vector<backends::CodeObject> code_objects() const;
  const CompileOptions& options() const { return options_; }
  /// Deferred device errors (tg::set_deferred_device_errors) for the program of every signature,
  /// those kept now and those lowered later.
  void set_deferred_errors(bool deferred) const;
  bool deferred_errors() const { return deferred_.load(); }
  /// Raises a deferred device error that the program of another signature than `running` holds:
  /// with `wait`, after waiting for the device (check_device_errors); else only one the device has
  /// already posted to host memory (before a run of `running` queues anything, so that an error is
  /// raised by the executable's next run whatever its signature).
  void check_deferred_errors(const CompiledProgram* running, bool wait) const;

 private:
  std::shared_ptr<const ir::Graph> graph_;
  std::vector<int> feeds_;
  std::vector<ir::ValueRef> roots_;
  std::vector<int> root_ops_;
  Device device_;
  CompileOptions options_;
  std::shared_ptr<SharedArena> shared_;
  SymbolAliases aliases_;
  size_t capacity_;
  mutable std::atomic<bool> deferred_{false};
  mutable std::mutex mu_;
  /// Most recently used first.
  mutable std::list<std::pair<std::string, std::shared_ptr<const CompiledProgram>>> lru_;
};

}  // namespace tg::runtime
