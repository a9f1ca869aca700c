// Variable state: the values of a graph's variables, shared by every executable compiled from
// the graph, and the per-run transaction that makes a run all-or-nothing.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tg/tensor_data.h"

namespace tg::ir {

/// Slots of named variables. Thread-safe.
class VariableStore {
 public:
  /// Adds a variable; raises tg::Error(invalid_argument) for a duplicate or empty name.
  int add(std::string name, TensorData value);
  TensorData value(int slot) const;
  TensorType type(int slot) const;
  std::string name(int slot) const;
  int size() const;
  /// Slot of `name`, or -1.
  int find(const std::string& name) const;
  /// Replaces the values of `slots` at once (under one lock).
  void commit(const std::vector<int>& slots, const std::vector<TensorData>& values);
  /// Replaces the value of `slot` with `moved` (the same values on another device) unless it was
  /// replaced since `from` was read. Keeps variables on the device that uses them across runs.
  void migrate(int slot, const TensorData& from, TensorData moved);

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;
  std::vector<TensorData> values_;
};

/// One run's view of the variables: `start` holds the values when the run began (what a
/// `variable` node yields), `current` what a read ordered at this point sees (assignments made
/// earlier in the run). commit() publishes the assigned values; a run that throws never commits,
/// so every variable keeps its previous value. Values are read on `device`: a variable stored on
/// another device is copied there once and the store keeps the copy (VariableStore::migrate).
class VariableTransaction {
 public:
  explicit VariableTransaction(std::shared_ptr<VariableStore> store, Device device = Device::cpu());
  const TensorData& start(int slot);
  const TensorData& current(int slot);
  void assign(int slot, TensorData value);
  void commit();

 private:
  void load(int slot);
  std::shared_ptr<VariableStore> store_;
  Device device_;
  std::vector<TensorData> start_, current_;
  std::vector<char> loaded_, dirty_;
};

}  // namespace tg::ir
