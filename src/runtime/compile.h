// Graph -> Executable: the pass pipeline and lowering.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "tg/graph.h"

namespace tg {

/// What an Executable holds.
struct CompiledProgram {
  Device device;
  std::shared_ptr<const backends::PlannedGraph> plan;
  std::unique_ptr<backends::Program> program;
  std::vector<std::string> feed_names;
  std::vector<TensorType> feed_types;
  std::vector<TensorType> target_types;
};

namespace runtime {

/// DCE -> type inference for the feeds -> checks (static shapes, backend support) -> buffer plan
/// -> backend lowering. Errors as documented on tg::Graph::compile.
Executable compile_graph(const std::shared_ptr<ir::Graph>& graph, Device device,
                         const FeedTypes& feed_types, const std::vector<Tensor>& targets,
                         const std::vector<Operation>& target_ops, CompileOptions options);

}  // namespace runtime
}  // namespace tg
