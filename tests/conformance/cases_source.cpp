// Conformance cases of the source family: constant, fill (every dtype, the value converted as a
// cast: saturation for integers, rounding for f16; the all-equal-bytes and general paths) and
// iota (axes, dtypes, i8 wrap-around, f16 rounding), with rank 0 and zero-size shapes. These ops
// have no inputs: each case is one "base" variant with hand-computed values.
#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::conformance::OpCase;

OpCase source_case(std::string name, std::function<tg::Tensor(tg::Graph&)> make, std::vector<double> expected) {
  OpCase c;
  c.name = std::move(name);
  c.build = [make](tg::Graph& g, const std::vector<tg::Tensor>&) { return std::vector<tg::Tensor>{make(g)}; };
  c.expected = {std::move(expected)};
  return c;
}

std::vector<double> repeat(double v, size_t n) { return std::vector<double>(n, v); }

}  // namespace

TG_CONFORMANCE_CASES(source) {
  cases.push_back(source_case("constant_f32", [](tg::Graph& g) {
    return g.constant(tg::TensorData::from_vector<float>({1.5f, -2.f, 3.25f}, {3}));
  }, {1.5, -2, 3.25}));
  cases.push_back(source_case("constant_i64_matrix", [](tg::Graph& g) {
    return g.constant(tg::TensorData::from_vector<int64_t>({1, -2, 3, 4000000000000LL}, {2, 2}));
  }, {1, -2, 3, 4000000000000.0}));

  cases.push_back(source_case("fill_f32", [](tg::Graph& g) { return tg::fill(g, {2, 3}, 1.5); }, repeat(1.5, 6)));
  cases.push_back(source_case("fill_f32_zero", [](tg::Graph& g) { return tg::fill(g, {5}, 0.0); }, repeat(0, 5)));
  cases.push_back(source_case("fill_f32_long", [](tg::Graph& g) { return tg::fill(g, {100003}, -2.5); },
                              repeat(-2.5, 100003)));
  cases.push_back(source_case("fill_f64_rank0", [](tg::Graph& g) { return tg::fill(g, {}, 4.25, DType::f64); }, {4.25}));
  cases.push_back(source_case("fill_f16", [](tg::Graph& g) { return tg::fill(g, {3}, 0.1, DType::f16); },
                              repeat(0.0999755859375, 3)));
  cases.push_back(source_case("fill_bf16", [](tg::Graph& g) { return tg::fill(g, {2, 2}, -3.0, DType::bf16); },
                              repeat(-3, 4)));
  cases.push_back(source_case("fill_i8_saturates", [](tg::Graph& g) { return tg::fill(g, {4}, 300, DType::i8); },
                              repeat(127, 4)));
  cases.push_back(source_case("fill_u8", [](tg::Graph& g) { return tg::fill(g, {3, 3}, 7, DType::u8); }, repeat(7, 9)));
  cases.push_back(source_case("fill_i32_minus_one", [](tg::Graph& g) { return tg::fill(g, {5}, -1, DType::i32); },
                              repeat(-1, 5)));
  cases.push_back(source_case("fill_i64", [](tg::Graph& g) { return tg::fill(g, {7}, -3, DType::i64); }, repeat(-3, 7)));
  cases.push_back(source_case("fill_bool", [](tg::Graph& g) { return tg::fill(g, {2}, 2.0, DType::bool_); }, repeat(1, 2)));
  cases.push_back(source_case("fill_zero_size", [](tg::Graph& g) { return tg::fill(g, {0, 3}, 2.0); }, {}));

  cases.push_back(source_case("iota_axis1", [](tg::Graph& g) { return tg::iota(g, {3, 4}, 1); },
                              {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  cases.push_back(source_case("iota_axis0_f32", [](tg::Graph& g) { return tg::iota(g, {3, 2}, 0, DType::f32); },
                              {0, 0, 1, 1, 2, 2}));
  cases.push_back(source_case("iota_middle_i64", [](tg::Graph& g) { return tg::iota(g, {2, 3, 2}, 1, DType::i64); },
                              {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  {
    std::vector<double> wrap;
    for (int i = 0; i < 300; ++i) wrap.push_back(static_cast<double>(static_cast<int8_t>(i & 0xff)));
    cases.push_back(source_case("iota_i8_wraps", [](tg::Graph& g) { return tg::iota(g, {300}, 0, DType::i8); }, wrap));
  }
  {
    std::vector<double> h;
    for (int r = 0; r < 2; ++r) {
      for (int j = 0; j < 2100; ++j) h.push_back(static_cast<float>(tg::f16_t(static_cast<float>(j))));
    }
    cases.push_back(source_case("iota_f16_rounds", [](tg::Graph& g) { return tg::iota(g, {2, 2100}, 1, DType::f16); }, h));
  }
  cases.push_back(source_case("iota_zero_size", [](tg::Graph& g) { return tg::iota(g, {3, 0}, 0); }, {}));
}
