// ONNX Resize (opsets 10-19+) and Upsample (7-9). Interpolation is separable: for every resized
// axis the converter computes, at import time, the 1-d interpolation as a matrix M [out, in]
// plus a vector b [out] (the extrapolation value of tf_crop_and_resize rows), following the
// operator's reference implementation (coordinate transformation, nearest rounding, linear,
// cubic with exclude_outside, antialiasing). The graph then applies y = x M^T + b along the
// axis (a gather for nearest-neighbour resizing).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
};

// 1-d interpolation of one axis: y = M x + b.
struct AxisMap {
  int64_t in = 0, out = 0;
  std::vector<double> m;  // [out, in]
  std::vector<double> b;  // [out]
  bool affine = false;    // some b is non-zero
};

std::vector<double> coeffs(const ResizeAttrs& a, double ratio, double scale) {
  if (a.mode == "nearest") {
    if (ratio == 1.0 || ratio == 0.0) return {0, 1};
    if (a.nearest == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (a.nearest == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (a.nearest == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  if (a.mode == "linear") {
    if (!a.antialias) return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    auto start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = start; i < start + footprint; ++i) {
      c.push_back(std::clamp(1 - std::fabs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
      sum += c.back();
    }
    for (double& v : c) v /= sum;
    return c;
  }
  double A = a.cubic_a;
  if (!a.antialias) {
    double r = ratio, q = 1 - ratio;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
            ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * q - (A + 3)) * q * q + 1,
            ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A};
  }
  double s = std::min(scale, 1.0);
  auto start = static_cast<int64_t>(std::floor(-2 / s) + 1);
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    double x = std::fabs(s * (static_cast<double>(i) - ratio));
    double v = x <= 1 ? (A + 2) * x * x * x - (A + 3) * x * x + 1
               : x < 2 ? A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A : 0.0;
    c.push_back(v);
    sum += v;
  }
  for (double& v : c) v /= sum;
  return c;
}

// The n indexes nearest to x (ties prefer the smaller), among [-pad, in - 1 + pad].
std::vector<int64_t> neighbours(double x, int64_t n, int64_t in) {
  int64_t pad = (n + 1) / 2;
  std::vector<int64_t> cand;
  for (int64_t i = -pad; i < in + pad; ++i) cand.push_back(i);
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
    return std::fabs(x - static_cast<double>(p)) < std::fabs(x - static_cast<double>(q));
  });
  cand.resize(static_cast<size_t>(std::min<int64_t>(n, static_cast<int64_t>(cand.size()))));
  std::sort(cand.begin(), cand.end());
  return cand;
}

AxisMap axis_map(const NodeContext& c, const ResizeAttrs& a, int64_t in, int64_t out,
                 double scale, double roi_lo, double roi_hi) {
  AxisMap m{in, out, std::vector<double>(static_cast<size_t>(out * in), 0.0),
            std::vector<double>(static_cast<size_t>(out), 0.0)};
  double out_w = scale * static_cast<double>(in);
  for (int64_t x = 0; x < out; ++x) {
    double xd = static_cast<double>(x), ind = static_cast<double>(in), x_ori = 0;
    const std::string& t = a.coord;
    if (t == "align_corners") {
      x_ori = out_w == 1 ? 0.0 : xd * (ind - 1) / (out_w - 1);
    } else if (t == "asymmetric") {
      x_ori = xd / scale;
    } else if (t == "tf_crop_and_resize") {
      x_ori = out_w == 1 ? (roi_hi - roi_lo) * (ind - 1) / 2
                         : xd * (roi_hi - roi_lo) * (ind - 1) / (out_w - 1);
      x_ori += roi_lo * (ind - 1);
      if (x_ori < 0 || x_ori > ind - 1) {
        m.b[x] = a.extrapolation;
        m.affine |= a.extrapolation != 0;
        continue;
      }
    } else if (t == "pytorch_half_pixel") {
      x_ori = out_w == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
    } else if (t == "half_pixel") {
      x_ori = (xd + 0.5) / scale - 0.5;
    } else if (t == "half_pixel_symmetric") {
      double adjust = static_cast<double>(out) / out_w;
      x_ori = ind / 2 * (1 - adjust) + (xd + 0.5) / scale - 0.5;
    } else {
      c.fail(ErrorCode::invalid_argument, "unknown coordinate_transformation_mode '{}'", t);
    }
    double fl = std::floor(x_ori);
    double ratio = x_ori == fl ? 1.0 : x_ori - fl;
    std::vector<double> w = coeffs(a, ratio, scale);
    std::vector<int64_t> idx = neighbours(x_ori, static_cast<int64_t>(w.size()), in);
    if (a.exclude_outside) {
      double sum = 0;
      for (size_t i = 0; i < w.size(); ++i) {
        if (idx[i] < 0 || idx[i] >= in) w[i] = 0;
        sum += w[i];
      }
      for (double& v : w) v /= sum;
    }
    for (size_t i = 0; i < w.size(); ++i) {
      int64_t j = std::clamp<int64_t>(idx[i], 0, in - 1);  // edge padding
      m.m[x * in + j] += w[i];
    }
  }
  return m;
}

bool is_identity(const AxisMap& m) {
  if (m.in != m.out || m.affine) return false;
  for (int64_t i = 0; i < m.out; ++i) {
    for (int64_t j = 0; j < m.in; ++j) {
      if (m.m[i * m.in + j] != (i == j ? 1.0 : 0.0)) return false;
    }
  }
  return true;
}

// The source index of every output when each row of M is one-hot (nearest), else empty.
std::vector<int64_t> one_hot_rows(const AxisMap& m) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < m.out; ++i) {
    int64_t hot = -1;
    for (int64_t j = 0; j < m.in; ++j) {
      double v = m.m[i * m.in + j];
      if (v == 1.0 && hot < 0) hot = j;
      else if (v != 0.0) return {};
    }
    if (hot < 0) return {};
    idx.push_back(hot);
  }
  return idx;
}

Tensor apply(NodeContext& c, Tensor x, int64_t axis, const AxisMap& m) {
  std::vector<int64_t> idx = one_hot_rows(m);
  if (!idx.empty() && !m.affine) return gather(x, c.ints_constant(idx), {.axis = axis});
  DType dt = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  int64_t r = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[axis], perm[r - 1]);
  Tensor t = transpose(cast_to(x, dt), perm);
  std::vector<double> mt(static_cast<size_t>(m.in * m.out));
  for (int64_t i = 0; i < m.out; ++i) {
    for (int64_t j = 0; j < m.in; ++j) mt[j * m.out + i] = m.m[i * m.in + j];
  }
  Tensor mt_t = cast_to(c.constant(TensorData::from_vector<double>(mt, {m.in, m.out})), dt);
  Tensor y = matmul(t, mt_t);
  if (m.affine) y = y + cast_to(c.constant(TensorData::from_vector<double>(m.b, {m.out})), dt);
  return cast_to(transpose(y, perm), x.dtype());
}

ResizeAttrs read_attrs(const NodeContext& c) {
  ResizeAttrs a;
  a.mode = c.attr_string("mode", "nearest");
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic" &&
      !(a.mode == "bilinear" && c.op_type() == "Upsample")) {
    c.fail(ErrorCode::invalid_argument, "unknown mode '{}'", a.mode);
  }
  if (a.mode == "bilinear") a.mode = "linear";
  if (c.op_type() == "Upsample" || c.opset() < 11) {
    a.coord = "asymmetric";  // Upsample and Resize-10: x_in = x_out / scale, nearest floors
    a.nearest = "floor";
    return a;
  }
  a.coord = c.attr_string("coordinate_transformation_mode", "half_pixel");
  a.nearest = c.attr_string("nearest_mode", "round_prefer_floor");
  a.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
  a.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = c.attr_float("extrapolation_value", 0.0);
  a.antialias = c.opset() >= 18 && c.attr_int("antialias", 0) != 0;
  if (a.antialias && a.mode == "nearest") {
    c.fail(ErrorCode::invalid_argument, "antialias needs linear or cubic mode");
  }
  return a;
}

std::vector<Tensor> resize(NodeContext& c, const std::vector<double>& scales_in,
                           const std::vector<int64_t>& sizes_in, const std::vector<double>& roi_in) {
  Tensor x = c.input(0);
  int64_t r = x.rank();
  ResizeAttrs a = read_attrs(c);
  std::vector<int64_t> axes;
  if (c.opset() >= 18 && c.has_attr("axes")) {
    for (int64_t ax : c.attr_ints("axes")) axes.push_back(c.axis(ax, r));
  } else {
    axes.resize(static_cast<size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  size_t n = axes.size();
  std::vector<double> scale(static_cast<size_t>(r), 1.0);
  std::vector<int64_t> out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) out[i] = c.static_dim(0, i);
  std::vector<double> roi_lo(static_cast<size_t>(r), 0.0), roi_hi(static_cast<size_t>(r), 1.0);
  if (roi_in.size() == 2 * n) {
    for (size_t i = 0; i < n; ++i) {
      roi_lo[axes[i]] = roi_in[i];
      roi_hi[axes[i]] = roi_in[n + i];
    }
  }
  if (!sizes_in.empty()) {
    if (sizes_in.size() != n) c.fail(ErrorCode::invalid_argument, "sizes must have {} entries", n);
    for (size_t i = 0; i < n; ++i) {
      scale[axes[i]] = static_cast<double>(sizes_in[i]) / static_cast<double>(out[axes[i]]);
    }
    std::string policy = c.opset() >= 18 ? c.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy == "stretch") {
      for (size_t i = 0; i < n; ++i) out[axes[i]] = sizes_in[i];
    } else {
      double s = scale[axes[0]];
      for (int64_t ax : axes) s = policy == "not_larger" ? std::min(s, scale[ax]) : std::max(s, scale[ax]);
      for (int64_t ax : axes) {
        scale[ax] = s;
        out[ax] = static_cast<int64_t>(s * static_cast<double>(out[ax]) + 0.5);
      }
    }
  } else {
    if (scales_in.size() != n) c.fail(ErrorCode::invalid_argument, "scales must have {} entries", n);
    for (size_t i = 0; i < n; ++i) {
      if (scales_in[i] <= 0) c.fail(ErrorCode::invalid_argument, "scales must be positive");
      scale[axes[i]] = scales_in[i];
      out[axes[i]] = static_cast<int64_t>(scales_in[i] * static_cast<double>(out[axes[i]]));
    }
  }
  Tensor y = x;
  for (int64_t ax = 0; ax < r; ++ax) {
    AxisMap m = axis_map(c, a, c.static_dim(0, ax), out[ax], scale[ax], roi_lo[ax], roi_hi[ax]);
    if (!is_identity(m)) y = apply(c, y, ax, m);
  }
  return {y};
}

}  // namespace

std::vector<Tensor> convert_resize(NodeContext& c) {
  if (c.opset() < 11) return resize(c, c.doubles(1), {}, {});
  std::vector<double> roi = c.has_input(1) ? c.doubles(1) : std::vector<double>{};
  std::vector<double> scales = c.has_input(2) ? c.doubles(2) : std::vector<double>{};
  std::vector<int64_t> sizes = c.has_input(3) ? c.ints(3) : std::vector<int64_t>{};
  if (scales.empty() == sizes.empty()) {
    c.fail(ErrorCode::invalid_argument, "exactly one of scales and sizes must be given");
  }
  if (c.attr_string("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize") {
    roi.clear();
  }
  return resize(c, scales, sizes, roi);
}

std::vector<Tensor> convert_upsample(NodeContext& c) {
  std::vector<double> scales = c.opset() < 9 ? c.attr_floats("scales") : c.doubles(1);
  return resize(c, scales, {}, {});
}

}  // namespace tg::onnx
