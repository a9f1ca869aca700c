// Row fusion, run after reduction fusion (DESIGN.md §2 "fusion"; row programs: ir/fused_rows.h).
// With static shapes, a fused_elementwise reader C over rows of shape S (the last axis: rows of
// 2..ir::kMaxFusedRowLength elements, rank <= 5) recomputes in its own program:
//   - a row-reduction producer R over the same rows — fused_reduce over the last axis, or
//     reduce_sum / reduce_max over it (floating), with keep_dims — whose every reader is such a
//     reader or producer over the same rows and whose outputs are not results: R's program and a
//     row-reduction step (LayerNorm's normalization absorbs the variance, which absorbed the mean;
//     softmax's division absorbs the sum of exp, which absorbed the max);
//   - an elementwise producer without row reductions (fused_elementwise or one fusible node) of
//     shape S whose cone reads at most one full-size input not read already (softmax's masked
//     scores), or of the row shape S[:-1]+[1] with at most 8 steps (a LayerNorm's
//     rsqrt(var + eps) at large batch);
// R's and the producers' inputs resolved by the same rules. C's program gets row-reduction steps
// when it absorbed a reduction (one kernel a call instead of one per reduction and one per
// apply); absorbed producers pass their control inputs on, and those nothing reads any more go
// with dead-code elimination. Programs stay within kMaxSteps steps and kMaxInputs inputs and have
// no integer division. Region bodies too.
#include <algorithm>
#include <optional>
#include <set>

#include "ir/fused_rows.h"
#include "ir/symbolic_count.h"
#include "passes/passes.h"
#include "passes/program_builder.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxSteps = 96;
constexpr size_t kMaxInputs = 24;
constexpr size_t kMaxRowSteps = 8;  // steps of a row-shaped producer recomputed per row
constexpr size_t kMaxRank = 5;      // the CUDA kernel merges at most 4 leading dims

bool has_int_division(const ir::FusedAttrs& a) {
  for (const ir::FusedStep& s : a.steps) {
    const bool division = s.kind == ir::OpKind::div || s.kind == ir::OpKind::mod ||
                          s.kind == ir::OpKind::floor_mod || s.kind == ir::OpKind::floor_div;
    if (division && is_integer(s.dtype)) return true;
  }
  return false;
}

Shape row_shape(Shape s) {
  s.back() = 1;
  return s;
}

Shape strip_leading_ones(const Shape& s) {
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
}

/// Whether shape `a` is `b` up to leading 1s and of no higher rank (its inputs broadcast to b).
bool same_rows(const Shape& a, const Shape& b) {
  return a.size() <= b.size() && strip_leading_ones(a) == strip_leading_ones(b);
}

class RowFuser {
 public:
  RowFuser(ir::Graph& g, std::vector<ir::ValueRef>& roots) : g_(g), roots_(roots) {
    readers_.resize(static_cast<size_t>(g_.size()));
    for (const ir::Node& n : g_.nodes()) {
      for (const ir::ValueRef& in : n.inputs) readers_[static_cast<size_t>(in.node)].push_back(n.id);
      for (int c : n.control_inputs) readers_[static_cast<size_t>(c)].push_back(n.id);
    }
  }

  bool run() {
    for (int id = 0; id < g_.size(); ++id) {
      const ir::Node& n = g_.node(id);
      if (n.kind == ir::OpKind::fused_elementwise && rows_ok(std::get<ir::FusedAttrs>(n.attrs))) fuse(g_.node(id));
    }
    return changed_;
  }

 private:
  const TensorType& type_of(ir::ValueRef v) const { return g_.node(v.node).outputs[static_cast<size_t>(v.index)]; }

  static bool rows_ok(const ir::FusedAttrs& a) {
    const Shape& s = a.shape;
    // Rows of 2..kMaxFusedRowLength elements, or of a symbolic length (a softmax over a sequence
    // compiled once: a signature whose rows are longer raises unsupported when the kernel runs,
    // before any kernel of the run); leading dims may be symbolic too.
    if (s.empty() || s.size() > kMaxRank || !is_known(s)) return false;
    const bool length_ok = is_symbolic_dim(s.back()) || (s.back() >= 2 && s.back() <= ir::kMaxFusedRowLength);
    return length_ok && ir::count_key(s) != 0 && !has_int_division(a);
  }

  /// The program of a row-reduction producer (see the top) ending in row-reduction steps, one an
  /// output of the node: fused_reduce over the last axis with keep_dims, reduce_sum / reduce_max
  /// over the last axis with keep_dims (floating). nullopt for other nodes.
  std::optional<Prog> reduction_program(const ir::Node& n) const {
    if (n.outputs.empty() || !n.regions.empty()) return std::nullopt;
    Prog p;
    if (n.kind == ir::OpKind::fused_reduce) {
      const auto& a = std::get<ir::FusedAttrs>(n.attrs);
      const int64_t last = static_cast<int64_t>(a.shape.size()) - 1;
      if (!a.keep_dims || a.reduce_axes != std::vector<int64_t>{last}) return std::nullopt;
      p = Prog{n.inputs, a};
      p.attrs.reduce_axes.clear();
      p.attrs.keep_dims = false;
      std::vector<int> outs;
      const int values = p.num_inputs() + static_cast<int>(a.steps.size());
      for (size_t k = 0; k < a.outputs.size(); ++k) {
        const int v = a.outputs[k];
        const DType t = v < p.num_inputs() ? type_of(n.inputs[static_cast<size_t>(v)]).dtype
                                           : a.steps[static_cast<size_t>(v - p.num_inputs())].dtype;
        p.attrs.steps.push_back({ir::OpKind::reduce_sum, {v}, t});
        outs.push_back(values + static_cast<int>(k));
      }
      p.attrs.outputs = outs;
    } else if (ir::is_row_reduction_step(n.kind)) {
      const auto& d = std::get<ReduceDesc>(n.attrs);
      const TensorType& t = type_of(n.inputs[0]);
      const int64_t last = static_cast<int64_t>(t.shape.size()) - 1;
      if (!d.keep_dims || d.axes != std::vector<int64_t>{last} || !is_floating(t.dtype)) return std::nullopt;
      p = Prog{{n.inputs[0]}, {}};
      p.attrs.shape = t.shape;
      p.attrs.steps = {{n.kind, {0}, t.dtype}};
      p.attrs.outputs = {1};
    } else {
      return std::nullopt;
    }
    if (!rows_ok(p.attrs)) return std::nullopt;
    return p;
  }

  bool is_root(int node) const {
    return std::any_of(roots_.begin(), roots_.end(), [&](ir::ValueRef r) { return r.node == node; });
  }

  /// Whether every reader of node `a` reads its data (no control edge) and is a fused_elementwise
  /// or a row-reduction producer over rows `s`, or an elementwise node of their row shape read
  /// only by such readers, and `a` gives no result.
  bool read_only_by_row_readers(int a, const Shape& s) const {
    if (is_root(a)) return false;
    for (int r : readers_[static_cast<size_t>(a)]) {
      const ir::Node& rn = g_.node(r);
      if (std::find(rn.control_inputs.begin(), rn.control_inputs.end(), a) != rn.control_inputs.end()) return false;
      // A row-shaped elementwise reader (rsqrt(var + eps)) is recomputed by its readers too, when
      // they are all such readers.
      if (std::optional<Prog> e = elementwise_program(rn); e && same_rows(e->attrs.shape, row_shape(s))) {
        if (!read_only_by_row_readers(r, s)) return false;
        continue;
      }
      std::optional<Prog> p;
      if (rn.kind == ir::OpKind::fused_elementwise) p = Prog{rn.inputs, std::get<ir::FusedAttrs>(rn.attrs)};
      else p = reduction_program(rn);
      if (!p || !same_rows(p->attrs.shape, s)) return false;
    }
    return true;
  }

  /// Full-size leaves of value v's cone in p (inputs with `size` elements).
  std::set<ir::ValueRef> full_leaves(const Prog& p, int v, int64_t size) const {
    std::set<ir::ValueRef> out;
    std::vector<int> stack{v};
    std::set<int> seen;
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      if (x < p.num_inputs()) {
        const ir::ValueRef in = p.inputs[static_cast<size_t>(x)];
        if (ir::count_key(type_of(in).shape) == size) out.insert(in);
        continue;
      }
      for (int a : p.attrs.steps[static_cast<size_t>(x - p.num_inputs())].args) stack.push_back(a);
    }
    return out;
  }

  size_t cone_steps(const Prog& p, int v) const {
    std::set<int> seen;
    std::vector<int> stack{v};
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      if (x < p.num_inputs() || !seen.insert(x).second) continue;
      for (int a : p.attrs.steps[static_cast<size_t>(x - p.num_inputs())].args) stack.push_back(a);
    }
    return seen.size();
  }

  /// The program of a fused_elementwise node without row reductions or of one fusible
  /// elementwise node, without integer division; nullopt otherwise.
  std::optional<Prog> elementwise_program(const ir::Node& n) const {
    Prog p;
    if (n.kind == ir::OpKind::fused_elementwise) {
      p = Prog{n.inputs, std::get<ir::FusedAttrs>(n.attrs)};
      if (ir::has_row_reductions(p.attrs)) return std::nullopt;
    } else if (is_fusible_elementwise(n)) {
      p.inputs = n.inputs;
      p.attrs.shape = n.outputs[0].shape;
      ir::FusedStep s{n.kind, {}, n.outputs[0].dtype};
      for (int i = 0; i < p.num_inputs(); ++i) s.args.push_back(i);
      p.attrs.steps.push_back(std::move(s));
      p.attrs.outputs.push_back(p.num_inputs());
    } else {
      return std::nullopt;
    }
    if (has_int_division(p.attrs)) return std::nullopt;
    return p;
  }

  /// The builder's tagged value for graph value v read by the program being built over rows
  /// shape_: a producer recomputed (see the top) or an input.
  int resolve(ir::ValueRef v) {
    if (auto it = known_.find(v); it != known_.end()) return it->second;
    const ir::Node& a = g_.node(v.node);
    const int64_t size = ir::count_key(shape_);
    const TensorType& t = type_of(v);
    const bool row_shaped = t.shape.size() <= shape_.size() && same_rows(t.shape, row_shape(shape_));
    const bool full_shaped = t.shape.size() <= shape_.size() && same_rows(t.shape, shape_);
    int r = 0;
    bool recomputed = false;
    if (std::optional<Prog> pa = reduction_program(a);
        pa && row_shaped && same_rows(pa->attrs.shape, shape_) && read_only_by_row_readers(a.id, shape_)) {
      std::map<int, int> memo;
      r = builder_.copy(*pa, pa->attrs.outputs[static_cast<size_t>(v.index)], memo,
                        [&](int i) { return resolve(pa->inputs[static_cast<size_t>(i)]); });
      absorbed_reduction_ = recomputed = true;
    } else if (std::optional<Prog> pe = elementwise_program(a); pe && (row_shaped || full_shaped)) {
      const int va = pe->attrs.outputs[static_cast<size_t>(v.index)];
      bool ok = false;
      if (full_shaped && ir::count_key(t.shape) == size) {
        int added = 0;
        for (const ir::ValueRef& l : full_leaves(*pe, va, size)) added += read_inputs_.count(l) == 0 ? 1 : 0;
        ok = added <= 1;
      } else if (row_shaped) {
        ok = cone_steps(*pe, va) <= kMaxRowSteps;
      }
      if (ok) {
        std::map<int, int> memo;
        r = builder_.copy(*pe, va, memo, [&](int i) { return resolve(pe->inputs[static_cast<size_t>(i)]); });
        recomputed = true;
      }
    }
    if (recomputed) {
      absorbed_.push_back(a.id);
    } else {
      r = builder_.input(v);
      read_inputs_.insert(v);
    }
    known_[v] = r;
    return r;
  }

  void fuse(ir::Node& n) {
    const Prog p{n.inputs, std::get<ir::FusedAttrs>(n.attrs)};
    builder_ = Builder();
    known_.clear();
    absorbed_.clear();
    read_inputs_ = std::set<ir::ValueRef>(p.inputs.begin(), p.inputs.end());
    absorbed_reduction_ = false;
    shape_ = p.attrs.shape;
    std::map<int, int> memo;
    std::vector<int> outs;
    for (int v : p.attrs.outputs) {
      outs.push_back(builder_.copy(p, v, memo, [&](int i) { return resolve(p.inputs[static_cast<size_t>(i)]); }));
    }
    if (!absorbed_reduction_ || builder_.num_inputs() > kMaxInputs || builder_.num_steps() > kMaxSteps) return;
    Prog q = builder_.finish(p.attrs, outs);
    for (int a : absorbed_) {
      for (int c : g_.node(a).control_inputs) {
        if (std::find(n.control_inputs.begin(), n.control_inputs.end(), c) == n.control_inputs.end()) {
          n.control_inputs.push_back(c);
        }
      }
    }
    n.inputs = std::move(q.inputs);
    n.attrs = std::move(q.attrs);
    for (const ir::ValueRef& in : n.inputs) readers_[static_cast<size_t>(in.node)].push_back(n.id);
    changed_ = true;
  }

  ir::Graph& g_;
  std::vector<ir::ValueRef>& roots_;
  std::vector<std::vector<int>> readers_;  ///< by node: the nodes reading it (data or control)
  // State of the program being built.
  Builder builder_;
  Shape shape_;
  std::map<ir::ValueRef, int> known_;
  std::set<ir::ValueRef> read_inputs_;
  std::vector<int> absorbed_;
  bool absorbed_reduction_ = false;
  bool changed_ = false;
};

}  // namespace

bool fuse_rows(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep) {
  bool changed = run_on_region_bodies(g, fuse_rows);
  if (RowFuser(g, roots).run()) {
    eliminate_dead_code(g, roots, root_ops, keep);
    changed = true;
  }
  return changed;
}

}  // namespace tg::passes
