// Vector-Jacobian rules of the control family. if_else differentiates as an if_else on the same
// predicate whose branches are the vector-Jacobian products of the forward branches, so only the
// taken branch contributes. Loops: control_loops.cpp.
#include "autodiff/rules/control.h"

#include "core/error_util.h"

namespace tg::autodiff {

std::vector<Tensor> region_params(const ir::Region& region) {
  std::vector<Tensor> out;
  for (int p : region.params) out.emplace_back(region.body, p, 0);
  return out;
}

std::vector<ir::ValueRef> refs_of(const std::vector<Tensor>& ts) {
  std::vector<ir::ValueRef> out;
  for (const Tensor& t : ts) out.push_back({t.node_id(), t.index()});
  return out;
}

ir::Region vjp_region(const ir::Region& fwd, const std::vector<size_t>& results,
                      const std::vector<size_t>& params) {
  ir::Region r;
  r.body = std::make_shared<ir::Graph>(*fwd.body);  // a copy: the forward body stays as it is
  r.params = fwd.params;
  r.results.clear();
  std::vector<Tensor> ys, cts, xs;
  for (size_t i : results) {
    ys.emplace_back(r.body, fwd.results.at(i).node, fwd.results.at(i).index);
    int ct = ir::add_region_param(r, ys.back().type(), fmt::format("cotangent{}", i));
    cts.emplace_back(r.body, ct, 0);
  }
  for (size_t p : params) xs.emplace_back(r.body, fwd.params.at(p), 0);
  r.results = refs_of(vjp(ys, xs, cts));
  ir::prune_region(r, /*keep_side_effects=*/false);
  return r;
}

namespace {

// if_else(pred, captures...): the gradient is if_else(pred, captures..., cotangents...) whose
// branches compute the cotangents of the floating captures through each branch.
void if_else_rule(VjpContext& c) {
  std::vector<size_t> results, params;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    if (c.cotangents[k].valid() && is_floating(c.outputs[k].dtype())) results.push_back(k);
  }
  for (size_t p = 0; p + 1 < c.inputs.size(); ++p) {
    if (is_floating(c.inputs[p + 1].dtype())) params.push_back(p);
  }
  if (results.empty() || params.empty()) return;
  std::vector<ir::Region> regions = {vjp_region(c.node.regions[0], results, params),
                                     vjp_region(c.node.regions[1], results, params)};
  std::vector<Tensor> inputs = c.inputs;
  for (size_t k : results) inputs.push_back(c.cotangents[k]);
  std::vector<Tensor> grads =
      ops::make_control_op(ir::OpKind::if_else, inputs, ir::NoAttrs{}, std::move(regions));
  for (size_t j = 0; j < params.size(); ++j) c.input_cotangents[params[j] + 1] = grads[j];
}

}  // namespace

void register_control_rules(RuleTable& t) {
  t.set(ir::OpKind::if_else, if_else_rule);
  t.set(ir::OpKind::for_loop, for_loop_rule);
  t.set(ir::OpKind::while_loop, while_loop_rule);
}

}  // namespace tg::autodiff
