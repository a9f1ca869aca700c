// Autocast: under CompileOptions::precision bf16 / f16, the tensor-core ops (conv2d and its two
// backward ops, matmul) of float32 operands take 16-bit operands and give a 16-bit result in the
// graph itself, instead of each kernel rounding its operands into scratch buffers and widening its
// result back. The casts this puts around them are ordinary cast nodes, so elementwise fusion
// folds them into the programs next to them: a batch norm reads the convolution's 16-bit output,
// and the relu in front of a convolution writes 16 bits. Like torch.autocast (PyTorch's "CUDA Ops
// that can autocast to float16" list), and DESIGN.md §2 "precision".
//
// Rewrites, in schedule order:
//  - op(x, w) with float32 operands and result -> widen(op(narrow(x), narrow(w))), where
//    narrow/widen are casts to/from the 16-bit dtype. Rounding is the same as the kernels' own
//    (operands rounded, float32 accumulation, result rounded once), so the op's value is unchanged.
//  - narrow(widen(y16)) -> y16 (exact): a tensor-core result read by another one is not re-cast.
//  - A max_pool2d whose result such an op reads runs on the 16-bit value (exact: rounding is
//    monotonic), and so does the max_pool2d_backward of its input (gradient rounded).
//  - Storage demotion: a float32 value that an elementwise op computes and a tensor-core op reads
//    is kept only in 16 bits: its other readers read widen(narrow(value)). This is the one place
//    where values change: those readers see the rounded value, as they do under torch.autocast
//    (where the relu before a convolution runs in bf16 and its output is all there is). Values
//    that are results of the executable, variables, placeholders and non-elementwise outputs keep
//    their float32 value.
// Region bodies are rewritten the same way (on copies).
#include <algorithm>
#include <map>

#include "passes/passes.h"

namespace tg::passes {
namespace {

bool is_tensor_core_op(ir::OpKind k) {
  return k == ir::OpKind::conv2d || k == ir::OpKind::conv2d_backward_data ||
         k == ir::OpKind::conv2d_backward_weights || k == ir::OpKind::matmul;
}

/// Float32 operands and result of known shapes (sizes and symbols), no regions.
bool all_f32(const ir::Graph& g, const ir::Node& n) {
  if (n.outputs.size() != 1 || !n.regions.empty()) return false;
  if (n.outputs[0].dtype != DType::f32 || !is_known(n.outputs[0].shape)) return false;
  for (const ir::ValueRef& in : n.inputs) {
    const TensorType& t = g.type(in);
    if (t.dtype != DType::f32 || !is_known(t.shape)) return false;
  }
  return true;
}

/// The nodes that run in the 16-bit dtype: tensor-core ops of float32 operands; a max_pool2d a
/// rewritten node reads (the maximum of rounded values is the rounded maximum: exact); the
/// max_pool2d_backward of such a pool's input (its gradient rounded, as when torch.autocast runs
/// the pool in bf16).
std::vector<char> low_nodes(const ir::Graph& g) {
  const int n = g.size();
  std::vector<char> low(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  for (const ir::Node& node : g.nodes()) {
    for (const ir::ValueRef& in : node.inputs) readers[in.node].push_back(node.id);
    low[node.id] = is_tensor_core_op(node.kind) && all_f32(g, node);
  }
  for (int id = n - 1; id >= 0; --id) {  // readers first
    const ir::Node& node = g.node(id);
    if (node.kind != ir::OpKind::max_pool2d || !all_f32(g, node)) continue;
    for (int r : readers[id]) low[id] = low[id] || low[r];
  }
  for (const ir::Node& node : g.nodes()) {
    if (node.kind != ir::OpKind::max_pool2d_backward || !all_f32(g, node)) continue;
    const ir::ValueRef x = node.inputs[1];
    for (int r : readers[x.node]) {
      const ir::Node& pool = g.node(r);
      if (pool.kind == ir::OpKind::max_pool2d && low[r] && pool.inputs[0] == x &&
          ir::attrs_to_string(pool.attrs) == ir::attrs_to_string(node.attrs)) {
        low[node.id] = 1;
      }
    }
  }
  return low;
}

bool rewrite(ir::Graph& g, DType low, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
             std::vector<int>& keep) {
  const int n = g.size();
  const std::vector<char> any = low_nodes(g);
  if (std::find(any.begin(), any.end(), 1) == any.end()) return false;

  // Values a rewritten op reads, and which of them are demoted.
  std::map<std::pair<int, int>, bool> wanted;  // (node, index) -> demote
  std::vector<char> pinned(static_cast<size_t>(n), 0);
  for (const ir::ValueRef& r : roots) pinned[r.node] = 1;
  for (int k : keep) pinned[k] = 1;
  std::map<std::pair<int, int>, int> other_readers;  // readers that are not rewritten ops
  for (const ir::Node& node : g.nodes()) {
    for (const ir::ValueRef& in : node.inputs) {
      if (!any[node.id]) ++other_readers[{in.node, in.index}];
    }
    if (!any[node.id]) continue;
    for (const ir::ValueRef& in : node.inputs) {
      const ir::Node& p = g.node(in.node);
      wanted[{in.node, in.index}] = !any[p.id] && !pinned[p.id] && is_fusible_elementwise(p);
    }
  }

  std::deque<ir::Node> out;
  std::vector<int> remap(static_cast<size_t>(n), -1);
  std::map<std::pair<int, int>, ir::ValueRef> wide, narrow;  // old value -> new f32 / 16-bit value
  auto f32_of = [&](ir::ValueRef v) {
    auto it = wide.find({v.node, v.index});
    return it != wide.end() ? it->second : ir::ValueRef{remap[v.node], v.index};
  };
  auto emit_cast = [&](ir::ValueRef src, DType to, const Shape& shape, const std::string& name) {
    ir::Node c;
    c.id = static_cast<int>(out.size());
    c.kind = ir::OpKind::cast;
    c.attrs = ir::CastAttrs{to};
    c.inputs = {src};
    c.outputs = {TensorType{shape, to}};
    c.name = name;
    out.push_back(std::move(c));
    return ir::ValueRef{static_cast<int>(out.size()) - 1, 0};
  };
  for (int id = 0; id < n; ++id) {
    ir::Node node = std::move(g.node(id));
    const bool op = any[id] != 0;
    for (ir::ValueRef& in : node.inputs) in = op ? narrow.at({in.node, in.index}) : f32_of(in);
    for (int& c : node.control_inputs) c = remap[c];
    if (op) node.outputs[0].dtype = low;
    node.id = static_cast<int>(out.size());
    remap[id] = node.id;
    const Shape shape0 = node.outputs[0].shape;
    const std::string name = node.name;
    const int size = static_cast<int>(node.outputs.size());
    out.push_back(std::move(node));
    const int at = remap[id];
    if (op) {  // the 16-bit result; readers that are not rewritten read it widened
      narrow[{id, 0}] = {at, 0};
      wide[{id, 0}] = emit_cast({at, 0}, DType::f32, shape0, name);
      continue;
    }
    for (int k = 0; k < size; ++k) {
      auto w = wanted.find({id, k});
      if (w == wanted.end()) continue;
      const Shape& shape = out[static_cast<size_t>(at)].outputs[static_cast<size_t>(k)].shape;
      const ir::ValueRef low_value = emit_cast({at, k}, low, shape, name);
      narrow[{id, k}] = low_value;
      if (w->second && other_readers.count({id, k})) wide[{id, k}] = emit_cast(low_value, DType::f32, shape, name);
    }
  }
  g.nodes() = std::move(out);
  for (ir::ValueRef& r : roots) r = f32_of(r);  // roots are never demoted: their f32 value stays
  for (int& o : root_ops) o = remap[o];
  for (int& k : keep) k = remap[k];
  return true;
}

}  // namespace

bool autocast(ir::Graph& g, DType low, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
              std::vector<int>& keep) {
  bool changed = run_on_region_bodies(g, [low](ir::Graph& body, std::vector<ir::ValueRef>& r,
                                               std::vector<int>& o, std::vector<int>& k) {
    return rewrite(body, low, r, o, k);
  });
  if (!rewrite(g, low, roots, root_ops, keep)) return changed;
  eliminate_dead_code(g, roots, root_ops, keep);  // widened results no one reads
  return true;
}

}  // namespace tg::passes
