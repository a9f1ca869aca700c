// Conformance cases of the elementwise binary family: random inputs against the f64 reference
// (broadcasting, scalars, rank 0, zero-size dims, large contiguous runs with a tail), hand-computed
// special values (NaN propagation, Python floor_mod/floor_div, integer wrap-around, MIN / -1) and
// every dtype group. (Integer division by zero raises tg::Error(invalid_argument) at run time; the
// harness checks values only, so that is tested elsewhere.)
#include <limits>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::conformance::binary_case;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// op(a, b) on explicit 1-d values with hand-computed results.
OpCase values_case(std::string name, tg::Tensor (*op)(tg::Tensor, tg::Tensor), std::vector<double> a,
                   std::vector<double> b, std::vector<double> expected, DType dtype = DType::f32) {
  const int64_t n = static_cast<int64_t>(a.size());
  OpCase c = binary_case(std::move(name), op, {n}, {n}, 0, 1, dtype);
  c.inputs[0].values = std::move(a);
  c.inputs[1].values = std::move(b);
  c.expected = {std::move(expected)};
  return c;
}

/// op(a, b) on random inputs with separate ranges.
OpCase ranged_case(std::string name, tg::Tensor (*op)(tg::Tensor, tg::Tensor), tg::Shape sa, double alo,
                   double ahi, tg::Shape sb, double blo, double bhi, DType dtype = DType::f32) {
  OpCase c = binary_case(std::move(name), op, std::move(sa), std::move(sb), alo, ahi, dtype);
  c.inputs[1].low = blo;
  c.inputs[1].high = bhi;
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(binary) {
  // Floating arithmetic with broadcasting patterns.
  cases.push_back(binary_case("add", tg::add, {3, 5}, {3, 5}, -5, 5));
  cases.push_back(binary_case("add_broadcast", tg::add, {3, 1, 5}, {4, 1}, -5, 5));
  cases.push_back(binary_case("add_rank0", tg::add, {}, {}, -5, 5));
  cases.push_back(binary_case("add_zero_size", tg::add, {0, 3}, {3}, -5, 5));
  cases.push_back(binary_case("add_long_tail", tg::add, {70001}, {70001}, -5, 5));  // vector loop + tail
  cases.push_back(binary_case("sub_scalar_left", tg::sub, {}, {2, 3}, -5, 5));
  cases.push_back(binary_case("sub_scalar_right", tg::sub, {4, 7}, {1, 1}, -5, 5));
  cases.push_back(binary_case("mul", tg::mul, {7, 9}, {9}, -3, 3));
  cases.push_back(binary_case("mul_broadcast_both", tg::mul, {33, 1, 17}, {65, 1}, -3, 3));
  cases.push_back(binary_case("mul_outer", tg::mul, {129, 1}, {1, 131}, -3, 3));
  cases.push_back(ranged_case("div", tg::div, {5, 8}, -4, 4, {5, 8}, 0.5, 4));
  cases.push_back(ranged_case("div_broadcast", tg::div, {2, 3, 4}, -4, 4, {3, 1}, -4, -0.5));
  cases.push_back(ranged_case("pow", tg::pow, {4, 9}, 0.5, 3, {9}, -2, 2));
  cases.push_back(binary_case("atan2", tg::atan2, {6, 7}, {6, 7}, -2, 2));
  cases.push_back(binary_case("maximum", tg::maximum, {5, 6}, {6}, -2, 2));
  cases.push_back(binary_case("minimum", tg::minimum, {5, 6}, {5, 1}, -2, 2));
  cases.push_back(ranged_case("mod", tg::mod, {4, 11}, -6, 6, {4, 11}, 0.5, 3));
  cases.push_back(ranged_case("floor_mod", tg::floor_mod, {4, 11}, -6, 6, {11}, 0.5, 3));
  cases.push_back(ranged_case("floor_mod_negative", tg::floor_mod, {4, 11}, -6, 6, {11}, -3, -0.5));

  // Special values, hand-computed.
  cases.push_back(values_case("maximum_nan", tg::maximum, {1, kNaN, 2, -0.5, kNaN}, {kNaN, 1, 1, -0.25, kNaN},
                              {kNaN, kNaN, 2, -0.25, kNaN}));
  cases.push_back(values_case("minimum_nan", tg::minimum, {1, kNaN, 2, -0.5, kNaN}, {kNaN, 1, 1, -0.25, kNaN},
                              {kNaN, kNaN, 1, -0.5, kNaN}));
  cases.push_back(values_case("mod_sign", tg::mod, {5.5, -5.5, 5.5, -5.5, 3}, {2, 2, -2, -2, 1.5},
                              {1.5, -1.5, 1.5, -1.5, 0}));
  cases.push_back(values_case("floor_mod_sign", tg::floor_mod, {5.5, -5.5, 5.5, -5.5, -3}, {2, 2, -2, -2, 1.5},
                              {1.5, 0.5, -0.5, -1.5, 0}));
  cases.push_back(values_case("floor_div_values", tg::floor_div, {7, -7, 7, -7, 1}, {2, 2, -2, -2, 3},
                              {3, -4, -4, 3, 0}));
  cases.push_back(values_case("div_inf", tg::div, {1, -1, 0, kInf}, {0, 0, 0, 2}, {kInf, -kInf, kNaN, kInf}));
  cases.push_back(values_case("pow_special", tg::pow, {2, 0, -8, 4, 1}, {10, 0, 1, -0.5, kNaN},
                              {1024, 1, -8, 0.5, 1}));

  // Integers: wrap-around, truncation, Python floor rules, MIN / -1.
  cases.push_back(values_case("add_i32_wrap", tg::add, {2147483647, -2147483648.0, 5}, {1, -1, -7},
                              {-2147483648.0, 2147483647, -2}, DType::i32));
  cases.push_back(values_case("mul_i8_wrap", tg::mul, {100, -128, 7}, {3, -1, -3}, {44, -128, -21}, DType::i8));
  cases.push_back(values_case("sub_u8_wrap", tg::sub, {3, 0, 255}, {5, 1, 255}, {254, 255, 0}, DType::u8));
  cases.push_back(values_case("div_i32", tg::div, {7, -7, 7, -7, -2147483648.0, 0}, {2, 2, -2, -2, -1, 5},
                              {3, -3, -3, 3, -2147483648.0, 0}, DType::i32));
  cases.push_back(values_case("div_i64", tg::div, {-9000000000000.0, 1000000000000.0}, {3, -7},
                              {-3000000000000.0, -142857142857.0}, DType::i64));
  cases.push_back(values_case("div_u8", tg::div, {255, 7, 0}, {2, 255, 3}, {127, 0, 0}, DType::u8));
  cases.push_back(values_case("mod_i32", tg::mod, {7, -7, 7, -7, -2147483648.0}, {3, 3, -3, -3, -1},
                              {1, -1, 1, -1, 0}, DType::i32));
  cases.push_back(values_case("floor_mod_i32", tg::floor_mod, {7, -7, 7, -7, -2147483648.0}, {3, 3, -3, -3, -1},
                              {1, 2, -2, -1, 0}, DType::i32));
  cases.push_back(values_case("floor_div_i32", tg::floor_div, {7, -7, 7, -7, -2147483648.0}, {3, 3, -3, -3, -1},
                              {2, -3, -3, 2, -2147483648.0}, DType::i32));
  cases.push_back(values_case("floor_div_i8", tg::floor_div, {-128, -7, 100}, {-1, 2, -3}, {-128, -4, -34},
                              DType::i8));
  cases.push_back(values_case("maximum_i64", tg::maximum, {1, -5, 7}, {3, -9, 7}, {3, -5, 7}, DType::i64));
  cases.push_back(values_case("minimum_u8", tg::minimum, {1, 250, 7}, {3, 9, 7}, {1, 9, 7}, DType::u8));

  // Integers with broadcasting (checked against the CPU on other devices).
  cases.push_back(binary_case("add_i32_broadcast", tg::add, {5, 6}, {6}, -100, 100, DType::i32));
  cases.push_back(binary_case("mul_i64_outer", tg::mul, {4, 1}, {1, 5}, -1000, 1000, DType::i64));
  cases.push_back(binary_case("sub_u8_broadcast", tg::sub, {3, 1, 9}, {7, 1}, 0, 256, DType::u8));
  cases.push_back(binary_case("add_i8_long", tg::add, {4099}, {4099}, -128, 128, DType::i8));
  cases.push_back(ranged_case("floor_div_i32_random", tg::floor_div, {6, 7}, -50, 50, {7}, 1, 9, DType::i32));
  cases.push_back(ranged_case("floor_mod_i64_random", tg::floor_mod, {6, 7}, -50, 50, {6, 1}, -9, -1, DType::i64));

  // Comparisons (bool output) and logical ops.
  cases.push_back(binary_case("less", tg::less, {4, 7}, {7}, -1, 1));
  cases.push_back(binary_case("greater_equal", tg::greater_equal, {3, 1}, {1, 8}, -1, 1));
  cases.push_back(values_case("equal_nan", tg::equal, {1, kNaN, 2, -0.0}, {1, kNaN, 3, 0}, {1, 0, 0, 1}));
  cases.push_back(values_case("not_equal_nan", tg::not_equal, {1, kNaN, 2, -0.0}, {1, kNaN, 3, 0}, {0, 1, 1, 0}));
  cases.push_back(values_case("less_equal_i32", tg::less_equal, {1, 5, -3}, {1, 4, 0}, {1, 0, 1}, DType::i32));
  cases.push_back(binary_case("greater_i64", tg::greater, {3, 4}, {4}, -5, 5, DType::i64));
  cases.push_back(binary_case("equal_u8", tg::equal, {5, 5}, {5, 1}, 0, 3, DType::u8));
  cases.push_back(binary_case("equal_bool", tg::equal, {2, 9}, {9}, 0, 1, DType::bool_));
  cases.push_back(values_case("less_bool", tg::less, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 0, 0}, DType::bool_));
  cases.push_back(values_case("logical_and", tg::logical_and, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 1}, DType::bool_));
  cases.push_back(values_case("logical_or", tg::logical_or, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 1}, DType::bool_));
  cases.push_back(values_case("logical_xor", tg::logical_xor, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 0}, DType::bool_));
  cases.push_back(binary_case("logical_and_broadcast", tg::logical_and, {2, 3, 4}, {3, 1}, 0, 1, DType::bool_));
  cases.push_back(binary_case("logical_or_long", tg::logical_or, {5003}, {5003}, 0, 1, DType::bool_));
}
