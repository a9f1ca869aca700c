// Reverse-mode differentiation over the IR: walks the nodes between xs and ys in reverse build
// order, calling each op's vector-Jacobian rule and summing the cotangents of values read twice.
#include <algorithm>
#include <map>

#include "autodiff/rules.h"
#include "core/error_util.h"
#include "ops/builder.h"
#include "tg/gradients_ready.h"

namespace tg {
namespace autodiff {

const RuleTable& rule_table() {
  static const RuleTable table = [] {
    RuleTable t;
#define TG_CALL_REGISTER_RULES(family) register_##family##_rules(t);
    TG_OP_FAMILIES(TG_CALL_REGISTER_RULES)
#undef TG_CALL_REGISTER_RULES
    return t;
  }();
  return table;
}

Tensor unbroadcast(Tensor grad, const Shape& shape) {
  const Shape& gs = grad.shape();
  if (gs == shape) return grad;
  int64_t lead = static_cast<int64_t>(gs.size()) - static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < static_cast<int64_t>(gs.size()); ++i) {
    if (i < lead) {
      axes.push_back(i);
    } else if (shape[static_cast<size_t>(i - lead)] == 1 && gs[static_cast<size_t>(i)] != 1) {
      axes.push_back(i);
    }
  }
  Tensor r = axes.empty() ? grad : reduce_sum(grad, {.axes = axes, .keep_dims = true});
  if (lead > 0 || r.shape() != shape) {
    Shape target = shape;
    int dynamic = static_cast<int>(std::count(target.begin(), target.end(), -1));
    if (dynamic <= 1) return reshape(r, target);
    // Several dynamic dims: drop only the leading reduced dims (all of size 1 now).
    std::vector<int64_t> lead_axes;
    for (int64_t i = 0; i < lead; ++i) lead_axes.push_back(i);
    return lead_axes.empty() ? r : squeeze(r, lead_axes);
  }
  return r;
}

Tensor zeros_like(Tensor x) {
  Graph g(x.graph_impl());
  if (is_static(x.shape())) return fill(g, x.shape(), 0.0, x.dtype());
  Tensor zero = g.constant(0.0, x.dtype());
  return select(is_nan(x), zero, zero);
}

Tensor ones_like(Tensor x) {
  Graph g(x.graph_impl());
  if (is_static(x.shape())) return fill(g, x.shape(), 1.0, x.dtype());
  Tensor one = g.constant(1.0, x.dtype());
  return select(is_nan(x), one, one);
}

}  // namespace autodiff

namespace {

void check_tensor(const Tensor& t, const std::shared_ptr<ir::Graph>& g, std::string_view what) {
  if (!t.valid()) fail(ErrorCode::invalid_argument, "gradients", "{} is an empty Tensor", what);
  if (t.graph_impl() != g) fail(ErrorCode::invalid_argument, "gradients", "{} belongs to another graph", what);
}

void check_floating(const Tensor& t, std::string_view what) {
  if (!is_floating(t.dtype())) {
    fail(ErrorCode::dtype_mismatch, "gradients",
         "{} is {}: only floating tensors have gradients", what, t.type().to_string());
  }
}

// vjp, calling `ready` (when set) for each x as soon as its cotangent is complete.
std::vector<Tensor> vjp_impl(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                             const std::vector<Tensor>& cotangents, const GradientReady& ready) {
  if (ys.empty()) fail(ErrorCode::invalid_argument, "gradients", "no outputs to differentiate");
  if (cotangents.size() != ys.size()) {
    fail(ErrorCode::invalid_argument, "gradients", "{} outputs but {} cotangents", ys.size(),
         cotangents.size());
  }
  std::shared_ptr<ir::Graph> g = ys[0].graph_impl();
  for (size_t k = 0; k < ys.size(); ++k) {
    check_tensor(ys[k], g, fmt::format("output {}", k));
    check_tensor(cotangents[k], g, fmt::format("cotangent {}", k));
    check_floating(ys[k], fmt::format("output {}", k));
    if (cotangents[k].dtype() != ys[k].dtype()) {
      fail(ErrorCode::dtype_mismatch, "gradients", "cotangent {} is {}, output is {}", k,
           cotangents[k].type().to_string(), ys[k].type().to_string());
    }
    const Shape& cs = cotangents[k].shape();
    const Shape& ysh = ys[k].shape();
    bool ok = cs.size() == ysh.size();
    for (size_t i = 0; ok && i < cs.size(); ++i) ok = cs[i] == ysh[i] || cs[i] == -1 || ysh[i] == -1;
    if (!ok) {
      fail(ErrorCode::shape_mismatch, "gradients", "cotangent {} is {}, output is {}", k,
           cotangents[k].type().to_string(), ys[k].type().to_string());
    }
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    check_tensor(xs[i], g, fmt::format("x {}", i));
    check_floating(xs[i], fmt::format("x {}", i));
  }

  // Nodes that depend on an x (forward) and that a y depends on (backward).
  const int n = g->size();
  std::vector<char> from_x(static_cast<size_t>(n), 0), to_y(static_cast<size_t>(n), 0);
  for (const Tensor& x : xs) from_x[x.node_id()] = 1;
  for (int id = 0; id < n; ++id) {
    if (from_x[id]) continue;
    for (const auto& in : g->node(id).inputs) {
      if (from_x[in.node]) {
        from_x[id] = 1;
        break;
      }
    }
  }
  for (const Tensor& y : ys) to_y[y.node_id()] = 1;
  int top = 0;
  for (const Tensor& y : ys) top = std::max(top, y.node_id());
  for (int id = top; id >= 0; --id) {
    if (!to_y[id]) continue;
    for (const auto& in : g->node(id).inputs) to_y[in.node] = 1;
  }

  std::map<ir::ValueRef, Tensor> ct;
  auto accumulate = [&](ir::ValueRef v, const Tensor& t) {
    auto it = ct.find(v);
    if (it == ct.end()) {
      ct.emplace(v, t);
    } else {
      it->second = add(it->second, t);
    }
  };
  for (size_t k = 0; k < ys.size(); ++k) accumulate({ys[k].node_id(), ys[k].index()}, cotangents[k]);

  // The gradient of x, final once every node after x's has been differentiated.
  auto final_gradient = [&](const Tensor& x) {
    auto it = ct.find({x.node_id(), x.index()});
    return it == ct.end() ? autodiff::zeros_like(x) : it->second;
  };
  // xs by node id, highest first: reported to `ready` as the sweep passes them.
  std::vector<size_t> by_id(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) by_id[i] = i;
  std::stable_sort(by_id.begin(), by_id.end(),
                   [&](size_t a, size_t b) { return xs[a].node_id() > xs[b].node_id(); });
  std::vector<Tensor> reported(xs.size());
  size_t next = 0;
  auto report_down_to = [&](int id) {
    for (; ready && next < by_id.size() && xs[by_id[next]].node_id() >= id; ++next) {
      const size_t i = by_id[next];
      // An x above y's node has no cotangent yet; it stays zero (reported after the sweep).
      if (xs[i].node_id() > top) continue;
      reported[i] = final_gradient(xs[i]);
      ready(i, reported[i]);
    }
  };

  const autodiff::RuleTable& rules = autodiff::rule_table();
  int lowest_x = n;
  for (const Tensor& x : xs) lowest_x = std::min(lowest_x, x.node_id());
  for (int id = top; id > lowest_x; --id) {
    report_down_to(id);
    if (!from_x[id] || !to_y[id]) continue;
    const ir::Node& node = g->node(id);
    if (node.inputs.empty()) continue;
    bool any = false;
    std::vector<Tensor> outs, cots;
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
      outs.emplace_back(g, id, i);
      auto it = ct.find({id, i});
      cots.push_back(it == ct.end() ? Tensor() : it->second);
      any = any || it != ct.end();
    }
    if (!any || !ir::has_trait(node.kind, ir::kDifferentiable)) continue;
    autodiff::VjpRule rule = rules.get(node.kind);
    if (rule == nullptr) {
      fail(ErrorCode::unsupported, "gradients", "op '{}' (node %{}) has no vector-Jacobian rule yet",
           ir::op_name(node.kind), id);
    }
    autodiff::VjpContext ctx{node, {}, outs, cots, {}, Graph(g)};
    for (const auto& in : node.inputs) ctx.inputs.emplace_back(g, in.node, in.index);
    ctx.input_cotangents.resize(node.inputs.size());
    rule(ctx);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Tensor& c = ctx.input_cotangents[i];
      if (!c.valid() || !from_x[node.inputs[i].node] || !is_floating(ctx.inputs[i].dtype())) continue;
      if (c.dtype() != ctx.inputs[i].dtype() || c.rank() != ctx.inputs[i].rank()) {
        fail(ErrorCode::internal, "gradients", "rule of '{}' gave {} for input {} of type {}",
             ir::op_name(node.kind), c.type().to_string(), i, ctx.inputs[i].type().to_string());
      }
      accumulate(node.inputs[i], c);
    }
  }

  std::vector<Tensor> result;
  for (size_t i = 0; i < xs.size(); ++i) result.push_back(reported[i].valid() ? reported[i] : final_gradient(xs[i]));
  for (size_t i = 0; ready && i < xs.size(); ++i) {
    if (!reported[i].valid()) ready(i, result[i]);
  }
  return result;
}

std::vector<Tensor> gradients_impl(Tensor y, const std::vector<Tensor>& xs, const GradientReady& ready) {
  if (!y.valid()) fail(ErrorCode::invalid_argument, "gradients", "y is an empty Tensor");
  check_floating(y, "y");
  Tensor scalar = y.rank() == 0 ? y : reduce_sum(y);
  Graph g(y.graph_impl());
  return vjp_impl({scalar}, xs, {g.constant(1.0, y.dtype())}, ready);
}

}  // namespace

std::vector<Tensor> vjp(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                        const std::vector<Tensor>& cotangents) {
  return vjp_impl(ys, xs, cotangents, nullptr);
}

std::vector<Tensor> gradients(Tensor y, const std::vector<Tensor>& xs) { return gradients_impl(y, xs, nullptr); }

std::vector<Tensor> gradients_as_ready(Tensor y, const std::vector<Tensor>& xs, const GradientReady& ready) {
  return gradients_impl(y, xs, ready);
}

}  // namespace tg
