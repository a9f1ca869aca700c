// The runtime's execution of a Program (program.h, docs/design/0005): runs walk the schedule on
// the host through the backend's kernels, with every planned value in the caller's arena; on a
// backend that records runs (CUDA), an arena's first run after the program's first completed run
// is recorded (a CUDA graph) and every later run replays it: copy the feeds that moved into their
// input slots, one launch, hand out the result buffers the recording wrote (copy out the other
// targets). The walk: runtime/run_state.cpp; the lowering and the arena pool:
// runtime/program.cpp; results: runtime/run_results.cpp.
#include <chrono>
#include <cstdio>

#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"
#include "core/stats.h"
#include "runtime/run_state.h"

namespace tg::runtime {

using stats::Counter;

namespace {

// RunOptions::cuda_stream: the run is ordered after the caller's stream on entry, and the
// caller's stream after the run on exit (also when the run fails).
struct StreamOrder {
  const backends::Backend& b;
  void* caller;
  StreamOrder(const backends::Backend& backend, void* stream) : b(backend), caller(stream) {
    if (caller) b.enter_stream(caller);
  }
  ~StreamOrder() {
    if (caller) b.leave_stream(caller);
  }
};

}  // namespace

std::vector<TensorData> Program::run(std::span<const TensorData> feeds, const RunOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  // Host time of a run that returns, its waits for the device excluded (runtime_stats).
  auto count_run = [&start](int64_t wait_ns) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    stats::add(Counter::runs);
    stats::add(Counter::run_host_ns, ns.count() - wait_ns);
  };
  // An arena group's executables take turns in its one arena, which grows to the largest need.
  std::unique_lock<std::mutex> shared_lock;
  if (shared_) {
    shared_lock = std::unique_lock<std::mutex>(shared_->mu);
    if (shared_->bytes < static_cast<size_t>(memory_.arena_bytes)) {
      const size_t old = shared_->bytes;
      shared_->memory = backend_.allocate(static_cast<size_t>(memory_.arena_bytes));
      shared_->bytes = static_cast<size_t>(memory_.arena_bytes);
      shared_->generation++;
      stats::add(Counter::arena_allocations);
      stats::add(Counter::arena_bytes, static_cast<int64_t>(shared_->bytes - old));
    }
  }
  struct Lease {
    const Program& p;
    std::unique_ptr<Instance> inst;
    ~Lease() {
      if (inst) p.release(std::move(inst));
    }
  } lease{*this, acquire()};
  Instance& inst = *lease.inst;
  // Deferred device errors: an error an earlier replay of this arena posted is raised now, before
  // anything is queued (one look at host memory, no wait).
  if (inst.deferred_pending) settle_deferred(inst, false);
  if (shared_ && inst.shared_generation != shared_->generation) {
    settle_deferred(inst, true);  // before the recording's formatters go
    bind_arena(inst, shared_->memory);  // the arena grew: new addresses, so record again
    inst.shared_generation = shared_->generation;
    inst.recorded.reset();
    inst.recorded_formatters.clear();
    inst.recorded_slots.clear();
  }
  ir::VariableStore& store = *plan_->graph->variables();
  std::shared_lock<std::shared_mutex> read_lock(store.run_mutex(), std::defer_lock);
  std::unique_lock<std::shared_mutex> write_lock(store.run_mutex(), std::defer_lock);
  if (!var_slots_.empty()) {
    if (assigns_) {
      write_lock.lock();
    } else {
      read_lock.lock();
    }
  }
  StreamOrder order(backend_, device_.is_cpu() ? nullptr : options.cuda_stream);
  void* stream = backend_.own_stream();

  // Variable buffers brought up to date (only when some buffer on this device went stale).
  if (!var_slots_.empty()) {
    const uint64_t epoch = store.stale_epoch(device_);
    if (epoch != inst.synced_epoch || inst.var_buffers.size() != var_slots_.size()) {
      inst.var_buffers.resize(var_slots_.size());
      for (size_t i = 0; i < var_slots_.size(); ++i) inst.var_buffers[i] = store.buffer(var_slots_[i], device_);
      inst.synced_epoch = epoch;
    }
  }
  // Scratch grown to what kernels declared (never under a recorded run: its addresses are fixed).
  if (!inst.recorded && align_up(scratch_need_.load()) > inst.scratch_bytes) {
    const size_t need = align_up(scratch_need_.load());
    inst.scratch = backend_.allocate(need);
    stats::add(Counter::arena_bytes, static_cast<int64_t>(need - inst.scratch_bytes));
    inst.held_bytes += need - inst.scratch_bytes;
    inst.scratch_bytes = need;
  }

  if (inst.recorded) {
    // A feed the recording reads in place that now comes at another address: record again,
    // reading that feed's input slot from now on.
    bool moved = false;
    for (size_t i = 0; i < feeds.size() && i < inst.recorded_feeds.size(); ++i) {
      if (inst.recorded_feeds[i] && feeds[i].storage_ptr() != inst.recorded_feeds[i]) {
        inst.feed_moved[i] = 1;
        moved = true;
      }
    }
    // A result buffer the recorded kernels write that the caller still holds: record again,
    // with that result copied out of the arena from now on (docs/design/0010, step 2).
    for (size_t t = 0; t < inst.recorded_results.size(); ++t) {
      if (inst.recorded_results[t] && inst.result_buffers[t].storage().use_count() != 1) {
        inst.result_held[t] = 1;
        moved = true;
      }
    }
    // Recorded with the other setting of deferred device errors: record again.
    if (inst.recorded_deferred != defer_errors_.load()) moved = true;
    if (moved) {
      settle_deferred(inst, true);  // before the recording's formatters go
      inst.recorded.reset();
      inst.recorded_formatters.clear();
      inst.recorded_slots.clear();
    }
  }
  if (recordable_ && warmed_.load() && !inst.record_failed && !inst.recorded) {
    RunState rec(*this, inst, nullptr);
    rec.prepare_recorded_results();
    const bool deferred = defer_errors_.load() && inst.record != nullptr;
    if (deferred) {
      // The recording leaves the record as it finds it, so an error stays there until raised:
      // zeroed here, in stream order before the first replay (the last walked run checked it).
      if (!inst.mailbox) inst.mailbox = backend_.allocate_error_mailbox();
      *inst.mailbox = {};
      backend_.fill_zero(inst.record, sizeof(backends::DeviceErrorRecord), stream);
      rec.set_sticky_record();
    }
    phases::Scope timed("run_record_cuda_graph");
    // The variables control flow reads while it is recorded: a bad value raises here, to the
    // caller, instead of passing for a failed capture below.
    (void)env::loop_unroll(), (void)env::condition_streams(), (void)env::unroll_limit();
    try {
      inst.recorded = backend_.record([&](void* s) {
        rec.set_stream(s);
        rec.enqueue_recorded(feeds);
      });
      inst.recorded_formatters = std::move(rec.formatters);
      inst.recorded_slots = std::move(rec.recorded_slots);
      inst.recorded_deferred = defer_errors_.load();
      stats::add(Counter::graph_captures);
    } catch (const Error& e) {
      inst.record_failed = true;
      stats::add(Counter::capture_fallbacks);
      static std::atomic<bool> told{false};
      if (!told.exchange(true)) {
        std::fprintf(stderr, "[tg] a run could not be captured into a CUDA graph; such runs walk the nodes: %s\n",
                     e.what());
      }
    }
  }
  if (inst.recorded) {
    for (size_t i = 0; i < feeds.size(); ++i) {
      const TensorData& slot = inst.input_slots[i];
      if (slot.empty() || inst.recorded_feeds[i]) continue;  // no slot, or read in place
      backend_.copy(const_cast<void*>(slot.storage_ptr()), device_, feeds[i].storage_ptr(), feeds[i].device(), feeds[i].nbytes(), stream);
      stats::add(Counter::input_copy_bytes, static_cast<int64_t>(feeds[i].nbytes()));
    }
    backend_.replay(*inst.recorded, stream);
    stats::add(Counter::graph_launches);
    if (!inst.recorded_slots.empty()) store.written(inst.recorded_slots, device_);
    RunState rs(*this, inst, stream);
    rs.set_replayed();
    std::vector<TensorData> out = rs.results();
    if (inst.recorded_deferred && inst.record && !inst.recorded_formatters.empty()) {
      // Deferred: the record goes to the host behind the replay; a later run or
      // check_deferred_errors raises what it holds.
      backend_.post_error(inst.record, inst.mailbox.get(), stream);
      inst.deferred_pending = true;
    } else {
      rs.check_device_errors(inst.recorded_formatters);
    }
    count_run(rs.wait_ns);
    return out;
  }
  settle_deferred(inst, true);  // a walked run zeroes the record first
  RunState rs(*this, inst, stream);
  {
    // The generated kernels this run compiles or finds cached are kept for Executable::save.
    std::vector<backends::CodeObject> code;
    struct Sink {
      const backends::Backend& b;
      ~Sink() { b.set_code_sink(nullptr); }
    } sink{backend_};
    backend_.set_code_sink(&code);
    phases::Scope timed("run_interpreted_enqueue");
    rs.enqueue(feeds);
    timed.stop();
    if (!code.empty()) add_code(std::move(code));
  }
  stats::add(Counter::interpreted_runs);
  phases::Scope results_time("run_interpreted_results");
  std::vector<TensorData> out = rs.results();
  rs.check_device_errors(rs.formatters);
  results_time.stop();
  warmed_.store(true);
  count_run(rs.wait_ns);
  return out;
}

void Program::settle_deferred(Instance& inst, bool wait) const {
  if (!inst.deferred_pending || inst.record == nullptr) return;
  if (!wait) {
    // The mailbox is written by the device's copy engine: one volatile read of the tag.
    if (*static_cast<volatile const unsigned long long*>(&inst.mailbox->tag) == 0) return;
  }
  void* stream = backend_.own_stream();
  const backends::DeviceErrorRecord r = backend_.read_error(inst.record, stream);  // waits
  inst.deferred_pending = false;
  if (r.tag == 0) return;
  // Raised once: the record and the mailbox start clean for the next run.
  backend_.fill_zero(inst.record, sizeof(backends::DeviceErrorRecord), stream);
  *inst.mailbox = {};
  const auto& f = inst.recorded_formatters;
  if (r.tag > f.size()) fail(ErrorCode::internal, device_.to_string(), "device error record with tag {}", r.tag);
  throw f[r.tag - 1](r);
}

void Program::check_deferred_errors(bool wait) const {
  std::vector<std::unique_ptr<Instance>> idle;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (wait) {
      idle.swap(free_);
    } else {  // only the arenas whose error the device has posted: the others stay free for runs
      for (auto it = free_.begin(); it != free_.end();) {
        const Instance& i = **it;
        const bool posted = i.deferred_pending && i.record != nullptr &&
                            *static_cast<volatile const unsigned long long*>(&i.mailbox->tag) != 0;
        if (posted) {
          idle.push_back(std::move(*it));
          it = free_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  struct Return {  // the arenas go back to the pool, also when an error is raised
    const Program& p;
    std::vector<std::unique_ptr<Instance>>& v;
    ~Return() {
      for (auto& i : v) p.release(std::move(i));
    }
  } back{*this, idle};
  for (auto& i : idle) settle_deferred(*i, wait);
}

}  // namespace tg::runtime
