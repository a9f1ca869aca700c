#include <fmt/format.h>

#include "ir/graph.h"
#include "ir/regions.h"

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
    // A node with regions is drawn in a cluster of its own that holds its regions' clusters.
    if (!n.regions.empty()) {
      out += fmt::format("  subgraph cluster_{}n{} {{\n  label=\"{} %{}\";\n  style=rounded;\n",
                         prefix, n.id, op_name(n.kind), n.id);
    }
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
      out += fmt::format(
          "  subgraph cluster_{} {{\n  label=\"{}\";\n", sub,
          escape(is_control_flow(n.kind) ? region_name(n.kind, r)
                                         : fmt::format("{} region {}", op_name(n.kind), r)));
      if (n.regions[r].body) emit(*n.regions[r].body, sub, out);
      out += "  }\n";
      // Dotted edges from the outer values to the parameters they start as.
      for (size_t p = 0; p < n.regions[r].params.size(); ++p) {
        int src = param_source(n, r, p);
        if (src < 0) continue;
        out += fmt::format("  {}n{} -> {}n{} [style=dotted];\n", prefix,
                           n.inputs[static_cast<size_t>(src)].node, sub, n.regions[r].params[p]);
      }
    }
    if (!n.regions.empty()) out += "  }\n";
  }
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::string out = "digraph tg {\n  node [fontname=\"monospace\"];\n";
  emit(g, "", out);
  return out + "}\n";
}

}  // namespace tg::ir
