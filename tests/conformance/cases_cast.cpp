// Conformance cases of the cast family: float -> int saturation and NaN -> 0, x -> bool, int -> int
// wrap-around, rounding to f16/bf16 (ties to even, overflow to inf, via f32 as the CPU), bool ->
// numbers, identity casts, rank 0 and zero-size tensors; stop_gradient is the identity.
#include <limits>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// cast(x, to) on explicit values of `from` (random when `in` is empty) with optional results.
OpCase cast_case(std::string name, DType from, DType to, tg::Shape shape, std::vector<double> in,
                 std::vector<double> expected = {}, double low = -100, double high = 100) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(shape), from, low, high, std::move(in)}};
  c.build = [to](tg::Graph&, const std::vector<tg::Tensor>& x) { return std::vector<tg::Tensor>{tg::cast(x[0], to)}; };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(cast) {
  const DType f32 = DType::f32;
  const double i32max = 2147483647, i32min = -2147483648.0;
  const double i64max = 9223372036854775807.0, i64min = -9223372036854775807.0 - 1;
  // Floating -> integer: truncation toward zero, saturation, NaN -> 0 (swept over f64/f32/f16/bf16).
  cases.push_back(cast_case("cast_float_to_i32_special", f32, DType::i32, {8}, {kNaN, kInf, -kInf, 3e9, -3e9, 2.7, -2.7, 0.5},
                            {0, i32max, i32min, i32max, i32min, 2, -2, 0}));
  cases.push_back(cast_case("cast_float_to_u8", f32, DType::u8, {5}, {-5, 300, 254.9, kNaN, 1.5}, {0, 255, 254, 0, 1}));
  cases.push_back(cast_case("cast_float_to_i8", f32, DType::i8, {5}, {-128.5, 127.9, 200, -1000, -0.9}, {-128, 127, 127, -128, 0}));
  cases.push_back(cast_case("cast_float_to_i64", f32, DType::i64, {4}, {1e19, -1e19, -kInf, -0.9}, {i64max, i64min, i64min, 0}));
  cases.push_back(cast_case("cast_float_to_i32_random", f32, DType::i32, {7, 13}, {}, {}, -1000, 1000));
  cases.push_back(cast_case("cast_float_to_bool", f32, DType::bool_, {5}, {0, -0.0, kNaN, 0.1, -3}, {0, 0, 1, 1, 1}));
  // Floating -> floating.
  cases.push_back(cast_case("cast_float_to_f16", f32, DType::f16, {7}, {1.0, 0.1, 70000, -70000, 1e-8, 65519, 65520},
                            {1, 0.0999755859375, kInf, -kInf, 0, 65504, kInf}));
  cases.push_back(cast_case("cast_float_to_bf16", f32, DType::bf16, {4}, {1.0, 3.0e38, 1.00390625, 1.01171875},
                            {1, 3.00405527047391e38, 1, 1.015625}));
  cases.push_back(cast_case("cast_float_to_f16_random", f32, DType::f16, {6, 11}, {}));
  cases.push_back(cast_case("cast_float_to_f32_random", f32, DType::f32, {5, 3}, {}));
  cases.push_back(cast_case("cast_float_to_f64_long", f32, DType::f64, {10007}, {}));
  cases.push_back(cast_case("cast_float_rank0", f32, DType::i64, {}, {-7.9}, {-7}));
  cases.push_back(cast_case("cast_float_zero_size", f32, DType::i32, {0, 5}, {}));
  // Integer -> integer wraps; bool and integers -> floats.
  cases.push_back(cast_case("cast_i32_to_i8", DType::i32, DType::i8, {5}, {300, -129, 127, -128, 256}, {44, 127, 127, -128, 0}));
  cases.push_back(cast_case("cast_i64_to_i32", DType::i64, DType::i32, {3}, {4294967297.0, -1, 2147483648.0}, {1, -1, i32min}));
  cases.push_back(cast_case("cast_i8_to_u8", DType::i8, DType::u8, {3}, {-1, -128, 5}, {255, 128, 5}));
  cases.push_back(cast_case("cast_u8_to_i64", DType::u8, DType::i64, {3}, {255, 0, 128}, {255, 0, 128}));
  cases.push_back(cast_case("cast_i32_to_f32", DType::i32, DType::f32, {3}, {16777217, -3, 0}, {16777216, -3, 0}));
  cases.push_back(cast_case("cast_i64_to_f16", DType::i64, DType::f16, {4}, {65519, 70000, -2049, 3}, {65504, kInf, -2048, 3}));
  cases.push_back(cast_case("cast_i64_to_f64", DType::i64, DType::f64, {2}, {9007199254740993.0, -5}, {9007199254740992.0, -5}));
  cases.push_back(cast_case("cast_u8_to_bf16", DType::u8, DType::bf16, {5, 7}, {}, {}, 0, 256));
  cases.push_back(cast_case("cast_i32_to_bool", DType::i32, DType::bool_, {4}, {0, -1, 2, 0}, {0, 1, 1, 0}));
  cases.push_back(cast_case("cast_bool_to_f32", DType::bool_, DType::f32, {3}, {1, 0, 1}, {1, 0, 1}));
  cases.push_back(cast_case("cast_bool_to_i64", DType::bool_, DType::i64, {4, 3}, {}));
  cases.push_back(cast_case("cast_i8_to_f64_long", DType::i8, DType::f64, {5003}, {}, {}, -128, 128));

  OpCase sg;
  sg.name = "stop_gradient";
  sg.inputs = {InputSpec{{3, 4}, f32, -2, 2}};
  sg.build = [](tg::Graph&, const std::vector<tg::Tensor>& x) { return std::vector<tg::Tensor>{tg::stop_gradient(x[0])}; };
  cases.push_back(sg);
}
