// Linear-algebra and scan ONNX ops: MatMul, Gemm, CumSum, CumProd.
#include <numeric>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

// Moves `axis` of x to the end (returns the permutation's inverse through `back`).
Tensor axis_last(Tensor x, int64_t axis, std::vector<int64_t>* back) {
  int64_t r = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + axis);
  perm.push_back(axis);
  back->assign(static_cast<size_t>(r), 0);
  for (int64_t i = 0; i < r; ++i) (*back)[perm[i]] = i;
  return axis == r - 1 ? x : transpose(x, perm);
}

// Inclusive (or exclusive) running sum/product along `axis`, optionally from the end: a stencil
// whose window covers every earlier element.
std::vector<Tensor> cumulative(NodeContext& c, bool product) {
  Tensor x = c.input(0);
  if (x.rank() < 1) c.fail(ErrorCode::invalid_argument, "input must have rank >= 1");
  int64_t axis = c.axis(static_cast<int64_t>(c.scalar(1)), x.rank());
  bool exclusive = c.attr_int("exclusive", 0) != 0;
  bool rev = c.attr_int("reverse", 0) != 0;
  int64_t n = c.static_dim(0, axis);
  if (n == 0) return {x};
  std::vector<int64_t> back;
  Tensor t = axis_last(x, axis, &back);
  if (rev) t = reverse(t, {-1});
  if (exclusive) {
    // Shift by one: the identity first, the last element dropped.
    PadDesc p{.before = std::vector<int64_t>(static_cast<size_t>(t.rank()), 0),
              .after = std::vector<int64_t>(static_cast<size_t>(t.rank()), 0),
              .value = product ? 1.0 : 0.0};
    p.before.back() = 1;
    t = slice(pad(t, p), {.begin = {0}, .end = {n}, .axes = {t.rank() - 1}});
  }
  StencilDesc d{.reduction = product ? StencilReduction::product : StencilReduction::sum,
                .explicit_padding = {n - 1, 0},
                .boundary_mode = product ? BoundaryMode::constant : BoundaryMode::zero,
                .padding_constant = product ? 1.0 : 0.0};
  Tensor w = fill(c.graph(), {n}, 1.0, t.dtype());
  Tensor y = stencil(t, w, d);
  if (rev) y = reverse(y, {-1});
  return {axis == x.rank() - 1 ? y : transpose(y, back)};
}

}  // namespace

std::vector<Tensor> convert_matmul(NodeContext& c) { return {matmul(c.input(0), c.input(1))}; }

std::vector<Tensor> convert_gemm(NodeContext& c) {
  Tensor a = c.input(0);
  Tensor b = c.input(1);
  if (a.rank() != 2 || b.rank() != 2) {
    c.fail(ErrorCode::shape_mismatch, "A and B must be 2-d, got {} and {}", str(a.shape()),
           str(b.shape()));
  }
  double alpha = c.attr_float("alpha", 1.0);
  double beta = c.attr_float("beta", 1.0);
  Tensor y = matmul(a, b, {.transpose_a = c.attr_int("transA", 0) != 0,
                           .transpose_b = c.attr_int("transB", 0) != 0});
  if (alpha != 1.0) y = y * alpha;
  if (c.has_input(2) && beta != 0.0) {
    Tensor bias = c.input(2);
    y = y + (beta != 1.0 ? bias * beta : bias);
  }
  return {y};
}

std::vector<Tensor> convert_cum_sum(NodeContext& c) { return cumulative(c, false); }
std::vector<Tensor> convert_cum_prod(NodeContext& c) { return cumulative(c, true); }

}  // namespace tg::onnx

namespace tg::onnx {

// TopK without a sort op: each element's rank in the (stable) descending order is the number of
// elements that beat it; the i-th output is the element whose rank is i. O(n^2) per row.
std::vector<Tensor> convert_top_k(NodeContext& c) {
  Tensor x = c.input(0);
  if (x.rank() < 1) c.fail(ErrorCode::invalid_argument, "input must have rank >= 1");
  int64_t axis = c.axis(c.attr_int("axis", -1), x.rank());
  auto k = static_cast<int64_t>(c.opset() < 10 ? c.attr_int("k", 0) : c.scalar(1));
  bool largest = c.attr_int("largest", 1) != 0;
  int64_t n = c.static_dim(0, axis);
  if (k < 0 || k > n) c.fail(ErrorCode::invalid_argument, "k = {} is outside [0, {}]", k, n);
  std::vector<int64_t> back;
  Tensor t = axis_last(x, axis, &back);  // [..., n]
  Tensor xi = expand_dims(t, -1);        // [..., n, 1]: element i
  Tensor xj = expand_dims(t, -2);        // [..., 1, n]: element j
  Tensor beats = largest ? greater(xj, xi) : less(xj, xi);
  Shape nn = {n, n};
  Tensor earlier = less(iota(c.graph(), nn, 1, DType::i64), iota(c.graph(), nn, 0, DType::i64));
  beats = logical_or(beats, logical_and(equal(xj, xi), earlier));
  Tensor rank = reduce_sum(cast(beats, DType::i64), {.axes = {-1}});  // [..., n]
  Tensor want = iota(c.graph(), {k, 1}, 0, DType::i64);                // [k, 1]
  Tensor hit = equal(expand_dims(rank, -2), want);                      // [..., k, n]
  Tensor idx = argmax(hit, {.axis = -1});                               // [..., k]
  Tensor vals = gather_elements(t, idx, {.axis = t.rank() - 1});
  if (axis != x.rank() - 1) {
    vals = transpose(vals, back);
    idx = transpose(idx, back);
  }
  return {vals, idx};
}

}  // namespace tg::onnx

namespace tg::onnx {
namespace {

// Labels of one einsum operand with "..." expanded to `ell` (upper-case) labels.
std::string expand_ellipsis(NodeContext& c, std::string term, int64_t rank, std::string* ell) {
  size_t p = term.find("...");
  if (p == std::string::npos) return term;
  int64_t n = rank - static_cast<int64_t>(term.size() - 3);
  if (n < 0) c.fail(ErrorCode::invalid_argument, "operand rank {} is too small for '{}'", rank, term);
  if (ell->empty() || static_cast<int64_t>(ell->size()) < n) {
    ell->clear();
    for (int64_t i = 0; i < n; ++i) ell->push_back(static_cast<char>('A' + i));
  }
  return term.substr(0, p) + ell->substr(ell->size() - static_cast<size_t>(n)) + term.substr(p + 3);
}

// The diagonal of x over the dims labelled alike: each repeated label is reduced to one dim.
Tensor take_diagonals(NodeContext& c, Tensor x, std::string* labels) {
  for (size_t p = 0; p < labels->size(); ++p) {
    size_t q = labels->find((*labels)[p], p + 1);
    while (q != std::string::npos) {
      int64_t d = x.shape()[p];
      Shape s(static_cast<size_t>(x.rank()), 1);
      s[p] = d;
      s[q] = d;
      Tensor eye = equal(iota(c.graph(), s, static_cast<int64_t>(p), DType::i64),
                         iota(c.graph(), s, static_cast<int64_t>(q), DType::i64));
      x = reduce_sum(select(eye, x, scalar_like(x, 0)), {.axes = {static_cast<int64_t>(q)}});
      labels->erase(q, 1);
      q = labels->find((*labels)[p], p + 1);
    }
  }
  return x;
}

}  // namespace

// Einsum as broadcast products and sums: every operand is laid out over all labels (dims of 1
// where it has none), the operands are multiplied, the labels absent from the output summed.
std::vector<Tensor> convert_einsum(NodeContext& c) {
  std::string eq;
  for (char ch : c.attr_string("equation")) {
    if (ch != ' ') eq.push_back(ch);
  }
  std::vector<Tensor> xs = c.inputs_from(0);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    size_t comma = lhs.find(',', b);
    terms.push_back(lhs.substr(b, comma - b));
    if (comma == std::string::npos) break;
    b = comma + 1;
  }
  if (terms.size() != xs.size()) {
    c.fail(ErrorCode::invalid_argument, "equation '{}' has {} operands, {} inputs given", eq,
           terms.size(), xs.size());
  }
  std::string ell, all;
  for (size_t i = 0; i < xs.size(); ++i) {
    terms[i] = expand_ellipsis(c, terms[i], xs[i].rank(), &ell);
    if (static_cast<int64_t>(terms[i].size()) != xs[i].rank()) {
      c.fail(ErrorCode::shape_mismatch, "'{}' does not fit operand {} of shape {}", terms[i], i,
             str(xs[i].shape()));
    }
    xs[i] = take_diagonals(c, xs[i], &terms[i]);
    for (char ch : terms[i]) {
      if (all.find(ch) == std::string::npos) all.push_back(ch);
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    size_t p = rhs.find("...");
    out = p == std::string::npos ? rhs : rhs.substr(0, p) + ell + rhs.substr(p + 3);
  } else {
    out = ell;  // implicit: the ellipsis, then the labels seen once, alphabetically
    std::string once;
    for (char ch : all) {
      int n = 0;
      for (const std::string& t : terms) n += static_cast<int>(std::count(t.begin(), t.end(), ch));
      if (n == 1 && !std::isupper(static_cast<unsigned char>(ch))) once.push_back(ch);
    }
    std::sort(once.begin(), once.end());
    out += once;
  }
  // Lay every operand out over `all` and multiply.
  Tensor prod;
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<int64_t> perm;
    Shape shape;
    for (char ch : all) {
      size_t at = terms[i].find(ch);
      if (at != std::string::npos) perm.push_back(static_cast<int64_t>(at));
    }
    Tensor t = perm.size() > 1 ? transpose(xs[i], perm) : xs[i];
    size_t k = 0;
    for (char ch : all) {
      shape.push_back(terms[i].find(ch) != std::string::npos ? t.shape()[k++] : 1);
    }
    t = reshape(t, shape);
    prod = prod.valid() ? prod * t : t;
  }
  std::vector<int64_t> sum_axes;
  std::string kept;
  for (size_t a = 0; a < all.size(); ++a) {
    if (out.find(all[a]) == std::string::npos) sum_axes.push_back(static_cast<int64_t>(a));
    else kept.push_back(all[a]);
  }
  Tensor y = sum_axes.empty() ? prod : reduce_sum(prod, {.axes = sum_axes});
  std::vector<int64_t> perm;
  for (char ch : out) {
    size_t at = kept.find(ch);
    if (at == std::string::npos) c.fail(ErrorCode::invalid_argument, "output label '{}' is unknown", ch);
    perm.push_back(static_cast<int64_t>(at));
  }
  return {perm.size() > 1 ? transpose(y, perm) : y};
}

}  // namespace tg::onnx

namespace tg::onnx {

// DFT (opsets 17, 20) as matrix products with cos/sin tables along the signal axis: x is
// [..., n, ..., 1 (real) or 2 (complex)]; the transform has length L = dft_length (default n;
// the signal is cut or zero-padded to it). onesided keeps the L/2 + 1 non-negative
// frequencies; inverse divides by L, and inverse + onesided is the real inverse of a onesided
// spectrum (L defaults to 2 (n - 1); the output is real, last dim 1), as numpy's irfft.
std::vector<Tensor> convert_dft(NodeContext& c) {
  Tensor x = c.input(0);
  int64_t r = x.rank();
  if (r < 2 || (x.shape().back() != 1 && x.shape().back() != 2)) {
    c.fail(ErrorCode::shape_mismatch, "input must be [..., 1 or 2], got {}", str(x.shape()));
  }
  int64_t axis = c.opset() >= 20 ? (c.has_input(2) ? static_cast<int64_t>(c.scalar(2)) : -2)
                                 : c.attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r - 1) c.fail(ErrorCode::invalid_argument, "axis is not a signal axis");
  bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  int64_t n = c.static_dim(0, axis);
  bool irfft = inverse && onesided;
  int64_t len = c.has_input(1) ? static_cast<int64_t>(c.scalar(1)) : (irfft ? 2 * (n - 1) : n);
  if (len < 1) c.fail(ErrorCode::invalid_argument, "dft_length must be >= 1, got {}", len);
  int64_t out_n = irfft ? len : (onesided ? len / 2 + 1 : len);
  int64_t used = std::min(n, irfft ? len / 2 + 1 : len);  // input positions that contribute
  // Tables [used, out_n]: cos and sin of 2 pi k m / L, and irfft's Hermitian weights.
  std::vector<double> cs(static_cast<size_t>(used * out_n)), sn(cs.size());
  for (int64_t m = 0; m < used; ++m) {
    for (int64_t k = 0; k < out_n; ++k) {
      double a = 2 * M_PI * static_cast<double>((m * k) % len) / static_cast<double>(len);
      double w = 1;
      if (irfft) w = (m == 0 || 2 * m == len) ? 1.0 : 2.0;
      double s = inverse ? w / static_cast<double>(len) : 1.0;
      cs[m * out_n + k] = std::cos(a) * s;
      sn[m * out_n + k] = std::sin(a) * s;
    }
  }
  // Computed in float64 (then cast back), as the reference's numpy FFT.
  DType dt = DType::f64;
  Tensor ct = c.constant(TensorData::from_vector<double>(cs, {used, out_n}));
  Tensor st = c.constant(TensorData::from_vector<double>(sn, {used, out_n}));
  std::vector<int64_t> back;
  auto part = [&](int64_t i) {
    Tensor p = cast_to(squeeze(slice(x, {.begin = {i}, .end = {i + 1}, .axes = {r - 1}}), {r - 1}), dt);
    p = axis_last(p, axis, &back);
    return used < n ? slice(p, {.begin = {0}, .end = {used}, .axes = {p.rank() - 1}}) : p;
  };
  Tensor re = part(0);
  Tensor im = x.shape().back() == 2 ? part(1) : Tensor();
  // Forward: e^{-i a}; inverse: e^{+i a}.
  double sgn = inverse ? 1.0 : -1.0;
  Tensor y_re = matmul(re, ct), y_im = matmul(re, st) * sgn;
  if (im.valid()) {
    y_re = y_re - matmul(im, st) * sgn;
    y_im = y_im + matmul(im, ct);
  }
  auto restore = [&](Tensor t) {
    return cast_to(expand_dims(axis == r - 2 ? t : transpose(t, back), -1), x.dtype());
  };
  if (irfft) return {restore(y_re)};
  return {concat({restore(y_re), restore(y_im)}, -1)};
}

}  // namespace tg::onnx
