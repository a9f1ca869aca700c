#include "ir/variables.h"

#include "core/error_util.h"

namespace tg::ir {

int VariableStore::add(std::string name, TensorData value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name.empty()) fail(ErrorCode::invalid_argument, "variable", "a variable needs a name");
  for (const auto& n : names_) {
    if (n == name) fail(ErrorCode::invalid_argument, "variable", "a variable named '{}' already exists", name);
  }
  names_.push_back(std::move(name));
  values_.push_back(std::move(value));
  return static_cast<int>(values_.size()) - 1;
}

TensorData VariableStore::value(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return values_.at(static_cast<size_t>(slot));
}
TensorType VariableStore::type(int slot) const { return value(slot).type(); }
std::string VariableStore::name(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.at(static_cast<size_t>(slot));
}
int VariableStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(values_.size());
}
int VariableStore::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}
void VariableStore::commit(const std::vector<int>& slots, const std::vector<TensorData>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < slots.size(); ++i) values_.at(static_cast<size_t>(slots[i])) = values[i];
}

void VariableStore::migrate(int slot, const TensorData& from, TensorData moved) {
  std::lock_guard<std::mutex> lock(mu_);
  TensorData& v = values_.at(static_cast<size_t>(slot));
  if (v.storage() == from.storage() && v.device() == from.device()) v = std::move(moved);
}

VariableTransaction::VariableTransaction(std::shared_ptr<VariableStore> store, Device device)
    : store_(std::move(store)), device_(device) {
  size_t n = static_cast<size_t>(store_->size());
  start_.resize(n);
  current_.resize(n);
  loaded_.assign(n, 0);
  dirty_.assign(n, 0);
}

void VariableTransaction::load(int slot) {
  if (slot < 0 || slot >= static_cast<int>(start_.size())) {
    fail(ErrorCode::internal, "variable", "slot {} outside the store", slot);
  }
  if (!loaded_[slot]) {
    TensorData v = store_->value(slot);
    if (!v.empty() && v.device() != device_) {
      TensorData moved = v.to(device_);
      store_->migrate(slot, v, moved);
      v = std::move(moved);
    }
    start_[slot] = current_[slot] = std::move(v);
    loaded_[slot] = 1;
  }
}
const TensorData& VariableTransaction::start(int slot) {
  load(slot);
  return start_[slot];
}
const TensorData& VariableTransaction::current(int slot) {
  load(slot);
  return current_[slot];
}
void VariableTransaction::assign(int slot, TensorData value) {
  load(slot);
  current_[slot] = std::move(value);
  dirty_[slot] = 1;
}
void VariableTransaction::commit() {
  std::vector<int> slots;
  std::vector<TensorData> values;
  for (size_t i = 0; i < dirty_.size(); ++i) {
    if (dirty_[i]) {
      slots.push_back(static_cast<int>(i));
      values.push_back(current_[i]);
    }
  }
  if (!slots.empty()) store_->commit(slots, values);
}

}  // namespace tg::ir
