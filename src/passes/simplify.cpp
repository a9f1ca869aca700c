// Algebraic simplification with static shapes (after infer_types): values that are one number
// broadcast ("uniform": a fill, or a constant whose elements are all equal) are propagated, so
// graphs built for dynamic shapes lose the work that only counted elements or made zeros:
//   - an elementwise op whose inputs are all uniform becomes a fill (the value computed once by
//     the CPU kernel on scalars, so it rounds exactly as the op would);
//   - reduce_sum of a uniform integer-valued v becomes a fill of v * count when that is exact;
//   - select(c, a, a) becomes a (broadcast: a fill when a is uniform);
//   - mul(cast(bool b), 0) and mul(0, cast(bool b)) become zeros (cast of a bool is 0 or 1);
//   - x + 0, 0 + x and x - 0 become x (floating; -0.0 + 0 then stays -0.0).
// batch_norm's element counts and autodiff's zeros_like/ones_like for shapes that were dynamic
// when built are the cases this exists for. Nodes are rewritten in place (kind and attributes);
// values made dead are left to eliminate_dead_code.
#include <cmath>

#include "core/convert.h"
#include "passes/passes.h"

namespace tg::passes {
namespace {

using K = ir::OpKind;

// Constants of at most this many elements are scanned for one value (an attention mask of
// 128 x 128 that is all true: Hugging Face BERT's for a sequence without padding).
constexpr int64_t kMaxUniformScan = int64_t{1} << 20;

bool uniform(const ir::Graph& g, const ir::Node& n, double* value) {
  if ((n.kind == K::reshape || n.kind == K::broadcast_to) && n.inputs.size() == 1 && n.inputs[0].index == 0) {
    return uniform(g, g.node(n.inputs[0].node), value);
  }
  if (n.kind == K::fill) {
    *value = std::get<ir::FillAttrs>(n.attrs).value;
    return true;
  }
  if (n.kind == K::constant) {
    const TensorData& t = std::get<ir::ConstantAttrs>(n.attrs).value;
    if (t.num_elements() == 0 || !t.device().is_cpu()) return false;
    double v = t.element_as_double(0);
    if (t.num_elements() > kMaxUniformScan) return false;
    for (int64_t i = 1; i < t.num_elements(); ++i) {
      double e = t.element_as_double(i);
      if (!(e == v || (std::isnan(e) && std::isnan(v)))) return false;
    }
    *value = v;
    return true;
  }
  return false;
}

void make_fill(ir::Node& n, double value) {
  n.kind = K::fill;
  n.attrs = ir::FillAttrs{value};
  n.inputs.clear();
}

// The scalar result of elementwise node n on uniform input values (the evaluator on 0-d tensors).
bool eval_scalar(const ir::Graph& g, const ir::Node& n, const std::vector<double>& in, const ScalarEvaluator& eval,
                 double* out) {
  if (!eval) return false;
  std::vector<TensorData> args;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    TensorData t({}, g.type(n.inputs[i]).dtype);
    store_from_double(t.dtype(), t.raw_data(), 0, in[i]);
    args.push_back(t);
  }
  ir::Node scalar = n;
  scalar.outputs = {TensorType{{}, n.outputs[0].dtype}};
  TensorData result({}, n.outputs[0].dtype);
  if (!eval(scalar, args, result)) return false;  // e.g. an integer division by zero: left for the run to report
  *out = result.element_as_double(0);
  return true;
}

bool is_fusible_elementwise(const ir::Node& n) {
  const ir::OpFamily f = ir::op_info(n.kind).family;
  return (f == ir::OpFamily::unary || f == ir::OpFamily::binary || f == ir::OpFamily::ternary ||
          f == ir::OpFamily::cast) &&
         ir::has_trait(n.kind, ir::kElementwise) && n.outputs.size() == 1;
}

bool simplify_graph(ir::Graph& g, std::vector<ir::ValueRef>& roots, const ScalarEvaluator& eval) {
  bool changed = false;
  std::vector<std::pair<ir::ValueRef, ir::ValueRef>> aliases;  // select(c, a, a) -> a
  for (ir::Node& n : g.nodes()) {
    if (!n.regions.empty() || n.outputs.empty() || !is_static(n.outputs[0].shape)) continue;
    if (!n.control_inputs.empty()) continue;
    if (is_fusible_elementwise(n)) {
      std::vector<double> vals;
      bool all = !n.inputs.empty();
      for (const ir::ValueRef& in : n.inputs) {
        double v = 0;
        all = all && in.index == 0 && uniform(g, g.node(in.node), &v);
        vals.push_back(v);
      }
      double r = 0;
      if (all && eval_scalar(g, n, vals, eval, &r)) {
        make_fill(n, r);
        changed = true;
        continue;
      }
      if (n.kind == K::select && n.inputs[1] == n.inputs[2]) {
        const ir::ValueRef a = n.inputs[1];
        double v = 0;
        if (a.index == 0 && uniform(g, g.node(a.node), &v)) {
          make_fill(n, v);
          changed = true;
        } else if (g.type(a).shape == n.outputs[0].shape) {
          aliases.push_back({{n.id, 0}, a});
        }
        continue;
      }
      if ((n.kind == K::add || n.kind == K::sub) && is_floating(n.outputs[0].dtype)) {
        // x + 0, 0 + x, x - 0 -> x (only -0.0 + 0 differs: it gives -0.0 instead of +0.0).
        for (int side = 0; side < 2; ++side) {
          if (n.kind == K::sub && side == 0) continue;
          const ir::ValueRef z = n.inputs[side], x = n.inputs[1 - side];
          double v = 1;
          if (z.index == 0 && uniform(g, g.node(z.node), &v) && v == 0 && g.type(x).shape == n.outputs[0].shape &&
              g.type(x).dtype == n.outputs[0].dtype) {
            aliases.push_back({{n.id, 0}, x});
            break;
          }
        }
        continue;
      }
      if (n.kind == K::mul && is_floating(n.outputs[0].dtype)) {
        for (int side = 0; side < 2; ++side) {
          const ir::ValueRef z = n.inputs[side], x = n.inputs[1 - side];
          double v = 1;
          const ir::Node& xn = g.node(x.node);
          bool x_is_bool_cast = xn.kind == K::cast && g.type(xn.inputs[0]).dtype == DType::bool_;
          if (z.index == 0 && uniform(g, g.node(z.node), &v) && v == 0 && x_is_bool_cast) {
            make_fill(n, 0.0);
            changed = true;
            break;
          }
        }
      }
      continue;
    }
    if (n.kind == K::reduce_sum && n.inputs.size() == 1 && n.inputs[0].index == 0) {
      double v = 0;
      const TensorType& in = g.type(n.inputs[0]);
      if (!uniform(g, g.node(n.inputs[0].node), &v) || !is_static(in.shape) || v != std::floor(v)) continue;
      const double count = static_cast<double>(num_elements(in.shape)) /
                           std::max<double>(1.0, static_cast<double>(num_elements(n.outputs[0].shape)));
      const double total = v * count;
      const double exact = in.dtype == DType::f64 ? 9007199254740992.0 : in.dtype == DType::f32 ? 16777216.0 : 0;
      if (std::fabs(total) <= exact) {
        make_fill(n, total);
        changed = true;
      }
    }
  }
  if (!aliases.empty()) {
    auto resolve = [&](ir::ValueRef v) {
      for (bool again = true; again;) {
        again = false;
        for (const auto& [from, to] : aliases) {
          if (v == from) {
            v = to;
            again = true;
          }
        }
      }
      return v;
    };
    for (ir::Node& n : g.nodes()) {
      for (ir::ValueRef& in : n.inputs) in = resolve(in);
    }
    for (ir::ValueRef& r : roots) r = resolve(r);
    changed = true;
  }
  return changed;
}

}  // namespace

bool simplify(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep,
              const ScalarEvaluator& eval) {
  bool changed = run_on_region_bodies(g, [&](ir::Graph& body, std::vector<ir::ValueRef>& r, std::vector<int>& ro,
                                              std::vector<int>& k) { return simplify(body, r, ro, k, eval); });
  if (simplify_graph(g, roots, eval)) {
    eliminate_dead_code(g, roots, root_ops, keep);
    changed = true;
  }
  return changed;
}

}  // namespace tg::passes
