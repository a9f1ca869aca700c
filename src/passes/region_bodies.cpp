// Running a pass on the bodies of a graph's regions (shared by the passes that rewrite bodies).
#include "ir/regions.h"
#include "passes/passes.h"

namespace tg::passes {

bool run_on_region_bodies(ir::Graph& g, const GraphPass& pass) {
  bool changed = false;
  for (ir::Node& node : g.nodes()) {
    for (ir::Region& r : node.regions) {
      auto body = std::make_shared<ir::Graph>(*r.body);  // bodies may be shared with the user's graph
      // A body's side effects (assignments, nested regions holding them) are its root ops, as
      // the top level's are: no result reads an assignment, and a pass that eliminates dead code
      // in the body must keep it (an empty list dropped a branch's assign_variable whenever a
      // fusion pass changed that branch).
      std::vector<int> effects;
      for (const ir::Node& n : body->nodes()) {
        if (ir::has_side_effects(n)) effects.push_back(n.id);
      }
      std::vector<ir::ValueRef> results = r.results;
      std::vector<int> params = r.params;
      if (pass(*body, results, effects, params)) {
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
