// The lowering of a Program (program.h, docs/design/0005): the kernel plan of the top level and
// of every region, the static memory plan, which outputs a run writes straight into a
// variable's buffer or the caller's result buffer, and the pool of arenas (Instances) that
// concurrent callers run in. Runs themselves: runtime/executor.cpp and runtime/run_state.cpp.
#include <algorithm>
#include <atomic>
#include <cstdio>

#include "core/env.h"
#include "core/error_util.h"
#include "core/stats.h"
#include "runtime/run_state.h"

namespace tg::runtime {
namespace {

using stats::Counter;

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

Program::~Program() {
  // A deferred device error no run raised (set_deferred_errors): said on stderr, as a destructor
  // cannot raise. Only what the mailboxes hold (no wait for the device here, which may be shutting
  // down): tg::check_device_errors before the end is the way to be sure.
  for (const auto& i : free_) {
    if (!i->deferred_pending || !i->mailbox || i->mailbox->tag == 0) continue;
    const auto& f = i->recorded_formatters;
    const std::string what = i->mailbox->tag <= f.size() ? f[i->mailbox->tag - 1](*i->mailbox).what()
                                                         : std::string("a device check failed");
    std::fprintf(stderr, "[tg] a deferred device error was never raised by a run: %s\n", what.c_str());
  }
}

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
    // Whether `src`'s value is the variable's value from the start of the run, or a view of its
    // buffer (through reshapes, slices of a block: view_input).
    auto start_value = [&](const ir::Node& src) {
      const ir::Node* v = &src;
      const bool view = view_input(src) == 0;
      while (view_input(*v) == 0) v = &g.node(v->inputs[0].node);
      return (v->kind == ir::OpKind::variable && slot_of(*v) == slot) ||
             (v->kind == ir::OpKind::read_variable && slot_of(*v) == slot &&
              (view || step_of[v->id] < static_cast<int>(a)));
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
        if (&n != &producer || !elementwise || g.type(in).shape != producer.outputs[0].shape || view_input(src) == 0) {
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

}  // namespace tg::runtime
