// What a run of a Program hands back and leaves behind (run_state.h, docs/design/0010): the
// targets staged in their arena slots, the assigned variables committed, the results handed
// to the caller (the buffers kernels wrote them into, or copies out of the arena into reused
// result buffers) and the device errors the kernels reported.
#include <chrono>

#include "core/error_util.h"
#include "core/stats.h"
#include "runtime/run_state.h"

namespace tg::runtime {

using stats::Counter;

void RunState::stage_targets() {
  const auto& targets = p_.plan_->targets;
  char* base = static_cast<char*>(inst_.arena.get());
  for (size_t i = 0; i < targets.size(); ++i) {
    const int64_t off = p_.memory_.target_offset[i];
    if (off == MemoryPlan::kUnplanned) {
      // A value whose shape was known only at run time is handed out as it is (results()):
      // control flow may return a value of the arena or a variable's buffer (or a slice view of
      // one), which the commit and later runs overwrite; such a value is copied out first.
      TensorData& v = inst_.values[targets[i].node][targets[i].index];
      if (!v.empty() && !is_static(p_.plan_->graph->type(targets[i]).shape) && in_run_memory(v)) {
        TensorData own(v.shape(), v.dtype(), p_.device_);
        p_.backend_.copy(own.storage_ptr(), p_.device_, v.storage_ptr(), v.device(), v.nbytes(), stream_);
        for (const ir::ValueRef& t : targets) {
          TensorData& same = inst_.values[t.node][t.index];
          if (&same != &v && same.storage_ptr() == v.storage_ptr() && same.type() == v.type()) same = own;
        }
        v = std::move(own);
      }
      continue;
    }
    const TensorData& v = inst_.values[targets[i].node][targets[i].index];
    if (recording_) {
      // Written into its result buffer by the recorded kernel (not a variable's buffer, the
      // direct writes of plan_direct_writes, nor a kernel's memory of its own).
      const ir::ValueRef t = targets[i];
      inst_.recorded_results[i] = p_.fresh_target_[t.node][static_cast<size_t>(t.index)] == static_cast<int>(i) &&
                                  !inst_.result_held[i] && !v.empty() &&
                                  v.storage_ptr() == inst_.result_buffers[i].storage_ptr();
    }
    if (handed_out(i)) continue;  // results() hands out that buffer itself
    if (v.storage_ptr() != base + off) {
      p_.backend_.copy(base + off, p_.device_, v.storage_ptr(), v.device(), v.nbytes(), stream_);
    }
  }
}

bool RunState::in_run_memory(const TensorData& v) const {
  const auto* p = static_cast<const char*>(v.storage_ptr());
  auto inside = [&](const char* lo, size_t bytes) { return bytes > 0 && p < lo + bytes && lo < p + v.nbytes(); };
  if (inside(static_cast<const char*>(inst_.arena.get()), static_cast<size_t>(p_.memory_.arena_bytes))) return true;
  for (const TensorData& b : inst_.var_buffers) {
    if (inside(static_cast<const char*>(b.storage_ptr()), b.nbytes())) return true;
  }
  return false;
}

void RunState::commit() {
  std::vector<backends::CommitCopy> copies;
  std::vector<int> slots;
  for (size_t i = 0; i < dirty_.size(); ++i) {
    if (!dirty_[i]) continue;
    const TensorData& dst = inst_.var_buffers[i];
    const TensorData& src = current_[i];
    slots.push_back(p_.var_slots_[i]);
    if (src.storage_ptr() != dst.storage_ptr()) {
      copies.push_back({const_cast<void*>(dst.storage_ptr()), src.storage_ptr(), dst.nbytes()});
    }
  }
  if (!copies.empty()) p_.backend_.commit(copies, inst_.record, stream_);
  if (recording_) {
    recorded_slots = std::move(slots);
  } else if (!slots.empty()) {
    p_.plan_->graph->variables()->written(slots, p_.device_);
  }
}

std::vector<TensorData> RunState::results() {
  const auto& targets = p_.plan_->targets;
  const ir::Graph& g = *p_.plan_->graph;
  char* base = static_cast<char*>(inst_.arena.get());
  std::vector<TensorData> out;
  out.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    const int64_t off = p_.memory_.target_offset[i];
    const TensorType& type = g.type(targets[i]);
    if (off == MemoryPlan::kUnplanned) {
      if (is_static(type.shape)) {
        out.emplace_back(type.shape, type.dtype, p_.device_);  // empty: nothing to copy
      } else {
        out.push_back(inst_.values[targets[i].node][targets[i].index]);  // computed by control flow
      }
      continue;
    }
    if (handed_out(i)) {
      // A replay's: the buffer the recorded kernel writes (the caller released it: Program::run).
      out.push_back(replayed_ ? inst_.result_buffers[i] : inst_.values[targets[i].node][targets[i].index]);
      continue;
    }
    TensorData r = result_buffer(i, type);
    p_.backend_.copy(r.storage_ptr(), p_.device_, base + off, p_.device_, r.nbytes(), stream_);
    stats::add(Counter::result_copy_bytes, static_cast<int64_t>(r.nbytes()));
    out.push_back(std::move(r));
  }
  // The instance keeps no reference to what it handed out: result_buffer() sees when the caller
  // has released a buffer.
  if (fresh_) {
    for (const auto& t : targets) inst_.values[t.node][t.index] = TensorData();
  }
  return out;
}

TensorData RunState::result_buffer(size_t target, const TensorType& type) {
  if (inst_.result_buffers.size() <= target) inst_.result_buffers.resize(p_.plan_->targets.size());
  TensorData& b = inst_.result_buffers[target];
  if (b.empty() || b.storage().use_count() != 1 || b.shape() != type.shape || b.dtype() != type.dtype) {
    b = TensorData(type.shape, type.dtype, p_.device_);
  }
  return b;
}

void RunState::prepare_recorded_results() {
  const auto& targets = p_.plan_->targets;
  const ir::Graph& g = *p_.plan_->graph;
  inst_.result_buffers.resize(targets.size());
  inst_.result_held.resize(targets.size(), 0);
  inst_.recorded_results.assign(targets.size(), 0);
  for (size_t i = 0; i < targets.size(); ++i) {
    const ir::ValueRef t = targets[i];
    if (p_.fresh_target_[t.node][static_cast<size_t>(t.index)] == static_cast<int>(i) && !inst_.result_held[i]) {
      result_buffer(i, g.type(t));
    }
  }
}

bool RunState::handed_out(size_t target) const {
  if (recording_ || replayed_) return target < inst_.recorded_results.size() && inst_.recorded_results[target];
  const ir::ValueRef t = p_.plan_->targets[target];
  if (!fresh_ || p_.fresh_target_[t.node][static_cast<size_t>(t.index)] != static_cast<int>(target)) return false;
  const TensorData& v = inst_.values[t.node][t.index];
  return !v.empty() && target < inst_.result_buffers.size() && v.storage_ptr() == inst_.result_buffers[target].storage_ptr();
}

void RunState::check_device_errors(const std::vector<backends::DeviceErrorFormatter>& f) {
  if (f.empty() || inst_.record == nullptr) return;
  const auto t0 = std::chrono::steady_clock::now();
  const backends::DeviceErrorRecord r = p_.backend_.read_error(inst_.record, stream_);
  wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  if (r.tag == 0) return;
  if (r.tag > f.size()) fail(ErrorCode::internal, p_.device_.to_string(), "device error record with tag {}", r.tag);
  throw f[r.tag - 1](r);
}

}  // namespace tg::runtime
