// Activation storage in bf16 (CompileOptions::precision bf16, after fusion): torch.autocast and
// JAX's bf16 mixed precision keep activations and their gradients in 16 bits between kernels;
// here a float32 value that one fused program writes and others read would be written and read
// in full width. This pass stores such values in bf16: the writer's program rounds the value
// once (a cast step at its output) and each reader's program widens it as it reads it (a cast
// step at its input). Only values that cross kernels change, so fusion groups, kernel counts and
// the schedule stay as they are; the values seen by the readers are the rounded ones, as under
// torch.autocast. A value qualifies when:
//  - a fused_elementwise writes it as float32 of the program's shape, and the program reads a
//    16-bit value of that many elements (an activation or an activation gradient: derived from a
//    convolution's or matmul's 16-bit result, or from a value this pass stored in bf16: writers
//    are visited in schedule order, so a chain of such programs is demoted along its length);
//  - every reader is a fused_elementwise or fused_reduce (whose program can widen it);
//  - it is not a result or kept value, does not reach a result through elementwise programs,
//    shape ops and reductions (a loss summed from per-element terms stays float32), and does not
//    reach a variable assignment or another side-effect or control op through elementwise
//    programs and shape ops (the optimizer's arithmetic stays float32). A reduction that only
//    feeds the optimizer (a batch-norm gamma's gradient) reads its input rounded, as PyTorch's
//    bf16 batch-norm backward reads its bf16 gradient; its sum is float32.
// Not under f16, whose narrow exponent range would flush small gradients without loss scaling.
#include <algorithm>
#include <map>

#include "passes/passes.h"

namespace tg::passes {
namespace {

bool is_program(const ir::Node& n) {
  return n.kind == ir::OpKind::fused_elementwise || n.kind == ir::OpKind::fused_reduce;
}

/// Values (node, output) that keep float32: results and kept nodes' outputs, values that reach a
/// result through elementwise programs, shape ops and reductions (a loss summed from per-element
/// terms), and values that reach an assignment, a side-effect or a control op through elementwise
/// programs and shape ops. A reduction whose sum only reaches an assignment (a batch-norm
/// gamma's gradient on its way to the optimizer) reads its input rounded, as PyTorch's bf16
/// batch-norm backward reads its bf16 gradient; the sum itself stays float32.
std::vector<std::vector<char>> sinks(const ir::Graph& g, const std::vector<ir::ValueRef>& roots,
                                     const std::vector<int>& root_ops, const std::vector<int>& keep) {
  const int n = g.size();
  std::vector<std::vector<char>> to_sink(static_cast<size_t>(n)), to_result(static_cast<size_t>(n));
  for (const ir::Node& node : g.nodes()) {
    to_sink[node.id].assign(node.outputs.size(), 0);
    to_result[node.id].assign(node.outputs.size(), 0);
  }
  std::vector<char> node_sink(static_cast<size_t>(n), 0);
  for (const ir::ValueRef& r : roots) to_result[r.node][r.index] = 1;
  for (int k : keep) node_sink[k] = 1;
  for (int k : root_ops) node_sink[k] = 1;
  for (int id = n - 1; id >= 0; --id) {  // readers first
    const ir::Node& node = g.node(id);
    const ir::OpFamily f = ir::op_info(node.kind).family;
    if (node_sink[id]) std::fill(to_sink[id].begin(), to_sink[id].end(), 1);  // kept: outputs too
    bool out_sink = false, out_result = false;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      out_sink = out_sink || to_sink[id][k];
      out_result = out_result || to_result[id][k];
    }
    const bool sink = ir::has_trait(node.kind, ir::kSideEffect) || f == ir::OpFamily::variable ||
                      f == ir::OpFamily::control || !node.regions.empty() || node_sink[id];
    const bool elementwise = node.kind == ir::OpKind::fused_elementwise || f == ir::OpFamily::unary ||
                             f == ir::OpFamily::binary || f == ir::OpFamily::ternary ||
                             f == ir::OpFamily::cast || f == ir::OpFamily::shape;
    const bool reduction = node.kind == ir::OpKind::fused_reduce || f == ir::OpFamily::reduce;
    for (const ir::ValueRef& in : node.inputs) {
      if (sink || (elementwise && out_sink)) to_sink[in.node][in.index] = 1;
      if ((elementwise || reduction) && out_result) to_result[in.node][in.index] = 1;
    }
  }
  for (int id = 0; id < n; ++id) {
    for (size_t k = 0; k < to_sink[id].size(); ++k) to_sink[id][k] = to_sink[id][k] || to_result[id][k];
  }
  return to_sink;
}

bool reads_16bit_of_size(const ir::Graph& g, const ir::Node& n, int64_t size) {
  for (const ir::ValueRef& in : n.inputs) {
    const TensorType& t = g.type(in);
    if ((t.dtype == DType::bf16 || t.dtype == DType::f16) && is_static(t.shape) && num_elements(t.shape) == size) {
      return true;
    }
  }
  return false;
}

/// Reader program `r` reads inputs `inputs` (indices) as bf16 now: cast steps widen them first,
/// every later value index moves up by their count.
void widen_inputs(ir::Node& r, const std::vector<int>& inputs) {
  auto& a = std::get<ir::FusedAttrs>(r.attrs);
  const int num_inputs = static_cast<int>(r.inputs.size());
  const int extra = static_cast<int>(inputs.size());
  std::map<int, int> cast_of;
  std::vector<ir::FusedStep> steps;
  for (int m : inputs) {
    cast_of[m] = num_inputs + static_cast<int>(steps.size());
    steps.push_back({ir::OpKind::cast, {m}, DType::f32});
  }
  auto remap = [&](int v) {
    if (v >= num_inputs) return v + extra;
    auto it = cast_of.find(v);
    return it != cast_of.end() ? it->second : v;
  };
  for (ir::FusedStep s : a.steps) {
    for (int& v : s.args) v = remap(v);
    steps.push_back(std::move(s));
  }
  a.steps = std::move(steps);
  for (int& v : a.outputs) v = remap(v);
}

}  // namespace

bool demote_activation_storage(ir::Graph& g, DType low, std::vector<ir::ValueRef>& roots,
                               std::vector<int>& root_ops, std::vector<int>& keep) {
  if (low != DType::bf16) return false;
  const int n = g.size();
  std::vector<std::vector<ir::ValueRef>> readers(static_cast<size_t>(n));  // (reader, input slot)
  for (const ir::Node& node : g.nodes()) {
    for (size_t m = 0; m < node.inputs.size(); ++m) readers[node.inputs[m].node].push_back({node.id, static_cast<int>(m)});
  }
  const std::vector<std::vector<char>> tainted = sinks(g, roots, root_ops, keep);
  std::map<int, std::vector<int>> widened_inputs;  // reader -> its input slots now bf16
  bool changed = false;
  for (ir::Node& node : g.nodes()) {
    if (node.kind != ir::OpKind::fused_elementwise || !node.regions.empty()) continue;
    auto& a = std::get<ir::FusedAttrs>(node.attrs);
    if (!is_static(a.shape) || !reads_16bit_of_size(g, node, num_elements(a.shape))) continue;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      TensorType& t = node.outputs[k];
      if (t.dtype != DType::f32 || t.shape != a.shape || tainted[node.id][k]) continue;
      bool ok = false;  // read at all, by programs only
      for (const ir::ValueRef& r : readers[node.id]) {
        const ir::Node& reader = g.node(r.node);
        if (reader.inputs[r.index].index != static_cast<int>(k)) continue;
        ok = is_program(reader) && reader.regions.empty();
        if (!ok) break;
      }
      if (!ok) continue;
      // The writer rounds: a cast step at the output.
      const int num_inputs = static_cast<int>(node.inputs.size());
      a.steps.push_back({ir::OpKind::cast, {a.outputs[k]}, low});
      a.outputs[k] = num_inputs + static_cast<int>(a.steps.size()) - 1;
      t.dtype = low;
      for (const ir::ValueRef& r : readers[node.id]) {
        if (g.node(r.node).inputs[r.index].index == static_cast<int>(k)) widened_inputs[r.node].push_back(r.index);
      }
      changed = true;
    }
  }
  for (auto& [reader, inputs] : widened_inputs) widen_inputs(g.node(reader), inputs);
  return changed;
}

}  // namespace tg::passes
