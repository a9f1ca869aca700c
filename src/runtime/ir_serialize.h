// Lossless serialization of the IR for saved executables (docs/design/0008): every node with its
// op stored by name (ops.def), its typed attributes (tagged by attribute-struct name), data and
// control inputs, output types, name and regions (recursively); constants' values as raw
// little-endian bytes. Node ids are positions, as in the graph.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "runtime/tgx_format.h"

namespace tg::runtime::tgx {

void write_type(Writer& w, const TensorType& t);
/// A type whose dims are all >= -1 and rank at most 64 (io_error otherwise).
TensorType read_type(Reader& r);

void write_graph(Writer& w, const ir::Graph& g);
/// A graph read back; its variable store (and its regions') is `store`. VariableAttrs slots are
/// kept as written (the caller maps them). Structural checks: inputs refer to earlier nodes and
/// existing outputs (ir::verify); an op name this build does not know raises
/// tg::Error(unsupported) naming the file and section.
std::shared_ptr<ir::Graph> read_graph(Reader& r, const std::shared_ptr<ir::VariableStore>& store);

/// Calls f(node) for every node of g and of its regions (recursively).
template <typename F>
void for_each_node(ir::Graph& g, F&& f) {
  for (ir::Node& n : g.nodes()) {
    f(n);
    for (ir::Region& reg : n.regions) for_each_node(*reg.body, f);
  }
}
template <typename F>
void for_each_node(const ir::Graph& g, F&& f) {
  for (const ir::Node& n : g.nodes()) {
    f(n);
    for (const ir::Region& reg : n.regions) for_each_node(static_cast<const ir::Graph&>(*reg.body), f);
  }
}

}  // namespace tg::runtime::tgx
