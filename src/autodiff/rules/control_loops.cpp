// Vector-Jacobian rules of for_loop and while_loop (bounded). The backward pass
//  1. runs the loop once more, stacking the loop values that enter each iteration (a copy of the
//     body without its variable assignments; stacks are [iterations, ...value shape]),
//  2. runs a reverse for_loop that, for i = n-1 down to 0, takes the stacked values of iteration
//     i and applies the body's vector-Jacobian product (recomputing the body's intermediates),
//     carrying the loop values' cotangents and summing the captured values' cotangents.
// A while_loop's iteration is before's passed values fed to after; its last `before` is
// differentiated first. Loop values whose shape changes between iterations are stacked with
// concat and fail at run time when the shapes do not stack.
#include "autodiff/rules/control.h"
#include "core/error_util.h"

namespace tg::autodiff {
namespace {

std::vector<size_t> floating(const std::vector<Tensor>& ts, size_t begin, size_t count) {
  std::vector<size_t> out;
  for (size_t i = 0; i < count; ++i) {
    if (is_floating(ts[begin + i].dtype())) out.push_back(i);
  }
  return out;
}

std::vector<Tensor> slice_of(const std::vector<Tensor>& ts, size_t begin, size_t count) {
  return std::vector<Tensor>(ts.begin() + static_cast<ptrdiff_t>(begin),
                             ts.begin() + static_cast<ptrdiff_t>(begin + count));
}

TensorType stack_type(const TensorType& t) {
  TensorType s = t;
  s.shape.insert(s.shape.begin(), -1);
  return s;
}

// x as a [1, ...x.shape] tensor (dynamic dims allowed).
Tensor lift(const Tensor& x) {
  Shape s = x.shape();
  s.insert(s.begin(), 1);
  return broadcast_to(x, s);
}

// An empty stack [0, ...x.shape] for values like x.
Tensor empty_stack(const Tensor& x) {
  return slice(lift(x), {.begin = {0}, .end = {0}, .axes = {0}});
}

// Inserts parameters of `types` at position `at` of region's parameter list; returns them.
std::vector<Tensor> insert_params(ir::Region& r, size_t at, const std::vector<TensorType>& types,
                                  const std::string& prefix) {
  std::vector<int> ids;
  for (size_t i = 0; i < types.size(); ++i) {
    ids.push_back(ir::add_region_param(r, types[i], fmt::format("{}{}", prefix, i)));
    r.params.pop_back();
  }
  r.params.insert(r.params.begin() + static_cast<ptrdiff_t>(at), ids.begin(), ids.end());
  std::vector<Tensor> out;
  for (int id : ids) out.emplace_back(r.body, id, 0);
  return out;
}

// A copy of `fwd` (no side effects) that also appends each of `values` (indices into its
// parameters) to a stack parameter inserted at `stack_at`; returns the stack parameters'
// tensors (the region's results get the new stacks appended by the caller).
ir::Region stacking_copy(const ir::Region& fwd, const std::vector<TensorType>& value_types,
                         size_t stack_at, std::vector<Tensor>* stacks) {
  ir::Region r;
  r.body = std::make_shared<ir::Graph>(*fwd.body);
  r.params = fwd.params;
  r.results = fwd.results;
  std::vector<TensorType> types;
  for (const TensorType& t : value_types) types.push_back(stack_type(t));
  *stacks = insert_params(r, stack_at, types, "stack");
  return r;
}

// The reverse loop: for j in [0, n): i = n-1-j; values = stacks[:, i]; (d values, d captures) =
// step_vjp(values, captures, cotangents). Returns the final cotangents of `fc` values, then the
// summed cotangents of the `fm` captures.
std::vector<Tensor> reverse_loop(const Graph& outer, const Tensor& n,
                                 const std::vector<Tensor>& stacks,
                                 const std::vector<Tensor>& captures, const ir::Region& step_vjp,
                                 bool with_index, const std::vector<Tensor>& ct0,
                                 const std::vector<Tensor>& acc0) {
  ir::Region r = ir::empty_region(*outer.impl());
  // Loop value types: the initial cotangents', relaxed to the step's results (dynamic dims).
  std::vector<TensorType> own = {TensorType{{}, DType::i32}};
  std::vector<Tensor> init = ct0;
  init.insert(init.end(), acc0.begin(), acc0.end());
  for (size_t v = 0; v < init.size(); ++v) {
    own.push_back(ops::merge_types(init[v].type(), step_vjp.body->type(step_vjp.results.at(v)),
                                   "gradients", fmt::format("the cotangent of loop value {}", v),
                                   "initially", "in the loop"));
  }
  std::vector<Tensor> captured = stacks;
  captured.insert(captured.end(), captures.begin(), captures.end());
  captured.push_back(n);
  std::vector<TensorType> all = own;
  for (const Tensor& t : captured) all.push_back(t.type());
  std::vector<Tensor> p = insert_params(r, 0, all, "p");
  Tensor j = p[0];
  std::vector<Tensor> ct = slice_of(p, 1, ct0.size()),
                      acc = slice_of(p, 1 + ct0.size(), acc0.size());
  size_t base = own.size();
  Tensor count = p.back().dtype() == DType::i32 ? p.back() : cast(p.back(), DType::i32);
  Tensor i = (count - 1.0) - j;
  std::vector<Tensor> args;
  if (with_index) args.push_back(i);
  for (size_t s = 0; s < stacks.size(); ++s) args.push_back(gather(p[base + s], i));
  for (size_t m = 0; m < captures.size(); ++m) args.push_back(p[base + stacks.size() + m]);
  args.insert(args.end(), ct.begin(), ct.end());
  std::vector<Tensor> d =
      ops::tensors_of(r.body, ops::inline_region(step_vjp, *r.body, refs_of(args)));
  std::vector<Tensor> results = slice_of(d, 0, ct.size());
  for (size_t m = 0; m < acc.size(); ++m) results.push_back(acc[m] + d[ct.size() + m]);
  r.results = refs_of(results);
  std::vector<Tensor> inputs = {n};
  inputs.insert(inputs.end(), ct0.begin(), ct0.end());
  inputs.insert(inputs.end(), acc0.begin(), acc0.end());
  inputs.insert(inputs.end(), captured.begin(), captured.end());
  return ops::make_control_op(ir::OpKind::for_loop, inputs,
                              ir::LoopAttrs{static_cast<int64_t>(ct0.size() + acc0.size()), -1},
                              {std::move(r)});
}

template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<size_t>& idx, size_t offset = 0) {
  std::vector<T> out;
  for (size_t i : idx) out.push_back(v.at(offset + i));
  return out;
}

std::vector<size_t> shifted(const std::vector<size_t>& idx, size_t by) {
  std::vector<size_t> out;
  for (size_t i : idx) out.push_back(i + by);
  return out;
}

std::vector<Tensor> zeros_for(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(zeros_like(t));
  return out;
}

void set_cotangents(VjpContext& c, const std::vector<size_t>& idx, size_t offset,
                    const std::vector<Tensor>& grads, size_t from) {
  for (size_t j = 0; j < idx.size(); ++j) c.input_cotangents[offset + idx[j]] = grads[from + j];
}

std::vector<TensorType> param_types(const ir::Region& r, size_t begin, size_t count) {
  std::vector<TensorType> out;
  for (size_t i = begin; i < begin + count; ++i)
    out.push_back(r.body->node(r.params.at(i)).outputs[0]);
  return out;
}

}  // namespace

// for_loop(n, values k, captures m), body(index, values, captures) -> values.
void for_loop_rule(VjpContext& c) {
  const ir::Region& body = c.node.regions[0];
  size_t k = static_cast<size_t>(std::get<ir::LoopAttrs>(c.node.attrs).num_carried);
  size_t m = c.inputs.size() - 1 - k;
  std::vector<size_t> fc = floating(c.inputs, 1, k), fm = floating(c.inputs, 1 + k, m);
  if (fc.empty()) return;  // no floating loop value: nothing reaches the outputs' cotangents
  std::vector<Tensor> init = slice_of(c.inputs, 1, k), caps = slice_of(c.inputs, 1 + k, m);
  std::vector<TensorType> slots = param_types(body, 1, k);

  // 1. The loop again, stacking the values entering each iteration.
  std::vector<Tensor> stack_params;
  ir::Region saving = stacking_copy(body, slots, 1 + k, &stack_params);
  std::vector<ir::ValueRef> entering;  // the parameters of the loop values (node ids: output 0)
  for (size_t j = 0; j < k; ++j) entering.push_back({saving.params[1 + j], 0});
  std::vector<Tensor> values = ops::tensors_of(saving.body, entering);
  for (size_t j = 0; j < k; ++j) {
    saving.results.push_back(refs_of({concat({stack_params[j], lift(values[j])}, 0)})[0]);
  }
  ir::prune_region(saving, false);
  std::vector<Tensor> inputs = {c.inputs[0]};
  inputs.insert(inputs.end(), init.begin(), init.end());
  for (const Tensor& v : init) inputs.push_back(empty_stack(v));
  inputs.insert(inputs.end(), caps.begin(), caps.end());
  std::vector<Tensor> saved =
      ops::make_control_op(ir::OpKind::for_loop, inputs,
                           ir::LoopAttrs{static_cast<int64_t>(2 * k), -1}, {std::move(saving)});
  std::vector<Tensor> stacks = slice_of(saved, k, k);

  // 2. The body's vector-Jacobian product; 3. the reverse loop.
  std::vector<size_t> wrt = shifted(fc, 1);
  for (size_t p : fm) wrt.push_back(1 + k + p);
  ir::Region step = vjp_region(body, fc, wrt);
  std::vector<Tensor> ct0;
  for (size_t j : fc)
    ct0.push_back(c.cotangents[j].valid() ? c.cotangents[j] : zeros_like(c.outputs[j]));
  std::vector<Tensor> grads = reverse_loop(c.graph, c.inputs[0], stacks, caps, step,
                                           /*with_index=*/true, ct0, zeros_for(pick(caps, fm)));
  set_cotangents(c, fc, 1, grads, 0);
  set_cotangents(c, fm, 1 + k, grads, fc.size());
}

namespace {

// before∘after as one region: params (values k, captures m) -> the next values.
ir::Region while_step(const ir::Node& node, size_t k, size_t m) {
  const ir::Region& before = node.regions[0];
  const ir::Region& after = node.regions[1];
  ir::Region r = ir::empty_region(*before.body);
  std::vector<Tensor> p = insert_params(r, 0, param_types(before, 0, k + m), "p");
  std::vector<ir::ValueRef> b = ops::inline_region(before, *r.body, refs_of(p));
  std::vector<ir::ValueRef> args(b.begin() + 1, b.end());
  for (size_t i = 0; i < m; ++i) args.push_back(refs_of({p[k + i]})[0]);
  r.results = ops::inline_region(after, *r.body, args);
  return r;
}

// The while loop again, stacking the values entering each `before` and counting `after` runs:
// returns (stacks k, count).
std::vector<Tensor> saving_while(const VjpContext& c, size_t k, size_t m, int64_t max_iterations) {
  const ir::Region& before = c.node.regions[0];
  const ir::Region& after = c.node.regions[1];
  std::vector<TensorType> slots = param_types(before, 0, k);
  size_t q = before.results.size() - 1;
  std::vector<Tensor> stacks;
  ir::Region b = stacking_copy(before, slots, k, &stacks);
  Tensor count = insert_params(b, 2 * k, {TensorType{{}, DType::i32}}, "count")[0];
  for (size_t j = 0; j < k; ++j) {
    b.results.push_back(refs_of({concat({stacks[j], lift(Tensor(b.body, b.params[j], 0))}, 0)})[0]);
  }
  b.results.push_back(refs_of({count})[0]);
  ir::prune_region(b, false);

  std::vector<Tensor> a_stacks;
  ir::Region a = stacking_copy(after, slots, q, &a_stacks);
  Tensor a_count = insert_params(a, q + k, {TensorType{{}, DType::i32}}, "count")[0];
  std::vector<Tensor> extra = a_stacks;
  extra.push_back(a_count + 1.0);
  for (const ir::ValueRef& v : refs_of(extra)) a.results.push_back(v);
  ir::prune_region(a, false);

  std::vector<Tensor> init = slice_of(c.inputs, 0, k);
  std::vector<Tensor> inputs = init;
  for (const Tensor& v : init) inputs.push_back(empty_stack(v));
  Graph outer = c.graph;
  inputs.push_back(outer.constant(0.0, DType::i32));
  for (size_t i = 0; i < m; ++i) inputs.push_back(c.inputs[k + i]);
  std::vector<Tensor> out = ops::make_control_op(
      ir::OpKind::while_loop, inputs,
      ir::LoopAttrs{static_cast<int64_t>(2 * k + 1), max_iterations}, {std::move(b), std::move(a)});
  return slice_of(out, q, k + 1);
}

}  // namespace

// while_loop(values k, captures m) with before(values, captures) -> (cond, passed q) and
// after(passed, captures) -> values.
void while_loop_rule(VjpContext& c) {
  const ir::LoopAttrs& attrs = std::get<ir::LoopAttrs>(c.node.attrs);
  if (attrs.max_iterations < 0) {
    fail(ErrorCode::unsupported, "gradients",
         "while_loop (node %{}) is not differentiable without a maximum iteration count; build it "
         "with "
         "WhileLoopOptions{{.max_iterations = N}} (it then differentiates like a for_loop)",
         c.node.id);
  }
  size_t k = static_cast<size_t>(attrs.num_carried);
  size_t m = c.inputs.size() - k;
  const ir::Region& before = c.node.regions[0];
  std::vector<size_t> fq;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (c.cotangents[i].valid() && is_floating(c.outputs[i].dtype())) fq.push_back(i);
  }
  std::vector<size_t> fc = floating(c.inputs, 0, k), fm = floating(c.inputs, k, m);
  if (fq.empty() || (fc.empty() && fm.empty())) return;
  std::vector<Tensor> caps = slice_of(c.inputs, k, m);
  std::vector<Tensor> saved = saving_while(c, k, m, attrs.max_iterations);
  std::vector<Tensor> stacks = slice_of(saved, 0, k);
  Tensor count = saved[k];

  // The last `before`, at the final values.
  std::vector<size_t> wrt = fc;
  for (size_t p : fm) wrt.push_back(k + p);
  ir::Region last = vjp_region(before, shifted(fq, 1), wrt);
  std::vector<Tensor> args;
  for (const Tensor& s : stacks) args.push_back(gather(s, count));
  args.insert(args.end(), caps.begin(), caps.end());
  for (size_t i : fq) args.push_back(c.cotangents[i]);
  std::vector<Tensor> d =
      ops::tensors_of(c.graph.impl(), ops::inline_region(last, *c.graph.impl(), refs_of(args)));
  std::vector<Tensor> d_values = slice_of(d, 0, fc.size()),
                      d_caps = slice_of(d, fc.size(), fm.size());
  if (!fc.empty()) {
    ir::Region step = vjp_region(while_step(c.node, k, m), fc, wrt);
    std::vector<Tensor> grads =
        reverse_loop(c.graph, count, stacks, caps, step, /*with_index=*/false, d_values, d_caps);
    d_values = slice_of(grads, 0, fc.size());
    d_caps = slice_of(grads, fc.size(), fm.size());
  }
  set_cotangents(c, fc, 0, d_values, 0);
  set_cotangents(c, fm, k, d_caps, 0);
}

}  // namespace tg::autodiff
