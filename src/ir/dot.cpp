#include <fmt/format.h>

#include "ir/graph.h"

namespace tg::ir {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void emit(const Graph& g, const std::string& prefix, std::string& out) {
  for (const Node& n : g.nodes()) {
    std::string types;
    for (const auto& t : n.outputs) types += (types.empty() ? "" : ", ") + t.to_string();
    // Pieces are escaped one by one and joined with DOT's line break "\n" (kept unescaped).
    std::string label = escape(std::string(op_name(n.kind)) + (n.name.empty() ? "" : " '" + n.name + "'")) +
                        "\\n" + escape(types);
    std::string attrs = attrs_to_string(n.attrs);
    if (!attrs.empty() && attrs.size() < 80) label += "\\n" + escape(attrs);
    out += fmt::format("  {}n{} [label=\"{}\"{}];\n", prefix, n.id, label,
                       has_trait(n.kind, kSource) ? ", shape=box" : "");
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      out += fmt::format("  {}n{} -> {}n{} [label=\"{}\"];\n", prefix, n.inputs[i].node, prefix,
                         n.id, i);
    }
    for (int c : n.control_inputs) {
      out += fmt::format("  {}n{} -> {}n{} [style=dashed];\n", prefix, c, prefix, n.id);
    }
    for (size_t r = 0; r < n.regions.size(); ++r) {
      std::string sub = fmt::format("{}n{}r{}_", prefix, n.id, r);
      out += fmt::format("  subgraph cluster_{} {{\n  label=\"{} region {}\";\n", sub,
                         op_name(n.kind), r);
      if (n.regions[r].body) emit(*n.regions[r].body, sub, out);
      out += "  }\n";
    }
  }
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::string out = "digraph tg {\n  node [fontname=\"monospace\"];\n";
  emit(g, "", out);
  return out + "}\n";
}

}  // namespace tg::ir
