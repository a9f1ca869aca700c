// Variable state: the values of a graph's variables, shared by every executable compiled from the
// graph. Each variable has one fixed buffer on each device it is used on (made once, a copy of the
// latest value), which runs read in place and update in place; the runtime's commit at the end of
// a successful run writes the new values into them (src/runtime/run_variables.h), so a failed run
// leaves them as they were.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "tg/tensor_data.h"

namespace tg::ir {

/// Slots of named variables. Thread-safe.
class VariableStore {
 public:
  /// Adds a variable holding `value` (moved to a host buffer); raises tg::Error(invalid_argument)
  /// for a duplicate or empty name.
  int add(std::string name, TensorData value);
  /// A copy of the current value, on the device that wrote it last (a snapshot: later runs do not
  /// change it). Ordered after the runs queued so far.
  TensorData value(int slot) const;
  TensorType type(int slot) const;
  std::string name(int slot) const;
  int size() const;
  /// Slot of `name`, or -1.
  int find(const std::string& name) const;
  /// Writes `values` (each of its variable's type, on any device) into the variables at once;
  /// ordered with runs like one that assigns them (it takes run_mutex() exclusively).
  void commit(const std::vector<int>& slots, const std::vector<TensorData>& values);

  /// The fixed buffer of `slot` on `device`: made on first use as a copy of the latest value,
  /// and brought up to date (copied into in place) when another device or commit() wrote the
  /// variable since. Its address never changes.
  TensorData buffer(int slot, Device device);
  /// Records that a run on `device` wrote the buffers of `slots` there (in its queue order).
  void written(std::span<const int> slots, Device device);
  /// Grows each time some buffer on `device` becomes out of date: a run that saw the same number
  /// before needs no buffer() calls to bring its buffers up to date.
  uint64_t stale_epoch(Device device) const;
  /// Runs hold it while they queue their work: shared when they only read variables, exclusively
  /// when they assign some, so concurrent runs act as in some sequential order.
  std::shared_mutex& run_mutex() const { return run_mu_; }

 private:
  struct Buffer {
    Device device;
    TensorData data;
    uint64_t version = 0;
  };
  struct Slot {
    std::string name;
    TensorType type;
    std::vector<Buffer> buffers;  ///< the host buffer first
    uint64_t version = 1;         ///< buffers with this version hold the latest value
    size_t latest = 0;            ///< index in buffers of one that does
  };
  Buffer* find_buffer(Slot& s, Device device);
  void mark_stale(Slot& s, size_t except);
  static size_t device_key(Device d) { return d.is_cpu() ? 0 : 1 + static_cast<size_t>(d.index); }

  mutable std::mutex mu_;
  mutable std::shared_mutex run_mu_;
  std::vector<Slot> slots_;
  std::vector<uint64_t> stale_epochs_ = std::vector<uint64_t>(17, 0);  ///< per device_key
};

}  // namespace tg::ir
