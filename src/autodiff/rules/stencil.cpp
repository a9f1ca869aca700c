// Vector-Jacobian rule of the stencil op. From the static shapes and attributes it builds, when
// the graph is built, a constant index table reads[o, j] = flat source element (within one batch
// block) read by output position o at window offset j, or a dummy slot holding the boundary
// constant for zero/constant reads. The window values are then v = gather(x_ext, reads) with
// x_ext = [x, boundary] per batch; y = reduce_j(v * w). The cotangent dp of each product
// p_j = v_j * w_j (sum: the output cotangent; product: times the product of the other p;
// min/max: only at the arg index) gives dw = sum(dp * v) and dx = scatter-add of dp * w at reads
// (the dummy slot is dropped). Needs static shapes.
//
// Sums with unit strides (the common case) take the transposed stencil instead, at the forward's
// bandwidth: the stencil reads the source padded by its boundary mode, xp = pad(x), so
// dxp = stencil(ct, reverse(w)) with zero boundary and (extent - 1) padding on both sides (a full
// correlation with the flipped window; its output has xp's shape) and dx = pad's adjoint at dxp
// (the interior, plus the mirrored / wrapped border positions added back where they were read;
// rules/shape.cpp). dw[j] = sum(ct * the slice of xp that tap j reads), one fused reduction a tap.
#include <algorithm>
#include <limits>

#include "ops/boundary.h"
#include "autodiff/rules.h"
#include "core/error_util.h"

namespace tg::autodiff {
namespace {

int64_t map_coord(int64_t p, int64_t n, BoundaryMode mode) { return ops::boundary_index(p, n, mode); }

struct WindowDim {
  int64_t in, out, win, stride, dilation, before, src_stride;
};


std::vector<WindowDim> window_dims(const StencilDesc& d, const Shape& xs, const Shape& ws,
                                   const Shape& ys) {
  const size_t k = ws.size(), lead = xs.size() - k;
  std::vector<WindowDim> dims(k);
  int64_t src_stride = 1;
  for (size_t i = k; i-- > 0;) {
    WindowDim& w = dims[i];
    w = {xs[lead + i], ys[lead + i], ws[i], d.strides.at(i), d.dilations.at(i), 0, src_stride};
    w.before = ops::stencil_pad_before(d, static_cast<size_t>(i), w.in, w.out, w.win);
    src_stride *= w.in;
  }
  return dims;
}

// Advances a row-major multi-index whose dim i has size dims[i].*size.
void advance(std::vector<int64_t>& index, const std::vector<WindowDim>& dims,
             int64_t WindowDim::*size) {
  for (size_t i = index.size(); i-- > 0;) {
    if (++index[i] < dims[i].*size) return;
    index[i] = 0;
  }
}

// reads[o * window + j]: the flat source element (in one batch block) that output position o
// reads at window offset j, or `dummy` for a boundary constant.
std::vector<int64_t> read_table(const std::vector<WindowDim>& dims, BoundaryMode mode,
                                int64_t outputs, int64_t window, int64_t dummy) {
  const size_t k = dims.size();
  std::vector<std::vector<int64_t>> coord(k);  // coord[i][o * win + j]
  for (size_t i = 0; i < k; ++i) {
    const WindowDim& w = dims[i];
    for (int64_t o = 0; o < w.out; ++o) {
      for (int64_t j = 0; j < w.win; ++j) {
        coord[i].push_back(map_coord(o * w.stride + j * w.dilation - w.before, w.in, mode));
      }
    }
  }
  std::vector<int64_t> reads(static_cast<size_t>(outputs * window));
  std::vector<int64_t> o(k, 0);
  for (int64_t e = 0; e < outputs; ++e, advance(o, dims, &WindowDim::out)) {
    std::vector<int64_t> j(k, 0);
    for (int64_t n = 0; n < window; ++n, advance(j, dims, &WindowDim::win)) {
      int64_t flat = 0;
      bool outside = false;
      for (size_t i = 0; i < k; ++i) {
        int64_t c = coord[i][static_cast<size_t>(o[i] * dims[i].win + j[i])];
        outside = outside || c < 0;
        flat += c * dims[i].src_stride;
      }
      reads[static_cast<size_t>(e * window + n)] = outside ? dummy : flat;
    }
  }
  return reads;
}

// The table as an i32 (when it fits) or i64 constant of shape [outputs, window].
Tensor read_constant(Graph& g, const std::vector<int64_t>& reads, int64_t outputs, int64_t window,
                     int64_t dummy) {
  if (dummy <= std::numeric_limits<int32_t>::max()) {
    std::vector<int32_t> narrow(reads.begin(), reads.end());
    return g.constant(TensorData::from_vector<int32_t>(narrow, {outputs, window}));
  }
  return g.constant(TensorData::from_vector<int64_t>(reads, {outputs, window}));
}

// Cotangent of each window product p[b, o, j] = v * w, from the output cotangent ct [B, O, 1].
Tensor product_cotangent(VjpContext& c, Tensor p, Tensor ct, int64_t window) {
  const auto& d = c.attrs<StencilDesc>();
  const DType t = p.dtype();
  Tensor zero = c.graph.constant(0.0, t), one = c.graph.constant(1.0, t);
  switch (d.reduction) {
    case StencilReduction::sum:
      return ct;
    case StencilReduction::product: {
      // Product of the other factors, without dividing by zero.
      Tensor is_zero = equal(p, zero);
      Tensor safe = select(is_zero, one, p);
      ReduceDesc over_window{.axes = {2}, .keep_dims = true};
      Tensor nonzero_prod = reduce_prod(safe, over_window);
      Tensor zeros = reduce_sum(cast(is_zero, t), over_window);
      Tensor others = select(is_zero, select(equal(zeros, one), nonzero_prod, zero),
                             select(equal(zeros, zero), nonzero_prod / safe, zero));
      return ct * others;
    }
    default: {  // min, max: the first window offset attaining the result
      StencilDesc arg = d;
      arg.reduction = d.reduction == StencilReduction::min ? StencilReduction::argmin
                                                           : StencilReduction::argmax;
      Shape s = p.shape();
      Tensor at = reshape(stencil(c.inputs[0], c.inputs[1], arg), {s[0], s[1], 1});
      Tensor hit = equal(iota(c.graph, {1, 1, window}, 2, DType::i32), at);
      return select(hit, ct, zero);
    }
  }
}

PadMode pad_mode(BoundaryMode m) {
  switch (m) {
    case BoundaryMode::reflect: return PadMode::reflect;
    case BoundaryMode::symmetric: return PadMode::symmetric;
    case BoundaryMode::clamp_to_edge: return PadMode::edge;
    case BoundaryMode::periodic: return PadMode::periodic;
    default: return PadMode::constant;
  }
}

// The transposed-stencil rule (see the top) for sum with unit strides; false when it does not
// apply (other strides, a padding after the outputs' reach that is negative, reflect over a dim of
// size 1, which pad does not mirror).
bool transposed_sum_rule(VjpContext& c, const std::vector<WindowDim>& dims) {
  const auto& d = c.attrs<StencilDesc>();
  Tensor x = c.inputs[0], w = c.inputs[1], ct = c.cotangents[0];
  const Shape& xs = x.shape();
  const size_t k = dims.size(), lead = xs.size() - k;
  PadDesc pd{Shape(xs.size(), 0), Shape(xs.size(), 0), pad_mode(d.boundary_mode),
             d.boundary_mode == BoundaryMode::constant ? d.padding_constant : 0.0};
  StencilDesc t;  // the transposed stencil
  t.reduction = StencilReduction::sum;
  t.boundary_mode = BoundaryMode::zero;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < k; ++i) {
    const WindowDim& wd = dims[i];
    const int64_t extent = (wd.win - 1) * wd.dilation + 1;
    const int64_t after = wd.out + extent - 1 - wd.before - wd.in;
    if (wd.stride != 1 || after < 0 || wd.before < 0) return false;
    if (d.boundary_mode == BoundaryMode::reflect && wd.in == 1 && (wd.before > 0 || after > 0)) return false;
    pd.before[lead + i] = wd.before;
    pd.after[lead + i] = after;
    t.strides.push_back(1);
    t.dilations.push_back(wd.dilation);
    t.explicit_padding.push_back(extent - 1);
    t.explicit_padding.push_back(extent - 1);
    axes.push_back(static_cast<int64_t>(i));
  }
  Tensor dxp = stencil(ct, reverse(w, axes), t);  // xp's shape
  c.input_cotangents[0] = pad_adjoint(c.graph, dxp, xs, pd);
  // dw: tap j reads xp[o + j * dilation] for every output o.
  Tensor xp = pad(x, pd);
  const Shape& ws = w.shape();
  const int64_t window = num_elements(ws);
  std::vector<Tensor> taps;
  std::vector<int64_t> j(k, 0), all_axes;
  for (size_t a = 0; a < xs.size(); ++a) all_axes.push_back(static_cast<int64_t>(a));
  for (int64_t n = 0; n < window; ++n) {
    SliceDesc s;
    for (size_t i = 0; i < k; ++i) {
      s.axes.push_back(static_cast<int64_t>(lead + i));
      s.begin.push_back(j[i] * dims[i].dilation);
      s.end.push_back(j[i] * dims[i].dilation + dims[i].out);
    }
    taps.push_back(reshape(reduce_sum(ct * slice(xp, s), {.axes = all_axes}), {1}));
    for (size_t i = k; i-- > 0;) {
      if (++j[i] < dims[i].win) break;
      j[i] = 0;
    }
  }
  c.input_cotangents[1] = reshape(taps.size() == 1 ? taps[0] : concat(taps, 0), ws);
  return true;
}

void stencil_rule(VjpContext& c) {
  Tensor x = c.inputs[0], w = c.inputs[1], ct = c.cotangents[0];
  const auto& d = c.attrs<StencilDesc>();
  if (!ct.valid() || !is_floating(x.dtype()) || d.reduction == StencilReduction::argmin ||
      d.reduction == StencilReduction::argmax) {
    return;
  }
  const Shape &xs = x.shape(), &ws = w.shape(), &ys = c.outputs[0].shape();
  if (!is_static(xs) || !is_static(ws) || !is_static(ys)) {
    fail(ErrorCode::unsupported, "gradients",
         "stencil needs static shapes for its gradient (source {}, weights {})",
         x.type().to_string(), w.type().to_string());
  }
  const std::vector<WindowDim> dims = window_dims(d, xs, ws, ys);
  int64_t block = 1, outputs = 1;
  for (const WindowDim& dim : dims) {
    block *= dim.in;
    outputs *= dim.out;
  }
  if (num_elements(ys) == 0) {  // nothing read
    c.input_cotangents[0] = zeros_like(x);
    c.input_cotangents[1] = zeros_like(w);
    return;
  }
  if (d.reduction == StencilReduction::sum && transposed_sum_rule(c, dims)) return;
  const int64_t window = num_elements(ws), batch = num_elements(ys) / outputs;
  Graph& g = c.graph;
  Tensor reads = read_constant(g, read_table(dims, d.boundary_mode, outputs, window, block),
                               outputs, window, block);
  const double boundary = d.boundary_mode == BoundaryMode::constant ? d.padding_constant : 0.0;
  Tensor x_ext = concat({reshape(x, {batch, block}), fill(g, {batch, 1}, boundary, x.dtype())}, 1);
  Tensor v = gather(x_ext, reads, {.axis = 1});  // [batch, outputs, window]
  Tensor wf = reshape(w, {1, 1, window});
  Tensor dp = product_cotangent(c, v * wf, reshape(ct, {batch, outputs, 1}), window);
  c.input_cotangents[1] = reshape(reduce_sum(dp * v, {.axes = {0, 1}}), ws);
  Tensor dv = reshape(dp * wf, {batch, outputs * window});
  Tensor targets = broadcast_to(reshape(reads, {1, outputs * window}), {batch, outputs * window});
  Tensor dx = scatter_elements(zeros_like(x_ext), targets, dv,
                               {.axis = 1, .reduction = ScatterReduction::add});
  c.input_cotangents[0] = reshape(slice(dx, {.begin = {0}, .end = {block}, .axes = {1}}), xs);
}

}  // namespace

void register_stencil_rules(RuleTable& t) { t.set(ir::OpKind::stencil, stencil_rule); }

}  // namespace tg::autodiff
