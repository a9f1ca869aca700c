// Graph -> Executable: the pass pipeline and lowering.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "tg/graph.h"

namespace tg {

/// What an Executable holds.
struct CompiledProgram {
  Device device;
  std::shared_ptr<const runtime::PlannedGraph> plan;
  std::unique_ptr<runtime::Program> program;
  std::vector<std::string> feed_names;
  std::vector<TensorType> feed_types;
  std::vector<TensorType> target_types;
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

/// Whether compile runs the channels-last layout pass (passes::convert_to_channels_last) on `g`
/// (typed with the feeds' shapes) for `device`: TG_CHANNELS_LAST=1 / 0 forces it; otherwise
/// where it was measured faster: on the CPU when `g` has an NCHW conv2d; on CUDA when every
/// NCHW conv2d is dense (groups 1) with a static batch of at least 32 (docs/cuda.md).
bool layout_pass_pays(const ir::Graph& g, Device device);

}  // namespace runtime
}  // namespace tg
