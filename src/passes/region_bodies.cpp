// Running a pass on the bodies of a graph's regions (shared by the passes that rewrite bodies).
#include "passes/passes.h"

namespace tg::passes {

bool run_on_region_bodies(ir::Graph& g, const GraphPass& pass) {
  bool changed = false;
  for (ir::Node& node : g.nodes()) {
    for (ir::Region& r : node.regions) {
      auto body = std::make_shared<ir::Graph>(*r.body);  // bodies may be shared with the user's graph
      std::vector<int> none;
      std::vector<ir::ValueRef> results = r.results;
      std::vector<int> params = r.params;
      if (pass(*body, results, none, params)) {
        r.body = std::move(body);
        r.results = std::move(results);
        r.params = std::move(params);
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace tg::passes
