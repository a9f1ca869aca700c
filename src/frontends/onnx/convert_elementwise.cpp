// Elementwise ONNX ops: math and trigonometry, activations, comparisons, logic, Cast, Where,
// Clip and the variadic Sum/Mean/Max/Min.
#include <cmath>
#include <limits>

#include "frontends/onnx/converters.h"
#include "tg/nn.h"

namespace tg::onnx {
namespace {

Tensor one_like(Tensor x) { return scalar_like(x, 1); }
Tensor zero_like(Tensor x) { return scalar_like(x, 0); }

// Floating-only math on x (fails naming the op for other dtypes through the builders).
Tensor acos_(Tensor x) { return atan2(sqrt(one_like(x) - x * x), x); }
Tensor asin_(Tensor x) { return atan2(x, sqrt(one_like(x) - x * x)); }
Tensor atan_(Tensor x) { return atan2(x, one_like(x)); }
Tensor sinh_(Tensor x) { return (exp(x) - exp(neg(x))) * 0.5; }
Tensor cosh_(Tensor x) { return (exp(x) + exp(neg(x))) * 0.5; }
Tensor asinh_(Tensor x) {
  // sign(x) * log(|x| + sqrt(x^2 + 1)), accurate for negative x too.
  Tensor a = abs(x);
  return sign(x) * log(a + sqrt(a * a + one_like(x)));
}
Tensor acosh_(Tensor x) { return log(x + sqrt(x * x - one_like(x))); }
Tensor atanh_(Tensor x) { return log((one_like(x) + x) / (one_like(x) - x)) * 0.5; }
// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), stable for large |x|.
Tensor softplus_(Tensor x) { return maximum(x, zero_like(x)) + log1p(exp(neg(abs(x)))); }

}  // namespace

std::vector<Tensor> convert_acos(NodeContext& c) { return {acos_(c.input(0))}; }
std::vector<Tensor> convert_asin(NodeContext& c) { return {asin_(c.input(0))}; }
std::vector<Tensor> convert_atan(NodeContext& c) { return {atan_(c.input(0))}; }
std::vector<Tensor> convert_sinh(NodeContext& c) { return {sinh_(c.input(0))}; }
std::vector<Tensor> convert_cosh(NodeContext& c) { return {cosh_(c.input(0))}; }
std::vector<Tensor> convert_asinh(NodeContext& c) { return {asinh_(c.input(0))}; }
std::vector<Tensor> convert_acosh(NodeContext& c) { return {acosh_(c.input(0))}; }
std::vector<Tensor> convert_atanh(NodeContext& c) { return {atanh_(c.input(0))}; }
std::vector<Tensor> convert_softplus(NodeContext& c) { return {softplus_(c.input(0))}; }

std::vector<Tensor> convert_softsign(NodeContext& c) {
  Tensor x = c.input(0);
  return {x / (one_like(x) + abs(x))};
}

std::vector<Tensor> convert_relu(NodeContext& c) {
  Tensor x = c.input(0);
  return {maximum(x, zero_like(x))};
}

std::vector<Tensor> convert_leaky_relu(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 0.01);
  return {select(less(x, zero_like(x)), x * alpha, x)};
}

std::vector<Tensor> convert_elu(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 1.0);
  return {select(less(x, zero_like(x)), expm1(x) * alpha, x)};
}

std::vector<Tensor> convert_selu(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 1.67326319217681884765625);
  double gamma = c.attr_float("gamma", 1.05070102214813232421875);
  return {select(less_equal(x, zero_like(x)), expm1(x) * alpha, x) * gamma};
}

std::vector<Tensor> convert_celu(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 1.0);
  Tensor neg_part = minimum(zero_like(x), expm1(x / alpha) * alpha);
  return {maximum(zero_like(x), x) + neg_part};
}

std::vector<Tensor> convert_thresholded_relu(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 1.0);
  return {select(greater(x, scalar_like(x, alpha)), x, zero_like(x))};
}

std::vector<Tensor> convert_hard_sigmoid(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 0.2);
  double beta = c.attr_float("beta", 0.5);
  return {clamp(x * alpha + beta, zero_like(x), one_like(x))};
}

std::vector<Tensor> convert_hard_swish(NodeContext& c) {
  Tensor x = c.input(0);
  return {x * clamp(x * (1.0 / 6.0) + 0.5, zero_like(x), one_like(x))};
}

std::vector<Tensor> convert_shrink(NodeContext& c) {
  Tensor x = c.input(0);
  double lambd = c.attr_float("lambd", 0.5);
  double bias = c.attr_float("bias", 0.0);
  Tensor lo = less(x, scalar_like(x, -lambd));
  Tensor hi = greater(x, scalar_like(x, lambd));
  return {select(lo, x + scalar_like(x, bias), select(hi, x - scalar_like(x, bias), zero_like(x)))};
}

std::vector<Tensor> convert_mish(NodeContext& c) {
  Tensor x = c.input(0);
  return {x * tanh(softplus_(x))};
}

std::vector<Tensor> convert_swish(NodeContext& c) {
  Tensor x = c.input(0);
  double alpha = c.attr_float("alpha", 1.0);
  return {x * sigmoid(x * alpha)};
}

std::vector<Tensor> convert_gelu(NodeContext& c) {
  std::string approx = c.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") {
    c.fail(ErrorCode::invalid_argument, "approximate must be 'none' or 'tanh', got '{}'", approx);
  }
  return {gelu(c.input(0), approx == "tanh")};
}

std::vector<Tensor> convert_prelu(NodeContext& c) {
  Tensor x = c.input(0);
  Tensor slope = c.input(1);
  return {select(less(x, zero_like(x)), x * slope, x)};
}

std::vector<Tensor> convert_is_inf(NodeContext& c) {
  Tensor x = c.input(0);
  bool neg_inf = c.attr_int("detect_negative", 1) != 0;
  bool pos_inf = c.attr_int("detect_positive", 1) != 0;
  Tensor inf = is_inf(x);
  if (neg_inf && pos_inf) return {inf};
  if (!neg_inf && !pos_inf) return {logical_and(inf, logical_not(inf))};
  Tensor side = neg_inf ? less(x, zero_like(x)) : greater(x, zero_like(x));
  return {logical_and(inf, side)};
}

std::vector<Tensor> convert_pow(NodeContext& c) {
  Tensor a = c.input(0);
  Tensor b = c.input(1);
  if (is_floating(a.dtype())) return {pow(a, cast_to(b, a.dtype()))};
  // Integer bases: computed in f64 (exact for results below 2^53), then cast back.
  return {cast(pow(cast(a, DType::f64), cast_to(b, DType::f64)), a.dtype())};
}

std::vector<Tensor> convert_mod(NodeContext& c) {
  Tensor a = c.input(0);
  Tensor b = c.input(1);
  // fmod = 1: C fmod (sign of the dividend); 0: Python's % (sign of the divisor).
  return {c.attr_int("fmod", 0) != 0 ? mod(a, b) : floor_mod(a, b)};
}

std::vector<Tensor> convert_clip(NodeContext& c) {
  Tensor x = c.input(0);
  Tensor lo, hi;
  if (c.opset() < 11) {
    if (c.has_attr("min")) lo = scalar_like(x, c.attr_float("min", 0));
    if (c.has_attr("max")) hi = scalar_like(x, c.attr_float("max", 0));
  } else {
    lo = c.optional_input(1);
    hi = c.optional_input(2);
  }
  if (lo.valid()) x = maximum(x, cast_to(lo, x.dtype()));
  if (hi.valid()) x = minimum(x, cast_to(hi, x.dtype()));
  return {x};
}

std::vector<Tensor> convert_cast(NodeContext& c) {
  c.require_attr("to");
  return {cast_to(c.input(0), dtype_attr(c, c.attr_int("to", 0)))};
}

std::vector<Tensor> convert_cast_like(NodeContext& c) {
  return {cast_to(c.input(0), c.input(1).dtype())};
}

std::vector<Tensor> convert_identity(NodeContext& c) { return {c.input(0)}; }

std::vector<Tensor> convert_where(NodeContext& c) {
  return {select(c.input(0), c.input(1), c.input(2))};
}

std::vector<Tensor> convert_sum(NodeContext& c) {
  std::vector<Tensor> xs = c.inputs_from(0);
  if (xs.empty()) c.fail(ErrorCode::invalid_argument, "needs at least one input");
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = add(y, xs[i]);
  return {y};
}

std::vector<Tensor> convert_mean(NodeContext& c) {
  std::vector<Tensor> xs = c.inputs_from(0);
  Tensor y = convert_sum(c)[0];
  return {y / static_cast<double>(xs.size())};
}

std::vector<Tensor> convert_max(NodeContext& c) {
  std::vector<Tensor> xs = c.inputs_from(0);
  if (xs.empty()) c.fail(ErrorCode::invalid_argument, "needs at least one input");
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = maximum(y, xs[i]);
  return {y};
}

std::vector<Tensor> convert_min(NodeContext& c) {
  std::vector<Tensor> xs = c.inputs_from(0);
  if (xs.empty()) c.fail(ErrorCode::invalid_argument, "needs at least one input");
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = minimum(y, xs[i]);
  return {y};
}

}  // namespace tg::onnx

namespace tg::onnx {

std::vector<Tensor> convert_swiglu(NodeContext& c) {
  Tensor a = c.input(0);
  double alpha = c.attr_float("alpha", 1.0);
  return {a * sigmoid(a * alpha) * c.input(1)};
}

}  // namespace tg::onnx

namespace tg::onnx {

// BitShift on uint8 (the only unsigned type TensorGraph has): x * 2^y (wrapping) or x / 2^y.
std::vector<Tensor> convert_bit_shift(NodeContext& c) {
  Tensor x = c.input(0), y = c.input(1);
  if (x.dtype() != DType::u8) {
    c.fail(ErrorCode::unsupported, "data type {} is not supported (uint8 only)", dtype_name(x.dtype()));
  }
  std::string dir = c.attr_string("direction");
  Tensor factor = cast(pow(c.graph().constant(2.0, DType::f64), cast(y, DType::f64)), DType::i32);
  Tensor xi = cast(x, DType::i32);
  if (dir == "LEFT") return {cast(xi * factor, DType::u8)};
  if (dir == "RIGHT") return {cast(floor_div(xi, factor), DType::u8)};
  c.fail(ErrorCode::invalid_argument, "direction must be LEFT or RIGHT, got '{}'", dir);
}

}  // namespace tg::onnx

namespace tg::onnx {
namespace {

int bits_of(DType d) { return static_cast<int>(dtype_size(d)) * 8; }

// Bitwise and/or/xor of two's-complement integers by bit decomposition (TensorGraph has no bit
// ops): bit k of v is floor(v / 2^k) mod 2, which floor division makes right for negative v too;
// the top bit of a signed type weighs -2^(n-1).
Tensor bitwise(NodeContext& c, Tensor a, Tensor b, int which) {
  DType d = a.dtype();
  if (!is_integer(d) || b.dtype() != d) {
    c.fail(ErrorCode::dtype_mismatch, "inputs must share an integer dtype, got {} and {}",
           dtype_name(a.dtype()), dtype_name(b.dtype()));
  }
  int n = bits_of(d);
  Tensor result;
  for (int k = 0; k < n; ++k) {
    bool top = k == n - 1 && is_signed(d);
    Tensor ba, bb;
    if (top) {
      ba = cast(less(a, scalar_like(a, 0)), d);
      bb = cast(less(b, scalar_like(b, 0)), d);
    } else {
      Tensor p = scalar_like(a, std::ldexp(1.0, k));
      ba = floor_mod(floor_div(a, p), scalar_like(a, 2));
      bb = floor_mod(floor_div(b, p), scalar_like(b, 2));
    }
    Tensor bit = which == 0 ? ba * bb : which == 1 ? maximum(ba, bb) : floor_mod(ba + bb, scalar_like(a, 2));
    Tensor term = bit * scalar_like(a, top ? -std::ldexp(1.0, k) : std::ldexp(1.0, k));
    result = result.valid() ? result + term : term;
  }
  return result;
}

}  // namespace

std::vector<Tensor> convert_bitwise_and(NodeContext& c) { return {bitwise(c, c.input(0), c.input(1), 0)}; }
std::vector<Tensor> convert_bitwise_or(NodeContext& c) { return {bitwise(c, c.input(0), c.input(1), 1)}; }
std::vector<Tensor> convert_bitwise_xor(NodeContext& c) { return {bitwise(c, c.input(0), c.input(1), 2)}; }

// ~x: -x - 1 for signed types (two's complement), max - x for unsigned ones.
std::vector<Tensor> convert_bitwise_not(NodeContext& c) {
  Tensor x = c.input(0);
  if (!is_integer(x.dtype())) c.fail(ErrorCode::dtype_mismatch, "input must be an integer, got {}", dtype_name(x.dtype()));
  if (is_signed(x.dtype())) return {neg(x) - scalar_like(x, 1)};
  return {scalar_like(x, std::ldexp(1.0, bits_of(x.dtype())) - 1) - x};
}

}  // namespace tg::onnx
