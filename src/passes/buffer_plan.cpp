#include <map>

#include "passes/passes.h"

namespace tg::passes {

std::vector<std::vector<ir::ValueRef>> plan_buffers(const ir::Graph& g, const std::vector<int>& schedule,
                                                    const std::vector<ir::ValueRef>& keep) {
  std::map<ir::ValueRef, int> last_use;
  for (size_t step = 0; step < schedule.size(); ++step) {
    const ir::Node& node = g.node(schedule[step]);
    // A value nobody reads dies right after it is produced.
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
      last_use.try_emplace(ir::ValueRef{node.id, i}, static_cast<int>(step));
    }
    for (const auto& v : node.inputs) last_use[v] = static_cast<int>(step);
  }
  for (const auto& k : keep) last_use.erase(k);
  std::vector<std::vector<ir::ValueRef>> release(schedule.size());
  for (const auto& [v, step] : last_use) release[static_cast<size_t>(step)].push_back(v);
  return release;
}

}  // namespace tg::passes
