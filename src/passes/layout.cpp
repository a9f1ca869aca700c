// Channels-last layout (issue 15, deliverable 7): an imported model is NCHW (ONNX, PyTorch),
// while cuDNN's tensor-core kernels and oneDNN are mostly NHWC. Compile runs this pass where it
// was measured faster (runtime::layout_pass_pays: the CPU; CUDA at batch >= 32 with dense
// convolutions; TG_CHANNELS_LAST=1 / 0 forces it). This pass makes a graph's NCHW conv2d,
// max_pool2d and avg_pool2d, and their backward ops (conv2d_backward_data/_weights,
// max/avg_pool2d_backward: training graphs built outside tg::autodiff, e.g. PyTorch's), run NHWC
// with one transpose at each boundary of the channels-last region, the way XLA's layout
// assignment and PyTorch's channels_last memory format do:
//  1. each such op reads transpose(x, [0,2,3,1]), runs with data_layout=nhwc (weights keep their
//     layout: the kernels take OIHW weights with NHWC data) and its result is
//     transpose(y, [0,3,1,2]);
//  2. transposes sink through what does not care about layout: an elementwise op whose 4-d inputs
//     are all such transposes (other inputs: scalars, per-channel vectors and [N,C,1,1] values,
//     whose NHWC order is a reshape) runs on the NHWC values; a reduction of one reads the NHWC
//     value over the permuted axes; a transpose of one composes with it (a pair that cancels
//     disappears); a broadcast of such a small value to a 4-d shape runs NHWC;
//  3. a transpose that only moves dims of size 1 becomes a reshape (a view: global pooling's
//     [N,1,1,C] -> [N,C,1,1] before a flatten costs nothing);
//  4. the graph's own transpose(u, [0,3,1,2]) of an NHWC value u (a channels-last input fed as
//     its NHWC permutation: tensorgraph.torch's saved activations, docs/design/0010 step 3) is
//     treated as the pass's: the channels-last ops after it read u, with no transpose back.
// Values are unchanged: every op computes the same elements, only their order in memory differs.
// Transposes no one reads are left to dead-code elimination.
#include <algorithm>
#include <deque>
#include <map>
#include <optional>

#include "passes/passes.h"

namespace tg::passes {
namespace {

using K = ir::OpKind;
const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

Shape permuted(const Shape& s, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = s[static_cast<size_t>(perm[i])];
  return out;
}

/// True when `perm` keeps the dims of `s` other than 1 in their order (the transpose is a reshape).
bool moves_only_unit_dims(const Shape& s, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (s[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

/// g: anything with type(ValueRef) (the graph, or the nodes being rebuilt).
template <class G>
bool is_nchw_op(const G& g, const ir::Node& n) {
  if (n.outputs.size() != 1 || !is_static(n.outputs[0].shape) || n.outputs[0].shape.size() != 4) return false;
  if (n.inputs.empty() || !is_static(g.type(n.inputs[0]).shape)) return false;
  if (n.kind == K::conv2d) return std::get<Conv2dDesc>(n.attrs).data_layout == Layout::nchw;
  if (n.kind == K::max_pool2d || n.kind == K::avg_pool2d) return std::get<Pool2dDesc>(n.attrs).data_layout == Layout::nchw;
  // Training graphs' backward ops (their data inputs and, but for the weights gradient, result).
  if (n.kind == K::conv2d_backward_data || n.kind == K::conv2d_backward_weights) {
    return n.inputs.size() == 2 && std::get<ir::ConvBackwardAttrs>(n.attrs).conv.data_layout == Layout::nchw &&
           g.type(n.inputs[1]).shape.size() == 4;
  }
  if (n.kind == K::max_pool2d_backward || n.kind == K::avg_pool2d_backward) {
    return n.inputs.size() == 2 && std::get<Pool2dDesc>(n.attrs).data_layout == Layout::nchw &&
           g.type(n.inputs[1]).shape.size() == 4 && is_static(g.type(n.inputs[1]).shape);
  }
  return false;
}

bool is_layout_free_elementwise(const ir::Node& n) {
  return is_fusible_elementwise(n) && n.outputs[0].shape.size() == 4;
}

class Rewriter {
 public:
  explicit Rewriter(ir::Graph& g) : g_(g), remap_(static_cast<size_t>(g.size()), -1) {}

  void run(std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep) {
    const int n = g_.size();
    for (int id = 0; id < n; ++id) {
      ir::Node node = std::move(g_.node(id));
      for (ir::ValueRef& in : node.inputs) in = value_of(in);
      for (int& c : node.control_inputs) c = remap_[c];
      std::optional<ir::ValueRef> v;
      if (is_nchw_op(out_graph(), node)) v = channels_last_op(node);
      else if (is_layout_free_elementwise(node)) v = sunk_elementwise(node);
      else if (ir::op_info(node.kind).family == ir::OpFamily::reduce) v = sunk_reduction(node);
      else if (node.kind == K::transpose) v = composed_transpose(node);
      else if (node.kind == K::broadcast_to) v = sunk_broadcast(node);
      if (v) {
        replaced_[id] = *v;
        remap_[id] = v->node;
      } else {
        // The graph's own transpose to NCHW of a 4-d value (an NHWC input, e.g. a channels-last
        // tensor fed from PyTorch) is an NHWC source like the pass's: the ops after it read u.
        const bool from_nhwc = node.kind == K::transpose && node.control_inputs.empty() &&
                               node.outputs[0].shape.size() == 4 &&
                               std::get<ir::TransposeAttrs>(node.attrs).perm == kToNchw;
        const ir::ValueRef u = from_nhwc ? node.inputs[0] : ir::ValueRef{};
        remap_[id] = emit(std::move(node)).node;
        if (from_nhwc) nhwc_of_[{remap_[id], 0}] = u;
      }
    }
    g_.nodes() = std::move(out_);
    for (ir::ValueRef& r : roots) r = value_of(r);
    for (int& o : root_ops) o = remap_[o];
    for (int& k : keep) k = remap_[k];
  }

  bool changed() const { return changed_; }

 private:
  // Type lookups on the graph being built (new ids).
  struct View {
    const std::deque<ir::Node>& nodes;
    const TensorType& type(ir::ValueRef v) const { return nodes[static_cast<size_t>(v.node)].outputs[static_cast<size_t>(v.index)]; }
  };
  View out_graph() const { return View{out_}; }

  const TensorType& type(ir::ValueRef v) const { return out_[static_cast<size_t>(v.node)].outputs[static_cast<size_t>(v.index)]; }

  ir::ValueRef value_of(ir::ValueRef old) const {
    auto it = replaced_.find(old.node);
    if (it != replaced_.end()) return it->second;
    return {remap_[old.node], old.index};
  }

  ir::ValueRef emit(ir::Node node) {
    node.id = static_cast<int>(out_.size());
    out_.push_back(std::move(node));
    return {static_cast<int>(out_.size()) - 1, 0};
  }

  /// transpose(v, perm), a reshape when only dims of size 1 move; records NHWC sources.
  ir::ValueRef transpose(ir::ValueRef v, const std::vector<int64_t>& perm, const std::string& name) {
    const TensorType& t = type(v);
    ir::Node n;
    n.inputs = {v};
    n.name = name;
    n.outputs = {TensorType{permuted(t.shape, perm), t.dtype}};
    if (moves_only_unit_dims(t.shape, perm)) {
      n.kind = K::reshape;
      n.attrs = ir::ReshapeAttrs{n.outputs[0].shape};
    } else {
      n.kind = K::transpose;
      n.attrs = ir::TransposeAttrs{perm};
    }
    const ir::ValueRef out = emit(std::move(n));
    if (perm == kToNchw) nhwc_of_[{out.node, out.index}] = v;
    return out;
  }

  /// The NHWC form of a 4-d NCHW value: its source when it is transpose(u, to_nchw), else a new
  /// transpose.
  ir::ValueRef to_nhwc(ir::ValueRef v, const std::string& name) {
    auto it = nhwc_of_.find({v.node, v.index});
    return it != nhwc_of_.end() ? it->second : transpose(v, kToNhwc, name);
  }

  ir::ValueRef channels_last_op(ir::Node node) {
    node.inputs[0] = to_nhwc(node.inputs[0], node.name);
    const std::string name = node.name;
    changed_ = true;
    switch (node.kind) {
      case K::conv2d: std::get<Conv2dDesc>(node.attrs).data_layout = Layout::nhwc; break;
      case K::conv2d_backward_data: {  // (dy, w) -> dx; w keeps its layout
        auto& a = std::get<ir::ConvBackwardAttrs>(node.attrs);
        a.conv.data_layout = Layout::nhwc;
        a.shape = permuted(a.shape, kToNhwc);
        break;
      }
      case K::conv2d_backward_weights: {  // (dy, x) -> dw, in the weights' layout: no transpose
        node.inputs[1] = to_nhwc(node.inputs[1], name);
        std::get<ir::ConvBackwardAttrs>(node.attrs).conv.data_layout = Layout::nhwc;
        return emit(std::move(node));
      }
      case K::max_pool2d_backward:
      case K::avg_pool2d_backward:  // (dy, x) -> dx
        node.inputs[1] = to_nhwc(node.inputs[1], name);
        std::get<Pool2dDesc>(node.attrs).data_layout = Layout::nhwc;
        break;
      default: std::get<Pool2dDesc>(node.attrs).data_layout = Layout::nhwc; break;
    }
    node.outputs[0].shape = permuted(node.outputs[0].shape, kToNhwc);
    return transpose(emit(std::move(node)), kToNchw, name);
  }

  std::optional<ir::ValueRef> sunk_elementwise(ir::Node& node) {
    bool any = false;
    std::vector<ir::ValueRef> inputs;
    for (const ir::ValueRef& in : node.inputs) {
      auto it = nhwc_of_.find({in.node, in.index});
      if (it != nhwc_of_.end()) {
        inputs.push_back(it->second);
        any = true;
        continue;
      }
      // A scalar, a per-axis vector or [N,C,1,1] broadcast against NCHW: its NHWC form is a reshape.
      const Shape& s = type(in).shape;
      if (s.size() > 4) return std::nullopt;
      Shape s4(4 - s.size(), 1);
      s4.insert(s4.end(), s.begin(), s.end());
      if (!moves_only_unit_dims(s4, kToNhwc)) return std::nullopt;
      inputs.push_back(in);
    }
    if (!any) return std::nullopt;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (nhwc_of_.count({node.inputs[k].node, node.inputs[k].index}) || type(inputs[k]).shape.empty()) continue;
      const Shape& s = type(inputs[k]).shape;
      Shape s4(4 - s.size(), 1);
      s4.insert(s4.end(), s.begin(), s.end());
      ir::Node r;
      r.kind = K::reshape;
      r.inputs = {inputs[k]};
      r.name = node.name;
      r.outputs = {TensorType{permuted(s4, kToNhwc), type(inputs[k]).dtype}};
      r.attrs = ir::ReshapeAttrs{r.outputs[0].shape};
      inputs[k] = emit(std::move(r));
    }
    node.inputs = inputs;
    node.outputs[0].shape = permuted(node.outputs[0].shape, kToNhwc);
    const std::string name = node.name;
    return transpose(emit(std::move(node)), kToNchw, name);
  }

  /// broadcast_to of a value whose NHWC form is a reshape ([N,C,1,1]: global pooling's gradient)
  /// to a 4-d NCHW shape runs NHWC, so the elementwise ops reading it stay NHWC.
  std::optional<ir::ValueRef> sunk_broadcast(ir::Node& node) {
    const Shape& out = node.outputs[0].shape;
    if (out.size() != 4 || !is_static(out) || node.inputs.size() != 1 || !node.control_inputs.empty()) {
      return std::nullopt;
    }
    const Shape& s = type(node.inputs[0]).shape;
    if (s.size() > 4 || !is_static(s)) return std::nullopt;
    Shape s4(4 - s.size(), 1);
    s4.insert(s4.end(), s.begin(), s.end());
    if (!moves_only_unit_dims(s4, kToNhwc)) return std::nullopt;
    ir::Node r;
    r.kind = K::reshape;
    r.inputs = {node.inputs[0]};
    r.name = node.name;
    r.outputs = {TensorType{permuted(s4, kToNhwc), type(node.inputs[0]).dtype}};
    r.attrs = ir::ReshapeAttrs{r.outputs[0].shape};
    node.inputs = {emit(std::move(r))};
    node.outputs[0].shape = permuted(out, kToNhwc);
    node.attrs = ir::BroadcastAttrs{node.outputs[0].shape};
    const std::string name = node.name;
    changed_ = true;
    return transpose(emit(std::move(node)), kToNchw, name);
  }

  std::optional<ir::ValueRef> sunk_reduction(ir::Node& node) {
    if (node.inputs.size() != 1 || node.outputs.size() != 1 || !std::holds_alternative<ReduceDesc>(node.attrs)) {
      return std::nullopt;
    }
    auto it = nhwc_of_.find({node.inputs[0].node, node.inputs[0].index});
    if (it == nhwc_of_.end()) return std::nullopt;
    ReduceDesc d = std::get<ReduceDesc>(node.attrs);
    if (d.axes.empty()) return std::nullopt;
    // NCHW axis a is NHWC axis kToNhwc-inverse: NCHW dim a = NHWC dim kToNchw[a].
    std::vector<int64_t> axes;
    std::vector<char> reduced(4, 0);
    for (int64_t a : d.axes) {
      axes.push_back(kToNchw[static_cast<size_t>(a)]);
      reduced[static_cast<size_t>(a)] = 1;
    }
    std::sort(axes.begin(), axes.end());
    std::vector<int64_t> kept;  // NHWC dims of the NCHW result's dims, in its order
    for (int64_t a = 0; a < 4; ++a) {
      if (!reduced[static_cast<size_t>(a)]) kept.push_back(kToNchw[static_cast<size_t>(a)]);
    }
    const Shape nchw_out = node.outputs[0].shape;
    node.inputs[0] = it->second;
    node.attrs = ReduceDesc{axes, d.keep_dims};
    const std::string name = node.name;
    if (d.keep_dims) {
      node.outputs[0].shape = permuted(nchw_out, kToNhwc);
      return transpose(emit(std::move(node)), kToNchw, name);
    }
    // Without keep_dims the NHWC result holds the kept dims in increasing NHWC order.
    std::vector<int64_t> order = kept;
    std::sort(order.begin(), order.end());
    std::vector<int64_t> perm;  // result dim i (NCHW order) = NHWC-result dim perm[i]
    for (int64_t k : kept) perm.push_back(std::find(order.begin(), order.end(), k) - order.begin());
    Shape nhwc_out(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) nhwc_out[static_cast<size_t>(perm[i])] = nchw_out[i];
    node.outputs[0].shape = nhwc_out;
    const ir::ValueRef r = emit(std::move(node));
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    return identity ? r : transpose(r, perm, name);
  }

  std::optional<ir::ValueRef> composed_transpose(ir::Node& node) {
    auto it = nhwc_of_.find({node.inputs[0].node, node.inputs[0].index});
    if (it == nhwc_of_.end() || !node.control_inputs.empty()) return std::nullopt;  // keep its ordering
    // transpose(transpose(u, to_nchw), q)[i] = u[to_nchw[q[i]]].
    const auto& q = std::get<ir::TransposeAttrs>(node.attrs).perm;
    std::vector<int64_t> perm;
    bool identity = true;
    for (size_t i = 0; i < q.size(); ++i) {
      perm.push_back(kToNchw[static_cast<size_t>(q[i])]);
      identity = identity && perm.back() == static_cast<int64_t>(i);
    }
    if (identity) return it->second;
    return transpose(it->second, perm, node.name);
  }

  ir::Graph& g_;
  std::deque<ir::Node> out_;
  std::vector<int> remap_;
  std::map<int, ir::ValueRef> replaced_;                  // old single-output node -> new value
  std::map<std::pair<int, int>, ir::ValueRef> nhwc_of_;  // transpose(u, to_nchw) -> u (new ids)
  bool changed_ = false;
};

}  // namespace

bool convert_to_channels_last(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                              std::vector<int>& keep) {
  bool any = false;
  for (const ir::Node& n : g.nodes()) any = any || is_nchw_op(g, n);
  if (!any) return false;
  Rewriter r(g);
  r.run(roots, root_ops, keep);
  eliminate_dead_code(g, roots, root_ops, keep);
  return r.changed();
}

}  // namespace tg::passes
