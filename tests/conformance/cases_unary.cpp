// Conformance cases of the elementwise unary family.
#include <cmath>
#include <limits>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;
using tg::conformance::unary_case;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A unary case on explicit values with hand-computed results.
OpCase values_case(std::string name, tg::Tensor (*op)(tg::Tensor), std::vector<double> in,
                   std::vector<double> expected, DType dtype = DType::f32) {
  OpCase c = unary_case(std::move(name), op, 0, 1, {static_cast<int64_t>(in.size())}, dtype);
  c.inputs[0].values = std::move(in);
  c.expected = {std::move(expected)};
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(unary) {
  // Random inputs over each op's natural domain, against the float64 reference.
  cases.push_back(unary_case("neg", tg::neg, -5, 5));
  cases.push_back(unary_case("abs", tg::abs, -5, 5));
  cases.push_back(unary_case("sign", tg::sign, -2, 2));
  cases.push_back(unary_case("square", tg::square, -3, 3));
  cases.push_back(unary_case("exp", tg::exp, -4, 4));
  cases.push_back(unary_case("exp_parallel", tg::exp, -2, 2, {40000}));  // > kGrain: threaded
  cases.push_back(unary_case("log", tg::log, 0.05, 20));
  cases.push_back(unary_case("log1p", tg::log1p, -0.9, 5));
  cases.push_back(unary_case("expm1", tg::expm1, -2, 2));
  cases.push_back(unary_case("sqrt", tg::sqrt, 0, 9));
  cases.push_back(unary_case("rsqrt", tg::rsqrt, 0.1, 10));
  cases.push_back(unary_case("reciprocal", tg::reciprocal, 0.25, 4));
  cases.push_back(unary_case("sin", tg::sin, -3.5, 3.5));
  cases.push_back(unary_case("cos", tg::cos, -3.5, 3.5));
  cases.push_back(unary_case("tan", tg::tan, -1.2, 1.2));
  cases.push_back(unary_case("tanh", tg::tanh, -4, 4));
  cases.push_back(unary_case("sigmoid", tg::sigmoid, -8, 8));
  cases.push_back(unary_case("erf", tg::erf, -2.5, 2.5));
  cases.push_back(unary_case("floor", tg::floor, -4.5, 4.5));
  cases.push_back(unary_case("ceil", tg::ceil, -4.5, 4.5));
  cases.push_back(unary_case("round", tg::round, -4.5, 4.5));

  // Special values, with hand-computed results.
  cases.push_back(values_case("round_half_even", tg::round, {0.5, 1.5, 2.5, -0.5, -1.5, 3.7},
                              {0, 2, 2, -0.0, -2, 4}));
  cases.push_back(values_case("log_special", tg::log, {0, 1, kInf, -1, 0.5},
                              {-kInf, 0, kInf, kNaN, -0.6931471805599453}));
  cases.push_back(values_case("sqrt_special", tg::sqrt, {0, -0.0, 4, kInf, -1}, {0, -0.0, 2, kInf, kNaN}));
  cases.push_back(values_case("sigmoid_saturates", tg::sigmoid, {-1000, 1000, 0}, {0, 1, 0.5}));
  cases.push_back(values_case("is_nan", tg::is_nan, {kNaN, kInf, -kInf, 0, 1.5}, {1, 0, 0, 0, 0}));
  cases.push_back(values_case("is_inf", tg::is_inf, {kNaN, kInf, -kInf, 0, 1.5}, {0, 1, 1, 0, 0}));

  // Non-floating inputs: one "base" variant, checked against the expected values.
  cases.push_back(values_case("abs_i32", tg::abs, {-7, 0, 5, 2147483647}, {7, 0, 5, 2147483647}, DType::i32));
  cases.push_back(values_case("neg_i64", tg::neg, {-3, 0, 4503599627370497.0}, {3, 0, -4503599627370497.0},
                              DType::i64));
  cases.push_back(values_case("logical_not", tg::logical_not, {1, 0, 0, 1}, {0, 1, 1, 0}, DType::bool_));

  // A chain: rounding of the intermediate in f16/bf16 widens the tolerance.
  OpCase gauss;
  gauss.name = "gaussian_chain";
  gauss.inputs = {InputSpec{{4, 25}, DType::f32, -2, 2}};
  gauss.build = [](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{tg::exp(tg::neg(tg::square(in[0])))};
  };
  gauss.tolerance = {{DType::f16, {4e-3, 1e-4}}, {DType::bf16, {3e-2, 1e-3}}};
  cases.push_back(gauss);
}
