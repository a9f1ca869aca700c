// Packing of constant convolution weights (passes.h: pack_conv_weights): a backend's convolution
// reads its weights in one memory order (CUDA: cuDNN's KRSC = OHWI filters for NHWC data) and
// permutes weights stored in another in every run. A model's weights are constants, so they are
// stored in that order once, at compile time, and the convolution's weights_layout says so
// (TensorRT and XLA reorder constant filters the same way). After the layout pass (whose NHWC
// convolutions keep PyTorch's OIHW weights), before autocast and constant folding.
#include <array>
#include <map>

#include "passes/passes.h"
#include "passes/readers.h"
#include "passes/transposed_constant.h"

namespace tg::passes {
namespace {

using K = ir::OpKind;

/// The logical weights axis (o = 0, i = 1, kh = 2, kw = 3) at each memory position of layout l.
std::array<int64_t, 4> memory_axes(Layout l) {
  if (l == Layout::oihw) return {0, 1, 2, 3};
  if (l == Layout::ohwi) return {0, 2, 3, 1};
  return {2, 3, 1, 0};  // hwio
}

/// transpose's perm taking a weights tensor stored in `from` to `to`.
std::vector<int64_t> perm_between(Layout from, Layout to) {
  const std::array<int64_t, 4> src = memory_axes(from), dst = memory_axes(to);
  std::vector<int64_t> perm(4);
  for (size_t j = 0; j < 4; ++j) {
    for (size_t k = 0; k < 4; ++k) {
      if (src[k] == dst[j]) perm[j] = static_cast<int64_t>(k);
    }
  }
  return perm;
}

/// The constant node `v` names when the value is a plain constant of static shape, else null.
ir::Node* plain_constant(ir::Graph& g, ir::ValueRef v) {
  ir::Node& n = g.node(v.node);
  const bool plain = n.kind == K::constant && n.control_inputs.empty() && n.outputs.size() == 1;
  return plain && is_static(n.outputs[0].shape) ? &n : nullptr;
}

}  // namespace

bool pack_conv_weights(ir::Graph& g, const std::vector<ir::ValueRef>& roots, const ConvWeightsLayout& preferred,
                       const ScalarEvaluator& eval) {
  if (!preferred || !eval) return false;
  const ReaderCounts readers = count_readers(g, roots);
  // Each constant's convolutions, when every reader of the constant is a conv2d's weights input.
  std::map<int, std::vector<int>> convs_of;
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != K::conv2d || n.inputs.size() != 2) continue;
    convs_of[n.inputs[1].node].push_back(n.id);
  }
  bool changed = false;
  for (auto& [constant_id, convs] : convs_of) {
    ir::Node* c = plain_constant(g, {constant_id, 0});
    if (c == nullptr) continue;
    auto r = readers.find({constant_id, 0});
    if (r == readers.end() || r->second != static_cast<int>(convs.size())) continue;  // read elsewhere too
    const Conv2dDesc& first = std::get<Conv2dDesc>(g.node(convs[0]).attrs);
    const DType dtype = g.type(g.node(convs[0]).inputs[0]).dtype;
    const std::optional<Layout> want = preferred(first, dtype);
    if (!want || *want == first.weights_layout) continue;
    bool same = true;  // every reader stores the weights alike and wants the same order
    for (int id : convs) {
      const ir::Node& n = g.node(id);
      const Conv2dDesc& d = std::get<Conv2dDesc>(n.attrs);
      same = same && n.inputs[0].node != constant_id && d.weights_layout == first.weights_layout &&
             preferred(d, g.type(n.inputs[0]).dtype) == want;
    }
    if (!same) continue;
    std::optional<TensorData> out = transposed_constant(*c, perm_between(first.weights_layout, *want), eval);
    if (!out) continue;
    c->outputs[0] = out->type();
    c->attrs = ir::ConstantAttrs{*std::move(out)};
    for (int id : convs) std::get<Conv2dDesc>(g.node(id).attrs).weights_layout = *want;
    changed = true;
  }
  return changed;
}

}  // namespace tg::passes
