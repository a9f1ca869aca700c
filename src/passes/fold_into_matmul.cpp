// Folding into matmuls (passes.h: fold_into_matmul), after project_heads, before fusion: what an
// attention layer does to its projections between the GEMMs, done by the GEMMs instead.
//   - A scalar scale of a projection by constant weights, mul(V, c) or mul(c, V) with c one finite
//     nonzero float element (f32, f64) and V = M, or add(M, b) with b a constant, through reshapes and transposes (each
//     read once), M = matmul(X, W) with W a constant read only there: W (and b) are multiplied by
//     c at compile time and the mul goes (PyTorch's scaled_dot_product_attention decomposed scales
//     q and k by sqrt(scale) each: two kernels a layer). x.(w c) and (x.w) c round differently
//     (one rounding of each product), as any reassociation.
//   - A transpose of the last two dims feeding a matmul, through reshapes that keep those dims
//     (matmul(A, reshape(transpose(Y, [.., r-1, r-2]), [b.., m, n]))): the matmul reads Y with
//     transpose_b (transpose_a) flipped instead (reshape(Y, [b.., n, m])) and the transpose kernel
//     goes (k's transpose in q @ k^T). Exact: the same products.
// Values read by more than the chain, results and control edges are left alone. Then dead-code
// elimination.
#include <cmath>
#include <map>
#include <optional>

#include "passes/passes.h"
#include "passes/readers.h"

namespace tg::passes {
namespace {

bool read_once(const ReaderCounts& r, ir::ValueRef v) {
  auto it = r.find(v);
  return it != r.end() && it->second == 1;
}

bool plain(const ir::Node& n) { return n.control_inputs.empty() && n.regions.empty() && n.outputs.size() == 1; }

ir::Node* host_constant(ir::Graph& g, ir::ValueRef v) {
  ir::Node& n = g.node(v.node);
  if (n.kind != ir::OpKind::constant || !plain(n)) return nullptr;
  return std::get<ir::ConstantAttrs>(n.attrs).value.device().is_cpu() ? &n : nullptr;
}

std::optional<double> scalar_value(ir::Graph& g, ir::ValueRef v) {
  const ir::Node* n = host_constant(g, v);
  if (n == nullptr) return std::nullopt;
  const TensorData& t = std::get<ir::ConstantAttrs>(n->attrs).value;
  if (t.num_elements() != 1 || (t.dtype() != DType::f32 && t.dtype() != DType::f64)) return std::nullopt;
  return t.element_as_double(0);
}

/// t * c, f32 or f64 (a copy).
TensorData scaled(const TensorData& t, double c) {
  TensorData out(t.shape(), t.dtype());
  const int64_t n = t.num_elements();
  if (t.dtype() == DType::f32) {
    const float* s = t.data<float>();
    float* d = out.data<float>();
    const auto cf = static_cast<float>(c);
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] * cf;
  } else {
    const double* s = t.data<double>();
    double* d = out.data<double>();
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] * c;
  }
  return out;
}

/// Points every reader (and result) of `from` at `to`.
void replace_uses(ir::Graph& g, ir::ValueRef from, ir::ValueRef to, std::vector<ir::ValueRef>& roots) {
  for (ir::Node& n : g.nodes()) {
    for (ir::ValueRef& v : n.inputs) {
      if (v == from) v = to;
    }
  }
  for (ir::ValueRef& v : roots) {
    if (v == from) v = to;
  }
}

/// The scalar-scale rule at `mul`; true when it rewrote.
bool fold_scale(ir::Graph& g, ir::Node& mul, const ReaderCounts& readers, std::vector<ir::ValueRef>& roots) {
  if (mul.kind != ir::OpKind::mul || !plain(mul) || mul.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const std::optional<double> c = scalar_value(g, mul.inputs[static_cast<size_t>(side)]);
    const ir::ValueRef v = mul.inputs[static_cast<size_t>(1 - side)];
    const DType cdt = g.type(mul.inputs[static_cast<size_t>(side)]).dtype;
    if (!c || !std::isfinite(*c) || *c == 0 || g.type(v) != mul.outputs[0] || cdt != mul.outputs[0].dtype) continue;
    // Down through reshapes and transposes (a scalar scale commutes with them).
    ir::ValueRef u = v;
    bool ok = read_once(readers, u);
    while (ok && (g.node(u.node).kind == ir::OpKind::reshape || g.node(u.node).kind == ir::OpKind::transpose)) {
      ok = plain(g.node(u.node));
      u = g.node(u.node).inputs[0];
      ok = ok && read_once(readers, u);
    }
    if (!ok) continue;
    ir::Node* bias = nullptr;
    if (g.node(u.node).kind == ir::OpKind::add && plain(g.node(u.node))) {
      ir::Node& add = g.node(u.node);
      for (int s = 0; s < 2 && bias == nullptr; ++s) {
        ir::Node* b = host_constant(g, add.inputs[static_cast<size_t>(s)]);
        const ir::ValueRef m = add.inputs[static_cast<size_t>(1 - s)];
        if (b != nullptr && read_once(readers, add.inputs[static_cast<size_t>(s)]) &&
            g.node(m.node).kind == ir::OpKind::matmul && read_once(readers, m) && g.type(m) == add.outputs[0]) {
          bias = b;
          u = m;
        }
      }
      if (bias == nullptr) continue;
    }
    ir::Node& mm = g.node(u.node);
    if (mm.kind != ir::OpKind::matmul || !plain(mm)) continue;
    ir::Node* w = host_constant(g, mm.inputs[1]);
    const DType dt = mul.outputs[0].dtype;
    if (w == nullptr || !read_once(readers, mm.inputs[1]) || mm.outputs[0].dtype != dt) continue;
    auto& wv = std::get<ir::ConstantAttrs>(w->attrs).value;
    if (wv.dtype() != dt || (bias != nullptr && std::get<ir::ConstantAttrs>(bias->attrs).value.dtype() != dt)) continue;
    wv = scaled(wv, *c);
    if (bias != nullptr) {
      auto& bv = std::get<ir::ConstantAttrs>(bias->attrs).value;
      bv = scaled(bv, *c);
    }
    replace_uses(g, ir::ValueRef{mul.id, 0}, v, roots);
    mul.inputs.clear();  // dead now: no reader counts for what it read
    return true;
  }
  return false;
}

/// Through reshapes that keep the last two dims, to a transpose swapping (only) them; its input
/// and the reshapes' leading dims, or nullopt.
std::optional<ir::ValueRef> transposed_source(const ir::Graph& g, ir::ValueRef v, const ReaderCounts& readers) {
  const Shape& want = g.type(v).shape;
  if (want.size() < 2) return std::nullopt;
  while (g.node(v.node).kind == ir::OpKind::reshape) {
    const ir::Node& r = g.node(v.node);
    if (!plain(r) || !read_once(readers, v)) return std::nullopt;
    const Shape& in = g.type(r.inputs[0]).shape;
    if (in.size() < 2 || in[in.size() - 1] != want.back() || in[in.size() - 2] != want[want.size() - 2]) {
      return std::nullopt;
    }
    v = r.inputs[0];
  }
  const ir::Node& t = g.node(v.node);
  if (t.kind != ir::OpKind::transpose || !plain(t) || !read_once(readers, v)) return std::nullopt;
  const auto& perm = std::get<ir::TransposeAttrs>(t.attrs).perm;
  const size_t r = perm.size();
  if (r < 2) return std::nullopt;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return std::nullopt;
  }
  if (perm[r - 2] != static_cast<int64_t>(r - 1) || perm[r - 1] != static_cast<int64_t>(r - 2)) return std::nullopt;
  return t.inputs[0];
}

/// The transpose rule at `mm`: reshape nodes made here are appended at `mm`'s place by renumbering,
/// so instead the operand's existing reshape (if any) is re-pointed. True when it rewrote.
bool fold_transpose(ir::Graph& g, ir::Node& mm, const ReaderCounts& readers) {
  if (mm.kind != ir::OpKind::matmul || !plain(mm) || mm.inputs.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    ir::ValueRef operand = mm.inputs[static_cast<size_t>(side)];
    if (g.type(operand).rank() < 2) continue;
    const std::optional<ir::ValueRef> src = transposed_source(g, operand, readers);
    if (!src) continue;
    if (g.node(operand.node).kind == ir::OpKind::reshape) {
      // Re-point the reshape nearest the matmul at the transpose's input with the last two dims
      // swapped (the reshapes between only regroup the leading dims).
      ir::Node& r = g.node(operand.node);
      Shape s = r.outputs[0].shape;
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      r.inputs[0] = *src;
      r.attrs = ir::ReshapeAttrs{s};
      r.outputs[0].shape = s;
    } else {
      mm.inputs[static_cast<size_t>(side)] = *src;
    }
    auto& desc = std::get<MatmulDesc>(mm.attrs);
    if (side == 0) desc.transpose_a = !desc.transpose_a;
    else desc.transpose_b = !desc.transpose_b;
    return true;
  }
  return false;
}

}  // namespace

bool fold_into_matmul(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                      std::vector<int>& keep) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    const ReaderCounts readers = count_readers(g, roots);
    for (ir::Node& n : g.nodes()) {
      if (fold_scale(g, n, readers, roots) || fold_transpose(g, n, readers)) {
        again = changed = true;
        break;  // reader counts changed
      }
    }
  }
  if (changed) eliminate_dead_code(g, roots, root_ops, keep);
  return changed;
}

}  // namespace tg::passes
