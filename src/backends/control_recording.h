// Control flow inside recorded runs (CUDA graph conditional nodes): the part of the backend
// contract (backends/backend.h) the runtime's lowering of if_else, for_loop and while_loop uses
// (src/runtime/control_flow_graph.cpp, docs/design/0007). Only backends that record runs
// implement it; control_recorder() finds a device's. Every call takes `stream`, a stream that is
// recording (inside Backend::record's enqueue or a conditional node's body).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backends/kernel.h"
#include "tg/device.h"
#include "tg/dtype.h"

namespace tg::backends {

/// How a recorded conditional node's condition is set on the device (Backend::set_condition).
struct ConditionRule {
  enum class Kind {
    truthy,  ///< value != 0 (NaN: true) && (limit < 0 || *counter < limit); then ++*counter if `increment`
    count,   ///< indices[4 * j] (16 bytes apart) = index_base + *counter * index_count + j (when `indices`), then
             ///< ++*counter if `increment`; then *counter < bound (value as an integer, or `limit`)
  };
  Kind kind = Kind::truthy;
  const void* value = nullptr;  ///< device memory, one element of `dtype`; null: count against `limit`
  DType dtype = DType::bool_;
  int32_t* counter = nullptr;   ///< device memory (i32), or null
  bool increment = false;
  int64_t limit = -1;
  /// count: a bound above 2^31-1 is written here (detail[0] = the bound) and the condition is 0.
  DeviceErrorSlot overflow;
  int32_t* indices = nullptr;   ///< count: the loop indices of the iteration starting (device, i32)
  int index_count = 0;
  int32_t index_base = 0;
};

/// A copy of a speculated while loop's state (Backend::select_state): the value of the iteration
/// the loop keeps, one source per speculated iteration, into `dst`.
struct StateCopy {
  void* dst = nullptr;
  std::vector<const void*> src;  ///< per iteration
  size_t bytes = 0;
};

class ControlRecorder {
 public:
  virtual ~ControlRecorder() = default;
  /// A new condition of the graph `stream` records into (a cudaGraphConditionalHandle).
  virtual uint64_t conditional_handle(void* stream) const = 0;
  /// Queues the kernel that sets `handle` by `rule`.
  virtual void set_condition(uint64_t handle, const ConditionRule& rule, void* stream) const = 0;
  /// Adds a conditional node on `handle` after the work recorded on `stream` so far: `loop`: a
  /// while node with one body, run while the condition is non-zero (tested before each run); else
  /// an if node with `bodies` (1 or 2) bodies: body 0 when the condition is non-zero, body 1 when
  /// it is zero. `enqueue(b, s)` records body b's work on `s`. Later work on `stream` follows the node.
  virtual void record_conditional(void* stream, uint64_t handle, bool loop, int bodies,
                                  const std::function<void(int body, void* s)>& enqueue) const = 0;
  /// Queues the choice of a speculated while loop's state: j = the first of `conds` (k device
  /// scalars of `dtype`, one per iteration) that is false, else k; copies every `copies[v].src[j-1]`
  /// into `copies[v].dst` and sets `handle` to 1 when all k were true. At most 32 iterations and
  /// 16 values.
  virtual void select_state(uint64_t handle, std::span<const void* const> conds, DType dtype,
                            std::span<const StateCopy> copies, void* stream) const = 0;
  /// Queues dst[4 * i] = start + i (i32, 16 bytes apart: each a scalar of its own) for i in [0, n).
  virtual void iota_i32(int32_t* dst, int64_t n, int32_t start, void* stream) const = 0;

  // Work on several streams inside a recording (a speculated while loop's conditions beside its
  // updates): side streams join the recording through follow() and must follow back into the
  // recording stream before its recording ends.
  /// A new stream of the device the runtime records on; close_stream() it once the recording it
  /// joined has ended.
  virtual void* open_stream() const = 0;
  virtual void close_stream(void* s) const = 0;
  /// Work queued on `waiter` from now on runs after the work queued on `stream` so far (in a
  /// recording: graph edges from those nodes).
  virtual void follow(void* waiter, void* stream) const = 0;
  /// While held (calls nest), the recording's memory pool hands out no block released during the
  /// hold: work queued on another stream may still use it. Blocks released meanwhile return to
  /// the pool when the last hold ends (call it after the streams have followed back).
  virtual void hold_pool(bool hold) const = 0;

};

/// The recorder of `device`'s backend, or null when its runs cannot hold control flow. Defined in
/// src/backends/registry.cpp.
const ControlRecorder* control_recorder(Device device);

}  // namespace tg::backends
