// Stencil fusion (DESIGN.md §2 "fusion": a sliding-window reduction and its elementwise producers
// and consumers in one kernel), run after fuse_elementwise and fuse_reductions. With static shapes,
// a stencil node becomes one fused_stencil node (ir::FusedStencilAttrs) when any of these holds:
//
// 1. Prologue: its source is a value of an elementwise program (a fused_elementwise node without
//    row reductions, or one fusible elementwise node) whose cone reads at most one input of the
//    source's shape, the others of one element (scalars): the cone is recomputed per source
//    element as the kernel loads it (`relu(stencil(x * a + b))` reads x, not x * a + b). The
//    producer stays when something else reads it.
// 2. Constant weights: the weights are a constant of a floating dtype with finite values; their
//    values go into the attributes and the kernel is specialized on them
//    (ir::FusedStencilAttrs::weights: a 7-point stencil written as a 3x3x3 window skips its 20 zero
//    taps).
//
// Only windows of at most 343 taps, dilated extents up to 16 and strides up to 4 are fused (the
// fused kernels' tiles).
// 3. Epilogue: the stencil's result has exactly one reader, not a result of the graph, which is an
//    elementwise program of the result's shape with one output whose other inputs have that shape
//    or one element: that reader is replaced by the fused node, which applies the program to each
//    result before writing it (the result itself is never written).
//
// Programs with integer division (whose kernels check a flag) are not fused; programs stay within
// kMaxSteps steps and kMaxInputs inputs. Region bodies are rewritten the same way (on copies).
// Then dead-code elimination.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/fused_rows.h"
#include "passes/passes.h"
#include "passes/program_builder.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxSteps = 32;
constexpr size_t kMaxInputs = 8;

/// Windows every backend's fused kernel takes (the CUDA tiled kernel: at most 343 taps, tiles
/// within its shared memory): dilated extents up to 16 and strides up to 4 per dim.
bool tileable(const StencilDesc& d, const Shape& window) {
  if (window.empty() || window.size() > 4 || num_elements(window) > 343) return false;
  for (size_t i = 0; i < window.size(); ++i) {
    const int64_t stride = i < d.strides.size() ? d.strides[i] : 1;
    const int64_t dilation = i < d.dilations.size() ? d.dilations[i] : 1;
    if (stride < 1 || stride > 4 || dilation < 1 || (window[i] - 1) * dilation + 1 > 16) return false;
  }
  return true;
}

bool stage_inputs_fit(const ir::Graph& g, const std::vector<ir::ValueRef>& inputs, const Shape& shape,
                      int max_full) {
  int full = 0;
  for (const ir::ValueRef& v : inputs) {
    const Shape& s = g.type(v).shape;
    if (s == shape) {
      ++full;
    } else if (num_elements(s) != 1) {
      return false;
    }
  }
  return full <= max_full && inputs.size() <= kMaxInputs;
}

/// An elementwise program usable as a fused_stencil stage: static, no row reductions or integer
/// division, within the step limit.
std::optional<Prog> stage_program(const ir::Node& n) {
  if (!n.regions.empty() || n.outputs.empty() || !is_static(n.outputs[0].shape)) return std::nullopt;
  if (n.kind != ir::OpKind::fused_elementwise && !is_fusible_elementwise(n)) return std::nullopt;
  std::optional<Prog> p = program_of(n);
  if (!p || ir::has_row_reductions(p->attrs) || has_int_division(p->attrs) || p->attrs.steps.size() > kMaxSteps) {
    return std::nullopt;
  }
  return p;
}

class Rewriter {
 public:
  Rewriter(ir::Graph& g, std::vector<ir::ValueRef>& roots) : g_(g), roots_(roots) {}

  bool run() {
    bool changed = false;
    const int size = g_.size();
    for (int id = 0; id < size; ++id) {
      if (g_.node(id).kind == ir::OpKind::stencil) changed = fuse(id) || changed;
    }
    return changed;
  }

 private:
  bool fuse(int id) {
    const ir::Node st = g_.node(id);  // a copy: the node may be rewritten below
    const TensorType& source = g_.type(st.inputs[0]);
    const TensorType& weights = g_.type(st.inputs[1]);
    const TensorType& result = st.outputs[0];
    if (!is_static(source.shape) || !is_static(weights.shape) || !is_static(result.shape)) return false;
    if (!tileable(std::get<StencilDesc>(st.attrs), weights.shape)) return false;
    ir::FusedStencilAttrs a;
    a.stencil = std::get<StencilDesc>(st.attrs);
    a.window = weights.shape;
    std::vector<ir::ValueRef> inputs;
    std::vector<int> control = st.control_inputs;
    bool fused = false;

    // 1. Prologue.
    a.prologue.shape = source.shape;
    a.prologue.outputs = {0};
    inputs.push_back(st.inputs[0]);
    const ir::Node& producer = g_.node(st.inputs[0].node);
    if (std::optional<Prog> p = stage_program(producer); p && p->attrs.shape == source.shape) {
      Builder b;
      std::map<int, int> memo;
      const int out = b.copy(*p, p->attrs.outputs.at(static_cast<size_t>(st.inputs[0].index)), memo,
                             [&](int i) { return b.input(p->inputs[static_cast<size_t>(i)]); });
      ir::FusedAttrs like;
      like.shape = source.shape;
      Prog pro = b.finish(like, {out});
      if (out >= 0 && stage_inputs_fit(g_, pro.inputs, source.shape, 1)) {
        a.prologue = pro.attrs;
        inputs = pro.inputs;
        for (int c : producer.control_inputs) control.push_back(c);
        fused = true;
      }
    }
    a.num_prologue_inputs = static_cast<int>(inputs.size());

    // 2. Weights.
    const ir::Node& wn = g_.node(st.inputs[1].node);
    std::vector<double> values;
    if (wn.kind == ir::OpKind::constant && is_floating(weights.dtype)) {
      const TensorData& w = std::get<ir::ConstantAttrs>(wn.attrs).value;
      for (int64_t i = 0; i < w.num_elements(); ++i) values.push_back(w.element_as_double(i));
    }
    if (!values.empty() && std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); })) {
      a.weights = std::move(values);
      fused = true;
    } else {
      inputs.push_back(st.inputs[1]);
    }

    // 3. Epilogue.
    a.epilogue.shape = result.shape;
    a.epilogue.outputs = {0};
    int target = id;
    const ir::ValueRef r{id, 0};
    if (const int reader = only_reader(r); reader >= 0) {
      const ir::Node& e = g_.node(reader);
      std::optional<Prog> p = stage_program(e);
      if (p && e.outputs.size() == 1 && p->attrs.shape == result.shape) {
        Builder b;
        b.input(r);  // program value 0
        std::map<int, int> memo;
        const int out = b.copy(*p, p->attrs.outputs.at(0), memo,
                               [&](int i) { return b.input(p->inputs[static_cast<size_t>(i)]); });
        ir::FusedAttrs like;
        like.shape = result.shape;
        Prog epi = b.finish(like, {out});
        std::vector<ir::ValueRef> rest(epi.inputs.begin() + 1, epi.inputs.end());
        if (out >= 0 && stage_inputs_fit(g_, rest, result.shape, static_cast<int>(kMaxInputs))) {
          a.epilogue = epi.attrs;
          for (const ir::ValueRef& v : rest) inputs.push_back(v);
          for (int c : e.control_inputs) control.push_back(c);
          target = reader;
          fused = true;
        }
      }
    }
    if (!fused) return false;
    std::sort(control.begin(), control.end());
    control.erase(std::unique(control.begin(), control.end()), control.end());
    ir::Node& n = g_.node(target);
    n.kind = ir::OpKind::fused_stencil;
    n.attrs = std::move(a);
    n.inputs = std::move(inputs);
    n.control_inputs = std::move(control);
    n.regions.clear();
    return true;
  }

  /// The one node reading value v (not a result, not read twice by it); -1 otherwise.
  int only_reader(ir::ValueRef v) const {
    if (std::find(roots_.begin(), roots_.end(), v) != roots_.end()) return -1;
    int reader = -1;
    for (const ir::Node& n : g_.nodes()) {
      for (const ir::ValueRef& in : n.inputs) {
        if (in != v) continue;
        if (reader >= 0 && reader != n.id) return -1;
        reader = n.id;
      }
    }
    return reader;
  }

  ir::Graph& g_;
  std::vector<ir::ValueRef>& roots_;
};

}  // namespace

bool fuse_stencils(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                   std::vector<int>& keep) {
  bool changed = run_on_region_bodies(g, fuse_stencils);
  if (Rewriter(g, roots).run()) {
    eliminate_dead_code(g, roots, root_ops, keep);
    changed = true;
  }
  return changed;
}

}  // namespace tg::passes
