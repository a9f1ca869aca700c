// Control flow: if_else, for_loop, while_loop. The builders trace the C++ blocks into regions
// (ops/control_trace.h); type inference checks the regions against the operands and is re-run
// on copies of the bodies when the input types change (compile time).
#include "ops/control.h"

#include <algorithm>
#include <limits>

#include "ops/builder.h"
#include "ops/control_trace.h"
#include "tg/control_flow.h"

namespace tg {
namespace ops {

TensorType merge_types(const TensorType& a, const TensorType& b, std::string_view op,
                       std::string_view what, std::string_view where_a, std::string_view where_b) {
  if (a.dtype != b.dtype) {
    fail(ErrorCode::dtype_mismatch, op, "{} is {} {} but {} {} (dtypes must agree)", what,
         a.to_string(), where_a, b.to_string(), where_b);
  }
  if (a.rank() != b.rank()) {
    fail(ErrorCode::shape_mismatch, op, "{} is {} {} but {} {} (ranks must agree)", what,
         a.to_string(), where_a, b.to_string(), where_b);
  }
  TensorType m = a;
  for (size_t i = 0; i < m.shape.size(); ++i) {
    if (a.shape[i] != b.shape[i]) m.shape[i] = -1;
  }
  return m;
}

std::vector<Tensor> tensors_of(const std::shared_ptr<ir::Graph>& g,
                               const std::vector<ir::ValueRef>& refs) {
  std::vector<Tensor> out;
  for (const ir::ValueRef& r : refs) out.emplace_back(g, r.node, r.index);
  return out;
}

namespace {

std::vector<TensorType> result_types(const ir::Region& r) {
  std::vector<TensorType> out;
  for (const ir::ValueRef& v : r.results) out.push_back(r.body->type(v));
  return out;
}

std::vector<TensorType> param_types(const ir::Region& r, size_t begin, size_t count) {
  std::vector<TensorType> out;
  for (size_t i = begin; i < begin + count; ++i)
    out.push_back(r.body->node(r.params.at(i)).outputs[0]);
  return out;
}

// True when a value of type `t` may flow where `slot` is expected (dims of -1 accept any size).
bool fits(const TensorType& t, const TensorType& slot) {
  if (t.dtype != slot.dtype || t.rank() != slot.rank()) return false;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (slot.shape[i] >= 0 && t.shape[i] != slot.shape[i]) return false;
  }
  return true;
}

void check_fits(const TensorType& t, const TensorType& slot, std::string_view op,
                std::string_view what, std::string_view where) {
  merge_types(slot, t, op, what, "in the loop", where);  // raises for dtype and rank
  if (!fits(t, slot)) {
    fail(ErrorCode::shape_mismatch, op, "{} is {} {}, which does not fit the loop's {}", what,
         t.to_string(), where, slot.to_string());
  }
}

void check_scalar(const TensorType& t, std::string_view op, std::string_view what) {
  if (t.rank() != 0) {
    fail(ErrorCode::shape_mismatch, op, "{} must be a scalar (rank 0), got {}", what,
         t.to_string());
  }
}

void check_one_element(const TensorType& t, std::string_view op, std::string_view what) {
  for (int64_t d : t.shape) {
    if (d != 1 && d >= 0) {
      fail(ErrorCode::shape_mismatch, op, "{} must have exactly one element (shape [], [1], [1, 1]...), got {}", what,
           t.to_string());
    }
  }
}

void check_trip_count(const TensorType& t) {
  if (!is_integer(t.dtype)) {
    fail(ErrorCode::dtype_mismatch, "for_loop", "n_iterations must be an integer scalar, got {}",
         t.to_string());
  }
  check_scalar(t, "for_loop", "n_iterations");
}

void check_structure(const ir::Node& node, size_t regions, size_t operands,
                     std::span<const TensorType> in) {
  std::string_view op = ir::op_name(node.kind);
  if (node.regions.size() != regions || in.size() < operands) {
    fail(ErrorCode::internal, op, "expects {} regions and >= {} inputs, has {} and {}", regions,
         operands, node.regions.size(), in.size());
  }
  for (const ir::Region& r : node.regions) {
    if (!r.body) fail(ErrorCode::internal, op, "region without a body");
  }
}

// Checks that region `r` has `own` parameters then one per captured value.
void check_params(const ir::Node& node, const ir::Region& r, size_t own, size_t captures) {
  if (r.params.size() != own + captures) {
    fail(ErrorCode::internal, ir::op_name(node.kind),
         "region has {} parameters, expected {} + {} captured", r.params.size(), own, captures);
  }
}

std::vector<TensorType> infer_if_else(const ir::Node& node, std::span<const TensorType> in) {
  check_structure(node, 2, 1, in);
  check_one_element(in[0], "if_else", "predicate");
  for (const ir::Region& r : node.regions) check_params(node, r, 0, in.size() - 1);
  std::vector<TensorType> a = result_types(node.regions[0]), b = result_types(node.regions[1]);
  if (a.empty() || b.empty()) {
    fail(ErrorCode::invalid_argument, "if_else",
         "{} returns no tensors; both blocks must return at least one",
         a.empty() ? "then_block" : "else_block");
  }
  if (a.size() != b.size()) {
    fail(ErrorCode::invalid_argument, "if_else",
         "then_block returns {} tensors, else_block returns {}", a.size(), b.size());
  }
  std::vector<TensorType> out;
  for (size_t i = 0; i < a.size(); ++i) {
    out.push_back(merge_types(a[i], b[i], "if_else", fmt::format("result {}", i), "in then_block",
                              "in else_block"));
  }
  return out;
}

const ir::LoopAttrs& loop_attrs(const ir::Node& node) {
  const auto* a = std::get_if<ir::LoopAttrs>(&node.attrs);
  if (a == nullptr || a->num_carried < 1) {
    fail(ErrorCode::internal, ir::op_name(node.kind), "loop without LoopAttrs or loop values");
  }
  return *a;
}

// The body results (or after results) against the loop value types; `initial` against them too.
void check_loop_values(std::string_view op, std::string_view block,
                       std::span<const TensorType> initial, const std::vector<TensorType>& slots,
                       const std::vector<TensorType>& results) {
  if (results.size() != slots.size()) {
    fail(ErrorCode::invalid_argument, op,
         "{} returns {} values, expected {} (one per initial value)", block, results.size(),
         slots.size());
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    std::string what = fmt::format("value {}", i);
    check_fits(initial[i], slots[i], op, what, "initially");
    check_fits(results[i], slots[i], op, what, fmt::format("returned by {}", block));
  }
}

std::vector<TensorType> infer_for_loop(const ir::Node& node, std::span<const TensorType> in) {
  size_t k = static_cast<size_t>(loop_attrs(node).num_carried);
  check_structure(node, 1, 1 + k, in);
  check_trip_count(in[0]);
  const ir::Region& body = node.regions[0];
  check_params(node, body, 1 + k, in.size() - 1 - k);
  TensorType index = body.body->node(body.params[0]).outputs[0];
  if (index != TensorType{{}, DType::i32}) {
    fail(ErrorCode::internal, "for_loop", "index parameter is {}, expected i32[]",
         index.to_string());
  }
  std::vector<TensorType> slots = param_types(body, 1, k);
  check_loop_values("for_loop", "the body", in.subspan(1, k), slots, result_types(body));
  return slots;
}

std::vector<TensorType> infer_while_loop(const ir::Node& node, std::span<const TensorType> in) {
  const ir::LoopAttrs& attrs = loop_attrs(node);
  size_t k = static_cast<size_t>(attrs.num_carried);
  check_structure(node, 2, k, in);
  if (attrs.max_iterations < -1) {
    fail(ErrorCode::invalid_argument, "while_loop", "max_iterations {} is negative",
         attrs.max_iterations);
  }
  const ir::Region& before = node.regions[0];
  const ir::Region& after = node.regions[1];
  size_t captures = in.size() - k;
  check_params(node, before, k, captures);
  std::vector<TensorType> b = result_types(before);
  if (b.size() < 2) {
    fail(ErrorCode::invalid_argument, "while_loop",
         "before passes no values; it must return the condition and "
         "at least one value");
  }
  check_one_element(b[0], "while_loop", "the condition");
  std::vector<TensorType> passed(b.begin() + 1, b.end());
  check_params(node, after, passed.size(), captures);
  std::vector<TensorType> after_params = param_types(after, 0, passed.size());
  for (size_t i = 0; i < passed.size(); ++i) {
    check_fits(passed[i], after_params[i], "while_loop", fmt::format("passed value {}", i),
               "passed by before");
  }
  std::vector<TensorType> slots = param_types(before, 0, k);
  check_loop_values("while_loop", "after", in.subspan(0, k), slots, result_types(after));
  return passed;
}

// ---- refinement for new input types (compile time) ------------------------------------------

void set_params(ir::Region& r, size_t begin, std::span<const TensorType> types) {
  for (size_t i = 0; i < types.size(); ++i)
    r.body->node(r.params.at(begin + i)).outputs[0] = types[i];
}

void reinfer(ir::Region& r) { infer_graph_types(*r.body); }

std::vector<TensorType> relax(std::string_view op, std::string_view block,
                              const std::vector<TensorType>& slots,
                              const std::vector<TensorType>& results) {
  if (results.size() != slots.size()) {
    fail(ErrorCode::invalid_argument, op,
         "{} returns {} values, expected {} (one per initial value)", block, results.size(),
         slots.size());
  }
  std::vector<TensorType> out;
  for (size_t i = 0; i < slots.size(); ++i) {
    out.push_back(merge_types(slots[i], results[i], op, fmt::format("value {}", i),
                              "entering the loop", fmt::format("returned by {}", block)));
  }
  return out;
}

void refine_if_else(ir::Node& node, std::span<const TensorType> in) {
  check_structure(node, 2, 1, in);
  for (ir::Region& r : node.regions) {
    check_params(node, r, 0, in.size() - 1);
    set_params(r, 0, in.subspan(1));
    reinfer(r);
  }
}

void refine_for_loop(ir::Node& node, std::span<const TensorType> in) {
  size_t k = static_cast<size_t>(loop_attrs(node).num_carried);
  check_structure(node, 1, 1 + k, in);
  ir::Region& body = node.regions[0];
  check_params(node, body, 1 + k, in.size() - 1 - k);
  set_params(body, 1 + k, in.subspan(1 + k));
  std::vector<TensorType> slots(in.begin() + 1, in.begin() + 1 + static_cast<ptrdiff_t>(k));
  for (;;) {
    set_params(body, 1, slots);
    reinfer(body);
    std::vector<TensorType> next = relax("for_loop", "the body", slots, result_types(body));
    if (next == slots) break;
    slots = std::move(next);
  }
}

void refine_while_loop(ir::Node& node, std::span<const TensorType> in) {
  size_t k = static_cast<size_t>(loop_attrs(node).num_carried);
  check_structure(node, 2, k, in);
  ir::Region& before = node.regions[0];
  ir::Region& after = node.regions[1];
  size_t captures = in.size() - k;
  check_params(node, before, k, captures);
  set_params(before, k, in.subspan(k));
  std::vector<TensorType> slots(in.begin(), in.begin() + static_cast<ptrdiff_t>(k));
  for (;;) {
    set_params(before, 0, slots);
    reinfer(before);
    std::vector<TensorType> b = result_types(before);
    if (b.empty()) fail(ErrorCode::invalid_argument, "while_loop", "before returns no condition");
    std::vector<TensorType> passed(b.begin() + 1, b.end());
    check_params(node, after, passed.size(), captures);
    set_params(after, 0, passed);
    set_params(after, passed.size(), in.subspan(k));
    reinfer(after);
    std::vector<TensorType> next = relax("while_loop", "after", slots, result_types(after));
    if (next == slots) break;
    slots = std::move(next);
  }
}

}  // namespace

bool infer_graph_types(ir::Graph& g) {
  bool changed = false;
  for (ir::Node& node : g.nodes()) {
    std::vector<TensorType> in;
    in.reserve(node.inputs.size());
    for (const auto& v : node.inputs) in.push_back(g.type(v));
    // Nodes with regions get copies of their bodies inferred for these input types.
    std::vector<TensorType> out = node.regions.empty() ? infer_types(node, in) : infer_node_types(node, in);
    if (out != node.outputs) {
      node.outputs = std::move(out);
      changed = true;
    }
  }
  return changed;
}

std::vector<TensorType> infer_node_types(ir::Node& node, std::span<const TensorType> inputs) {
  if (!node.regions.empty()) {
    for (ir::Region& r : node.regions) {
      if (r.body) r.body = std::make_shared<ir::Graph>(*r.body);
    }
    switch (node.kind) {
      case ir::OpKind::if_else:
        refine_if_else(node, inputs);
        break;
      case ir::OpKind::for_loop:
        refine_for_loop(node, inputs);
        break;
      case ir::OpKind::while_loop:
        refine_while_loop(node, inputs);
        break;
      default:
        for (ir::Region& r : node.regions) reinfer(r);
    }
  }
  return infer_types(node, inputs);
}

std::vector<Tensor> make_control_op(ir::OpKind kind, const std::vector<Tensor>& inputs,
                                    ir::Attrs attrs, std::vector<ir::Region> regions,
                                    const std::vector<int>& control_inputs) {
  std::string_view op = ir::op_name(kind);
  if (inputs.empty()) fail(ErrorCode::internal, op, "control-flow op without inputs");
  std::shared_ptr<ir::Graph> g = inputs[0].graph_impl();
  ir::Node n;
  n.kind = kind;
  n.attrs = std::move(attrs);
  n.regions = std::move(regions);
  std::vector<TensorType> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) fail(ErrorCode::invalid_argument, op, "input {} is an empty Tensor", i);
    if (inputs[i].graph_impl() != g)
      fail(ErrorCode::invalid_argument, op, "input {} belongs to another graph", i);
    n.inputs.push_back({inputs[i].node_id(), inputs[i].index()});
    types.push_back(inputs[i].type());
  }
  std::vector<TensorType> out = infer_types(n, types);
  int id = g->add_node(kind, std::move(n.inputs), std::move(n.attrs), std::move(out));
  ir::Node& added = g->node(id);
  added.regions = std::move(n.regions);
  for (int c : control_inputs) {
    if (std::find(added.control_inputs.begin(), added.control_inputs.end(), c) ==
        added.control_inputs.end()) {
      added.control_inputs.push_back(c);
    }
  }
  std::vector<Tensor> result;
  for (int i = 0; i < static_cast<int>(added.outputs.size()); ++i) result.emplace_back(g, id, i);
  return result;
}

std::vector<ir::ValueRef> inline_region(const ir::Region& region, ir::Graph& dst,
                                        const std::vector<ir::ValueRef>& args) {
  const ir::Graph& body = *region.body;
  if (args.size() != region.params.size()) {
    fail(ErrorCode::internal, "inline_region", "{} arguments for {} parameters", args.size(),
         region.params.size());
  }
  std::vector<int> param_of(static_cast<size_t>(body.size()), -1),
      new_id(static_cast<size_t>(body.size()), -1);
  for (size_t i = 0; i < region.params.size(); ++i)
    param_of[region.params[i]] = static_cast<int>(i);
  auto map = [&](ir::ValueRef v) {
    int p = param_of[v.node];
    return p >= 0 ? args[static_cast<size_t>(p)] : ir::ValueRef{new_id[v.node], v.index};
  };
  for (const ir::Node& src : body.nodes()) {
    if (param_of[src.id] >= 0) continue;
    if (src.kind == ir::OpKind::placeholder) {
      fail(ErrorCode::internal, "inline_region", "placeholder %{} is not a parameter", src.id);
    }
    ir::Node n = src;
    std::vector<TensorType> old_types, new_types;
    for (ir::ValueRef& in : n.inputs) {
      old_types.push_back(body.type(in));
      in = map(in);
      new_types.push_back(dst.type(in));
    }
    if (new_types != old_types) n.outputs = infer_node_types(n, new_types);
    int id = dst.add_node(n.kind, n.inputs, n.attrs, n.outputs, n.name);
    ir::Node& added = dst.node(id);
    added.regions = std::move(n.regions);
    for (int c : src.control_inputs) added.control_inputs.push_back(map({c, 0}).node);
    new_id[src.id] = id;
  }
  std::vector<ir::ValueRef> results;
  for (const ir::ValueRef& r : region.results) results.push_back(map(r));
  return results;
}

void register_control_ops(OpRegistry& r) {
  r.set(ir::OpKind::if_else, infer_if_else);
  r.set(ir::OpKind::for_loop, infer_for_loop);
  r.set(ir::OpKind::while_loop, infer_while_loop);
}

// ---- builders ---------------------------------------------------------------------------------

namespace {

void check_operand(const Tensor& t, std::string_view op, std::string_view what) {
  if (!t.valid()) fail(ErrorCode::invalid_argument, op, "{} is an empty Tensor", what);
}

std::shared_ptr<ir::Graph> check_values(const std::vector<Tensor>& values,
                                        const std::shared_ptr<ir::Graph>& g, std::string_view op) {
  if (values.empty()) {
    fail(ErrorCode::invalid_argument, op,
         "needs at least one initial value (a control-flow op needs an output "
         "to be used as a target or control dependency)");
  }
  std::shared_ptr<ir::Graph> graph = g;
  for (size_t i = 0; i < values.size(); ++i) {
    check_operand(values[i], op, fmt::format("initial value {}", i));
    if (!graph) graph = values[i].graph_impl();
    if (values[i].graph_impl() != graph) {
      fail(ErrorCode::invalid_argument, op, "initial value {} belongs to another graph", i);
    }
  }
  return graph;
}

std::vector<TensorType> types_of(const std::vector<Tensor>& ts) {
  std::vector<TensorType> out;
  for (const Tensor& t : ts) out.push_back(t.type());
  return out;
}

std::vector<std::string> names(std::string_view prefix, size_t n, size_t first = 0) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(fmt::format("{}{}", prefix, first + i));
  return out;
}

std::vector<Tensor> with_captures(std::vector<Tensor> operands, const std::shared_ptr<ir::Graph>& g,
                                  const std::vector<ir::ValueRef>& captures) {
  for (const Tensor& t : tensors_of(g, captures)) operands.push_back(t);
  return operands;
}

}  // namespace
}  // namespace ops

std::vector<Tensor> if_else(Tensor predicate, const BranchBlock& then_block,
                            const BranchBlock& else_block) {
  ops::check_operand(predicate, "if_else", "predicate");
  ops::check_one_element(predicate.type(), "if_else", "predicate");
  if (!then_block)
    fail(ErrorCode::invalid_argument, "if_else", "then_block is empty (not callable)");
  if (!else_block)
    fail(ErrorCode::invalid_argument, "if_else", "else_block is empty (not callable)");
  std::shared_ptr<ir::Graph> g = predicate.graph_impl();
  ops::BlockTracer tracer(g, "if_else");
  tracer.trace("then_block", {}, {}, [&](const std::vector<Tensor>&) { return then_block(); });
  tracer.trace("else_block", {}, {}, [&](const std::vector<Tensor>&) { return else_block(); });
  ops::BlockTracer::Traced t = tracer.finish();
  return ops::make_control_op(ir::OpKind::if_else, ops::with_captures({predicate}, g, t.captures),
                              ir::NoAttrs{}, std::move(t.regions), t.control_inputs);
}

std::vector<Tensor> for_loop(Tensor n_iterations, const std::vector<Tensor>& initial_values,
                             const ForBody& body) {
  ops::check_operand(n_iterations, "for_loop", "n_iterations");
  ops::check_trip_count(n_iterations.type());
  std::shared_ptr<ir::Graph> g =
      ops::check_values(initial_values, n_iterations.graph_impl(), "for_loop");
  size_t k = initial_values.size();
  std::vector<TensorType> slots = ops::types_of(initial_values);
  std::vector<std::string> param_names = ops::names("value", k);
  param_names.insert(param_names.begin(), "index");
  ops::BlockTracer tracer(g, "for_loop");
  for (;;) {  // traced again while a loop value's shape changes (each pass relaxes a dim to -1)
    tracer.reset();
    std::vector<TensorType> params = slots;
    params.insert(params.begin(), TensorType{{}, DType::i32});
    std::vector<TensorType> results =
        tracer.trace("the body", params, param_names, [&](const std::vector<Tensor>& p) {
          if (!body)
            fail(ErrorCode::invalid_argument, "for_loop", "the body is empty (not callable)");
          return body(p[0], std::span<const Tensor>(p).subspan(1));
        });
    std::vector<TensorType> next = ops::relax("for_loop", "the body", slots, results);
    if (next == slots) break;
    slots = std::move(next);
  }
  ops::BlockTracer::Traced t = tracer.finish();
  std::vector<Tensor> operands = {n_iterations};
  operands.insert(operands.end(), initial_values.begin(), initial_values.end());
  return ops::make_control_op(ir::OpKind::for_loop, ops::with_captures(operands, g, t.captures),
                              ir::LoopAttrs{static_cast<int64_t>(k), -1}, std::move(t.regions),
                              t.control_inputs);
}

std::vector<Tensor> for_loop(int64_t n_iterations, const std::vector<Tensor>& initial_values,
                             const ForBody& body) {
  std::shared_ptr<ir::Graph> g = ops::check_values(initial_values, nullptr, "for_loop");
  if (n_iterations > std::numeric_limits<int32_t>::max()) {
    fail(ErrorCode::out_of_range, "for_loop", "n_iterations {} does not fit the i32 index",
         n_iterations);
  }
  Graph graph(g);
  return for_loop(
      graph.constant(static_cast<double>(std::max<int64_t>(n_iterations, -1)), DType::i32),
      initial_values, body);
}

std::vector<Tensor> while_loop(const std::vector<Tensor>& initial_values,
                               const WhileCondition& before, const WhileBody& after,
                               WhileLoopOptions options) {
  std::shared_ptr<ir::Graph> g = ops::check_values(initial_values, nullptr, "while_loop");
  int64_t max_iterations = options.max_iterations.value_or(-1);
  if (options.max_iterations && *options.max_iterations < 0) {
    fail(ErrorCode::invalid_argument, "while_loop", "max_iterations {} is negative",
         *options.max_iterations);
  }
  size_t k = initial_values.size();
  std::vector<TensorType> slots = ops::types_of(initial_values);
  ops::BlockTracer tracer(g, "while_loop");
  for (;;) {
    tracer.reset();
    std::vector<TensorType> b =
        tracer.trace("before", slots, ops::names("value", k), [&](const std::vector<Tensor>& p) {
          if (!before)
            fail(ErrorCode::invalid_argument, "while_loop", "before is empty (not callable)");
          auto [condition, passed] = before(std::span<const Tensor>(p));
          passed.insert(passed.begin(), condition);
          return passed;
        });
    if (b.size() < 2) {
      fail(ErrorCode::invalid_argument, "while_loop",
           "before passes no values; it must return the condition and "
           "at least one value");
    }
    ops::check_one_element(b[0], "while_loop", "the condition");
    std::vector<TensorType> passed(b.begin() + 1, b.end());
    std::vector<TensorType> a = tracer.trace(
        "after", passed, ops::names("passed", passed.size()), [&](const std::vector<Tensor>& p) {
          if (!after)
            fail(ErrorCode::invalid_argument, "while_loop", "after is empty (not callable)");
          return after(std::span<const Tensor>(p));
        });
    std::vector<TensorType> next = ops::relax("while_loop", "after", slots, a);
    if (next == slots) break;
    slots = std::move(next);
  }
  ops::BlockTracer::Traced t = tracer.finish();
  return ops::make_control_op(ir::OpKind::while_loop,
                              ops::with_captures(initial_values, g, t.captures),
                              ir::LoopAttrs{static_cast<int64_t>(k), max_iterations},
                              std::move(t.regions), t.control_inputs);
}

}  // namespace tg
