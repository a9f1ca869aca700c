// DType names, sizes and classes; Shape helpers; TensorType; error codes.
#include <type_traits>

#include "test_util.h"

namespace tg {
namespace {

TEST(DType, NamesAndSizes) {
  struct Row {
    DType t;
    const char* name;
    size_t size;
  };
  const Row rows[] = {{DType::bool_, "bool", 1}, {DType::i8, "i8", 1},     {DType::u8, "u8", 1},
                      {DType::i32, "i32", 4},    {DType::i64, "i64", 8},   {DType::f16, "f16", 2},
                      {DType::bf16, "bf16", 2},  {DType::f32, "f32", 4},   {DType::f64, "f64", 8}};
  ASSERT_EQ(std::size(rows), std::size(kAllDTypes));
  for (size_t i = 0; i < std::size(rows); ++i) {
    EXPECT_EQ(kAllDTypes[i], rows[i].t);
    EXPECT_EQ(dtype_name(rows[i].t), rows[i].name);
    EXPECT_EQ(dtype_size(rows[i].t), rows[i].size) << rows[i].name;
    EXPECT_EQ(dtype_from_name(rows[i].name), rows[i].t);
  }
  for (DType t : kAllDTypes) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
}

TEST(DType, StorageSizesMatchCppTypes) {
  EXPECT_EQ(dtype_size(dtype_of_v<bool>), sizeof(bool));
  EXPECT_EQ(dtype_size(dtype_of_v<f16_t>), sizeof(f16_t));
  EXPECT_EQ(dtype_size(dtype_of_v<bf16_t>), sizeof(bf16_t));
  EXPECT_EQ(dtype_size(dtype_of_v<int64_t>), sizeof(int64_t));
  EXPECT_EQ(dtype_of_v<uint8_t>, DType::u8);
  EXPECT_EQ(dtype_of_v<double>, DType::f64);
}

TEST(DType, FromNameRejectsUnknownNames) {
  EXPECT_TG_ERROR(dtype_from_name("float32"), ErrorCode::invalid_argument, "[dtype]");
  EXPECT_TG_ERROR(dtype_from_name("float32"), ErrorCode::invalid_argument, "'float32'");
  EXPECT_TG_ERROR(dtype_from_name(""), ErrorCode::invalid_argument, "unknown dtype");
  EXPECT_TG_ERROR(dtype_from_name("F32"), ErrorCode::invalid_argument, "'F32'");  // case matters
}

TEST(DType, Classes) {
  for (DType t : kAllDTypes) {
    bool fl = t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
    bool in = t == DType::i8 || t == DType::u8 || t == DType::i32 || t == DType::i64;
    EXPECT_EQ(is_floating(t), fl) << dtype_name(t);
    EXPECT_EQ(is_integer(t), in) << dtype_name(t);
    EXPECT_EQ(is_numeric(t), t != DType::bool_) << dtype_name(t);
    EXPECT_EQ(is_signed(t), fl || t == DType::i8 || t == DType::i32 || t == DType::i64) << dtype_name(t);
  }
}

TEST(Shape, NumElements) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({7}), 7);
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({2, 0, 3}), 0);
  EXPECT_EQ(num_elements({2, -1}), -1);
  EXPECT_EQ(num_elements({0, -1}), -1);  // dynamic wins even when another dim is 0
  EXPECT_EQ(num_elements({-1, 0}), -1);
}

TEST(Shape, IsStaticAndToString) {
  EXPECT_TRUE(is_static({}));
  EXPECT_TRUE(is_static({0, 3}));
  EXPECT_FALSE(is_static({2, -1}));
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({5}), "[5]");
  EXPECT_EQ(shape_to_string({2, -1, 3}), "[2,?,3]");
  EXPECT_EQ(shape_to_string({0, 1}), "[0,1]");
  EXPECT_EQ(shape_to_string({-3}), "[-3]");  // invalid, not dynamic: shown as is
}

TEST(Shape, RowMajorStrides) {
  EXPECT_EQ(row_major_strides({}), (std::vector<int64_t>{}));
  EXPECT_EQ(row_major_strides({5}), (std::vector<int64_t>{1}));
  EXPECT_EQ(row_major_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(row_major_strides({2, 0, 3}), (std::vector<int64_t>{0, 3, 1}));
  EXPECT_EQ(row_major_strides({4, 1, 2}), (std::vector<int64_t>{2, 2, 1}));
}

TEST(Shape, TensorTypeToStringAndEquality) {
  EXPECT_EQ((TensorType{{2, 3}, DType::f32}.to_string()), "f32[2,3]");
  EXPECT_EQ((TensorType{{}, DType::bool_}.to_string()), "bool[]");
  EXPECT_EQ((TensorType{{-1, 4}, DType::bf16}.to_string()), "bf16[?,4]");
  EXPECT_EQ((TensorType{{2, 3}, DType::f32}), (TensorType{{2, 3}, DType::f32}));
  EXPECT_NE((TensorType{{2, 3}, DType::f32}), (TensorType{{2, 3}, DType::f64}));
  EXPECT_NE((TensorType{{2, 3}, DType::f32}), (TensorType{{3, 2}, DType::f32}));
  EXPECT_EQ((TensorType{{1, 2, 3}, DType::i8}.rank()), 3);
}

TEST(Error, CodeNamesAndType) {
  EXPECT_EQ(error_code_name(ErrorCode::invalid_argument), "invalid_argument");
  EXPECT_EQ(error_code_name(ErrorCode::shape_mismatch), "shape_mismatch");
  EXPECT_EQ(error_code_name(ErrorCode::dtype_mismatch), "dtype_mismatch");
  EXPECT_EQ(error_code_name(ErrorCode::out_of_range), "out_of_range");
  EXPECT_EQ(error_code_name(ErrorCode::not_found), "not_found");
  EXPECT_EQ(error_code_name(ErrorCode::unsupported), "unsupported");
  EXPECT_EQ(error_code_name(ErrorCode::io_error), "io_error");
  EXPECT_EQ(error_code_name(ErrorCode::out_of_memory), "out_of_memory");
  EXPECT_EQ(error_code_name(ErrorCode::internal), "internal");
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  Error e(ErrorCode::not_found, "[x] gone");
  EXPECT_EQ(e.code(), ErrorCode::not_found);
  EXPECT_STREQ(e.what(), "[x] gone");
}

}  // namespace
}  // namespace tg
