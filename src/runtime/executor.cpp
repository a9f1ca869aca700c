// The runtime's execution of a Program (program.h, docs/design/0005): runs walk the schedule on
// the host through the backend's kernels, with every planned value in the caller's arena; on a
// backend that records runs (CUDA), an arena's first run after the program's first completed run
// is recorded (a CUDA graph) and every later run replays it: copy the feeds into their input
// slots, one launch, copy the targets out.
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

size_t align_up(size_t bytes) {
  const auto a = static_cast<size_t>(kArenaAlignment);
  return (bytes + a - 1) / a * a;
}

GraphPlan make_plan(const backends::KernelTable& table, const ir::Graph& g, std::vector<int> schedule,
                    std::vector<std::vector<ir::ValueRef>> release, const std::vector<int>& feeds,
                    std::vector<ir::ValueRef> results) {
  GraphPlan p;
  p.graph = &g;
  p.schedule = std::move(schedule);
  p.release_after = std::move(release);
  p.results = std::move(results);
  for (int id : p.schedule) {
    const ir::Node& n = g.node(id);
    p.kernels.push_back(backends::runs_in_runtime(n.kind) ? nullptr : table.get(n.kind));
    bool dynamic = false;
    for (const TensorType& t : n.outputs) dynamic = dynamic || !is_static(t.shape);
    p.dynamic.push_back(dynamic && n.regions.empty());
  }
  p.feed_index.assign(static_cast<size_t>(g.size()), -1);
  for (size_t i = 0; i < feeds.size(); ++i) p.feed_index[feeds[i]] = static_cast<int>(i);
  return p;
}

// Every variable slot the nodes of g (and of their regions) read or write.
void collect_variables(const ir::Graph& g, std::vector<int>& slots, bool& assigns) {
  for (const ir::Node& n : g.nodes()) {
    if (const auto* v = std::get_if<ir::VariableAttrs>(&n.attrs)) {
      if (std::find(slots.begin(), slots.end(), v->index) == slots.end()) slots.push_back(v->index);
      assigns = assigns || n.kind == ir::OpKind::assign_variable;
    }
    for (const ir::Region& r : n.regions) collect_variables(*r.body, slots, assigns);
  }
}

}  // namespace

bool may_fail_on_device(const ir::Node& n) {
  using K = ir::OpKind;
  auto int_division = [](K k, DType t) {
    return is_integer(t) && (k == K::div || k == K::mod || k == K::floor_mod || k == K::floor_div);
  };
  switch (n.kind) {
    case K::gather:
    case K::gather_nd:
    case K::gather_elements:
    case K::scatter_nd:
    case K::scatter_elements: return true;
    case K::fused_elementwise:
    case K::fused_reduce:
      for (const ir::FusedStep& s : std::get<ir::FusedAttrs>(n.attrs).steps) {
        if (int_division(s.kind, s.dtype)) return true;
      }
      return false;
    default: return !n.outputs.empty() && int_division(n.kind, n.outputs[0].dtype);
  }
}

namespace {

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

// ---------------------------------------------------------------------------------------------
// Program: lowering and the arena pool

Instance::~Instance() {
  if (held_bytes) stats::add(Counter::arena_bytes, -static_cast<int64_t>(held_bytes));
}

SharedArena::~SharedArena() {
  if (bytes) stats::add(Counter::arena_bytes, -static_cast<int64_t>(bytes));
}

GraphState& graph_state(ir::Graph& g) {
  std::shared_ptr<void>& state = g.runtime_state();
  if (!state) state = std::make_shared<GraphState>();
  return *static_cast<GraphState*>(state.get());
}

Program::Program(std::shared_ptr<const PlannedGraph> plan, const backends::Backend& backend, size_t memory_budget,
                 std::shared_ptr<SharedArena> shared)
    : plan_(std::move(plan)), backend_(backend), recorder_(backends::control_recorder(backend.device())),
      device_(backend.device()), budget_(memory_budget),
      shared_(std::move(shared)) {
  const ir::Graph& g = *plan_->graph;
  MemoryPlanOptions options;
  options.input_slots = backend_.can_record();
  options.in_place = [this](const ir::Node& n, int input, const TensorType& type) {
    return backend_.writes_in_place(n, input, type);
  };
  memory_ = plan_memory(g, plan_->schedule, plan_->feed_nodes, plan_->targets, options);
  top_ = make_plan(backend_.kernels(), g, plan_->schedule, memory_.release_after, plan_->feed_nodes, plan_->targets);
  add_region_plans(g);
  collect_variables(g, var_slots_, assigns_);
  for (size_t i = 0; i < var_slots_.size(); ++i) {
    const auto slot = static_cast<size_t>(var_slots_[i]);
    if (var_index_.size() <= slot) var_index_.resize(slot + 1, -1);
    var_index_[slot] = static_cast<int>(i);
  }
  bool dynamic = false;
  for (char d : top_.dynamic) dynamic = dynamic || d;
  recordable_ = backend_.can_record() && env::cuda_graphs_enabled() && !env::profile() && !env::trace() && !dynamic;
  if (recordable_ && !regions_.empty()) {
    const std::string why = control_fallback_reason();
    if (!why.empty()) {
      recordable_ = false;
      stats::add(Counter::control_fallbacks);
      static std::atomic<bool> told{false};
      if (!told.exchange(true)) {
        std::fprintf(stderr, "[tg] control flow runs host-driven (the host reads each predicate and trip count): %s\n",
                     why.c_str());
      }
    }
  }
  direct_.resize(static_cast<size_t>(g.size()));
  for (const ir::Node& n : g.nodes()) direct_[n.id].assign(n.outputs.size(), -1);
  if (recordable_ && regions_.empty()) plan_direct_writes();
  fresh_target_.resize(static_cast<size_t>(g.size()));
  for (const ir::Node& n : g.nodes()) fresh_target_[n.id].assign(n.outputs.size(), -1);
  const std::vector<ir::ValueRef>& targets = plan_->targets;
  for (size_t t = 0; t < targets.size(); ++t) {
    const ir::Node& n = g.node(targets[t].node);
    using K = ir::OpKind;
    const bool bound = n.kind == K::placeholder || n.kind == K::variable || n.kind == K::read_variable ||
                       n.kind == K::assign_variable;  // the run binds these, no kernel writes them
    if (memory_.target_offset[t] == MemoryPlan::kUnplanned || bound || !n.regions.empty() ||
        !writes_planned_outputs(n)) {
      continue;
    }
    bool first = true;
    for (size_t u = 0; u < t; ++u) first = first && !(targets[u] == targets[t]);
    if (first) fresh_target_[n.id][static_cast<size_t>(targets[t].index)] = static_cast<int>(t);
  }
  if (budget_ > 0 && static_cast<size_t>(memory_.arena_bytes) > budget_) {
    fail(ErrorCode::out_of_memory, "compile", "one run's arena needs {} bytes, more than memory_budget_bytes {}",
         memory_.arena_bytes, budget_);
  }
}

Program::~Program() = default;

void Program::add_code(std::vector<backends::CodeObject> code) const {
  std::lock_guard lock(code_mu_);
  for (auto& c : code) {
    bool known = false;
    for (const auto& k : code_) known = known || k.key == c.key;
    if (!known) code_.push_back(std::move(c));
  }
}

std::vector<backends::CodeObject> Program::code_objects() const {
  std::lock_guard lock(code_mu_);
  return code_;
}

// An assignment's value is written by its kernel straight into the variable's buffer (recorded
// runs, where no host error can come after it) when that changes nothing a run can observe:
//  - the value is an output the kernel writes in the arena (not a view), of the variable's type,
//    and the variable is assigned once;
//  - no node that may fail on the device comes at or after that kernel; when some comes before
//    it, the kernel is a fused_elementwise one, which writes nothing when the run's device error
//    record is set (RunServices::write_guard), as the commit would have;
//  - nothing reads the variable's value from the start of the run after that kernel, and the
//    kernel itself reads it only as an elementwise input of the output's shape (each element is
//    read before the same element is written);
//  - that start value is not a result of the run (results are copied out after every kernel).
void Program::plan_direct_writes() {
  const ir::Graph& g = *plan_->graph;
  const std::vector<int>& schedule = plan_->schedule;
  std::vector<int> step_of(static_cast<size_t>(g.size()), -1);
  for (size_t i = 0; i < schedule.size(); ++i) step_of[schedule[i]] = static_cast<int>(i);
  int last_check = -1;
  std::vector<int> assigned(var_index_.size(), 0);
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ir::Node& n = g.node(schedule[i]);
    if (may_fail_on_device(n)) last_check = static_cast<int>(i);
    if (n.kind == ir::OpKind::assign_variable) assigned[std::get<ir::VariableAttrs>(n.attrs).index]++;
  }
  auto slot_of = [](const ir::Node& n) {
    const auto* v = std::get_if<ir::VariableAttrs>(&n.attrs);
    return v != nullptr ? v->index : -1;
  };
  for (size_t a = 0; a < schedule.size(); ++a) {
    const ir::Node& assign = g.node(schedule[a]);
    if (assign.kind != ir::OpKind::assign_variable) continue;
    const int slot = slot_of(assign);
    const ir::ValueRef value = assign.inputs[1];
    const ir::Node& producer = g.node(value.node);
    const int p = step_of[value.node];
    if (assigned[slot] != 1 || p < 0 || p <= last_check || !writes_planned_outputs(producer) ||
        memory_.offset[producer.id][value.index] == MemoryPlan::kUnplanned ||
        producer.outputs[static_cast<size_t>(value.index)] != g.type(assign.inputs[0])) {
      continue;
    }
    const bool elementwise = producer.kind == ir::OpKind::fused_elementwise;
    if (last_check >= 0 && !elementwise) continue;  // only the guarded kernels
    // Whether `src`'s value is the variable's value from the start of the run (a view of its buffer).
    auto start_value = [&](const ir::Node& src) {
      return (src.kind == ir::OpKind::variable && slot_of(src) == slot) ||
             (src.kind == ir::OpKind::read_variable && slot_of(src) == slot && step_of[src.id] < static_cast<int>(a)) ||
             ((src.kind == ir::OpKind::reshape || src.kind == ir::OpKind::stop_gradient) &&
              slot_of(g.node(src.inputs[0].node)) == slot);
    };
    bool ok = true;
    // A result that is the start value is copied out after every kernel (stage_targets): a
    // direct write would return the new value instead (issue 19: ConcurrentAssignments...).
    for (const ir::ValueRef& t : plan_->targets) {
      if (start_value(g.node(t.node))) ok = false;
    }
    for (size_t i = static_cast<size_t>(p); ok && i < schedule.size(); ++i) {
      const ir::Node& n = g.node(schedule[i]);
      if (n.kind == ir::OpKind::read_variable && slot_of(n) == slot && i < a) ok = false;  // reads the start value
      for (const ir::ValueRef& in : n.inputs) {
        const ir::Node& src = g.node(in.node);
        if (!start_value(src) || &n == &assign) continue;
        if (&n != &producer || !elementwise || g.type(in).shape != producer.outputs[0].shape ||
            src.kind == ir::OpKind::reshape || src.kind == ir::OpKind::stop_gradient) {
          ok = false;
        }
      }
    }
    if (ok) direct_[producer.id][static_cast<size_t>(value.index)] = var_index_[slot];
  }
}

void Program::add_region_plans(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    for (const ir::Region& r : n.regions) {
      if (regions_.count(r.body.get())) continue;
      std::vector<int> schedule;
      for (const ir::Node& inner : r.body->nodes()) schedule.push_back(inner.id);
      auto release = plan_releases(*r.body, schedule, r.results);
      regions_.emplace(r.body.get(), make_plan(backend_.kernels(), *r.body, std::move(schedule), std::move(release),
                                               r.params, r.results));
      add_region_plans(*r.body);
    }
  }
}

size_t Program::arena_bytes() const {
  return static_cast<size_t>(memory_.arena_bytes) + align_up(scratch_need_.load());
}

int Program::arena_count() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return instances_;
}

// The views of the planned values and input slots into `memory` (the instance's arena).
void Program::bind_arena(Instance& inst, std::shared_ptr<void> memory) const {
  const ir::Graph& g = *plan_->graph;
  inst.arena = std::move(memory);
  char* base = static_cast<char*>(inst.arena.get());
  inst.views.assign(static_cast<size_t>(g.size()), {});
  for (int id : plan_->schedule) {
    const ir::Node& n = g.node(id);
    auto& views = inst.views[id];
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const int64_t off = memory_.offset[id][i];
      views.push_back(off == MemoryPlan::kUnplanned
                          ? TensorData()
                          : TensorData::from_external(base + off, n.outputs[i].shape, n.outputs[i].dtype, device_,
                                                      inst.arena));
    }
  }
  inst.input_slots.clear();
  for (size_t f = 0; f < plan_->feed_nodes.size(); ++f) {
    const int64_t off = memory_.input_offset.empty() ? MemoryPlan::kUnplanned : memory_.input_offset[f];
    const TensorType& t = g.node(plan_->feed_nodes[f]).outputs[0];
    inst.input_slots.push_back(off == MemoryPlan::kUnplanned
                                   ? TensorData()
                                   : TensorData::from_external(base + off, t.shape, t.dtype, device_, inst.arena));
  }
}

// The caller holds shared_->mu when the program has a shared arena.
std::unique_ptr<Instance> Program::make_instance() const {
  auto inst = std::make_unique<Instance>();
  const ir::Graph& g = *plan_->graph;
  std::shared_ptr<void> memory;
  if (shared_) {
    inst->shared_generation = shared_->generation;
    memory = shared_->memory;
  } else if (memory_.arena_bytes > 0) {
    memory = backend_.allocate(static_cast<size_t>(memory_.arena_bytes));
    inst->held_bytes = static_cast<size_t>(memory_.arena_bytes);
  }
  bind_arena(*inst, std::move(memory));
  inst->values.resize(static_cast<size_t>(g.size()));
  if (!device_.is_cpu()) {
    inst->record_block = backend_.allocate(sizeof(backends::DeviceErrorRecord));
    inst->record = static_cast<backends::DeviceErrorRecord*>(inst->record_block.get());
  }
  if (size_t need = align_up(scratch_need_.load())) {
    inst->scratch = backend_.allocate(need);
    inst->scratch_bytes = need;
  }
  inst->held_bytes += inst->scratch_bytes;
  if (!shared_) stats::add(Counter::arena_allocations);
  stats::add(Counter::arena_bytes, static_cast<int64_t>(inst->held_bytes));
  return inst;
}

std::unique_ptr<Instance> Program::acquire() const {
  std::unique_lock<std::mutex> lock(pool_mu_);
  for (;;) {
    if (!free_.empty()) {
      std::unique_ptr<Instance> inst = std::move(free_.back());
      free_.pop_back();
      return inst;
    }
    // A new arena, unless the budget is held by the others: then wait for one of them.
    if (budget_ == 0 || instances_ == 0 || held_bytes_ + arena_bytes() <= budget_) break;
    pool_cv_.wait(lock);
  }
  const size_t bytes = arena_bytes();
  instances_++;
  held_bytes_ += bytes;
  lock.unlock();
  try {
    return make_instance();
  } catch (...) {
    lock.lock();
    instances_--;
    held_bytes_ -= bytes;
    pool_cv_.notify_one();
    throw;
  }
}

void Program::release(std::unique_ptr<Instance> inst) const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  free_.push_back(std::move(inst));
  pool_cv_.notify_one();
}

// ---------------------------------------------------------------------------------------------
// A run

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
  overflow.push_back(p_.backend_.allocate(b));
  ws_used_ = need;
  return overflow.back().get();
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
  stage_targets();
  commit();
  if (profile_ && !t_timed.empty()) collect_timed(b, stream_);
}

void RunState::enqueue_recorded(std::span<const TensorData> feeds) {
  const backends::Backend& b = p_.backend_;
  recording_ = true;
  if (inst_.record) b.fill_zero(inst_.record, sizeof(backends::DeviceErrorRecord), stream_);
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
  stage_targets();
  commit();
}

void RunState::execute(const GraphPlan& plan, std::span<const TensorData> feeds,
                       std::vector<std::vector<TensorData>>& values, bool top) {
  for (size_t step = 0; step < plan.schedule.size(); ++step) {
    run_step(plan, step, values, feeds, top);
    for (const auto& v : plan.release_after[step]) values[v.node][v.index] = TensorData();
  }
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
      // A result of a walking run: written straight into the buffer handed to the caller.
      if (fresh(node, i)) outs[i] = result_buffer(static_cast<size_t>(p_.fresh_target_[node.id][i]), node.outputs[i]);
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

void RunState::stage_targets() {
  const auto& targets = p_.plan_->targets;
  char* base = static_cast<char*>(inst_.arena.get());
  for (size_t i = 0; i < targets.size(); ++i) {
    const int64_t off = p_.memory_.target_offset[i];
    if (off == MemoryPlan::kUnplanned) continue;
    const TensorData& v = inst_.values[targets[i].node][targets[i].index];
    if (handed_out(i)) continue;  // results() hands out that buffer itself
    if (v.storage_ptr() != base + off) {
      p_.backend_.copy(base + off, p_.device_, v.storage_ptr(), v.device(), v.nbytes(), stream_);
    }
  }
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
      out.push_back(inst_.values[targets[i].node][targets[i].index]);
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

bool RunState::handed_out(size_t target) const {
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

// ---------------------------------------------------------------------------------------------
// Program::run

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
  if (shared_ && inst.shared_generation != shared_->generation) {
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
    if (moved) {
      inst.recorded.reset();
      inst.recorded_formatters.clear();
      inst.recorded_slots.clear();
    }
  }
  if (recordable_ && warmed_.load() && !inst.record_failed && !inst.recorded) {
    RunState rec(*this, inst, nullptr);
    phases::Scope timed("run_record_cuda_graph");
    try {
      inst.recorded = backend_.record([&](void* s) {
        rec.set_stream(s);
        rec.enqueue_recorded(feeds);
      });
      inst.recorded_formatters = std::move(rec.formatters);
      inst.recorded_slots = std::move(rec.recorded_slots);
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
    std::vector<TensorData> out = rs.results();
    rs.check_device_errors(inst.recorded_formatters);
    count_run(rs.wait_ns);
    return out;
  }
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

}  // namespace tg::runtime
