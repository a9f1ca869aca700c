// ONNX models with dynamic axes (issue 17): dim_params become named symbols, and the shape
// computations exporters emit (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, a Slice up to a
// run-time size, Range, the Equal/Where "-1 to 1" before Expand, ConstantOfShape) work on them,
// so the model compiles once for every batch and sequence length.
#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "test_util.h"
#include "tg/onnx.h"

namespace tg::onnx {
namespace {

using namespace tg::onnx::testing;

Msg ints(const std::string& out, const std::vector<int64_t>& v) {
  return node("Constant", {}, {out}, "", {attr_ints("value_ints", v)});
}
Msg scalar_int(const std::string& out, int64_t v) { return node("Constant", {}, {out}, "", {attr_int("value_int", v)}); }

constexpr int64_t kPositions = 16;

// x [batch, seq, 8] -> y [batch, seq, 8] with y[b, s, k] = x[b, s, k] + pos[s, k] + s, built as
// BERT's TorchScript export builds its position ids, head split and mask:
//   pos = Slice(table [1, 16, 8], 0, seq on axis 1); h = x + pos
//   heads = Reshape(h, [batch, seq, 2, 4]) transposed twice, Reshape back to [batch, seq, 8]
//   m = Expand(Cast(Range(0, seq, 1)), Where(Equal([batch, seq], -1), 1, [batch, seq]))
//   y = heads + Unsqueeze(m, 2)
Model position_model() {
  Model m;
  m.inputs = {value_info_named("x", kFloat, {"batch", "seq", "8"})};
  m.outputs = {value_info_named("y", kFloat, {"batch", "seq", "8"})};
  std::vector<float> table(kPositions * 8);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i) * 0.5f;
  m.initializers = {float_tensor("table", {1, kPositions, 8}, table)};
  m.nodes = {
      node("Shape", {"x"}, {"shape"}), scalar_int("i0", 0), scalar_int("i1", 1),
      node("Gather", {"shape", "i0"}, {"b"}, "", {attr_int("axis", 0)}),
      node("Gather", {"shape", "i1"}, {"q"}, "", {attr_int("axis", 0)}),
      ints("axes0", {0}), node("Unsqueeze", {"b", "axes0"}, {"b1"}), node("Unsqueeze", {"q", "axes0"}, {"q1"}),
      ints("zero", {0}), ints("axis1", {1}), ints("one", {1}),
      node("Slice", {"table", "zero", "q1", "axis1", "one"}, {"pos"}),
      node("Add", {"x", "pos"}, {"h"}),
      ints("heads", {2, 4}), node("Concat", {"b1", "q1", "heads"}, {"split"}, "", {attr_int("axis", 0)}),
      node("Reshape", {"h", "split"}, {"h4"}),
      node("Transpose", {"h4"}, {"t"}, "", {attr_ints("perm", {0, 2, 1, 3})}),
      node("Transpose", {"t"}, {"t2"}, "", {attr_ints("perm", {0, 2, 1, 3})}),
      ints("width", {8}), node("Concat", {"b1", "q1", "width"}, {"merged"}, "", {attr_int("axis", 0)}),
      node("Reshape", {"t2", "merged"}, {"hm"}),
      scalar_int("r0", 0), scalar_int("r1", 1), node("Cast", {"q"}, {"q64"}, "", {attr_int("to", 7)}),
      node("Range", {"r0", "q64", "r1"}, {"range"}), node("Cast", {"range"}, {"rangef"}, "", {attr_int("to", 1)}),
      node("Concat", {"b1", "q1"}, {"bq"}, "", {attr_int("axis", 0)}), ints("minus", {-1, -1}),
      node("Equal", {"bq", "minus"}, {"is_minus"}), ints("ones", {1, 1}),
      node("Where", {"is_minus", "ones", "bq"}, {"target"}), node("Expand", {"rangef", "target"}, {"mask"}),
      ints("axes2", {2}), node("Unsqueeze", {"mask", "axes2"}, {"mask3"}),
      node("Add", {"hm", "mask3"}, {"y"}),
  };
  return m;
}

TensorData ramp(const Shape& shape) {
  TensorData t(shape, DType::f32);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(i % 11) - 4.f;
  return t;
}

void expect_position_values(const TensorData& x, const TensorData& y) {
  ASSERT_EQ(y.shape(), x.shape());
  const int64_t batch = x.shape()[0], seq = x.shape()[1];
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t k = 0; k < 8; ++k) {
        const int64_t i = (b * seq + s) * 8 + k;
        const float want = x.data<float>()[i] + static_cast<float>(s * 8 + k) * 0.5f + static_cast<float>(s);
        ASSERT_FLOAT_EQ(y.data<float>()[i], want) << "batch " << b << " seq " << s << " k " << k;
      }
    }
  }
}

TEST(OnnxSymbolicDims, DimParamsBecomeSymbolsAndShapeChainsCompileOnce) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  ImportResult r = import(as_bytes(position_model().bytes()));
  const int64_t batch = symbolic_dim("batch"), seq = symbolic_dim("seq");
  EXPECT_EQ(r.inputs[0].tensor.shape(), (Shape{batch, seq, 8}));
  EXPECT_EQ(r.outputs[0].tensor.shape(), (Shape{batch, seq, 8}));
  const RuntimeStats before = runtime_stats();
  Executable once = r.graph.compile(Device::cpu(), {{r.inputs[0].tensor, {{-1, -1, 8}, DType::f32}}}, r.targets(), {},
                                    CompileOptions{.disable_type_inference = true});
  EXPECT_EQ(once.input_types()[0].shape, (Shape{batch, seq, 8}));  // the model's names
  for (const Shape& shape : {Shape{1, 3, 8}, Shape{2, 5, 8}, Shape{1, kPositions, 8}, Shape{3, 1, 8}}) {
    const TensorData x = ramp(shape);
    expect_position_values(x, once.run({x})[0]);
  }
  EXPECT_EQ(runtime_stats().compiles - before.compiles, 1);
  // A fixed-shape run of the same graph (the symbols bound to the fed sizes at compile).
  const TensorData x = ramp({2, 7, 8});
  expect_position_values(x, r.graph.run(r.feeds({x}), r.targets(), {}, Device::cpu())[0]);
}

TEST(OnnxSymbolicDims, ComputingOnRunTimeSizesNamesTheNodeAndTheSymbols) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  Model m;
  m.inputs = {value_info_named("x", kFloat, {"batch", "seq"})};
  m.outputs = {value_info_named("y", kFloat, {"batch", "seq"})};
  m.nodes = {node("Shape", {"x"}, {"shape"}), ints("two", {2}), node("Mul", {"shape", "two"}, {"twice"}, "double_it"),
             node("Reshape", {"x", "twice"}, {"y"})};
  EXPECT_TG_ERROR(import(as_bytes(m.bytes())), ErrorCode::unsupported,
                  "'double_it' (Mul, opset 17): input 0 ('shape') holds the run-time sizes batch, seq");
  // A cast to int32 would wrap the symbols' values: it computes on them.
  m.nodes = {node("Shape", {"x"}, {"shape"}), node("Cast", {"shape"}, {"s32"}, "narrow", {attr_int("to", 6)}),
             node("Reshape", {"x", "s32"}, {"y"})};
  EXPECT_TG_ERROR(import(as_bytes(m.bytes())), ErrorCode::unsupported, "'narrow' (Cast, opset 17)");
  // Fixed input shapes make the same model importable (the sizes are then known).
  m.nodes = {node("Shape", {"x"}, {"shape"}), ints("half", {1, 1}), node("Mul", {"shape", "half"}, {"same"}),
             node("Reshape", {"x", "same"}, {"y"})};
  ImportResult r = import(as_bytes(m.bytes()), {.input_shapes = {{"x", {2, 3}}}});
  EXPECT_EQ(r.outputs[0].tensor.shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace tg::onnx
