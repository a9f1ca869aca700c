// Control flow recorded into a run's CUDA graph (the control-flow issue): if_else becomes an IF
// node with two bodies, for_loop and while_loop a WHILE node (or, for a fixed trip count, plain
// nodes unrolled into the graph), so a replayed run never waits for the host. A small kernel
// computes each condition from the one-element predicate (or a loop counter) on the device and
// sets the node's condition (Backend::set_condition). Bodies are recorded once, by running the
// regions on the body's capturing stream: the values they make come from the recording's private
// memory pool, so every replay finds them at the same addresses. Loop-carried values live in
// fixed buffers: a body's results are copied into them at the end of each iteration (through
// temporaries when a result is another carried value's buffer), and the variables a body assigns
// are pinned in fixed buffers for the same reason.
//
// Unrolling (TG_LOOP_UNROLL = k, TG_UNROLL_LIMIT, core/env.h): a for loop with a fixed trip
// count n is unrolled into the graph when n times its body's size is small enough, else runs k
// body copies per WHILE iteration (n mod k copies unrolled before it); a while loop whose regions
// have no side effects (no variable assignment, no device check, no nested control flow) and no
// max_iterations runs k iterations speculatively per WHILE iteration, each into its own buffers
// (k above 8 only while k copies of the loop state fit kSpeculationBytes), and one kernel keeps
// the state of the first iteration whose condition is false (Backend::select_state). Extra
// iterations past the exit compute values that are thrown away.
// The speculated iterations' conditions (`before`) run on TG_CONDITION_STREAMS side streams
// beside the next iterations' updates (`after`, which never reads a condition): iteration j's on
// side stream j mod n once its `after` is done; the side streams join before the select kernel.
// Each side stream has a workspace of its own (kernels on different streams may run at once),
// and the recording's pool hands out no block released while the streams run apart. Bodies that
// draw random numbers keep one stream.
#include <algorithm>

#include "core/env.h"
#include "core/error_util.h"
#include "ir/op_info.h"
#include "runtime/run_state.h"

namespace tg::runtime {
namespace {

using backends::ConditionRule;

// The nodes of g that do work (not parameters or constants), with regions counted as their
// regions' nodes: the size of one unrolled copy.
int64_t body_size(const ir::Graph& g) {
  int64_t n = 0;
  for (const ir::Node& node : g.nodes()) {
    if (node.kind == ir::OpKind::placeholder || node.kind == ir::OpKind::constant) continue;
    n++;
    for (const ir::Region& r : node.regions) n += body_size(*r.body);
  }
  return n;
}

void collect_assigned(const ir::Graph& g, std::vector<int>& slots) {
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::OpKind::assign_variable) {
      const int slot = std::get<ir::VariableAttrs>(n.attrs).index;
      if (std::find(slots.begin(), slots.end(), slot) == slots.end()) slots.push_back(slot);
    }
    for (const ir::Region& r : n.regions) collect_assigned(*r.body, slots);
  }
}

// True when running g once more than asked changes nothing observable: no assignment, no check
// that could report an error on the device, no nested control flow (which could run long on the
// thrown-away values).
bool speculable(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (n.kind == ir::OpKind::assign_variable || !n.regions.empty() || may_fail_on_device(n)) return false;
  }
  return true;
}

bool draws_random(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    if (ir::op_info(n.kind).family == ir::OpFamily::random) return true;
  }
  return false;
}

// The node a value's storage comes from (through views of input 0: reshape, stop_gradient, a
// slice of one block; view_input).
const ir::Node& storage_root(const ir::Graph& g, ir::ValueRef v) {
  const ir::Node* n = &g.node(v.node);
  while (view_input(*n) == 0 && !n->inputs.empty()) {
    n = &g.node(n->inputs[0].node);
  }
  return *n;
}

// The parameter index of the region value v's storage root, or -1 when it is not a parameter.
int param_of(const ir::Region& r, ir::ValueRef v) {
  const ir::Node& root = storage_root(*r.body, v);
  for (size_t i = 0; i < r.params.size(); ++i) {
    if (r.params[i] == root.id) return static_cast<int>(i);
  }
  return -1;
}

// A while loop's regions keep their results apart from the other loop values' storage: each
// result `first + v` of r is a new value or parameter v itself (never another parameter, or a
// view of one), and before's condition is no parameter. Then speculated iterations write
// disjoint buffers and the select kernel copies without overlap.
bool results_apart(const ir::Region& r, size_t first, bool condition_first) {
  const auto& results = r.results;
  if (condition_first && !results.empty() && param_of(r, results[0]) >= 0) return false;
  for (size_t i = first; i < results.size(); ++i) {
    const int p = param_of(r, results[i]);
    if (p >= 0 && p != static_cast<int>(i - first)) return false;
    if (p >= 0 && r.body->node(results[i].node).kind != ir::OpKind::placeholder) return false;  // a view
  }
  return true;
}

// The trip count when it is fixed in the graph (a constant or fill), else -1 (and `fixed` false).
bool fixed_trip_count(const ir::Graph& g, ir::ValueRef v, int64_t& n) {
  const ir::Node& src = g.node(v.node);
  if (const auto* c = std::get_if<ir::ConstantAttrs>(&src.attrs)) {
    if (src.kind != ir::OpKind::constant || c->value.num_elements() != 1 || !c->value.device().is_cpu()) return false;
    n = static_cast<int64_t>(c->value.element_as_double(0));
    return true;
  }
  if (const auto* f = std::get_if<ir::FillAttrs>(&src.attrs)) {
    if (src.kind != ir::OpKind::fill) return false;
    n = static_cast<int64_t>(f->value);
    return true;
  }
  return false;
}

// Speculated while iterations each keep their own copy of the loop state until the select
// kernel: beyond 8 of them only while those copies take at most this much device memory.
constexpr size_t kSpeculationBytes = size_t{256} << 20;

// The iterations a WHILE iteration speculates: `asked` (TG_LOOP_UNROLL), lowered towards 8 when
// `asked` copies of the state would take more than kSpeculationBytes.
int speculated_iterations(int asked, std::span<const TensorData> state) {
  if (asked <= 8) return asked;
  size_t bytes = 0;
  for (const TensorData& v : state) bytes += v.nbytes();
  const size_t fit = kSpeculationBytes / std::max<size_t>(bytes, 1);
  return static_cast<int>(std::clamp<size_t>(fit, 8, static_cast<size_t>(asked)));
}

std::vector<TensorData> joined(std::vector<TensorData> own, std::span<const TensorData> captures) {
  own.insert(own.end(), captures.begin(), captures.end());
  return own;
}

bool overlaps(const TensorData& a, const TensorData& b) {
  const auto* p = static_cast<const char*>(a.storage_ptr());
  const auto* q = static_cast<const char*>(b.storage_ptr());
  return a.nbytes() > 0 && b.nbytes() > 0 && p < q + b.nbytes() && q < p + a.nbytes();
}

void require_one_element(const TensorData& t, const char* op, const char* what) {
  if (t.num_elements() != 1) {
    fail(ErrorCode::shape_mismatch, op, "{} must have exactly one element, got {}", what, t.type().to_string());
  }
  if (t.device().is_cpu()) fail(ErrorCode::unsupported, op, "{} is on the host while the run records", what);
}

// The stream the runtime queues on, switched to a conditional node's body for a scope.
struct StreamSwitch {
  std::function<void(void*)> set;
  void* previous;
  StreamSwitch(std::function<void(void*)> s, void* previous_stream, void* body)
      : set(std::move(s)), previous(previous_stream) {
    set(body);
  }
  ~StreamSwitch() { set(previous); }
};

// Side streams of a recording (ControlRecorder::open_stream), closed when it goes out of scope
// (after the conditional node whose body they joined has been recorded).
struct SideStreams {
  const backends::ControlRecorder& b;
  std::vector<void*> streams;
  SideStreams(const backends::ControlRecorder& r, int n) : b(r) {
    for (int i = 0; i < n; ++i) streams.push_back(b.open_stream());
  }
  ~SideStreams() {
    for (void* s : streams) b.close_stream(s);
  }
  SideStreams(const SideStreams&) = delete;
  SideStreams& operator=(const SideStreams&) = delete;
};

// ControlRecorder::hold_pool for a scope.
struct PoolHold {
  const backends::ControlRecorder* b;
  explicit PoolHold(const backends::ControlRecorder* r) : b(r) {
    if (b != nullptr) b->hold_pool(true);
  }
  ~PoolHold() {
    if (b != nullptr) b->hold_pool(false);
  }
  PoolHold(const PoolHold&) = delete;
  PoolHold& operator=(const PoolHold&) = delete;
};

// An instance's workspace switched to another buffer for a scope (a side stream's own).
struct ScratchSwitch {
  Instance& inst;
  std::shared_ptr<void> saved;
  size_t saved_bytes;
  ScratchSwitch(Instance& i, std::shared_ptr<void> scratch, size_t bytes)
      : inst(i), saved(std::move(i.scratch)), saved_bytes(i.scratch_bytes) {
    inst.scratch = std::move(scratch);
    inst.scratch_bytes = inst.scratch ? bytes : 0;
  }
  ~ScratchSwitch() {
    inst.scratch = std::move(saved);
    inst.scratch_bytes = saved_bytes;
  }
  ScratchSwitch(const ScratchSwitch&) = delete;
  ScratchSwitch& operator=(const ScratchSwitch&) = delete;
};

}  // namespace

std::string Program::control_fallback_reason() const {
  if (recorder_ == nullptr) return fmt::format("{} cannot record control flow", device_.to_string());
  for (const auto& [body, plan] : regions_) {
    for (size_t i = 0; i < plan.schedule.size(); ++i) {
      const ir::Node& n = body->node(plan.schedule[i]);
      bool dynamic = plan.dynamic[i] != 0;
      for (const TensorType& t : n.outputs) dynamic = dynamic || !is_static(t.shape);
      if (dynamic) {
        return fmt::format("{} %{} in a region has a shape known only at run time ({}): a value whose shape "
                           "changes per iteration or branch", ir::op_name(n.kind), n.id, n.outputs.empty() ? "" : n.outputs[0].to_string());
      }
    }
  }
  const ir::Graph& g = *plan_->graph;
  for (int id : plan_->schedule) {
    const ir::Node& n = g.node(id);
    if (n.regions.empty()) continue;
    for (const TensorType& t : n.outputs) {
      if (!is_static(t.shape)) {
        return fmt::format("{} %{} gives {}, a shape known only at run time", ir::op_name(n.kind), n.id, t.to_string());
      }
    }
  }
  return {};
}

TensorData RunState::fresh(const TensorType& type) const { return TensorData(type.shape, type.dtype, p_.device_); }

void RunState::copy_values(std::span<const TensorData> dst, std::span<const TensorData> src) {
  TG_CHECK_INTERNAL(dst.size() == src.size(), "copy_values: a source per destination");
  std::vector<size_t> todo;
  for (size_t i = 0; i < dst.size(); ++i) {
    if (src[i].storage_ptr() == dst[i].storage_ptr() || dst[i].nbytes() == 0) continue;
    if (src[i].nbytes() != dst[i].nbytes()) {
      fail(ErrorCode::internal, "control flow", "copy of {} into {}", src[i].type().to_string(), dst[i].type().to_string());
    }
    todo.push_back(i);
  }
  if (todo.empty()) return;
  bool alias = false;
  for (size_t a : todo) {
    for (size_t b : todo) alias = alias || overlaps(src[a], dst[b]);
  }
  std::vector<backends::CommitCopy> copies;
  std::vector<TensorData> temps;
  if (alias) {  // a source is another destination (e.g. values that swap): stage every source
    for (size_t i : todo) {
      temps.push_back(fresh(src[i].type()));
      copies.push_back({const_cast<void*>(temps.back().storage_ptr()), src[i].storage_ptr(), src[i].nbytes()});
    }
    p_.backend_.commit(copies, nullptr, stream_);
    copies.clear();
  }
  for (size_t j = 0; j < todo.size(); ++j) {
    const size_t i = todo[j];
    const void* from = alias ? temps[j].storage_ptr() : src[i].storage_ptr();
    copies.push_back({const_cast<void*>(dst[i].storage_ptr()), from, dst[i].nbytes()});
  }
  p_.backend_.commit(copies, nullptr, stream_);
}

RunState::Pinned RunState::pin_variables(const ir::Node& node) {
  Pinned p;
  for (const ir::Region& r : node.regions) collect_assigned(*r.body, p.slots);
  std::vector<TensorData> now;
  for (int slot : p.slots) {
    const TensorData& buffer = start_value(slot);
    p.buffers.push_back(fresh(buffer.type()));
    now.push_back(current_value(slot));
  }
  copy_values(p.buffers, now);
  for (size_t i = 0; i < p.slots.size(); ++i) assign(p.slots[i], p.buffers[i]);
  return p;
}

void RunState::settle_variables(const Pinned& p) {
  std::vector<TensorData> now;
  for (int slot : p.slots) now.push_back(current_value(slot));
  copy_values(p.buffers, now);
  for (size_t i = 0; i < p.slots.size(); ++i) assign(p.slots[i], p.buffers[i]);
}

void RunState::record_control(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs) {
  switch (node.kind) {
    case ir::OpKind::if_else: record_if(node, inputs, outs); break;
    case ir::OpKind::for_loop: record_for(node, inputs, outs); break;
    case ir::OpKind::while_loop: record_while(node, inputs, outs); break;
    default: fail(ErrorCode::internal, ir::op_name(node.kind), "not a control-flow op");
  }
}

void RunState::record_if(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs) {
  const backends::ControlRecorder& b = *p_.recorder_;
  require_one_element(inputs[0], "if_else", "the predicate");
  const Pinned pinned = pin_variables(node);
  outs.clear();
  for (const TensorType& t : node.outputs) outs.push_back(fresh(t));
  const uint64_t handle = b.conditional_handle(stream_);
  ConditionRule rule;
  rule.value = inputs[0].storage_ptr();
  rule.dtype = inputs[0].dtype();
  b.set_condition(handle, rule, stream_);
  const std::span<const TensorData> args = inputs.subspan(1);
  b.record_conditional(stream_, handle, false, 2, [&](int body, void* s) {
    StreamSwitch on([this](void* x) { stream_ = x; }, stream_, s);
    std::vector<TensorData> results = run_region(node.regions[static_cast<size_t>(body)], args, outs);
    copy_values(outs, results);
    settle_variables(pinned);
  });
}

void RunState::record_for(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs) {
  const backends::ControlRecorder& b = *p_.recorder_;
  const ir::Graph& g = *control_graph_;
  const auto k = static_cast<size_t>(std::get<ir::LoopAttrs>(node.attrs).num_carried);
  const std::span<const TensorData> captures = inputs.subspan(1 + k);
  std::vector<TensorData> values(inputs.begin() + 1, inputs.begin() + 1 + static_cast<ptrdiff_t>(k));
  const ir::Region& region = node.regions[0];
  auto iterate = [&](const TensorData& index, std::vector<TensorData> vals, std::span<const TensorData> dests = {}) {
    vals.insert(vals.begin(), index);
    return run_region(region, joined(std::move(vals), captures), dests);
  };
  // An index scalar per slot of `indices` (16 bytes apart).
  auto index_at = [&](const TensorData& indices, int64_t j) {
    return TensorData::from_external(static_cast<char*>(const_cast<void*>(indices.storage_ptr())) + 16 * j, {},
                                     DType::i32, p_.device_, indices.storage());
  };
  auto index_block = [&](int64_t count) { return fresh(TensorType{{std::max<int64_t>(count, 1) * 4}, DType::i32}); };

  int64_t n = 0;
  const bool fixed = fixed_trip_count(g, node.inputs[0], n);
  if (fixed && n > std::numeric_limits<int32_t>::max()) {
    fail(ErrorCode::out_of_range, "for_loop", "trip count {} does not fit the i32 index", n);
  }
  const int64_t size = std::max<int64_t>(body_size(*region.body), 1);
  if (fixed && n <= 0) {
    outs = std::move(values);
    return;
  }
  if (fixed && n * size <= env::unroll_limit()) {  // unrolled: plain nodes, no copies
    const TensorData indices = index_block(n);
    b.iota_i32(static_cast<int32_t*>(const_cast<void*>(indices.storage_ptr())), n, 0, stream_);
    for (int64_t i = 0; i < n; ++i) values = iterate(index_at(indices, i), std::move(values));
    outs = std::move(values);
    return;
  }
  if (!fixed) require_one_element(inputs[0], "for_loop", "the trip count");
  // Fixed n: `copies` bodies per WHILE iteration, the remainder unrolled first.
  const int64_t copies = fixed ? std::max<int64_t>(1, std::min<int64_t>(env::loop_unroll(), n)) : 1;
  const int64_t rest = fixed ? n % copies : 0;
  if (rest > 0) {
    const TensorData indices = index_block(rest);
    b.iota_i32(static_cast<int32_t*>(const_cast<void*>(indices.storage_ptr())), rest, 0, stream_);
    for (int64_t i = 0; i < rest; ++i) values = iterate(index_at(indices, i), std::move(values));
  }
  // Variables the body assigns live in fixed buffers from here on (the body reads them there).
  const Pinned pinned = pin_variables(node);
  std::vector<TensorData> carried;
  for (const TensorData& v : values) carried.push_back(fresh(v.type()));
  copy_values(carried, values);
  const TensorData counter = fresh(TensorType{{}, DType::i32});
  p_.backend_.fill_zero(const_cast<void*>(counter.storage_ptr()), counter.nbytes(), stream_);
  const TensorData indices = index_block(copies);
  ConditionRule rule;
  rule.kind = ConditionRule::Kind::count;
  rule.counter = static_cast<int32_t*>(const_cast<void*>(counter.storage_ptr()));
  if (fixed) {
    rule.limit = n / copies;  // WHILE iterations
  } else {
    rule.value = inputs[0].storage_ptr();
    rule.dtype = inputs[0].dtype();
    if (rule.dtype == DType::i64) {  // only an i64 count can exceed the i32 index (a checked run reads the record)
      rule.overflow = device_error([](const backends::DeviceErrorRecord& r) {
        return Error(ErrorCode::out_of_range, fmt::format("[for_loop] trip count {} does not fit the i32 index", r.detail[0]));
      });
    }
  }
  const uint64_t handle = b.conditional_handle(stream_);
  b.set_condition(handle, rule, stream_);
  b.record_conditional(stream_, handle, true, 1, [&](int, void* s) {
    StreamSwitch on([this](void* x) { stream_ = x; }, stream_, s);
    ConditionRule next = rule;
    next.increment = true;
    next.indices = static_cast<int32_t*>(const_cast<void*>(indices.storage_ptr()));
    next.index_count = static_cast<int>(copies);
    next.index_base = static_cast<int32_t>(rest);
    b.set_condition(handle, next, stream_);
    // The last of several copies writes its results straight into the fixed buffers (it reads
    // the previous copy's, never them): copy_values then copies only what it could not write.
    std::vector<TensorData> vals = carried;
    for (int64_t j = 0; j < copies; ++j) {
      const bool into = copies > 1 && j + 1 == copies;
      vals = iterate(index_at(indices, j), std::move(vals), into ? std::span<const TensorData>(carried) : std::span<const TensorData>());
    }
    copy_values(carried, vals);
    settle_variables(pinned);
  });
  outs = std::move(carried);
}

void RunState::record_while(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs) {
  const backends::ControlRecorder& b = *p_.recorder_;
  const auto& attrs = std::get<ir::LoopAttrs>(node.attrs);
  const auto k = static_cast<size_t>(attrs.num_carried);
  const std::span<const TensorData> captures = inputs.subspan(k);
  const ir::Region& before = node.regions[0];
  const ir::Region& after = node.regions[1];
  auto run_before = [&](std::vector<TensorData> vals) {
    std::vector<TensorData> r = run_region(before, joined(std::move(vals), captures));
    require_one_element(r[0], "while_loop", "the condition");
    return r;
  };
  auto run_after = [&](std::vector<TensorData> vals, std::span<const TensorData> dests = {}) {
    return run_region(after, joined(std::move(vals), captures), dests);
  };

  std::vector<TensorData> first = run_before(std::vector<TensorData>(inputs.begin(), inputs.begin() + static_cast<ptrdiff_t>(k)));
  const Pinned pinned = pin_variables(node);  // after the first `before`: the body reads them there
  std::vector<TensorData> passed;  // the values `before` passes: fixed buffers, the loop's results
  for (size_t i = 1; i < first.size(); ++i) passed.push_back(fresh(first[i].type()));
  const TensorData counter = fresh(TensorType{{}, DType::i32});
  p_.backend_.fill_zero(const_cast<void*>(counter.storage_ptr()), counter.nbytes(), stream_);
  ConditionRule rule;
  rule.value = first[0].storage_ptr();
  rule.dtype = first[0].dtype();
  rule.counter = static_cast<int32_t*>(const_cast<void*>(counter.storage_ptr()));
  rule.increment = true;
  rule.limit = attrs.max_iterations;
  const uint64_t handle = b.conditional_handle(stream_);
  b.set_condition(handle, rule, stream_);
  copy_values(passed, std::span<const TensorData>(first).subspan(1));
  first.clear();

  const int unroll = speculated_iterations(env::loop_unroll(), passed);
  const bool speculate = unroll > 1 && attrs.max_iterations < 0 && pinned.slots.empty() && speculable(*before.body) &&
                         speculable(*after.body) && passed.size() <= 16 && results_apart(before, 1, true) &&
                         results_apart(after, 0, false);
  const int sides = speculate && !draws_random(*before.body) && !draws_random(*after.body)
                        ? std::min(env::condition_streams(), unroll)
                        : 0;
  const SideStreams side(b, sides);  // outlives the body's recording
  b.record_conditional(stream_, handle, true, 1, [&](int, void* s) {
    StreamSwitch on([this](void* x) { stream_ = x; }, stream_, s);
    if (!speculate) {
      std::vector<TensorData> r = run_before(run_after(passed));
      ConditionRule next = rule;
      next.value = r[0].storage_ptr();
      b.set_condition(handle, next, stream_);
      copy_values(passed, std::span<const TensorData>(r).subspan(1));
      settle_variables(pinned);
      return;
    }
    // `unroll` iterations, each into its own buffers; the select kernel keeps the first whose
    // condition is false (or the last) and decides whether the loop goes on.
    std::vector<std::vector<TensorData>> kept;  // alive until the select kernel is queued
    std::vector<const void*> conds;
    std::vector<backends::StateCopy> state(passed.size());
    for (size_t v = 0; v < passed.size(); ++v) {
      state[v].dst = const_cast<void*>(passed[v].storage_ptr());
      state[v].bytes = passed[v].nbytes();
    }
    // The last iteration writes `after`'s results straight into the fixed buffers where `before`
    // passes them on unchanged: when the loop goes on, the select kernel then copies nothing.
    std::vector<TensorData> last_dests;
    for (size_t v = 0; v < passed.size(); ++v) {
      const bool through = param_of(before, before.results[1 + v]) == static_cast<int>(v) &&
                           before.body->node(before.results[1 + v].node).kind == ir::OpKind::placeholder;
      last_dests.push_back(through ? passed[v] : fresh(passed[v].type()));
    }
    // With side streams: no pool block changes hands until they have joined, and each has a
    // workspace of its own (this stream's `after` kernels use the instance's).
    const PoolHold hold(side.streams.empty() ? nullptr : &b);
    std::vector<std::shared_ptr<void>> side_scratch;
    for (size_t i = 0; i < side.streams.size(); ++i) {
      side_scratch.push_back(inst_.scratch_bytes > 0 ? p_.backend_.allocate(inst_.scratch_bytes) : nullptr);
    }
    std::vector<TensorData> vals = passed;
    for (int j = 0; j < unroll; ++j) {
      std::vector<TensorData> next =
          run_after(vals, j + 1 == unroll ? std::span<const TensorData>(last_dests) : std::span<const TensorData>());
      std::vector<TensorData> r;
      if (side.streams.empty()) {
        r = run_before(std::move(next));
      } else {
        const size_t i = static_cast<size_t>(j) % side.streams.size();
        b.follow(side.streams[i], stream_);
        StreamSwitch on([this](void* x) { stream_ = x; }, stream_, side.streams[i]);
        const ScratchSwitch scratch(inst_, side_scratch[i], inst_.scratch_bytes);
        r = run_before(std::move(next));
      }
      conds.push_back(r[0].storage_ptr());
      vals.assign(r.begin() + 1, r.end());
      for (size_t v = 0; v < passed.size(); ++v) {
        // Speculated values never overlap another loop value's fixed buffer (results_apart).
        for (size_t w = 0; w < passed.size(); ++w) {
          if (w != v && overlaps(vals[v], passed[w])) {
            fail(ErrorCode::internal, "while_loop", "a speculated value overlaps loop value {}", w);
          }
        }
        state[v].src.push_back(vals[v].storage_ptr());
      }
      kept.push_back(std::move(r));
    }
    for (void* x : side.streams) b.follow(stream_, x);  // every side stream ran a condition (sides <= unroll)
    b.select_state(handle, conds, kept[0][0].dtype(), state, stream_);
  });
  outs = std::move(passed);
}

}  // namespace tg::runtime
