// TensorData: construction from vectors for every dtype, filled tensors, views, copies,
// element access, printing and errors.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

template <typename T>
void expect_round_trip(const std::vector<T>& values, const Shape& shape, DType dtype) {
  TensorData t = TensorData::from_vector<T>(values, shape);
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(t.num_elements(), static_cast<int64_t>(values.size()));
  EXPECT_EQ(t.nbytes(), values.size() * dtype_size(dtype));
  EXPECT_FALSE(t.empty());
  std::vector<T> back = t.to_vector<T>();
  ASSERT_EQ(back.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(static_cast<double>(back[i]), static_cast<double>(values[i])) << dtype_name(dtype) << " " << i;
  }
}

TEST(TensorData, FromVectorRoundTripsEveryDtype) {
  expect_round_trip<bool>({true, false, true, true, false, false}, {2, 3}, DType::bool_);
  expect_round_trip<int8_t>({-128, -1, 0, 127}, {4}, DType::i8);
  expect_round_trip<uint8_t>({0, 1, 200, 255}, {2, 2}, DType::u8);
  expect_round_trip<int32_t>({std::numeric_limits<int32_t>::min(), 0, 2147483647}, {3}, DType::i32);
  expect_round_trip<int64_t>({int64_t{1} << 62, -5}, {2, 1}, DType::i64);
  expect_round_trip<f16_t>({f16_t(1.5f), f16_t(-65504.f), f16_t(0.25f)}, {3}, DType::f16);
  expect_round_trip<bf16_t>({bf16_t(3.f), bf16_t(-0.5f)}, {1, 2}, DType::bf16);
  expect_round_trip<float>({1.25f, -2.5f, 1e30f, 0.f}, {2, 2}, DType::f32);
  expect_round_trip<double>({1e300, -1e-300, 0.1}, {3}, DType::f64);
}

TEST(TensorData, BoolStoredAsOneBytePerElement) {
  TensorData t = TensorData::from_vector<bool>({true, false, true}, {3});
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  EXPECT_EQ(bytes[0], 1);
  EXPECT_EQ(bytes[1], 0);
  EXPECT_EQ(bytes[2], 1);
  EXPECT_EQ(t.to_vector<bool>(), (std::vector<bool>{true, false, true}));
}

TEST(TensorData, ScalarAndEmptyShapes) {
  TensorData s = TensorData::scalar(2.5);
  EXPECT_EQ(s.dtype(), DType::f64);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.element_as_double(0), 2.5);
  TensorData b = TensorData::scalar(true);
  EXPECT_EQ(b.dtype(), DType::bool_);
  EXPECT_EQ(b.element_as_double(0), 1.0);
  TensorData z = TensorData::from_vector<float>(std::vector<float>{}, {0, 3});
  EXPECT_EQ(z.num_elements(), 0);
  EXPECT_EQ(z.nbytes(), 0u);
  EXPECT_TRUE(z.to_vector<float>().empty());
}

TEST(TensorData, CountMismatchRaisesShapeMismatch) {
  EXPECT_TG_ERROR(TensorData::from_vector<float>({1, 2, 3}, {2, 2}), ErrorCode::shape_mismatch,
                  "[from_vector] 3 values do not fill shape [2,2] (4 elements)");
  EXPECT_TG_ERROR(TensorData::from_vector<int32_t>({1}, {-1}), ErrorCode::shape_mismatch, "[from_vector]");
  EXPECT_TG_ERROR(TensorData::from_vector<bool>({true}, {2}), ErrorCode::shape_mismatch, "1 values");
}

TEST(TensorData, ConstructorRejectsDynamicDimsAndDevicesWithoutBackend) {
  EXPECT_TG_ERROR(TensorData({2, -1}, DType::f32), ErrorCode::invalid_argument, "[tensor_data]");
  EXPECT_TG_ERROR(TensorData({-3}, DType::f32), ErrorCode::invalid_argument, "[-3]");
  EXPECT_TG_ERROR(TensorData({2}, DType::f32, Device::cuda(99)), ErrorCode::unsupported, "cuda:99");
  const int64_t big = int64_t{1} << 40;
  EXPECT_TG_ERROR(TensorData({big, big}, DType::f32), ErrorCode::invalid_argument, "too large");
  EXPECT_TG_ERROR(TensorData({int64_t{1} << 62}, DType::f64), ErrorCode::invalid_argument, "too large");
}

TEST(TensorData, WrongTypedAccessRaisesDtypeMismatch) {
  TensorData t = TensorData::from_vector<float>({1, 2}, {2});
  EXPECT_TG_ERROR(t.to_vector<double>(), ErrorCode::dtype_mismatch, "holds f32, accessed as f64");
  EXPECT_TG_ERROR(t.data<int32_t>(), ErrorCode::dtype_mismatch, "[tensor_data]");
  TensorData empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_TG_ERROR(empty.raw_data(), ErrorCode::invalid_argument, "empty");
}

TEST(TensorData, FullAndZerosConvertLikeCast) {
  testing::expect_equal(TensorData::full({2, 2}, DType::f32, 1.5), {1.5, 1.5, 1.5, 1.5}, {2, 2});
  testing::expect_equal(TensorData::zeros({3}), {0, 0, 0}, {3});
  EXPECT_EQ(TensorData::zeros({3}).dtype(), DType::f32);
  testing::expect_equal(TensorData::zeros({2}, DType::i64), {0, 0}, {2});
  // Float -> int truncates toward zero.
  testing::expect_equal(TensorData::full({2}, DType::i32, 3.9), {3, 3}, {2});
  testing::expect_equal(TensorData::full({1}, DType::i32, -3.9), {-3}, {1});
  // Out of range saturates and NaN gives 0 (defined, as tg::cast on the CPU).
  testing::expect_equal(TensorData::full({1}, DType::i8, 300), {127}, {1});
  testing::expect_equal(TensorData::full({1}, DType::i8, -300), {-128}, {1});
  testing::expect_equal(TensorData::full({1}, DType::u8, -1), {0}, {1});
  testing::expect_equal(TensorData::full({1}, DType::u8, 1e9), {255}, {1});
  testing::expect_equal(TensorData::full({1}, DType::i32, std::nan("")), {0}, {1});
  testing::expect_equal(TensorData::full({1}, DType::i64, 1e30), {9223372036854775807.0}, {1});
  // x -> bool is x != 0.
  testing::expect_equal(TensorData::full({2}, DType::bool_, 0.5), {1, 1}, {2});
  testing::expect_equal(TensorData::full({1}, DType::bool_, 0.0), {0}, {1});
  // f16: 65520 rounds to inf; bf16: 1 + 2^-8 ties to 1.
  testing::expect_equal(TensorData::full({1}, DType::f16, 65520), {std::numeric_limits<double>::infinity()}, {1});
  testing::expect_equal(TensorData::full({1}, DType::bf16, 1.00390625), {1}, {1});
  testing::expect_equal(TensorData::full({}, DType::f64, 0.1), {0.1}, {});
}

TEST(TensorData, ReshapedSharesStorage) {
  TensorData t = TensorData::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  TensorData r = t.reshaped({3, 2});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.raw_data(), t.raw_data());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));  // the original keeps its shape
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.reshaped({6}).rank(), 1);
  EXPECT_TG_ERROR(t.reshaped({4, 2}), ErrorCode::shape_mismatch, "cannot view [2,3] as [4,2]");
  EXPECT_TG_ERROR(t.reshaped({-1, 6}), ErrorCode::shape_mismatch, "[tensor_data]");
}

TEST(TensorData, CopiesShareAndClonesAreIndependent) {
  TensorData t = TensorData::from_vector<float>({1, 2, 3}, {3});
  TensorData shared = t;
  TensorData deep = t.clone();
  EXPECT_EQ(shared.raw_data(), t.raw_data());
  EXPECT_NE(deep.raw_data(), t.raw_data());
  EXPECT_EQ(deep.type(), t.type());
  deep.data<float>()[0] = 100.f;
  shared.data<float>()[1] = 20.f;
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 20, 3}));
  EXPECT_EQ(deep.to_vector<float>(), (std::vector<float>{100, 2, 3}));
  EXPECT_EQ(t.to(Device::cpu()).raw_data(), t.raw_data());  // same device: same object
  EXPECT_TG_ERROR(t.to(Device::cuda(99)), ErrorCode::unsupported, "cuda:99");
}

TEST(TensorData, ElementAsDouble) {
  TensorData h = TensorData::from_vector<f16_t>({f16_t(0.1f), f16_t(-3.f)}, {2});
  EXPECT_EQ(h.element_as_double(0), 0.0999755859375);
  EXPECT_EQ(h.element_as_double(1), -3.0);
  TensorData i = TensorData::from_vector<int64_t>({-7, int64_t{1} << 40}, {2});
  EXPECT_EQ(i.element_as_double(1), 1099511627776.0);
  TensorData u = TensorData::from_vector<uint8_t>({255}, {1});
  EXPECT_EQ(u.element_as_double(0), 255.0);
  EXPECT_TG_ERROR(i.element_as_double(2), ErrorCode::out_of_range, "element 2 outside 2 elements");
  EXPECT_TG_ERROR(i.element_as_double(-1), ErrorCode::out_of_range, "[tensor_data]");
}

TEST(TensorData, ToString) {
  EXPECT_EQ(TensorData::from_vector<float>({1, 2, 3.5f, -4}, {2, 2}).to_string(), "f32[2,2] {1, 2, 3.5, -4}");
  EXPECT_EQ(TensorData::from_vector<int32_t>({0, 1, 2, 3, 4}, {5}).to_string(2), "i32[5] {0, 1, ...}");
  EXPECT_EQ(TensorData::from_vector<int32_t>({0, 1}, {2}).to_string(0), "i32[2] {...}");
  EXPECT_EQ(TensorData::from_vector<bool>({true, false}, {2}).to_string(), "bool[2] {1, 0}");
  EXPECT_EQ(TensorData::scalar(2.5).to_string(), "f64[] {2.5}");
  EXPECT_EQ(TensorData::zeros({0, 2}).to_string(), "f32[0,2] {}");
  EXPECT_EQ(TensorData().to_string(), "f32[] {empty}");
  EXPECT_EQ(TensorData::full({3}, DType::f32, std::numeric_limits<double>::infinity()).to_string(),
            "f32[3] {inf, inf, inf}");
}

TEST(TensorData, RandomIsDeterministicAndInRange) {
  TensorData a = TensorData::random_uniform({1000}, -2.f, 3.f, 42);
  TensorData b = TensorData::random_uniform({1000}, -2.f, 3.f, 42);
  TensorData c = TensorData::random_uniform({1000}, -2.f, 3.f, 43);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
  double sum = 0;
  for (float v : a.to_vector<float>()) {
    EXPECT_GE(v, -2.f);
    EXPECT_LT(v, 3.f);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000, 0.5, 0.25);  // mean of U(-2, 3); 5 sigma is about 0.23
  TensorData n = TensorData::random_normal({2000}, 1.f, 2.f, 7, DType::f64);
  double m = 0;
  for (double v : n.to_vector<double>()) m += v;
  EXPECT_NEAR(m / 2000, 1.0, 0.25);
  EXPECT_TG_ERROR(TensorData::random_uniform({2}, 0, 1, 1, DType::i32), ErrorCode::dtype_mismatch,
                  "[random_uniform]");
  EXPECT_TG_ERROR(TensorData::random_normal({2}, 0, 1, 1, DType::bool_), ErrorCode::dtype_mismatch,
                  "[random_normal]");
}

}  // namespace
}  // namespace tg
