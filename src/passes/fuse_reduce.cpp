// Reduction fusion and producer inlining, run after elementwise fusion (DESIGN.md §2 "fusion":
// elementwise, broadcast and reduction chains into one kernel). With static shapes:
//
// 0. Fills: a fill (uniform value, e.g. zeros from autodiff) read only by programs becomes a
//    scalar that the programs broadcast, instead of a full-size buffer; one-element fills become
//    constants (uploaded once, no kernel per run).
// 1. Views: a program input that is broadcast_to(u), or reshape(u) that only adds or drops
//    leading 1s, reads u itself (programs broadcast their inputs NumPy-style, right-aligned).
// 2. Producer inlining: a program input produced by another program (a fused_elementwise node or
//    a single fusible elementwise node) is recomputed inside the reader instead of read, when
//    that adds at most one full-size input (the producer's inputs replace the value read; two
//    when the reader is the value's only one, whose write then goes too), or
//    when the value is smaller than the reader's shape (per-channel scales and the like) and takes
//    at most kMaxSmallSteps steps, only cheap ones when the reader has more than kRepeatLimit
//    elements (no division, roots or transcendental functions: at batch 128 a batch norm's
//    rsqrt(var + eps) * gamma runs once per channel in its own small kernel instead of per
//    element; at batch 1 it is repeated, which saves the launch). The producer's output is no
//    longer written once nothing reads it, and the producer disappears when none of its outputs
//    is read. Batch norm's `x - mean` is then computed where it is used instead of written once
//    and read three times.
// 3. Reductions: reduce_sum (floating dtypes) of a program's value becomes fused_reduce, the
//    program's cone for that value summed in one kernel, when the cone reads at most two
//    full-size inputs; a sum to one element of any other value becomes an identity fused_reduce
//    (the CUDA kernel finishes a full sum in its last block: one launch, not two). fused_reduce
//    nodes (and plain reduce_sums) of one shape, axes and
//    keep_dims that read a common full-size input merge into one node with several outputs (one
//    pass over the data: batch norm's backward sums of dy and dy * x_hat); the merged node takes
//    the later one's place when every reader of the earlier one comes after it, else the
//    earlier one's when everything the later one reads comes before that. fused_elementwise
//    siblings of one shape merge the same way (a common full-size input, or any common input for
//    small programs such as a batch norm's per-channel scales: one launch instead of several).
//
// Inlined producers pass their control inputs on to the reader (they keep side-effect ops such as
// batch norm's running-statistics assignments ordered and alive). Programs stay within kMaxSteps
// steps and kMaxInputs inputs. Region bodies are rewritten the same way (on copies). Programs
// with integer division (whose kernels check a flag) are not inlined or reduced.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "ir/symbolic_count.h"
#include "passes/passes.h"
#include "passes/program_builder.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxSteps = 96;
constexpr size_t kMaxInputs = 24;  // scalars and per-channel values count too
constexpr size_t kMaxSmallSteps = 8;
constexpr int64_t kSmallProgram = 1 << 16;  // elements: launch-bound rather than memory-bound
constexpr int64_t kRepeatLimit = 1 << 20;   // elements up to which any small producer is repeated

// Element counts compared as count_key (symbolic shapes: equal keys for equal counts; < 0).
int64_t numel(const Shape& s) { return ir::count_key(s); }

Shape strip_leading_ones(const Shape& s) {
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
}

/// Whether every step of `steps` (program values of p) is cheap enough to repeat per element of
/// a larger program: no division, roots, transcendental functions or powers (a batch norm's
/// rsqrt(var + eps) * gamma is computed once per channel by its own small kernel, not per element).
bool cheap(const Prog& p, const std::set<int>& steps) {
  for (int v : steps) {
    switch (p.attrs.steps[static_cast<size_t>(v - p.num_inputs())].kind) {
      case ir::OpKind::add: case ir::OpKind::sub: case ir::OpKind::mul: case ir::OpKind::neg:
      case ir::OpKind::maximum: case ir::OpKind::minimum: case ir::OpKind::select: case ir::OpKind::cast:
      case ir::OpKind::abs: case ir::OpKind::square: case ir::OpKind::equal: case ir::OpKind::not_equal:
      case ir::OpKind::less: case ir::OpKind::less_equal: case ir::OpKind::greater:
      case ir::OpKind::greater_equal: case ir::OpKind::logical_and: case ir::OpKind::logical_or:
      case ir::OpKind::logical_not: case ir::OpKind::stop_gradient:
        break;
      default:
        return false;
    }
  }
  return true;
}

/// Input indices and step count of the cone of program value `v`.
void cone(const Prog& p, int v, std::set<int>& leaves, std::set<int>& steps) {
  if (v < p.num_inputs()) {
    leaves.insert(v);
    return;
  }
  if (!steps.insert(v).second) return;
  for (int a : p.attrs.steps[static_cast<size_t>(v - p.num_inputs())].args) cone(p, a, leaves, steps);
}

class Rewriter {
 public:
  Rewriter(ir::Graph& g, std::vector<ir::ValueRef>& roots) : g_(g), roots_(roots) {}

  bool run() {
    scalarize_fills();
    for (int id = 0; id < g_.size(); ++id) {
      ir::Node& n = g_.node(id);
      if (n.kind == ir::OpKind::reduce_sum) {
        reduce_to_fused(n);
      } else if (program_of(n) && is_known(n.outputs[0].shape)) {
        inline_producers(n);
        if (n.kind == ir::OpKind::fused_elementwise) candidates_.push_back(n.id);
      }
    }
    merge_siblings();
    if (changed_) drop_unread_outputs();
    return changed_;
  }

 private:
  /// Whether node `reader` is the only reader of v and v is not a result.
  bool only_reader(ir::ValueRef v, int reader) const {
    if (std::find(roots_.begin(), roots_.end(), v) != roots_.end()) return false;
    for (const ir::Node& node : g_.nodes()) {
      if (node.id == reader) continue;
      if (std::find(node.inputs.begin(), node.inputs.end(), v) != node.inputs.end()) return false;
    }
    return true;
  }

  const TensorType& type_of(ir::ValueRef v) const { return g_.node(v.node).outputs[static_cast<size_t>(v.index)]; }

  void set_program(ir::Node& n, ir::OpKind kind, Prog p) {
    n.kind = kind;
    n.inputs = std::move(p.inputs);
    n.attrs = std::move(p.attrs);
    changed_ = true;
  }

  void add_control_inputs(ir::Node& to, const ir::Node& from) {
    for (int c : from.control_inputs) {
      if (std::find(to.control_inputs.begin(), to.control_inputs.end(), c) == to.control_inputs.end()) {
        to.control_inputs.push_back(c);
      }
    }
  }

  // Rewrite 0: a fill read only by programs becomes a scalar constant (programs broadcast it; no
  // full-size buffer written and read). Single elementwise readers become programs.
  void scalarize_fills() {
    std::vector<std::vector<int>> readers(static_cast<size_t>(g_.size()));
    for (const ir::Node& node : g_.nodes()) {
      for (const ir::ValueRef& in : node.inputs) readers[static_cast<size_t>(in.node)].push_back(node.id);
    }
    // A one-element fill is a constant: uploaded once, no kernel per run.
    auto to_constant = [&](ir::Node& f) {
      const double value = std::get<ir::FillAttrs>(f.attrs).value;
      f.kind = ir::OpKind::constant;
      f.attrs = ir::ConstantAttrs{TensorData::full(f.outputs[0].shape, f.outputs[0].dtype, value)};
      changed_ = true;
    };
    for (ir::Node& f : g_.nodes()) {
      if (f.kind != ir::OpKind::fill || !is_static(f.outputs[0].shape)) continue;
      if (numel(f.outputs[0].shape) == 1) {
        to_constant(f);
        continue;
      }
      const auto& rd = readers[static_cast<size_t>(f.id)];
      if (rd.empty() || std::find_if(roots_.begin(), roots_.end(), [&](ir::ValueRef r) { return r.node == f.id; }) != roots_.end()) {
        continue;
      }
      const bool programs = std::all_of(rd.begin(), rd.end(), [&](int r) {
        const ir::Node& n = g_.node(r);
        return program_of(n).has_value() && n.kind != ir::OpKind::fused_reduce && is_known(n.outputs[0].shape);
      });
      if (!programs) continue;
      f.outputs[0].shape = {};
      to_constant(f);
      for (int r : rd) {
        ir::Node& n = g_.node(r);
        if (n.kind != ir::OpKind::fused_elementwise) set_program(n, ir::OpKind::fused_elementwise, *program_of(n));
      }
      changed_ = true;
    }
  }

  // Rewrite 1.
  void read_through_views(ir::Node& n) {
    Prog p = *program_of(n);
    bool through = false;
    for (ir::ValueRef& in : p.inputs) {
      for (;;) {
        const ir::Node& src = g_.node(in.node);
        if (src.inputs.empty() || !is_known(type_of(src.inputs[0]).shape)) break;
        const Shape& u = type_of(src.inputs[0]).shape;
        // u must broadcast to the program's shape: not of higher rank.
        if (u.size() > p.attrs.shape.size()) break;
        const bool view = src.kind == ir::OpKind::broadcast_to ||
                          (src.kind == ir::OpKind::reshape && strip_leading_ones(u) == strip_leading_ones(src.outputs[0].shape));
        if (!view) break;
        in = src.inputs[0];
        through = true;
      }
    }
    if (!through) return;
    // The same value may now be read through two slots: one input each.
    Builder b;
    std::map<int, int> memo;
    std::vector<int> outs;
    for (int v : p.attrs.outputs) outs.push_back(b.copy(p, v, memo, [&](int i) { return b.input(p.inputs[i]); }));
    const ir::OpKind kind = n.kind == ir::OpKind::fused_reduce ? n.kind : ir::OpKind::fused_elementwise;
    set_program(n, kind, b.finish(p.attrs, outs));
  }

  // Rewrite 2: one input at a time, until none qualifies.
  void inline_producers(ir::Node& n) {
    for (bool again = true; again;) {
      again = false;
      read_through_views(n);
      Prog p = *program_of(n);
      const int64_t size = numel(p.attrs.shape);
      if (size == 0 || has_int_division(p.attrs)) return;
      for (int m = 0; m < p.num_inputs() && !again; ++m) {
        const ir::ValueRef u = p.inputs[static_cast<size_t>(m)];
        const ir::Node& a = g_.node(u.node);
        if (a.kind == ir::OpKind::fused_reduce) continue;
        std::optional<Prog> pa = program_of(a);
        if (!pa || !is_known(a.outputs[0].shape) || has_int_division(pa->attrs)) continue;
        const int va = pa->attrs.outputs[static_cast<size_t>(u.index)];
        std::set<int> leaves, steps;
        cone(*pa, va, leaves, steps);
        const bool full = numel(type_of(u).shape) == size;
        if (!full && (steps.size() > kMaxSmallSteps || ((size < 0 || size > kRepeatLimit) && !cheap(*pa, steps)))) continue;
        if (full) {
          int added = 0;
          for (int l : leaves) {
            const ir::ValueRef lv = pa->inputs[static_cast<size_t>(l)];
            const bool present = std::find(p.inputs.begin(), p.inputs.end(), lv) != p.inputs.end();
            if (!present && numel(type_of(lv).shape) == size) ++added;
          }
          // Reading u costs one pass; when n is u's only reader, u's write goes too.
          if (added > 1 + (only_reader(u, n.id) ? 1 : 0)) continue;
        }
        Builder b;
        std::map<int, int> memo_a, memo;
        auto leaf_a = [&](int i) { return b.input(pa->inputs[static_cast<size_t>(i)]); };
        auto leaf = [&](int i) { return i == m ? b.copy(*pa, va, memo_a, leaf_a) : b.input(p.inputs[static_cast<size_t>(i)]); };
        std::vector<int> outs;
        for (int v : p.attrs.outputs) outs.push_back(b.copy(p, v, memo, leaf));
        if (b.num_inputs() > kMaxInputs || b.num_steps() > kMaxSteps) continue;
        const ir::OpKind kind = n.kind == ir::OpKind::fused_reduce ? n.kind : ir::OpKind::fused_elementwise;
        add_control_inputs(n, a);
        set_program(n, kind, b.finish(p.attrs, outs));
        again = true;
      }
    }
  }

  // Rewrite 3, one reduction.
  void reduce_to_fused(ir::Node& n) {
    const auto& d = std::get<ReduceDesc>(n.attrs);
    const ir::ValueRef u = n.inputs[0];
    const TensorType& t = type_of(u);
    if (d.axes.empty() || !is_floating(t.dtype) || !is_known(t.shape) || numel(t.shape) == 0) return;
    const ir::Node& a = g_.node(u.node);
    std::optional<Prog> pa = a.kind == ir::OpKind::fused_reduce ? std::nullopt : program_of(a);
    if (!pa || !is_known(a.outputs[0].shape) || has_int_division(pa->attrs)) {
      // A sum to one element of a value no program makes (a loop's mean(y) of its parameter)
      // becomes an identity fused_reduce: one kernel whose last block finishes the split sums.
      if (numel(n.outputs[0].shape) == 1) set_program(n, ir::OpKind::fused_reduce, reduction_program(n));
      candidates_.push_back(n.id);  // may still merge with a sibling
      return;
    }
    const int va = pa->attrs.outputs[static_cast<size_t>(u.index)];
    std::set<int> leaves, steps;
    cone(*pa, va, leaves, steps);
    int full = 0;
    for (int l : leaves) full += numel(type_of(pa->inputs[static_cast<size_t>(l)]).shape) == numel(t.shape);
    if (full > 2) {
      candidates_.push_back(n.id);
      return;
    }
    Builder b;
    std::map<int, int> memo;
    const int out = b.copy(*pa, va, memo, [&](int i) { return b.input(pa->inputs[static_cast<size_t>(i)]); });
    ir::FusedAttrs like;
    like.shape = t.shape;
    like.reduce_axes = d.axes;
    like.keep_dims = d.keep_dims;
    add_control_inputs(n, a);
    set_program(n, ir::OpKind::fused_reduce, b.finish(like, {out}));
    inline_producers(n);
    candidates_.push_back(n.id);
  }

  /// The program a candidate reduction computes (an identity program for a plain reduce_sum).
  Prog reduction_program(const ir::Node& n) const {
    if (n.kind == ir::OpKind::fused_reduce) return *program_of(n);
    const auto& d = std::get<ReduceDesc>(n.attrs);
    Prog p{{n.inputs[0]}, {}};
    p.attrs.shape = type_of(n.inputs[0]).shape;
    p.attrs.outputs = {0};
    p.attrs.reduce_axes = d.axes;
    p.attrs.keep_dims = d.keep_dims;
    return p;
  }

  void merge_siblings() {
    std::vector<std::vector<int>> readers(static_cast<size_t>(g_.size()));
    for (const ir::Node& node : g_.nodes()) {
      for (const ir::ValueRef& in : node.inputs) readers[static_cast<size_t>(in.node)].push_back(node.id);
      for (int c : node.control_inputs) readers[static_cast<size_t>(c)].push_back(node.id);
    }
    std::vector<char> merged(static_cast<size_t>(g_.size()), 0);
    for (size_t i = 0; i < candidates_.size(); ++i) {
      const int early = candidates_[i];
      if (merged[static_cast<size_t>(early)]) continue;
      for (size_t j = i + 1; j < candidates_.size(); ++j) {
        const int late = candidates_[j];
        if (merged[static_cast<size_t>(late)]) continue;
        const bool elementwise = g_.node(early).kind == ir::OpKind::fused_elementwise;
        if (elementwise != (g_.node(late).kind == ir::OpKind::fused_elementwise)) continue;
        const Prog pe = elementwise ? *program_of(g_.node(early)) : reduction_program(g_.node(early));
        const Prog pl = elementwise ? *program_of(g_.node(late)) : reduction_program(g_.node(late));
        if (pe.attrs.shape != pl.attrs.shape || pe.attrs.reduce_axes != pl.attrs.reduce_axes ||
            pe.attrs.keep_dims != pl.attrs.keep_dims) {
          continue;
        }
        // A common full-size input (read once instead of twice), or for small programs any common
        // input (one launch instead of two).
        const int64_t size = numel(pe.attrs.shape);
        bool shared = false;
        for (const ir::ValueRef& v : pe.inputs) {
          const bool counts = numel(type_of(v).shape) == size || (elementwise && size >= 0 && size <= kSmallProgram);
          shared = shared || (counts && std::find(pl.inputs.begin(), pl.inputs.end(), v) != pl.inputs.end());
        }
        // The merged node takes the late one's place when every reader of the early one comes
        // after it, else the early one's when everything the late one reads comes before it.
        const auto& rd = readers[static_cast<size_t>(early)];
        const bool at_late = std::all_of(rd.begin(), rd.end(), [&](int r) { return r > late; });
        const ir::Node& ln0 = g_.node(late);
        bool at_early = std::all_of(ln0.inputs.begin(), ln0.inputs.end(), [&](ir::ValueRef v) { return v.node < early; });
        at_early = at_early && std::all_of(ln0.control_inputs.begin(), ln0.control_inputs.end(), [&](int c) { return c < early; });
        if (!shared || (!at_late && !at_early)) continue;
        Builder b;
        std::map<int, int> memo_e, memo_l;
        std::vector<int> outs;
        for (int v : pe.attrs.outputs) {
          outs.push_back(b.copy(pe, v, memo_e, [&](int k) { return b.input(pe.inputs[static_cast<size_t>(k)]); }));
        }
        const int num_early = static_cast<int>(outs.size());
        for (int v : pl.attrs.outputs) {
          outs.push_back(b.copy(pl, v, memo_l, [&](int k) { return b.input(pl.inputs[static_cast<size_t>(k)]); }));
        }
        if (b.num_inputs() > kMaxInputs || b.num_steps() > kMaxSteps) continue;
        const int target = at_late ? late : early, other = at_late ? early : late;
        std::vector<TensorType> types = g_.node(early).outputs;
        const std::vector<TensorType>& late_types = g_.node(late).outputs;
        types.insert(types.end(), late_types.begin(), late_types.end());
        ir::Node& tn = g_.node(target);
        add_control_inputs(tn, g_.node(other));
        set_program(tn, elementwise ? ir::OpKind::fused_elementwise : ir::OpKind::fused_reduce, b.finish(pe.attrs, outs));
        tn.outputs = std::move(types);
        // Outputs: the early node's, then the late node's.
        auto move = [&](ir::ValueRef& v) {
          if (v.node == late) v.index += num_early;
          if (v.node == early || v.node == late) v.node = target;
        };
        for (ir::Node& node : g_.nodes()) {
          for (ir::ValueRef& in : node.inputs) move(in);
        }
        for (ir::ValueRef& r : roots_) move(r);
        const std::vector<int> moved = readers[static_cast<size_t>(other)];
        for (int r : moved) readers[static_cast<size_t>(target)].push_back(r);
        merged[static_cast<size_t>(other)] = 1;
        if (at_late) break;
      }
    }
  }

  /// Outputs of program nodes that nothing reads are dropped (their readers' indices remapped).
  void drop_unread_outputs() {
    std::vector<std::vector<char>> read(static_cast<size_t>(g_.size()));
    std::vector<char> control(static_cast<size_t>(g_.size()), 0);
    for (const ir::Node& node : g_.nodes()) read[static_cast<size_t>(node.id)].assign(node.outputs.size(), 0);
    for (const ir::Node& node : g_.nodes()) {
      for (const ir::ValueRef& in : node.inputs) read[static_cast<size_t>(in.node)][static_cast<size_t>(in.index)] = 1;
      for (int c : node.control_inputs) control[static_cast<size_t>(c)] = 1;
    }
    for (const ir::ValueRef& r : roots_) read[static_cast<size_t>(r.node)][static_cast<size_t>(r.index)] = 1;
    std::vector<std::vector<int>> new_index(static_cast<size_t>(g_.size()));
    for (ir::Node& node : g_.nodes()) {
      auto& idx = new_index[static_cast<size_t>(node.id)];
      idx.resize(node.outputs.size());
      for (size_t k = 0; k < idx.size(); ++k) idx[k] = static_cast<int>(k);
      if (node.kind != ir::OpKind::fused_elementwise && node.kind != ir::OpKind::fused_reduce) continue;
      const auto& r = read[static_cast<size_t>(node.id)];
      if (std::none_of(r.begin(), r.end(), [](char c) { return c; }) && !control[static_cast<size_t>(node.id)]) {
        continue;  // dead: dead-code elimination removes it
      }
      auto& a = std::get<ir::FusedAttrs>(node.attrs);
      std::vector<int> outputs;
      std::vector<TensorType> types;
      for (size_t k = 0; k < r.size(); ++k) {
        if (!r[k] && !(outputs.empty() && k + 1 == r.size())) {  // keep one output at least
          idx[k] = -1;
          continue;
        }
        idx[k] = static_cast<int>(outputs.size());
        outputs.push_back(a.outputs[k]);
        types.push_back(node.outputs[k]);
      }
      a.outputs = std::move(outputs);
      node.outputs = std::move(types);
    }
    for (ir::Node& node : g_.nodes()) {
      for (ir::ValueRef& in : node.inputs) in.index = new_index[static_cast<size_t>(in.node)][static_cast<size_t>(in.index)];
    }
    for (ir::ValueRef& r : roots_) r.index = new_index[static_cast<size_t>(r.node)][static_cast<size_t>(r.index)];
  }

  ir::Graph& g_;
  std::vector<ir::ValueRef>& roots_;
  std::vector<int> candidates_;  // reduce_sum / fused_reduce / fused_elementwise nodes, in id order
  bool changed_ = false;
};

}  // namespace

bool fuse_reductions(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                     std::vector<int>& keep) {
  bool changed = run_on_region_bodies(g, fuse_reductions);
  if (Rewriter(g, roots).run()) {
    eliminate_dead_code(g, roots, root_ops, keep);
    changed = true;
  }
  return changed;
}

}  // namespace tg::passes
