#include "ops/control_trace.h"

#include <algorithm>

#include "core/error_util.h"
#include "ir/regions.h"

namespace tg::ops {

BlockTracer::BlockTracer(std::shared_ptr<ir::Graph> graph, std::string_view op)
    : g_(std::move(graph)), op_(op), start_(g_->size()) {}

BlockTracer::~BlockTracer() {
  if (!done_) reset();
}

void BlockTracer::reset() {
  auto& nodes = g_->nodes();
  if (static_cast<int>(nodes.size()) > start_) nodes.erase(nodes.begin() + start_, nodes.end());
  blocks_.clear();
}

std::vector<TensorType> BlockTracer::trace(std::string name,
                                           const std::vector<TensorType>& param_types,
                                           const std::vector<std::string>& param_names,
                                           const Block& block) {
  Block_ b;
  b.name = std::move(name);
  b.begin = g_->size();
  std::vector<Tensor> params;
  for (size_t i = 0; i < param_types.size(); ++i) {
    int id = g_->add_node(ir::OpKind::placeholder, {}, ir::NoAttrs{}, {param_types[i]},
                          param_names.at(i));
    g_->node(id).control_inputs.clear();  // scopes apply to the control-flow node instead
    b.params.push_back(id);
    params.emplace_back(g_, id, 0);
  }
  if (!block) fail(ErrorCode::invalid_argument, op_, "{} is empty (not callable)", b.name);
  std::vector<Tensor> results = block(params);
  std::vector<TensorType> types;
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& r = results[i];
    if (!r.valid())
      fail(ErrorCode::invalid_argument, op_, "{} returns an empty Tensor (result {})", b.name, i);
    if (r.graph_impl() != g_) {
      fail(ErrorCode::invalid_argument, op_, "{} returns a tensor of another graph (result {})",
           b.name, i);
    }
    if (r.node_id() < 0 || r.node_id() >= g_->size() || r.index() < 0 ||
        r.index() >= static_cast<int>(g_->node(r.node_id()).outputs.size())) {
      fail(ErrorCode::invalid_argument, op_,
           "{} result {} refers to %{}:{}, which is not in the graph", b.name, i, r.node_id(),
           r.index());
    }
    b.results.push_back({r.node_id(), r.index()});
    types.push_back(r.type());
  }
  b.end = g_->size();
  blocks_.push_back(std::move(b));
  return types;
}

const BlockTracer::Block_* BlockTracer::block_of(int node) const {
  for (const Block_& b : blocks_) {
    if (node >= b.begin && node < b.end) return &b;
  }
  return nullptr;
}

void BlockTracer::collect_captures(Traced& t) const {
  auto note = [&](ir::ValueRef v) {
    if (v.node < start_ && std::find(t.captures.begin(), t.captures.end(), v) == t.captures.end()) {
      t.captures.push_back(v);
    }
  };
  for (const Block_& b : blocks_) {
    for (int id = b.begin; id < b.end; ++id) {
      for (const ir::ValueRef& in : g_->node(id).inputs) note(in);
    }
    for (const ir::ValueRef& r : b.results) note(r);
  }
}

// Where value `v`, read by node `user` of block `b` (-1: a result), lives in the region body.
ir::ValueRef BlockTracer::map_value(ir::ValueRef v, const Block_& b, const std::vector<int>& remap,
                                    const std::vector<int>& capture_params, const Traced& t,
                                    int user) const {
  if (v.node < start_) {
    auto it = std::find(t.captures.begin(), t.captures.end(), v);
    return {capture_params[static_cast<size_t>(it - t.captures.begin())], 0};
  }
  if (v.node >= b.begin && v.node < b.end)
    return {remap[static_cast<size_t>(v.node - b.begin)], v.index};
  const Block_* other = block_of(v.node);
  std::string what = user < 0 ? "returns" : fmt::format("uses (in %{})", user);
  fail(ErrorCode::invalid_argument, op_,
       "{} {} the tensor %{}:{} built inside {}; pass values between blocks "
       "as results and parameters",
       b.name, what, v.node, v.index, other ? other->name : "another block");
}

ir::Region BlockTracer::extract(const Block_& b, const Traced& t,
                                std::vector<int>& controls) const {
  ir::Region region = ir::empty_region(*g_);
  std::vector<int> remap(static_cast<size_t>(b.end - b.begin), -1);
  for (int p : b.params) {
    const ir::Node& n = g_->node(p);
    remap[static_cast<size_t>(p - b.begin)] = ir::add_region_param(region, n.outputs[0], n.name);
  }
  std::vector<int> capture_params;
  for (size_t i = 0; i < t.captures.size(); ++i) {
    const ir::ValueRef& c = t.captures[i];
    capture_params.push_back(
        ir::add_region_param(region, g_->type(c), fmt::format("capture{}", i)));
  }
  ir::Graph& body = *region.body;
  for (int id = b.begin; id < b.end; ++id) {
    if (std::find(b.params.begin(), b.params.end(), id) != b.params.end()) continue;
    ir::Node n = g_->node(id);
    if (n.kind == ir::OpKind::placeholder) {
      fail(ErrorCode::invalid_argument, op_,
           "{} creates a placeholder ('{}'); create it outside the "
           "block (the block captures it)",
           b.name, n.name);
    }
    for (ir::ValueRef& in : n.inputs) in = map_value(in, b, remap, capture_params, t, id);
    std::vector<int> inner;
    for (int c : n.control_inputs) {
      if (c < start_) {
        if (std::find(controls.begin(), controls.end(), c) == controls.end()) controls.push_back(c);
      } else {
        inner.push_back(map_value({c, 0}, b, remap, capture_params, t, id).node);
      }
    }
    n.control_inputs = std::move(inner);
    n.id = body.size();
    remap[static_cast<size_t>(id - b.begin)] = n.id;
    body.nodes().push_back(std::move(n));
  }
  for (const ir::ValueRef& r : b.results)
    region.results.push_back(map_value(r, b, remap, capture_params, t, -1));
  ir::prune_region(region, /*keep_side_effects=*/true);
  return region;
}

BlockTracer::Traced BlockTracer::finish() {
  Traced t;
  collect_captures(t);
  for (const Block_& b : blocks_) t.regions.push_back(extract(b, t, t.control_inputs));
  reset();
  done_ = true;
  return t;
}

}  // namespace tg::ops
