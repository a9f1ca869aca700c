// The state of one run of a Program (runtime/run_state.cpp, run_results.cpp, executor.cpp,
// control_flow.cpp): the arena it runs in (an Instance, reused by later runs of the same caller)
// and the run's services.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/program.h"

namespace tg::runtime {

/// An arena and what belongs to it: the planned values' views, the scratch region, the device
/// error record and, once recorded, the run replayed on later runs (a CUDA graph).
struct Instance {
  std::shared_ptr<void> arena;
  std::shared_ptr<void> scratch;
  size_t scratch_bytes = 0;
  std::shared_ptr<void> record_block;
  backends::DeviceErrorRecord* record = nullptr;  ///< device memory; null on the CPU
  std::vector<std::vector<TensorData>> views;     ///< per node: its planned outputs (or empty)
  std::vector<TensorData> input_slots;            ///< per feed: its input slot (or empty)
  std::vector<std::vector<TensorData>> values;    ///< per node: the values of the current run
  std::vector<TensorData> var_buffers;            ///< per program variable: its buffer here
  uint64_t synced_epoch = std::numeric_limits<uint64_t>::max();
  std::unique_ptr<backends::RecordedRun> recorded;
  std::vector<backends::DeviceErrorFormatter> recorded_formatters;
  std::vector<int> recorded_slots;  ///< the variables the recorded run assigns
  /// Per feed: the device address the recorded run reads it at in place, or null where it reads
  /// the feed's input slot (the feed is copied there before each replay).
  std::vector<const void*> recorded_feeds;
  /// Per feed: it came at another address than the one recorded once, so recordings read its
  /// input slot from then on (a feed whose buffer changes every run is copied, not re-recorded).
  std::vector<char> feed_moved;
  bool record_failed = false;
  size_t held_bytes = 0;  ///< counted in runtime_stats().arena_bytes
  uint64_t shared_generation = 0;  ///< the shared arena's generation the views point into
  std::vector<TensorData> inputs_scratch;        ///< reused per step (no allocation per step)
  /// Per target: the buffer last handed to the caller as that result. Reused by the next run
  /// once the caller has released it (only this instance holds its storage), so a result comes
  /// at the same address run after run (a consumer's CUDA graph then reads it in place).
  std::vector<TensorData> result_buffers;
  /// Per target: the recorded run's kernel writes it straight into result_buffers[t], which each
  /// replay then hands out without a copy (docs/design/0010, step 2).
  std::vector<char> recorded_results;
  /// Per target: the caller still held its result buffer when a replay was due once, so
  /// recordings write it into the arena and replays copy it out from then on (sticky, as
  /// feed_moved: a caller that keeps every result costs one recording, not one per run).
  std::vector<char> result_held;
  /// Deferred device errors (Program::set_deferred_errors): `recorded` was recorded so (it does
  /// not zero the record: an error stays in it until raised), replays since the last check posted
  /// the record into `mailbox` (host memory) without waiting, and `deferred_pending` says one did.
  bool recorded_deferred = false;
  bool deferred_pending = false;
  std::shared_ptr<backends::DeviceErrorRecord> mailbox;
  ~Instance();
};

class RunState final : public backends::RunServices {
 public:
  RunState(const Program& program, Instance& inst, void* stream);

  void* stream() override { return stream_; }
  void* workspace(size_t bytes) override;
  backends::DeviceErrorSlot device_error(backends::DeviceErrorFormatter describe) override;
  const backends::DeviceErrorRecord* write_guard() override { return guard_ ? inst_.record : nullptr; }

  /// Queues the whole run on the stream: zeroes the error record, runs the top level with
  /// `feeds` bound to the placeholders, stages the targets in their slots and commits the
  /// assigned variables (predicated on the record).
  void enqueue(std::span<const TensorData> feeds);
  /// enqueue for a recording: the variables it assigns are kept in recorded_slots instead of
  /// being marked written (nothing ran yet). A feed on the program's device whose address did
  /// not move is read in place (its address goes to Instance::recorded_feeds); the other
  /// placeholders read their input slots.
  void enqueue_recorded(std::span<const TensorData> feeds);
  /// Before a recording (outside the capture, whose allocations belong to the recording): a
  /// result buffer the caller released (or a new one) for every target the recorded kernels
  /// write straight into (Program::fresh_target_, not Instance::result_held).
  void prepare_recorded_results();
  /// This RunState hands out the results of a replay (results()).
  void set_replayed() { replayed_ = true; }
  void set_stream(void* stream) { stream_ = stream; }
  /// enqueue_recorded leaves the error record as it is instead of zeroing it first (deferred
  /// device errors: the record is zeroed once before the recording and after an error is raised).
  void set_sticky_record() { sticky_record_ = true; }
  /// The targets: the buffers an enqueue()d run's kernels wrote them into (Program::
  /// fresh_target_), or a replay's recorded kernels did (Instance::recorded_results), else copies
  /// out of the arena (or the values themselves where unplanned). Call once per run: it moves
  /// the handed-out values out of the instance.
  std::vector<TensorData> results();
  /// Raises the error a kernel reported on the device, if any (waits for the stream).
  void check_device_errors(const std::vector<backends::DeviceErrorFormatter>& formatters);

  std::vector<backends::DeviceErrorFormatter> formatters;  ///< per tag - 1, this run's
  std::vector<std::shared_ptr<void>> overflow;             ///< scratch beyond the region, this run's
  size_t overflow_bytes = 0;                                ///< of overflow.back(), reused by later kernels
  std::vector<int> recorded_slots;                         ///< enqueue_recorded: variables assigned
  int64_t wait_ns = 0;                                     ///< time check_device_errors waited

  // ---- used by control flow (control_flow.cpp)
  /// Runs a region of a node of this program with its parameters bound to `args`. `dests`
  /// (empty, or one per result): buffers the kernels producing the results write straight into
  /// where they can (a recorded branch's outputs); the results are still returned.
  std::vector<TensorData> run_region(const ir::Region& region, std::span<const TensorData> args,
                                     std::span<const TensorData> dests = {});
  /// A host copy of a small feed, when `v` is a placeholder fed from the host (no device read).
  const TensorData* host_value(ir::ValueRef v) const;
  /// The value of a one-element tensor on the host (reads the device in stream order).
  TensorData to_host(const TensorData& t);

 private:
  /// Runs `plan` with `feeds` bound to its placeholders; values in `values` (per node).
  void execute(const GraphPlan& plan, std::span<const TensorData> feeds,
               std::vector<std::vector<TensorData>>& values, bool top);
  void run_step(const GraphPlan& plan, size_t step, std::vector<std::vector<TensorData>>& values,
                std::span<const TensorData> feeds, bool top);
  void call_kernel(const ir::Node& node, backends::Kernel kernel, std::span<const TensorData> inputs,
                   std::vector<TensorData>& outs);
  void run_control(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs);

  // ---- control flow recorded as CUDA graph conditional nodes (control_flow_graph.cpp)
  /// Variables a control-flow node's regions assign, held in fixed buffers while it records.
  struct Pinned {
    std::vector<int> slots;
    std::vector<TensorData> buffers;
  };
  void record_control(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs);
  void record_if(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs);
  void record_for(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs);
  void record_while(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs);
  /// A new buffer (from the recording's pool: fixed for every replay).
  TensorData fresh(const TensorType& type) const;
  /// Queues dst[i] = src[i] (skipping identical buffers; through temporaries when a source
  /// overlaps another destination).
  void copy_values(std::span<const TensorData> dst, std::span<const TensorData> src);
  Pinned pin_variables(const ir::Node& node);
  void settle_variables(const Pinned& pinned);
  void check_outputs(const ir::Node& node, const std::vector<TensorData>& outs);
  Device device() const;
  void stage_targets();
  /// Whether `v` lies in the arena or in a variable's buffer (memory a commit or a later run writes).
  bool in_run_memory(const TensorData& v) const;
  void commit();
  /// The buffer for result `target` of `type`: Instance::result_buffers' one when the caller
  /// released it, else a new one (kept there).
  TensorData result_buffer(size_t target, const TensorType& type);
  /// The value of output `index` of `node` goes straight into its result buffer in this run (a
  /// walking run, or a recording where the caller did not hold that result at a replay).
  bool fresh(const ir::Node& node, size_t index) const {
    const int t = p_.fresh_target_[node.id][index];
    if (t < 0) return false;
    return fresh_ || (recording_ && !inst_.result_held[static_cast<size_t>(t)]);
  }
  /// Target `target` of this run is the buffer its kernel wrote into (a fresh() value; in a
  /// recording or a replay, one of Instance::recorded_results).
  bool handed_out(size_t target) const;

  // Variables of this run (per program variable index): the value a read sees now.
  const TensorData& start_value(int slot);
  const TensorData& current_value(int slot);
  void assign(int slot, TensorData value);

  const Program& p_;
  Instance& inst_;
  void* stream_;
  size_t ws_used_ = 0;
  std::vector<TensorData> current_;
  std::vector<char> dirty_;
  std::unordered_map<int, TensorData> host_feeds_;  ///< placeholder node -> small host feed
  bool profile_ = false;
  bool recording_ = false;
  bool fresh_ = false;  ///< enqueue(): results written straight into their buffers (fresh_target_)
  bool replayed_ = false;  ///< results() of a replay (set_replayed)
  bool guard_ = false;  ///< the current kernel writes variables' buffers directly
  bool sticky_record_ = false;  ///< set_sticky_record
  /// run_region's destinations for the results of the region now running (dest_graph_).
  const ir::Graph* dest_graph_ = nullptr;
  const ir::Graph* control_graph_ = nullptr;  ///< the graph of the control-flow node now running
  std::vector<std::pair<ir::ValueRef, TensorData>> dest_;
};

}  // namespace tg::runtime
