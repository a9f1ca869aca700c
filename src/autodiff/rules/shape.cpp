// Vector-Jacobian rules of the shape op family: each is the adjoint data movement.
//   broadcast_to -> unbroadcast (sum over the stretched dims); reshape -> reshape back;
//   transpose -> transpose by the inverse permutation; slice -> the cotangent placed back into
//   zeros (pad for strides +-1, scatter_elements add otherwise); pad -> the interior slice, onto
//   which (modes other than constant) every padded border position is scatter_elements-added at
//   the input index it copies, so every mirrored / wrapped copy of pads of any width accumulates
//   (the index map is computed from the static dim when the gradient is built); concat -> slices;
//   reverse -> reverse; tile -> reshape to [m0, d0, m1, d1, ...] and sum over the m axes.
#include <algorithm>

#include "ops/boundary.h"
#include "autodiff/rules.h"
#include "core/error_util.h"
#include "ops/builder.h"

namespace tg::autodiff {
namespace {

using ir::OpKind;

/// Raises tg::Error(unsupported) for a rule that needs dim `axis` of the input to be static.
[[noreturn]] void dynamic_dim(const VjpContext& c, int64_t axis) {
  fail(ErrorCode::unsupported, "gradients",
       "the gradient of '{}' (node %{}) needs dim {} of its input {} to be static",
       ir::op_name(c.node.kind), c.outputs[0].node_id(), axis, str(c.inputs[0].shape()));
}

/// True when the rule has to run: a cotangent flows in and input 0 is floating.
bool wants_gradient(const VjpContext& c) {
  return c.cotangents[0].valid() && is_floating(c.inputs[0].dtype());
}

/// Zeros of g's dtype and shape, except `dim` along `axis` (g's own dim there must be static).
Tensor zeros_with_dim(Graph& graph, Tensor g, int64_t axis, int64_t dim) {
  Shape shape = g.shape();
  const int64_t have = shape[static_cast<size_t>(axis)];
  shape[static_cast<size_t>(axis)] = dim;
  if (is_static(shape)) return fill(graph, shape, 0.0, g.dtype());
  Tensor z = zeros_like(g);  // dynamic elsewhere: resize the static axis of a zero tensor
  if (have >= dim) return slice(z, {.begin = {0}, .end = {dim}, .axes = {axis}});
  PadDesc p{Shape(shape.size(), 0), Shape(shape.size(), 0)};
  p.after[static_cast<size_t>(axis)] = dim - have;
  return pad(z, p);
}

/// The adjoint of gathering along `axis` with a constant index map (`map[p]` = the index read by
/// position p of g along `axis`): adds each g[..., p, ...] onto into[..., map[p], ...]. One
/// scatter_elements add: the index tensor is the map broadcast to g's shape.
Tensor scatter_add_along_axis(Graph& graph, Tensor into, Tensor g, int64_t axis,
                              const std::vector<int64_t>& map) {
  Shape map_shape(g.shape().size(), 1);
  map_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(map.size());
  Tensor indices = graph.constant(TensorData::from_vector<int64_t>(map, map_shape));
  indices = is_static(g.shape()) ? broadcast_to(indices, g.shape())
                                 : add(indices, cast(zeros_like(g), DType::i64));
  return scatter_elements(into, indices, g, {.axis = axis, .reduction = ScatterReduction::add});
}

void broadcast_to_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  c.input_cotangents[0] = unbroadcast(c.cotangents[0], c.inputs[0].shape());
}

void reshape_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  c.input_cotangents[0] = reshape(c.cotangents[0], c.inputs[0].shape());
}

void transpose_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const auto& perm = c.attrs<ir::TransposeAttrs>().perm;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  c.input_cotangents[0] = transpose(c.cotangents[0], inverse);
}

// slice: along each sliced axis the output position k reads input index start + k * stride.
void slice_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const SliceDesc& d = c.attrs<SliceDesc>();
  const Shape& in = c.inputs[0].shape();
  Tensor g = c.cotangents[0];
  PadDesc zeros_around{Shape(in.size(), 0), Shape(in.size(), 0)};
  bool padded = false;
  for (size_t i = 0; i < d.axes.size(); ++i) {
    const int64_t axis = d.axes[i], stride = d.strides[i];
    const int64_t dim = in[static_cast<size_t>(axis)];
    if (dim < 0) dynamic_dim(c, axis);
    int64_t start = 0, length = 0;
    ops::resolve_slice_dim(d.begin[i], d.end[i], stride, dim, &start, &length);
    if (length == 0) {  // nothing read along this axis: the whole gradient is zero
      c.input_cotangents[0] = zeros_like(c.inputs[0]);
      return;
    }
    if (stride == 1 || stride == -1) {
      if (stride == -1) {
        g = reverse(g, {axis});
        start -= length - 1;  // the lowest index read
      }
      zeros_around.before[static_cast<size_t>(axis)] = start;
      zeros_around.after[static_cast<size_t>(axis)] = dim - start - length;
      padded = true;
    } else {
      std::vector<int64_t> map(static_cast<size_t>(length));
      for (int64_t k = 0; k < length; ++k) map[static_cast<size_t>(k)] = start + k * stride;
      g = scatter_add_along_axis(c.graph, zeros_with_dim(c.graph, g, axis, dim), g, axis, map);
    }
  }
  c.input_cotangents[0] = padded ? pad(g, zeros_around) : g;
}

/// The input index read by padded position p (relative to the input's start), or -1 for the
/// constant mode; shared with the CPU kernel (ops::boundary_index).
int64_t pad_source(int64_t p, int64_t dim, PadMode mode) {
  return ops::boundary_index(p, dim, ops::boundary_of(mode));
}

/// The adjoint of a non-constant pad along one axis of static size `dim`: the interior slice of
/// g, onto which the border positions are scatter-added at the input indices they copy.
Tensor unpad_axis(Graph& graph, Tensor g, int64_t axis, int64_t dim, int64_t before, int64_t after,
                  PadMode mode) {
  auto piece = [&](int64_t b, int64_t e) {
    return slice(g, {.begin = {b}, .end = {e}, .strides = {1}, .axes = {axis}});
  };
  std::vector<int64_t> map;
  std::vector<Tensor> border;
  if (before > 0) border.push_back(piece(0, before));
  if (after > 0) border.push_back(piece(before + dim, kSliceEnd));
  for (int64_t k = -before; k < 0; ++k) map.push_back(pad_source(k, dim, mode));
  for (int64_t k = dim; k < dim + after; ++k) map.push_back(pad_source(k, dim, mode));
  Tensor copies = border.size() == 1 ? border[0] : concat(border, axis);
  return scatter_add_along_axis(graph, piece(before, before + dim), copies, axis, map);
}

void pad_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const PadDesc& p = c.attrs<PadDesc>();
  const Shape& in = c.inputs[0].shape();
  if (p.mode != PadMode::constant) {
    for (size_t i = 0; i < in.size(); ++i) {
      if ((p.before[i] != 0 || p.after[i] != 0) && in[i] < 0) dynamic_dim(c, static_cast<int64_t>(i));
    }
  }
  c.input_cotangents[0] = pad_adjoint(c.graph, c.cotangents[0], in, p);
}

/// concat: input k's gradient is its slice of the cotangent. Offsets are counted from the start
/// while the dims before k are static, else from the end (so one dynamic input is fine).
void concat_rule(VjpContext& c) {
  if (!c.cotangents[0].valid() || !is_floating(c.inputs[0].dtype())) return;
  const int64_t axis = c.attrs<ir::ConcatAttrs>().axis;
  const size_t n = c.inputs.size();
  std::vector<int64_t> len(n);
  for (size_t k = 0; k < n; ++k) len[k] = c.inputs[k].shape()[static_cast<size_t>(axis)];
  for (size_t k = 0; k < n; ++k) {
    int64_t before = 0, after = 0;
    bool before_static = true, after_static = true;
    for (size_t j = 0; j < k; ++j) {
      before_static = before_static && len[j] >= 0;
      before += len[j];
    }
    for (size_t j = k + 1; j < n; ++j) {
      after_static = after_static && len[j] >= 0;
      after += len[j];
    }
    SliceDesc s{.begin = {0}, .end = {0}, .strides = {1}, .axes = {axis}};
    if (len[k] == 0) {
      // An empty piece: slice [0, 0).
    } else if (before_static && len[k] >= 0) {
      s.begin[0] = before;
      s.end[0] = before + len[k];
    } else if (after_static && (len[k] >= 0 || before_static)) {
      s.begin[0] = len[k] >= 0 ? -(after + len[k]) : before;
      s.end[0] = after == 0 ? kSliceEnd : -after;
    } else {
      fail(ErrorCode::unsupported, "gradients",
           "the gradient of 'concat' (node %{}) cannot locate input {} along axis {}: several "
           "inputs have a dynamic dim there",
           c.outputs[0].node_id(), k, axis);
    }
    c.input_cotangents[k] = slice(c.cotangents[0], s);
  }
}

void reverse_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  c.input_cotangents[0] = reverse(c.cotangents[0], c.attrs<ir::ReverseAttrs>().axes);
}

/// tile: y viewed as [m0, d0, m1, d1, ...]; x's gradient sums over the m axes.
void tile_rule(VjpContext& c) {
  if (!wants_gradient(c)) return;
  const auto& m = c.attrs<ir::TileAttrs>().multiples;
  const Shape& in = c.inputs[0].shape();
  Shape split;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] < 0 && m[i] != 1) dynamic_dim(c, static_cast<int64_t>(i));
    axes.push_back(static_cast<int64_t>(split.size()));
    split.push_back(m[i]);
    split.push_back(in[i]);
  }
  if (in.empty()) {
    c.input_cotangents[0] = c.cotangents[0];
    return;
  }
  c.input_cotangents[0] = reduce_sum(reshape(c.cotangents[0], split), {.axes = axes});
}

}  // namespace

Tensor pad_adjoint(Graph& graph, Tensor g, const Shape& in, const PadDesc& p) {
  if (p.mode == PadMode::constant) {  // the interior; works for dynamic dims too
    SliceDesc s;
    for (size_t i = 0; i < in.size(); ++i) {
      s.axes.push_back(static_cast<int64_t>(i));
      s.begin.push_back(p.before[i]);
      s.end.push_back(p.after[i] == 0 ? kSliceEnd : -p.after[i]);
    }
    return in.empty() ? g : slice(g, s);
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (p.before[i] == 0 && p.after[i] == 0) continue;
    g = unpad_axis(graph, g, static_cast<int64_t>(i), in[i], p.before[i], p.after[i], p.mode);
  }
  return g;
}

void register_shape_rules(RuleTable& t) {
  t.set(OpKind::broadcast_to, broadcast_to_rule);
  t.set(OpKind::reshape, reshape_rule);
  t.set(OpKind::transpose, transpose_rule);
  t.set(OpKind::slice, slice_rule);
  t.set(OpKind::pad, pad_rule);
  t.set(OpKind::concat, concat_rule);
  t.set(OpKind::reverse, reverse_rule);
  t.set(OpKind::tile, tile_rule);
}

}  // namespace tg::autodiff
