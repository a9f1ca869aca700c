// Sampling ONNX ops: GridSample (2-d and 3-d; nearest, linear and cubic; zeros, border and
// reflection padding), following the operator's reference implementation (PyTorch's
// grid_sampler), and AffineGrid.
#include <cmath>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

// Reflects v into [lo, hi] by the nearest border, repeatedly.
Tensor reflect(Tensor v, double lo, double hi) {
  double rng = hi - lo;
  Tensor below = less(v, scalar_like(v, lo));
  Tensor above = greater(v, scalar_like(v, hi));
  Tensor dx = select(below, scalar_like(v, lo) - v, v - hi);
  Tensor n = floor(dx / rng);
  Tensor r = dx - n * rng;
  Tensor even = equal(floor_mod(n, scalar_like(n, 2)), scalar_like(n, 0));
  Tensor from_lo = scalar_like(v, lo) + r, from_hi = scalar_like(v, hi) - r;
  Tensor fixed_below = select(even, from_lo, from_hi);
  Tensor fixed_above = select(even, from_hi, from_lo);
  return select(below, fixed_below, select(above, fixed_above, v));
}

struct Tap {
  Tensor index;   // i64 [N, out...], clamped into the dim
  Tensor weight;  // float [N, out...], 0 where zeros padding reads outside
};

// The taps of one spatial dim: integer source positions and their weights.
std::vector<Tap> taps(NodeContext& c, Tensor v, int64_t dim, const std::string& mode,
                      const std::string& pad, double lo, double hi) {
  std::vector<Tensor> pos, w;
  if (mode == "nearest") {
    pos = {v};
    w = {scalar_like(v, 1)};
  } else {
    Tensor f = floor(v);
    Tensor t = v - f;
    if (mode == "linear") {
      pos = {f, f + 1.0};
      w = {scalar_like(t, 1) - t, t};
    } else {
      const double a = -0.75;
      Tensor t1 = t + 1.0, u = scalar_like(t, 1) - t, u1 = u + 1.0;
      pos = {f - 1.0, f, f + 1.0, f + 2.0};
      w = {((t1 * a - 5 * a) * t1 + 8 * a) * t1 - 4 * a, ((t * (a + 2)) - (a + 3)) * t * t + 1.0,
           ((u * (a + 2)) - (a + 3)) * u * u + 1.0, ((u1 * a - 5 * a) * u1 + 8 * a) * u1 - 4 * a};
    }
  }
  std::vector<Tap> out;
  Tensor zero = scalar_like(v, 0), top = scalar_like(v, static_cast<double>(dim - 1));
  for (size_t k = 0; k < pos.size(); ++k) {
    Tensor p = pos[k];
    Tensor weight = w[k];
    if (pad == "zeros") {
      Tensor inside = logical_and(greater_equal(p, zero), less_equal(p, top));
      weight = select(inside, weight, zero);
    } else if (pad == "reflection") {
      p = reflect(p, lo, hi);
    }
    Tensor idx = cast(clamp(p, zero, top), DType::i64);  // truncates, as int() does
    out.push_back({idx, weight});
  }
  return out;
}

}  // namespace

std::vector<Tensor> convert_grid_sample(NodeContext& c) {
  Tensor x = c.input(0), grid = c.input(1);
  int64_t nd = x.rank() - 2;
  if ((nd != 2 && nd != 3) || grid.rank() != x.rank() || grid.shape().back() != nd) {
    c.fail(ErrorCode::shape_mismatch, "X {} and grid {} must be [N, C, spatial...] and "
           "[N, out..., {}] with 2 or 3 spatial dims", str(x.shape()), str(grid.shape()), nd);
  }
  std::string mode = c.attr_string("mode", c.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    c.fail(ErrorCode::invalid_argument, "unknown mode '{}'", mode);
  }
  std::string pad = c.attr_string("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection") {
    c.fail(ErrorCode::invalid_argument, "unknown padding_mode '{}'", pad);
  }
  bool align = c.attr_int("align_corners", 0) != 0;
  DType dt = x.dtype();
  Tensor g = cast_to(grid, dt);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < nd; ++i) dims.push_back(c.static_dim(0, 2 + i));
  // Per spatial dim i (grid holds the coordinates in reverse order: x first).
  std::vector<std::vector<Tap>> per_dim;
  for (int64_t i = 0; i < nd; ++i) {
    int64_t comp = nd - 1 - i;
    Tensor n = squeeze(slice(g, {.begin = {comp}, .end = {comp + 1}, .axes = {g.rank() - 1}}),
                       {g.rank() - 1});
    auto d = static_cast<double>(dims[i]);
    Tensor v = align ? (n + 1.0) * ((d - 1) / 2) : ((n + 1.0) * d - 1.0) * 0.5;
    if (mode == "nearest") v = round(v);  // half to even (rint), as the reference
    double lo = align ? 0.0 : -0.5, hi = align ? d - 1 : d - 0.5;
    if (pad == "border") {
      // Only coordinates outside [lo, hi] are clamped (the taps clamp their indexes anyway).
      Tensor outside = logical_or(less(v, scalar_like(v, lo)), greater(v, scalar_like(v, hi)));
      v = select(outside, clamp(v, scalar_like(v, 0), scalar_like(v, d - 1)), v);
    } else if (pad == "reflection") {
      v = reflect(v, lo, hi);
    }
    per_dim.push_back(taps(c, v, dims[i], mode, pad, lo, hi));
  }
  // Sum over every combination of taps: weight product times the gathered pixel.
  int64_t n_batch = x.shape()[0], ch = x.shape()[1];
  Tensor flat = reshape(x, {n_batch, ch, -1});
  Shape out_spatial(grid.shape().begin() + 1, grid.shape().end() - 1);
  Tensor y;
  std::vector<size_t> k(static_cast<size_t>(nd), 0);
  for (;;) {
    Tensor index, weight;
    for (int64_t i = 0; i < nd; ++i) {
      const Tap& t = per_dim[i][k[i]];
      index = index.valid() ? index * dims[i] + t.index : t.index;
      weight = weight.valid() ? weight * t.weight : t.weight;
    }
    Tensor picked = gather(flat, reshape(index, {n_batch, -1}), {.axis = 2, .batch_dims = 1});
    Tensor term = picked * reshape(weight, {n_batch, 1, -1});
    y = y.valid() ? y + term : term;
    size_t i = 0;
    while (i < k.size() && ++k[i] == per_dim[i].size()) k[i++] = 0;
    if (i == k.size()) break;
  }
  Shape out = {n_batch, ch};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  return {reshape(y, out)};
}

// AffineGrid: grid[n, out..., :] = theta[n] @ (x, y, [z,] 1) over the normalized output
// coordinates (linspace over [-1, 1], pixel centres unless align_corners).
std::vector<Tensor> convert_affine_grid(NodeContext& c) {
  Tensor theta = c.input(0);
  std::vector<int64_t> size = c.ints(1);
  int64_t nd = static_cast<int64_t>(size.size()) - 2;
  if ((nd != 2 && nd != 3) || theta.rank() != 3) {
    c.fail(ErrorCode::shape_mismatch, "theta {} and size of {} entries do not fit", str(theta.shape()),
           size.size());
  }
  bool align = c.attr_int("align_corners", 0) != 0;
  // Base coordinates [prod(out), nd + 1] as (x, y[, z], 1) in row-major output order.
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  int64_t count = 1;
  for (int64_t s : spatial) count *= s;
  std::vector<double> base(static_cast<size_t>(count * (nd + 1)));
  for (int64_t p = 0; p < count; ++p) {
    int64_t rest = p;
    for (int64_t i = nd - 1; i >= 0; --i) {
      int64_t s = spatial[i], at = rest % s;
      rest /= s;
      double v = s == 1 ? 0.0
                 : align ? -1.0 + 2.0 * static_cast<double>(at) / static_cast<double>(s - 1)
                         : (2.0 * static_cast<double>(at) + 1.0) / static_cast<double>(s) - 1.0;
      base[p * (nd + 1) + (nd - 1 - i)] = v;  // x is the last spatial dim
    }
    base[p * (nd + 1) + nd] = 1.0;
  }
  Tensor b = cast_to(c.constant(TensorData::from_vector<double>(base, {count, nd + 1})), theta.dtype());
  Tensor grid = matmul(b, theta, {.transpose_b = true});  // [N, count, nd]
  Shape out = {size[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(nd);
  return {reshape(grid, out)};
}

}  // namespace tg::onnx
