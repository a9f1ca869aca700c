// Graph -> Executable: the pass pipeline and lowering.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "tg/graph.h"

namespace tg {

namespace runtime {
class Specializations;
}

/// What an Executable holds.
struct CompiledProgram {
  Device device;
  std::shared_ptr<const runtime::PlannedGraph> plan;
  std::unique_ptr<runtime::Program> program;
  std::vector<std::string> feed_names;
  std::vector<TensorType> feed_types;    ///< -1: a dim that varies (disable_type_inference)
  std::vector<TensorType> target_types;  ///< -1 where a result's dim follows a varying feed dim
  /// CompileOptions::disable_type_inference with a feed dim of -1: `plan` holds the optimized
  /// graph with dynamic dims, `program` is null, and each input signature gets its own lowered
  /// program from here (runtime/specialize.h).
  std::shared_ptr<runtime::Specializations> specializations;
  /// A loaded executable's hold on work its load started in the background (Backend::preload_code's
  /// preparation of its stored library choices, Backend::prefetch_constants' upload): released
  /// with the executable, which stops or waits for that work.
  std::vector<std::shared_ptr<void>> background;
};

namespace runtime {

/// Placeholders given a value at compile time (not fed at run time).
using BoundFeeds = std::vector<std::pair<Tensor, TensorData>>;

/// DCE -> type inference for the feeds -> simplification, fusion -> checks (static shapes,
/// backend support) -> the program (memory plan, runtime::Program). Errors as documented on tg::Graph::compile. Each placeholder of `bound`
/// becomes a constant holding its value (its type checked as a feed's), so the passes can fold
/// it: an nn::Model compiles its training, evaluation and prediction executables with
/// is_training bound, and the if_else of each batch norm or dropout is inlined on backends that
/// fuse (passes::inline_constant_branches).
Executable compile_graph(const std::shared_ptr<ir::Graph>& graph, Device device,
                         const FeedTypes& feed_types, const std::vector<Tensor>& targets,
                         const std::vector<Operation>& target_ops, CompileOptions options,
                         const BoundFeeds& bound = {});

/// The lowering half of compile_graph: `g` optimized (every node typed; control flow may leave
/// dims dynamic), its fed placeholders, targets and target operations. Checks every value that
/// should be static is, and that the backend supports every op, then builds the plan and the
/// runtime::Program (memory plan). No pass runs: runtime_stats().compiles is not counted here.
/// `shared`: the arena group's arena, or null.
std::shared_ptr<CompiledProgram> lower_graph(std::shared_ptr<ir::Graph> g, const std::vector<int>& feeds,
                                             const std::vector<ir::ValueRef>& roots,
                                             const std::vector<int>& root_ops, Device device,
                                             const CompileOptions& options, std::shared_ptr<SharedArena> shared);

/// compile_graph's result for a graph with varying feed dims (disable_type_inference): the
/// optimized graph `g`, checked for backend support now, lowered per input signature at run time
/// (runtime::Specializations, runtime/specialize.h); `aliases`: symbol -> representative
/// (runtime/symbols.h).
std::shared_ptr<CompiledProgram> specialize_later(std::shared_ptr<ir::Graph> g, const std::vector<int>& feeds,
                                                  const std::vector<ir::ValueRef>& roots,
                                                  const std::vector<int>& root_ops, Device device,
                                                  const CompileOptions& options, std::shared_ptr<SharedArena> shared,
                                                  std::map<int64_t, int64_t> aliases = {});

/// Evaluates node `n` on host tensors `args` into `out` with the CPU backend's kernel of its kind
/// (passes::ScalarEvaluator: constant folding, packed conv weights); false when the kind has no
/// CPU kernel or the kernel raises.
bool evaluate_on_cpu(const ir::Node& n, std::span<const TensorData> args, TensorData& out);

/// Whether compile runs the channels-last layout pass (passes::convert_to_channels_last) on `g`
/// (typed with the feeds' shapes) for `device`: TG_CHANNELS_LAST=1 / 0 forces it; otherwise
/// where it was measured faster: on the CPU when `g` has an NCHW conv2d; on CUDA when every
/// NCHW convolution is dense (groups 1), not float64, and has constant weights or a static batch
/// of at least 32 (docs/cuda.md).
bool layout_pass_pays(const ir::Graph& g, Device device);

}  // namespace runtime
}  // namespace tg
