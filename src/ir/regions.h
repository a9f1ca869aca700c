// Helpers on regions (the sub-graphs of control-flow nodes) shared by the builders, passes,
// autodiff and backends.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tg::ir {

/// if_else, for_loop, while_loop.
inline bool is_control_flow(OpKind kind) {
  return kind == OpKind::if_else || kind == OpKind::for_loop || kind == OpKind::while_loop;
}

/// True when running `node` may change state: an op with the kSideEffect trait, or a node whose
/// regions (recursively) hold one.
bool has_side_effects(const Node& node);

/// Removes the nodes of `region`'s body that neither a result, a parameter nor (when
/// `keep_side_effects`) a node with side effects needs; compacts ids (order kept) and remaps the
/// region's params and results.
void prune_region(Region& region, bool keep_side_effects);

/// A region with an empty body sharing `outer`'s variables.
Region empty_region(const Graph& outer);

/// Appends a parameter placeholder of `type` to `region` and returns its node id.
int add_region_param(Region& region, const TensorType& type, std::string name);

/// For parameter `param` of region `region` of `node`: the index of the node input it is bound to
/// when the region runs first (loop values, captured values), or -1 (for_loop's index,
/// while_loop's passed values, parameters of non-control-flow ops).
int param_source(const Node& node, size_t region, size_t param);

/// Name of region `index` of a node of `kind` in printed IR ("then", "else", "body", "before",
/// "after"; the index for other ops).
std::string region_name(OpKind kind, size_t index);

}  // namespace tg::ir
