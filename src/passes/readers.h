// How many inputs read each value of a graph (passes that rewrite a value only when one reader
// sees it: fold_into_matmul.cpp, project_heads.cpp).
#pragma once
#include <map>
#include <vector>

#include "ir/graph.h"

namespace tg::passes {

using ReaderCounts = std::map<ir::ValueRef, int>;

/// The number of node inputs reading each value; a root (a result) counts 2 more, so that a
/// rewrite that needs a single reader never rewrites a result away.
inline ReaderCounts count_readers(const ir::Graph& g, const std::vector<ir::ValueRef>& roots) {
  ReaderCounts r;
  for (const ir::Node& n : g.nodes()) {
    for (const ir::ValueRef& v : n.inputs) ++r[v];
  }
  for (const ir::ValueRef& v : roots) r[v] += 2;
  return r;
}

}  // namespace tg::passes
