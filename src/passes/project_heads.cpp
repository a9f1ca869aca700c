// Head-major projections (passes.h: project_heads), for attention at batch 1. A transformer splits
// a projection Y = X @ W (+ b) of X [L, K] into heads and moves the head dim first:
//   transpose(reshape(Y, [1.., L, H, D]), [.., 1, 0, 2])        -> [1.., H, L, D]
// (Hugging Face BERT's query/key/value: view(1, L, 12, 64).transpose(1, 2)). With W and b
// constants this is
//   reshape(matmul(X, Wh) (+ bh), [1.., H, L, D]),  Wh[h, k, d] = W[k, h*D + d], bh[h, 0, d] = b[h*D + d]
// one strided-batched GEMM (X read by every head: batch stride 0) that writes the heads in place,
// so the transpose kernel goes (its copy of the projection) and the bias add stays elementwise.
// Wh and bh are new constants (W and b reordered at compile time). Values are the same products
// and sums (the GEMM may order a dot product's terms differently, as any other algorithm choice).
//
// Matched, all static: T = transpose with that permutation of a chain of reshapes of Y = add(M, c)
// or add(c, M) or M; M = matmul(X [L, K], B) without transpose_a, B a constant [K, N] ([N, K] with
// transpose_b), c a constant of N elements (all dims but the last 1), N = H * D, Y [L, N]; every
// value on the chain read once (by the next), no control inputs. Run after fold_constants (a
// weight's transpose is a constant by then) and before fusion.
#include <cstring>
#include <map>
#include <optional>

#include "passes/passes.h"
#include "passes/splice.h"
#include "passes/readers.h"

namespace tg::passes {
namespace {

struct Match {
  int transpose = -1;
  ir::ValueRef x;        // the matmul's A, [L, K]
  TensorData weight;     // [H, K, D]
  TensorData bias;       // [H, 1, D]; empty without a bias
  bool has_bias = false;
  bool bias_first = false;  // add(c, M)
  int64_t heads = 0, rows = 0, depth = 0;
  DType dtype = DType::f32;
};

const TensorData* constant_value(const ir::Graph& g, ir::ValueRef v) {
  const ir::Node& n = g.node(v.node);
  if (n.kind != ir::OpKind::constant || !n.control_inputs.empty()) return nullptr;
  const TensorData& t = std::get<ir::ConstantAttrs>(n.attrs).value;
  return t.device().is_cpu() ? &t : nullptr;
}

bool plain(const ir::Node& n) { return n.control_inputs.empty() && n.regions.empty() && n.outputs.size() == 1; }

bool read_once(const ReaderCounts& r, ir::ValueRef v) {
  auto it = r.find(v);
  return it != r.end() && it->second == 1;
}

std::optional<Match> match(const ir::Graph& g, const ir::Node& t, const ReaderCounts& readers) {
  if (t.kind != ir::OpKind::transpose || !plain(t) || t.inputs.size() != 1) return std::nullopt;
  const Shape& s = g.type(t.inputs[0]).shape;
  if (s.size() < 3 || !is_static(s)) return std::nullopt;
  const size_t z = s.size() - 3;  // leading size-1 dims
  for (size_t i = 0; i < z; ++i) {
    if (s[i] != 1) return std::nullopt;
  }
  const auto& perm = std::get<ir::TransposeAttrs>(t.attrs).perm;
  for (size_t i = 0; i < z; ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return std::nullopt;
  }
  const auto zi = static_cast<int64_t>(z);
  if (perm[z] != zi + 1 || perm[z + 1] != zi || perm[z + 2] != zi + 2) return std::nullopt;
  Match m;
  m.transpose = t.id;
  m.rows = s[z];
  m.heads = s[z + 1];
  m.depth = s[z + 2];
  if (m.rows < 2 || m.heads < 2) return std::nullopt;
  const int64_t n = m.heads * m.depth;
  // The reshapes down to Y.
  ir::ValueRef v = t.inputs[0];
  int reshapes = 0;
  while (g.node(v.node).kind == ir::OpKind::reshape) {
    const ir::Node& r = g.node(v.node);
    if (!plain(r) || !read_once(readers, v)) return std::nullopt;
    v = r.inputs[0];
    ++reshapes;
  }
  if (reshapes == 0 || g.type(v).shape != Shape{m.rows, n} || !read_once(readers, v)) return std::nullopt;
  const ir::Node* y = &g.node(v.node);
  m.dtype = y->outputs[0].dtype;
  if (!is_floating(m.dtype)) return std::nullopt;
  if (y->kind == ir::OpKind::add) {
    if (!plain(*y)) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const TensorData* c = constant_value(g, y->inputs[static_cast<size_t>(side)]);
      const ir::ValueRef other = y->inputs[static_cast<size_t>(1 - side)];
      if (c == nullptr || g.node(other.node).kind != ir::OpKind::matmul) continue;
      const Shape& cs = c->shape();
      bool row = !cs.empty() && cs.back() == n && c->dtype() == m.dtype;
      for (size_t i = 0; row && i + 1 < cs.size(); ++i) row = cs[i] == 1;
      if (!row || g.type(other).shape != Shape{m.rows, n} || !read_once(readers, other)) continue;
      m.has_bias = true;
      m.bias_first = side == 0;
      m.bias = c->reshaped({m.heads, 1, m.depth});
      y = &g.node(other.node);
      break;
    }
    if (!m.has_bias) return std::nullopt;
  }
  if (y->kind != ir::OpKind::matmul || !plain(*y)) return std::nullopt;
  const auto& desc = std::get<MatmulDesc>(y->attrs);
  const TensorData* w = constant_value(g, y->inputs[1]);
  const TensorType& a = g.type(y->inputs[0]);
  if (desc.transpose_a || w == nullptr || w->dtype() != m.dtype || a.rank() != 2 || a.shape[0] != m.rows) {
    return std::nullopt;
  }
  const int64_t k = a.shape[1];
  if (w->shape() != (desc.transpose_b ? Shape{n, k} : Shape{k, n})) return std::nullopt;
  m.x = y->inputs[0];
  // Wh[h, k, d] = B[k, h*D + d], B = W or W^T.
  m.weight = TensorData({m.heads, k, m.depth}, m.dtype);
  const size_t es = dtype_size(m.dtype);
  const auto* src = static_cast<const uint8_t*>(w->raw_data());
  auto* dst = static_cast<uint8_t*>(m.weight.raw_data());
  for (int64_t h = 0; h < m.heads; ++h) {
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t d = 0; d < m.depth; ++d) {
        const int64_t col = h * m.depth + d;
        const int64_t from = desc.transpose_b ? col * k + kk : kk * n + col;
        std::memcpy(dst + static_cast<size_t>((h * k + kk) * m.depth + d) * es, src + static_cast<size_t>(from) * es,
                    es);
      }
    }
  }
  return m;
}

ir::Node make(ir::OpKind kind, std::vector<ir::ValueRef> inputs, ir::Attrs attrs, TensorType out,
              std::string name = "") {
  ir::Node n;
  n.kind = kind;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.outputs = {std::move(out)};
  n.name = std::move(name);
  return n;
}

void rewrite(ir::Graph& g, Match m, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
             std::vector<int>& keep) {
  const TensorType out_type = g.node(m.transpose).outputs[0];
  const std::string name = g.node(m.transpose).name;
  const Shape head_shape{m.heads, m.rows, m.depth};
  const Shape weight_shape = m.weight.shape();
  Splice sp(g, m.transpose);  // moves the nodes before the transpose out of g
  const int w = sp.append(make(ir::OpKind::constant, {}, ir::ConstantAttrs{std::move(m.weight)},
                               {weight_shape, m.dtype}));
  ir::ValueRef y{sp.append(make(ir::OpKind::matmul, {sp.outer(m.x), {w, 0}}, MatmulDesc{}, {head_shape, m.dtype})),
                 0};
  if (m.has_bias) {
    const ir::ValueRef b{sp.append(make(ir::OpKind::constant, {}, ir::ConstantAttrs{std::move(m.bias)},
                                        {{m.heads, 1, m.depth}, m.dtype})),
                         0};
    y = {sp.append(make(ir::OpKind::add, m.bias_first ? std::vector{b, y} : std::vector{y, b}, ir::NoAttrs{},
                        {head_shape, m.dtype})),
         0};
  }
  const int r = sp.append(make(ir::OpKind::reshape, {y}, ir::ReshapeAttrs{out_type.shape}, out_type, name));
  sp.finish({ir::ValueRef{r, 0}}, {r}, roots, root_ops, keep);
}

}  // namespace

bool project_heads(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                   std::vector<int>& keep) {
  bool changed = false;
  for (int start = 0;;) {  // one rewrite at a time (a splice renumbers the nodes after its target)
    const ReaderCounts readers = count_readers(g, roots);
    std::optional<Match> m;
    for (int id = start; id < g.size() && !m; ++id) m = match(g, g.node(id), readers);
    if (!m) break;
    start = m->transpose;  // nodes before it keep their ids and did not match
    rewrite(g, std::move(*m), roots, root_ops, keep);
    changed = true;
  }
  if (changed) eliminate_dead_code(g, roots, root_ops, keep);
  return changed;
}

}  // namespace tg::passes
