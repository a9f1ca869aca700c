// Value and error tests of the source ops: placeholder, constant, fill, iota.
#include <limits>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;
using testing::run1;

TG_COVERS(value, placeholder);
TG_COVERS(value, constant);
TEST(Source, PlaceholderAndConstantValues) {
  Graph g;
  Tensor x = g.placeholder({2, 2}, DType::i64, "x");
  EXPECT_EQ(x.type(), (TensorType{{2, 2}, DType::i64}));
  expect_equal(run1(g, x, {{x, TensorData::from_vector<int64_t>({1, -2, int64_t{1} << 40, 0}, {2, 2})}}),
               {1, -2, 1099511627776.0, 0}, {2, 2});
  Tensor c = g.constant(TensorData::from_vector<bf16_t>({bf16_t(1.5f), bf16_t(-0.25f)}, {2}), "c");
  EXPECT_EQ(c.op().name(), "c");
  expect_equal(run1(g, c), {1.5, -0.25}, {2});
  expect_equal(run1(g, g.constant(7.9, DType::i32)), {7}, {});   // converted as cast
  expect_equal(run1(g, g.constant(2.0, DType::bool_)), {1}, {});
  expect_equal(run1(g, g.constant(0.1)), {static_cast<double>(0.1f)}, {});  // default f32
  // The value is copied into the graph: writing into the caller's TensorData later changes nothing.
  TensorData v = TensorData::from_vector<float>({1, 2}, {2});
  Tensor cv = g.constant(v);
  v.data<float>()[0] = 100.f;
  expect_equal(run1(g, neg(cv)), {-1, -2}, {2});
}

TG_COVERS(error, placeholder);
TG_COVERS(error, constant);
TEST(Source, PlaceholderAndConstantErrors) {
  Graph g;
  EXPECT_TG_ERROR(g.placeholder({-5}, DType::f32, "p"), ErrorCode::invalid_argument, "[placeholder]");
  EXPECT_TG_ERROR(g.constant(TensorData()), ErrorCode::invalid_argument, "[constant] value is an empty TensorData");
  EXPECT_EQ(g.num_nodes(), 0);  // failed builders add nothing
}

TG_COVERS(value, fill);
TEST(Source, FillValues) {
  Graph g;
  expect_equal(run1(g, fill(g, {2, 3}, 1.5)), {1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, {2, 3});
  expect_equal(run1(g, fill(g, {3}, -3.7, DType::i32)), {-3, -3, -3}, {3});
  expect_equal(run1(g, fill(g, {2}, 300, DType::u8)), {255, 255}, {2});
  expect_equal(run1(g, fill(g, {2}, 0.5, DType::bool_)), {1, 1}, {2});
  expect_equal(run1(g, fill(g, {1}, 65520, DType::f16)), {std::numeric_limits<double>::infinity()}, {1});
  expect_equal(run1(g, fill(g, {}, 0.1, DType::f64)), {0.1}, {});
  expect_equal(run1(g, fill(g, {0, 4}, 1.0)), {}, {0, 4});
  // Large enough to take the multi-threaded path.
  TensorData big = run1(g, fill(g, {100000}, 2.5, DType::bf16));
  EXPECT_EQ(big.element_as_double(0), 2.5);
  EXPECT_EQ(big.element_as_double(99999), 2.5);
}

TG_COVERS(error, fill);
TEST(Source, FillErrors) {
  Graph g;
  EXPECT_TG_ERROR(fill(g, {2, -1}, 1.0), ErrorCode::invalid_argument, "[fill] shape [2,?] has an invalid dim -1");
  EXPECT_TG_ERROR(fill(g, {-7}, 1.0), ErrorCode::invalid_argument, "[fill]");
}

TG_COVERS(value, iota);
TEST(Source, IotaValues) {
  Graph g;
  expect_equal(run1(g, iota(g, {4})), {0, 1, 2, 3}, {4});
  expect_equal(run1(g, iota(g, {2, 3}, 1)), {0, 1, 2, 0, 1, 2}, {2, 3});
  expect_equal(run1(g, iota(g, {2, 3}, 0)), {0, 0, 0, 1, 1, 1}, {2, 3});
  expect_equal(run1(g, iota(g, {2, 3}, -2)), {0, 0, 0, 1, 1, 1}, {2, 3});
  expect_equal(run1(g, iota(g, {2, 2, 2}, 1, DType::f64)), {0, 0, 1, 1, 0, 0, 1, 1}, {2, 2, 2});
  expect_equal(run1(g, iota(g, {3}, 0, DType::f16)), {0, 1, 2}, {3});
  expect_equal(run1(g, iota(g, {3, 0}, 0, DType::i64)), {}, {3, 0});
  TensorData big = run1(g, iota(g, {70000}, 0, DType::f32));
  EXPECT_EQ(big.element_as_double(69999), 69999.0);
  EXPECT_EQ(iota(g, {2}).dtype(), DType::i32);
}

TG_COVERS(error, iota);
TEST(Source, IotaErrors) {
  Graph g;
  EXPECT_TG_ERROR(iota(g, {2, 3}, 2), ErrorCode::invalid_argument, "[iota] axis 2 is out of range for rank 2");
  EXPECT_TG_ERROR(iota(g, {2, 3}, -3), ErrorCode::invalid_argument, "[iota]");
  EXPECT_TG_ERROR(iota(g, {}, 0), ErrorCode::invalid_argument, "[iota] shape must have rank >= 1");
  EXPECT_TG_ERROR(iota(g, {3}, 0, DType::bool_), ErrorCode::dtype_mismatch, "[iota] dtype bool is not numeric");
  EXPECT_TG_ERROR(iota(g, {-1}), ErrorCode::invalid_argument, "[iota]");
}

}  // namespace
}  // namespace tg
