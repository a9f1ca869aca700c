// Conformance cases of the elementwise ternary family: select (broadcast condition, every dtype,
// bits copied unchanged) and clamp (scalar and tensor bounds, NaN propagation, low > high, integers).
#include <limits>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

OpCase select_case(std::string name, InputSpec cond, InputSpec a, InputSpec b, std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {std::move(cond), std::move(a), std::move(b)};
  c.build = [](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{tg::select(in[0], in[1], in[2])};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

OpCase clamp_case(std::string name, InputSpec x, InputSpec lo, InputSpec hi, std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {std::move(x), std::move(lo), std::move(hi)};
  c.build = [](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{tg::clamp(in[0], in[1], in[2])};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

InputSpec values(tg::Shape shape, DType dtype, std::vector<double> v) {
  return InputSpec{std::move(shape), dtype, 0, 1, std::move(v)};
}

}  // namespace

TG_CONFORMANCE_CASES(ternary) {
  const DType b8 = DType::bool_, f32 = DType::f32;
  // select: random operands with broadcasting.
  cases.push_back(select_case("select", {{4, 9}, b8}, {{4, 9}, f32, -3, 3}, {{4, 9}, f32, -3, 3}));
  cases.push_back(select_case("select_broadcast", {{3, 1}, b8}, {{3, 4}, f32, -3, 3}, {{}, f32, -3, 3}));
  cases.push_back(select_case("select_cond_scalar", {{}, b8}, {{2, 5}, f32, -3, 3}, {{5}, f32, -3, 3}));
  cases.push_back(select_case("select_zero_size", {{0, 4}, b8}, {{4}, f32, -3, 3}, {{0, 4}, f32, -3, 3}));
  cases.push_back(select_case("select_long", {{20011}, b8}, {{20011}, f32, -3, 3}, {{20011}, f32, -3, 3}));
  cases.push_back(select_case("select_values", values({4}, b8, {1, 0, 1, 0}), values({4}, f32, {1, 2, kNaN, 4}),
                              values({4}, f32, {-1, kNaN, -3, -4}), {1, kNaN, kNaN, -4}));
  cases.push_back(select_case("select_i64", {{2, 3}, b8}, {{2, 3}, DType::i64, -1000, 1000},
                              {{3}, DType::i64, -1000, 1000}));
  cases.push_back(select_case("select_i8_values", values({3}, b8, {0, 1, 0}), values({3}, DType::i8, {-128, 5, 7}),
                              values({}, DType::i8, {127}), {127, 5, 127}));
  cases.push_back(select_case("select_bool", {{3, 4}, b8}, {{4}, b8}, {{3, 1}, b8}));
  cases.push_back(select_case("select_u8_outer", {{5, 1}, b8}, {{1, 6}, DType::u8, 0, 256}, {{5, 6}, DType::u8, 0, 256}));

  // clamp: random x with scalar and tensor bounds.
  cases.push_back(clamp_case("clamp_scalar_bounds", {{5, 7}, f32, -3, 3}, values({}, f32, {-1}), values({}, f32, {1.5})));
  cases.push_back(clamp_case("clamp_tensor_bounds", {{4, 6}, f32, -3, 3}, {{6}, f32, -2, 0}, {{4, 1}, f32, 0, 2}));
  cases.push_back(clamp_case("clamp_long", {{9001}, f32, -3, 3}, values({}, f32, {-0.5}), values({}, f32, {0.5})));
  cases.push_back(clamp_case("clamp_nan", values({5}, f32, {kNaN, 1, 5, -5, 0.5}), values({5}, f32, {0, kNaN, 0, 0, 0}),
                             values({5}, f32, {1, 1, kNaN, 1, 1}), {kNaN, kNaN, kNaN, 0, 0.5}));
  cases.push_back(clamp_case("clamp_low_above_high", values({3}, f32, {0, 5, -5}), values({}, f32, {2}),
                             values({}, f32, {1}), {1, 1, 1}));
  cases.push_back(clamp_case("clamp_i32", values({4}, DType::i32, {-10, 0, 10, 3}), values({}, DType::i32, {-2}),
                             values({}, DType::i32, {5}), {-2, 0, 5, 3}));
  cases.push_back(clamp_case("clamp_u8", {{4, 5}, DType::u8, 0, 256}, {{5}, DType::u8, 0, 100},
                             values({}, DType::u8, {200})));
  cases.push_back(clamp_case("clamp_i64_rank0", values({}, DType::i64, {-7}), values({}, DType::i64, {-3}),
                             values({}, DType::i64, {3}), {-3}));
}
