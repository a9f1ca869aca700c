// A run walking a Program's nodes (run_state.h): the services kernels get (RunServices:
// workspace, device error slots), the run's variables, binding the feeds, and the walk itself:
// one step per scheduled node, each a kernel call (profiled, traced or timed when asked) or a
// value the runtime binds (feeds, variables). What the run hands back: runtime/run_results.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"
#include "core/stats.h"
#include "ops/registry.h"
#include "runtime/profiler.h"
#include "runtime/run_state.h"

namespace tg::runtime {
namespace {

using stats::Counter;

// Kernels timed by device events in a profiled run: evaluated after the run.
struct Timed {
  std::string name;
  double bytes;
  void* start;
  void* end;
};
thread_local std::vector<Timed> t_timed;

void collect_timed(const backends::Backend& b, void* stream) {
  b.synchronize(stream);
  const std::string dev = b.device().to_string();
  for (size_t i = 0; i < t_timed.size(); ++i) {
    const Timed& t = t_timed[i];
    Profiler::get().add(dev, t.name, b.event_ms(t.start, t.end) / 1e3, t.bytes);
    if (i > 0) Profiler::get().add(dev, "(device idle between)", b.event_ms(t_timed[i - 1].end, t.start) / 1e3, 0);
  }
  for (const Timed& t : t_timed) {
    b.release_event(t.start);
    b.release_event(t.end);
  }
  t_timed.clear();
}

double bytes_of(std::span<const TensorData> a, std::span<const TensorData> b) {
  double n = 0;
  for (const TensorData& t : a) n += static_cast<double>(t.nbytes());
  for (const TensorData& t : b) n += static_cast<double>(t.nbytes());
  return n;
}

}  // namespace

RunState::RunState(const Program& program, Instance& inst, void* stream)
    : p_(program), inst_(inst), stream_(stream) {
  current_.resize(p_.var_slots_.size());
  dirty_.assign(p_.var_slots_.size(), 0);
}

void* RunState::workspace(size_t bytes) {
  const size_t b = align_up(std::max<size_t>(bytes, 1));
  const size_t need = ws_used_ + b;
  size_t seen = p_.scratch_need_.load();
  while (need > seen && !p_.scratch_need_.compare_exchange_weak(seen, need)) {
  }
  if (need <= inst_.scratch_bytes) {
    void* q = static_cast<char*>(inst_.scratch.get()) + ws_used_;
    ws_used_ = need;
    return q;
  }
  // Beyond the arena's scratch region (a first run: the region is sized from what earlier runs
  // asked for): one block, reused by the later kernels of the run (each kernel's scratch starts at
  // 0) and replaced by a larger one when a kernel needs more, so that a first run does not
  // allocate device memory for each kernel (it did: ~0.1 ms a kernel on CUDA).
  if (overflow.empty() || need > overflow_bytes) {
    phases::Scope timed("run_scratch_alloc");
    overflow_bytes = std::max(need, overflow_bytes * 2);
    overflow.push_back(p_.backend_.allocate(overflow_bytes));
  }
  void* q = static_cast<char*>(overflow.back().get()) + ws_used_;
  ws_used_ = need;
  return q;
}

backends::DeviceErrorSlot RunState::device_error(backends::DeviceErrorFormatter describe) {
  if (inst_.record == nullptr) {
    fail(ErrorCode::internal, p_.device_.to_string(), "a kernel reported a device check on a device without a record");
  }
  formatters.push_back(std::move(describe));
  return {inst_.record, static_cast<unsigned long long>(formatters.size())};
}

Device RunState::device() const { return p_.device_; }

const TensorData& RunState::start_value(int slot) {
  const int i = slot < static_cast<int>(p_.var_index_.size()) ? p_.var_index_[slot] : -1;
  TG_CHECK_INTERNAL(i >= 0 && static_cast<size_t>(i) < inst_.var_buffers.size(), "variable outside the program");
  return inst_.var_buffers[static_cast<size_t>(i)];
}

const TensorData& RunState::current_value(int slot) {
  const int i = p_.var_index_[slot];
  return dirty_[i] ? current_[i] : start_value(slot);
}

void RunState::assign(int slot, TensorData value) {
  const TensorData& buffer = start_value(slot);
  if (value.nbytes() != buffer.nbytes() || value.dtype() != buffer.dtype()) {
    fail(ErrorCode::shape_mismatch, "assign_variable", "value {} does not match variable {}", value.type().to_string(),
         buffer.type().to_string());
  }
  const int i = p_.var_index_[slot];
  current_[i] = std::move(value);
  dirty_[i] = 1;
}

const TensorData* RunState::host_value(ir::ValueRef v) const {
  if (v.index != 0) return nullptr;
  auto it = host_feeds_.find(v.node);
  return it == host_feeds_.end() ? nullptr : &it->second;
}

TensorData RunState::to_host(const TensorData& t) {
  if (t.device().is_cpu()) return t;
  TensorData h(t.shape(), t.dtype(), Device::cpu());
  p_.backend_.copy(h.storage_ptr(), Device::cpu(), t.storage_ptr(), t.device(), t.nbytes(), stream_);
  stats::add(Counter::host_waits);
  return h;
}

void RunState::enqueue(std::span<const TensorData> feeds) {
  const backends::Backend& b = p_.backend_;
  profile_ = env::profile() && p_.runs_.fetch_add(1) > 0;
  fresh_ = true;
  inst_.result_buffers.resize(p_.plan_->targets.size());
  if (inst_.record) b.fill_zero(inst_.record, sizeof(backends::DeviceErrorRecord), stream_);
  std::vector<TensorData> bound(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const TensorData& f = feeds[i];
    const TensorData& slot = inst_.input_slots[i];
    if (f.device() == p_.device_) {
      bound[i] = f;  // read in place
    } else if (!slot.empty()) {
      b.copy(const_cast<void*>(slot.storage_ptr()), p_.device_, f.storage_ptr(), f.device(), f.nbytes(), stream_);
      stats::add(Counter::input_copy_bytes, static_cast<int64_t>(f.nbytes()));
      bound[i] = slot;
    } else {
      bound[i] = f.to(p_.device_);
    }
    // Small host feeds keep a host copy for control flow that branches on them (no device read).
    if (f.device().is_cpu() && !p_.device_.is_cpu() && f.num_elements() <= 64) {
      host_feeds_[p_.plan_->feed_nodes[i]] = f;
    }
  }
  execute(p_.top_, bound, inst_.values, true);
  b.join_side_streams(stream_);  // a collective's result is read only after it
  stage_targets();
  commit();
  if (profile_ && !t_timed.empty()) collect_timed(b, stream_);
}

void RunState::enqueue_recorded(std::span<const TensorData> feeds) {
  const backends::Backend& b = p_.backend_;
  recording_ = true;
  if (inst_.record && !sticky_record_) b.fill_zero(inst_.record, sizeof(backends::DeviceErrorRecord), stream_);
  std::vector<TensorData> bound = inst_.input_slots;
  const ir::Graph& g = *p_.plan_->graph;
  inst_.recorded_feeds.assign(bound.size(), nullptr);
  inst_.feed_moved.resize(bound.size(), 0);
  for (size_t i = 0; i < bound.size(); ++i) {
    if (bound[i].empty()) {  // an empty feed: no slot
      const TensorType& t = g.node(p_.plan_->feed_nodes[i]).outputs[0];
      bound[i] = TensorData(t.shape, t.dtype, p_.device_);
    } else if (i < feeds.size() && feeds[i].device() == p_.device_ && !inst_.feed_moved[i]) {
      // Read in place, as an interpreted run does (a feed is never written: the memory plan
      // computes nothing in place over it); replays check that it comes at the same address.
      bound[i] = feeds[i];
      inst_.recorded_feeds[i] = feeds[i].storage_ptr();
    }
  }
  execute(p_.top_, bound, inst_.values, true);
  b.join_side_streams(stream_);  // a collective's result is read only after it
  stage_targets();
  commit();
  // The instance keeps no reference to the result buffers the replays write (the targets'
  // values and views of them): Program::run sees when the caller has released them.
  const auto& targets = p_.plan_->targets;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!inst_.recorded_results[i]) continue;
    // Views of it too: a slice of a block starts inside the buffer (ops::slice_view_offset).
    const auto* buffer = static_cast<const char*>(inst_.result_buffers[i].storage_ptr());
    const char* end = buffer + inst_.result_buffers[i].nbytes();
    for (const auto& t : targets) {
      TensorData& v = inst_.values[t.node][t.index];
      const auto* q = static_cast<const char*>(v.storage_ptr());
      if (!v.empty() && q >= buffer && (q < end || q == buffer)) v = TensorData();
    }
  }
}

void RunState::execute(const GraphPlan& plan, std::span<const TensorData> feeds,
                       std::vector<std::vector<TensorData>>& values, bool top) {
  for (size_t step = 0; step < plan.schedule.size(); ++step) {
    run_step(plan, step, values, feeds, top);
    for (const auto& v : plan.release_after[step]) values[v.node][v.index] = TensorData();
  }
  // The last step's inputs go too (clear() keeps the capacity): they may be a result buffer
  // (rows = slice(a) with a a target), which would then look held by the caller at the next run
  // (Program::run records again, result_buffer() allocates a new one).
  inst_.inputs_scratch.clear();
}

void RunState::run_step(const GraphPlan& plan, size_t step, std::vector<std::vector<TensorData>>& values,
                        std::span<const TensorData> feeds, bool top) {
  using K = ir::OpKind;
  const ir::Node& node = plan.graph->node(plan.schedule[step]);
  std::vector<TensorData>& outs = values[node.id];
  const auto slot = [&] { return std::get<ir::VariableAttrs>(node.attrs).index; };
  switch (node.kind) {
    case K::placeholder: {
      const int f = plan.feed_index[node.id];
      if (f < 0 || f >= static_cast<int>(feeds.size())) {
        fail(ErrorCode::internal, p_.device_.to_string(), "placeholder %{} not fed", node.id);
      }
      outs.assign(1, feeds[f]);
      return;
    }
    case K::variable: outs.assign(1, start_value(slot())); return;
    case K::read_variable: outs.assign(1, current_value(slot())); return;
    case K::assign_variable: {
      const TensorData& v = values[node.inputs[1].node][node.inputs[1].index];
      TensorData staged = v;
      const TensorData* own = top && !inst_.views[node.id].empty() && !inst_.views[node.id][0].empty()
                                  ? &inst_.views[node.id][0]
                                  : nullptr;
      if (own != nullptr || !top) {
        // Copied aside (the commit must not read a buffer another assignment of the run writes).
        staged = own != nullptr ? *own : TensorData(v.shape(), v.dtype(), p_.device_);
        if (staged.nbytes() != v.nbytes()) {
          fail(ErrorCode::shape_mismatch, "assign_variable", "value {} does not match variable {}",
               v.type().to_string(), staged.type().to_string());
        }
        p_.backend_.copy(staged.storage_ptr(), p_.device_, v.storage_ptr(), v.device(), v.nbytes(), stream_);
      }
      assign(slot(), staged);
      outs.assign(1, staged);
      return;
    }
    default: break;
  }
  std::vector<TensorData>& inputs = inst_.inputs_scratch;
  inputs.clear();
  for (const auto& v : node.inputs) inputs.push_back(values[v.node][v.index]);
  if (!node.regions.empty()) {
    // Its own copy: the regions' steps reuse the scratch vector.
    const std::vector<TensorData> args = inputs;
    outs.assign(node.outputs.size(), TensorData());
    control_graph_ = plan.graph;
    run_control(node, args, outs);
    return;
  }
  const backends::Kernel kernel = plan.kernels[step];
  if (kernel == nullptr) {
    fail(ErrorCode::unsupported, ir::op_name(node.kind), "no kernel on {}", p_.device_.to_string());
  }
  if (plan.dynamic[step]) {
    // Shapes known only now: inferred for the actual inputs; the kernel sees a node with them.
    std::vector<TensorType> types;
    for (const TensorData& t : inputs) types.push_back(t.type());
    ir::Node concrete = node;
    concrete.outputs = ops::infer_types(node, types);
    outs.clear();
    if (writes_planned_outputs(concrete)) {
      for (const TensorType& t : concrete.outputs) outs.emplace_back(t.shape, t.dtype, p_.device_);
    } else {
      outs.resize(concrete.outputs.size());
    }
    call_kernel(concrete, kernel, inputs, outs);
    return;
  }
  if (!writes_planned_outputs(node)) {
    outs.assign(node.outputs.size(), TensorData());  // the kernel hands out a stored value or a view
  } else if (top) {
    outs = inst_.views[node.id];
    for (size_t i = 0; i < outs.size(); ++i) {
      // A result of a walking run: written straight into the buffer handed to the caller. A
      // recording writes it into the buffer prepare_recorded_results() set aside for replays.
      if (fresh(node, i)) {
        const auto t = static_cast<size_t>(p_.fresh_target_[node.id][i]);
        outs[i] = recording_ ? inst_.result_buffers[t] : result_buffer(t, node.outputs[i]);
      }
      if (outs[i].empty()) outs[i] = TensorData(node.outputs[i].shape, node.outputs[i].dtype, p_.device_);
      // A recorded run writes this value straight into its variable's buffer (plan_direct_writes).
      if (recording_ && p_.direct_[node.id][i] >= 0) {
        outs[i] = inst_.var_buffers[static_cast<size_t>(p_.direct_[node.id][i])];
        guard_ = true;
      }
    }
  } else {
    outs.clear();
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const TensorType& t = node.outputs[i];
      TensorData out;
      if (plan.graph == dest_graph_) {
        for (const auto& [ref, buffer] : dest_) {
          if (ref.node == node.id && ref.index == static_cast<int>(i) && buffer.shape() == t.shape && buffer.dtype() == t.dtype) out = buffer;
        }
      }
      outs.push_back(out.empty() ? TensorData(t.shape, t.dtype, p_.device_) : std::move(out));
    }
  }
  call_kernel(node, kernel, inputs, outs);
  guard_ = false;
  if (top && writes_planned_outputs(node)) {
    // A kernel may put an output elsewhere (fresh memory), never over another arena value.
    const char* lo = static_cast<const char*>(inst_.arena.get());
    const char* hi = lo + p_.memory_.arena_bytes;
    for (size_t i = 0; i < outs.size(); ++i) {
      const auto* q = static_cast<const char*>(outs[i].storage_ptr());
      const TensorData& planned = inst_.views[node.id][i];
      if (q != planned.storage_ptr() && q >= lo && q < hi && !(recording_ && p_.direct_[node.id][i] >= 0)) {
        fail(ErrorCode::internal, ir::op_name(node.kind), "the kernel returned a view of another value of the arena");
      }
    }
  }
}

void RunState::call_kernel(const ir::Node& node, backends::Kernel kernel, std::span<const TensorData> inputs,
                           std::vector<TensorData>& outs) {
  ws_used_ = 0;
  backends::KernelContext ctx{node, inputs, outs, p_.device_, p_.plan_->precision, this};
  ctx.deterministic = p_.plan_->deterministic;
  ctx.first_run_kernels = p_.plan_->first_run_kernels;
  const backends::Backend& b = p_.backend_;
  if (profile_) {
    void* start = b.record_event(stream_);
    if (start != nullptr) {
      kernel(ctx);
      void* end = b.record_event(stream_);
      t_timed.push_back({profile_row(node, inputs, outs), bytes_of(inputs, outs), start, end});
      return;
    }
    b.synchronize(stream_);
    auto t0 = std::chrono::steady_clock::now();
    kernel(ctx);
    b.synchronize(stream_);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Profiler::get().add(p_.device_.to_string(), profile_row(node, inputs, outs), secs, bytes_of(inputs, outs));
    return;
  }
  if (env::trace()) {
    // One line per node before it runs, then a wait for the device: a kernel that fails or never
    // finishes is the last line printed.
    std::string row = fmt::format("[tg trace] {} %{} {}", p_.device_.to_string(), node.id, ir::op_name(node.kind));
    for (size_t i = 0; i < inputs.size(); ++i) row += (i ? ", " : " ") + inputs[i].type().to_string();
    std::fprintf(stderr, "%s\n", row.c_str());
    std::fflush(stderr);
    kernel(ctx);
    b.synchronize(stream_);
    return;
  }
  // TG_PHASES=2: each step is an event of the timeline, named by its op (a literal of the op table).
  phases::Scope step_time(phases::timeline() ? ir::op_name(node.kind).data() : nullptr);
  kernel(ctx);
}

}  // namespace tg::runtime
