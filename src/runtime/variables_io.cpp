// Graph::save_variables / load_variables (safetensors).
#include "core/error_util.h"
#include "core/safetensors.h"
#include "ir/graph.h"

namespace tg {

void Graph::save_variables(const std::string& path) const {
  const auto& store = *impl_->variables();
  std::vector<std::pair<std::string, TensorData>> tensors;
  for (int i = 0; i < store.size(); ++i) tensors.emplace_back(store.name(i), store.value(i));
  safetensors::write(path, tensors);
}

void Graph::load_variables(const std::string& path) {
  auto& store = *impl_->variables();
  auto tensors = safetensors::read(path);
  std::vector<std::string> problems;
  std::vector<int> slots;
  std::vector<TensorData> values;
  std::vector<char> seen(static_cast<size_t>(store.size()), 0);
  for (auto& [name, value] : tensors) {
    int slot = store.find(name);
    if (slot < 0) {
      problems.push_back(fmt::format("'{}' ({}) is in the file but not in the graph", name, value.type().to_string()));
      continue;
    }
    seen[slot] = 1;
    TensorType want = store.type(slot);
    if (value.type() != want) {
      problems.push_back(fmt::format("'{}' is {} in the file, {} in the graph", name,
                                     value.type().to_string(), want.to_string()));
      continue;
    }
    slots.push_back(slot);
    values.push_back(std::move(value));
  }
  for (int i = 0; i < store.size(); ++i) {
    if (!seen[i]) problems.push_back(fmt::format("'{}' is missing from the file", store.name(i)));
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    fail(ErrorCode::shape_mismatch, "load_variables", "{}: {} mismatch(es), nothing loaded:{}", path,
         problems.size(), all);
  }
  store.commit(slots, values);
}

}  // namespace tg
