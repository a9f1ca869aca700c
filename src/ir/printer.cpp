#include <fmt/format.h>

#include "ir/graph.h"
#include "ir/regions.h"

namespace tg::ir {
namespace {

// "%3" for a single-output node, "%3:1" otherwise (and for a reference outside the graph, so a
// broken graph still prints).
std::string value_name(ValueRef v, const Graph& g) {
  bool single = v.node >= 0 && v.node < g.size() && g.node(v.node).outputs.size() == 1 && v.index == 0;
  return single ? fmt::format("%{}", v.node) : fmt::format("%{}:{}", v.node, v.index);
}

// "then(%0 <- %4, %1 <- %5)" for control-flow ops (each parameter and the outer value it starts
// as), the region's index for other ops.
std::string region_header(const Node& n, size_t r, const Graph& outer) {
  if (!is_control_flow(n.kind)) return std::to_string(r);
  const Region& region = n.regions[r];
  std::string params;
  for (size_t p = 0; p < region.params.size(); ++p) {
    params += (p ? ", %" : "%") + std::to_string(region.params[p]);
    int src = param_source(n, r, p);
    if (src >= 0) params += " <- " + value_name(n.inputs[static_cast<size_t>(src)], outer);
  }
  return region_name(n.kind, r) + "(" + params + ")";
}

void print_into(const Graph& g, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  for (const Node& n : g.nodes()) {
    std::string line = pad + fmt::format("%{} = {}(", n.id, op_name(n.kind));
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (i) line += ", ";
      line += value_name(n.inputs[i], g);
    }
    line += ")";
    std::string attrs = attrs_to_string(n.attrs);
    if (!attrs.empty()) line += " {" + attrs + "}";
    if (!n.control_inputs.empty()) {
      line += " after(";
      for (size_t i = 0; i < n.control_inputs.size(); ++i) {
        line += (i ? ", %" : "%") + std::to_string(n.control_inputs[i]);
      }
      line += ")";
    }
    line += " :";
    for (size_t i = 0; i < n.outputs.size(); ++i) line += (i ? ", " : " ") + n.outputs[i].to_string();
    if (!n.name.empty()) line += "  # " + n.name;
    out += line + "\n";
    for (size_t r = 0; r < n.regions.size(); ++r) {
      out += pad + "  region " + region_header(n, r, g) + " {\n";
      if (n.regions[r].body) print_into(*n.regions[r].body, indent + 4, out);
      std::string results;
      for (size_t i = 0; n.regions[r].body && i < n.regions[r].results.size(); ++i) {
        results += (i ? ", " : "") + value_name(n.regions[r].results[i], *n.regions[r].body);
      }
      out += pad + "    yield(" + results + ")\n" + pad + "  }\n";
    }
  }
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out;
  print_into(g, 0, out);
  return out;
}

}  // namespace tg::ir
