// Conformance cases of the random family: every backend must give the values of
// TensorData::random_uniform / random_normal (src/core/philox.h) for the same seed. Uniform values
// are compared exactly (bit for bit); normal values within a few ulps, since log/sin/cos may
// differ in the last bit between math libraries. random_uniform_like with key 0 equals
// random_uniform; other keys give other streams (checked against the CPU). Zero-size shapes too.
#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;
using tg::conformance::Tolerance;

std::vector<double> values_of(const tg::TensorData& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

OpCase uniform_case(std::string name, tg::Shape shape, float low, float high, uint64_t seed, DType dtype) {
  OpCase c;
  c.name = std::move(name);
  c.build = [=](tg::Graph& g, const std::vector<tg::Tensor>&) {
    return std::vector<tg::Tensor>{tg::random_uniform(g, shape, low, high, {.seed = seed, .dtype = dtype})};
  };
  c.expected = {values_of(tg::TensorData::random_uniform(shape, low, high, seed, dtype))};
  return c;
}

/// Normal values: within `tol` (rounding differences of log/sin/cos between math libraries).
OpCase normal_case(std::string name, tg::Shape shape, float mean, float stddev, uint64_t seed, DType dtype) {
  OpCase c;
  c.name = std::move(name);
  c.build = [=](tg::Graph& g, const std::vector<tg::Tensor>&) {
    return std::vector<tg::Tensor>{tg::random_normal(g, shape, mean, stddev, {.seed = seed, .dtype = dtype})};
  };
  c.expected = {values_of(tg::TensorData::random_normal(shape, mean, stddev, seed, dtype))};
  Tolerance tol = dtype == DType::f64 ? Tolerance{1e-12, 1e-12}
                  : dtype == DType::f32 ? Tolerance{1e-5, 1e-5}
                  : dtype == DType::f16 ? Tolerance{2e-3, 2e-3}
                                        : Tolerance{1e-2, 1e-2};
  c.expected_tolerance = tol;
  c.tolerance = {{DType::f64, tol}};  // the "base" variant's comparison with the CPU
  return c;
}

/// random_uniform_like(like, key): `like` an i32 tensor of `shape` (values unused), key an i64 scalar.
OpCase like_case(std::string name, tg::Shape shape, double key, DType key_dtype, uint64_t seed, DType dtype,
                 bool expect_uniform) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{shape, DType::i32, 0, 10}, InputSpec{{}, key_dtype, 0, 1, {key}}};
  c.build = [=](tg::Graph&, const std::vector<tg::Tensor>& in) {
    return std::vector<tg::Tensor>{tg::random_uniform_like(in[0], in[1], -1, 2, {.seed = seed, .dtype = dtype})};
  };
  if (expect_uniform) c.expected = {values_of(tg::TensorData::random_uniform(shape, -1, 2, seed, dtype))};
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(random) {
  cases.push_back(uniform_case("random_uniform_f32", {1001}, -2, 3, 7, DType::f32));
  cases.push_back(uniform_case("random_uniform_f32_matrix", {37, 41}, 0, 1, 123456789, DType::f32));
  cases.push_back(uniform_case("random_uniform_f16", {4, 257}, 0, 1, 3, DType::f16));
  cases.push_back(uniform_case("random_uniform_bf16", {3, 333}, -1, 1, 4, DType::bf16));
  cases.push_back(uniform_case("random_uniform_f64", {3, 5, 7}, -4, 4, 5, DType::f64));
  cases.push_back(uniform_case("random_uniform_rank0", {}, 10, 11, 9, DType::f32));
  cases.push_back(uniform_case("random_uniform_zero_size", {0, 3}, 0, 1, 1, DType::f32));
  cases.push_back(normal_case("random_normal_f32", {2001}, 1, 2, 11, DType::f32));
  cases.push_back(normal_case("random_normal_f16", {5, 101}, 0, 1, 12, DType::f16));
  cases.push_back(normal_case("random_normal_bf16", {3, 3}, -1, 0.5, 13, DType::bf16));
  cases.push_back(normal_case("random_normal_f64", {2, 501}, 0, 1, 14, DType::f64));
  cases.push_back(like_case("random_uniform_like_key0", {3, 100}, 0, DType::i64, 21, DType::f32, true));
  cases.push_back(like_case("random_uniform_like_key", {7, 9}, 12345, DType::i64, 21, DType::f32, false));
  cases.push_back(like_case("random_uniform_like_negative_key", {5}, -1, DType::i64, 22, DType::f64, false));
  cases.push_back(like_case("random_uniform_like_i32_key", {2, 3, 4}, 77, DType::i32, 23, DType::f16, false));
}
