// tg::onnx::import on small hand-built models: values, options (variables, input shapes,
// input values, external data) and every class of bad model (each error names the node).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "onnx/model_builder.h"
#include "control_flow/test_device.h"
#include "test_util.h"
#include "tg/onnx.h"
#include "test_paths.h"

namespace tg::onnx {
namespace {

using namespace tg::onnx::testing;
using tg::testing::expect_close;

// y = Relu(x + w) with w an initializer [3] = {1, -2, 3}.
Model add_relu_model() {
  Model m;
  m.inputs = {value_info("x", kFloat, {-1, 3})};
  m.outputs = {value_info("y", kFloat, {-1, 3})};
  m.initializers = {float_tensor("w", {3}, {1, -2, 3})};
  m.nodes = {node("Add", {"x", "w"}, {"s"}, "add0"), node("Relu", {"s"}, {"y"}, "relu0")};
  return m;
}

ImportResult import_model(const Model& m, const ImportOptions& o = {}) {
  return import(as_bytes(m.bytes()), o);
}

TEST(OnnxImport, RunsAModelWithDynamicBatch) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  ImportResult r = import_model(add_relu_model());
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].name, "x");
  // The builder declares the dynamic dim as dim_param "N": a named symbol (issue 17).
  EXPECT_EQ(r.inputs[0].tensor.shape(), (Shape{symbolic_dim("N"), 3}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].name, "y");
  EXPECT_EQ(r.opset, 17);
  EXPECT_EQ(r.producer_name, "tg-test");
  auto x = TensorData::from_vector<float>({1, 1, 1, -5, 5, -5}, {2, 3});
  std::vector<TensorData> y = r.graph.run(r.feeds({x}), r.targets(), {}, Device::cpu());
  expect_close(y[0], {2, 0, 4, 0, 3, 0}, {2, 3});
}


// Split along axis 0 of x * 2 [6, 64] into three [2, 64] parts (slice views at 0, 512 and 1024
// bytes): the parts as outputs and read by an Add, over two runs with other inputs.
TEST(OnnxImport, SplitPartsAreTheBlocksOfTheirInput) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  constexpr int64_t kCols = 64;
  Model m;
  m.inputs = {value_info("x", kFloat, {6, kCols})};
  m.outputs = {value_info("a", kFloat, {2, kCols}), value_info("b", kFloat, {2, kCols}),
               value_info("c", kFloat, {2, kCols}), value_info("d", kFloat, {2, kCols})};
  m.initializers = {float_tensor("two", {}, {2})};
  m.nodes = {node("Mul", {"x", "two"}, {"y"}, "mul0"),
             node("Split", {"y"}, {"a", "b", "c"}, "split0", {attr_int("axis", 0)}),
             node("Add", {"b", "c"}, {"d"}, "add0")};
  ImportResult r = import_model(m);
  for (int run = 0; run < 2; ++run) {
    std::vector<float> xs(6 * kCols);
    for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) - 100.0f * static_cast<float>(run);
    std::vector<TensorData> out =
        r.graph.run(r.feeds({TensorData::from_vector<float>(xs, {6, kCols})}), r.targets(), {}, Device::cpu());
    ASSERT_EQ(out.size(), 4u);
    for (int part = 0; part < 3; ++part) {
      std::vector<double> want;
      for (int64_t k = 2 * kCols * part; k < 2 * kCols * (part + 1); ++k) want.push_back(2.0 * xs[static_cast<size_t>(k)]);
      expect_close(out[static_cast<size_t>(part)], want, {2, kCols}, 0, 0);
    }
    std::vector<double> want_d;
    for (int64_t k = 0; k < 2 * kCols; ++k) {
      want_d.push_back(2.0 * xs[static_cast<size_t>(2 * kCols + k)] + 2.0 * xs[static_cast<size_t>(4 * kCols + k)]);
    }
    expect_close(out[3], want_d, {2, kCols}, 0, 0);
  }
}

// A dynamic axis stays dynamic: one compile (CompileOptions::disable_type_inference) serves
// every batch size (issue 17).
TEST(OnnxImport, DynamicBatchCompilesOnceForEveryBatchSize) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  ImportResult r = import_model(add_relu_model());
  const RuntimeStats before = runtime_stats();
  Executable exe = r.graph.compile(Device::cpu(), {{r.inputs[0].tensor, {{-1, 3}, DType::f32}}}, r.targets(), {},
                                   CompileOptions{.disable_type_inference = true});
  const double w[3] = {1, -2, 3};
  for (int64_t n : {1, 2, 5, 2}) {
    std::vector<float> xs;
    std::vector<double> want;
    for (int64_t i = 0; i < n * 3; ++i) {
      xs.push_back(static_cast<float>(i % 7) - 3.f);
      want.push_back(std::max(0.0, xs.back() + w[i % 3]));
    }
    expect_close(exe.run({TensorData::from_vector<float>(xs, {n, 3})})[0], want, {n, 3});
  }
  EXPECT_EQ(runtime_stats().compiles - before.compiles, 1);
}

TEST(OnnxImport, InitializersAsVariables) {
  if (!available()) GTEST_SKIP();
  ImportResult r = import_model(add_relu_model(), {.initializers_as_variables = true});
  ASSERT_EQ(r.variables.size(), 1u);
  EXPECT_EQ(r.variables[0].name, "w");
  expect_close(r.graph.variable_value(r.variables[0].tensor), {1, -2, 3}, {3});
  // The variable drives the result: change it and run again.
  Operation zero = assign_variable(r.variables[0].tensor,
                                   r.graph.constant(TensorData::from_vector<float>({0, 0, 0}, {3})));
  r.graph.run({}, {}, {zero}, Device::cpu());
  auto x = TensorData::from_vector<float>({1, -1, 2}, {1, 3});
  expect_close(r.graph.run(r.feeds({x}), r.targets(), {}, Device::cpu())[0], {1, 0, 2}, {1, 3});
}

TEST(OnnxImport, InputShapesFixDynamicDims) {
  if (!available()) GTEST_SKIP();
  ImportResult r = import_model(add_relu_model(), {.input_shapes = {{"x", {4, 3}}}});
  EXPECT_EQ(r.inputs[0].tensor.shape(), (Shape{4, 3}));
  EXPECT_TG_ERROR(import_model(add_relu_model(), {.input_shapes = {{"x", {4, 2}}}}),
                  ErrorCode::shape_mismatch, "graph input 'x'");
  EXPECT_TG_ERROR(import_model(add_relu_model(), {.input_shapes = {{"z", {1}}}}),
                  ErrorCode::not_found, "'z'");
}

// Reshape whose target shape is a graph input: needs its value at import time.
Model reshape_model() {
  Model m;
  m.opset = 14;
  m.inputs = {value_info("x", kFloat, {2, 3}), value_info("shape", kInt64, {2})};
  m.outputs = {value_info("y", kFloat, {3, 2})};
  m.nodes = {node("Reshape", {"x", "shape"}, {"y"}, "reshape0")};
  return m;
}

TEST(OnnxImport, InputValuesFixShapeInputs) {
  if (!available()) GTEST_SKIP();
  EXPECT_TG_ERROR(import_model(reshape_model()), ErrorCode::unsupported,
                  "node 'reshape0' (Reshape, opset 14)");
  ImportOptions o;
  o.input_values = [](const std::string& name) -> std::optional<TensorData> {
    if (name != "shape") return std::nullopt;
    return TensorData::from_vector<int64_t>({3, 2}, {2});
  };
  ImportResult r = import_model(reshape_model(), o);
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.fixed_inputs, std::vector<std::string>{"shape"});
  auto x = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_close(r.graph.run(r.feeds({x}), r.targets(), {}, Device::cpu())[0], {1, 2, 3, 4, 5, 6},
               {3, 2});
}

// model_inputs lists the declared inputs without importing: the inputs the import would make
// constants (the Reshape's shape) are there, initializers are not.
TEST(OnnxImport, ModelInputsAreTheDeclaredOnes) {
  if (!available()) GTEST_SKIP();
  auto dir = std::filesystem::temp_directory_path() / ("tg_onnx_inputs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Model m = reshape_model();
  m.inputs.push_back(Msg().bytes(1, "any").msg(2, Msg().msg(1, Msg().varint(1, kFloat))));  // no shape
  std::ofstream(dir / "reshape.onnx", std::ios::binary) << m.bytes();
  std::ofstream(dir / "add_relu.onnx", std::ios::binary) << add_relu_model().bytes();
  std::vector<InputInfo> in = model_inputs(dir / "reshape.onnx");
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].name, "x");
  EXPECT_EQ(in[0].dtype, DType::f32);
  EXPECT_EQ(in[0].shape, (Shape{2, 3}));
  EXPECT_EQ(in[1].name, "shape");
  EXPECT_EQ(in[1].dtype, DType::i64);
  EXPECT_EQ(in[1].shape, (Shape{2}));
  EXPECT_EQ(in[2].name, "any");
  EXPECT_FALSE(in[2].shape.has_value());
  in = model_inputs(dir / "add_relu.onnx");  // w is an initializer: not an input
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].shape, (Shape{symbolic_dim("N"), 3}));  // dim_param "N"
  std::ofstream(dir / "bad.onnx") << "not a model";
  EXPECT_TG_ERROR(model_inputs(dir / "bad.onnx"), ErrorCode::io_error, "not a valid ONNX ModelProto");
  EXPECT_TG_ERROR(model_inputs(dir / "missing.onnx"), ErrorCode::not_found, "cannot open model file");
  Model u16 = add_relu_model();
  u16.inputs = {value_info("x", kUint16, {2})};
  std::ofstream(dir / "u16.onnx", std::ios::binary) << u16.bytes();
  EXPECT_TG_ERROR(model_inputs(dir / "u16.onnx"), ErrorCode::unsupported, "graph input 'x': ");
  std::filesystem::remove_all(dir);
}

// An initializer that is also a graph input (IR < 4 style: every weight listed as an input) is
// that input's default; ImportOptions::initializer_values replaces it, as ONNX lets a feed do
// (the default was the only value: a feed for it was "no input 'w'"). model_inputs lists such
// inputs only when asked.
TEST(OnnxImport, InitializerValuesReplaceTheDefaultsOfInputs) {
  if (!available()) GTEST_SKIP();
  Model m = add_relu_model();
  m.inputs.push_back(value_info("w", kFloat, {3}));  // w: a graph input with a default
  auto x = TensorData::from_vector<float>({1, 1, 1, -5, 5, -5}, {2, 3});
  ImportResult plain = import_model(m);
  ASSERT_EQ(plain.inputs.size(), 1u);  // w is not a placeholder: its default is used
  expect_close(plain.graph.run(plain.feeds({x}), plain.targets(), {}, Device::cpu())[0],
               {2, 0, 4, 0, 3, 0}, {2, 3});
  ImportOptions o;
  o.initializer_values["w"] = TensorData::from_vector<float>({10, 20, -30}, {3});
  ImportResult given = import_model(m, o);
  ASSERT_EQ(given.inputs.size(), 1u);
  // relu(x + [10, 20, -30]): [11, 21, 0], [5, 25, 0].
  expect_close(given.graph.run(given.feeds({x}), given.targets(), {}, Device::cpu())[0],
               {11, 21, 0, 5, 25, 0}, {2, 3});
  o.initializers_as_variables = true;  // the variable starts from the value given
  ImportResult as_var = import_model(m, o);
  ASSERT_EQ(as_var.variables.size(), 1u);
  expect_close(as_var.graph.variable_value(as_var.variables[0].tensor), {10, 20, -30}, {3});

  ImportOptions bad;
  bad.initializer_values["w"] = TensorData::from_vector<double>({1, 2, 3}, {3});
  EXPECT_TG_ERROR(import_model(m, bad), ErrorCode::dtype_mismatch,
                  "graph input 'w' (an initializer's default): ImportOptions::initializer_values "
                  "gives dtype f64, the initializer's is f32");
  bad.initializer_values["w"] = TensorData::from_vector<float>({1, 2}, {2});
  EXPECT_TG_ERROR(import_model(m, bad), ErrorCode::shape_mismatch, "gives shape [2], declared [3]");
  bad.initializer_values = {{"x", x}};  // a graph input without a default
  EXPECT_TG_ERROR(import_model(m, bad), ErrorCode::not_found,
                  "initializer_values names 'x', which is not a graph input with an initializer "
                  "(those: 'w')");
  // A plain initializer (not an input) is a constant, not a default: it cannot be replaced.
  bad.initializer_values = {{"w", TensorData::from_vector<float>({0, 0, 0}, {3})}};
  EXPECT_TG_ERROR(import_model(add_relu_model(), bad), ErrorCode::not_found, "(those: none)");

  auto dir = std::filesystem::temp_directory_path() / ("tg_onnx_defaults_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "m.onnx", std::ios::binary) << m.bytes();
  std::vector<InputInfo> in = model_inputs(dir / "m.onnx");
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].name, "x");
  EXPECT_FALSE(in[0].has_default);
  in = model_inputs(dir / "m.onnx", true);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[1].name, "w");
  EXPECT_TRUE(in[1].has_default);
  EXPECT_EQ(in[1].shape, (Shape{3}));
  std::filesystem::remove_all(dir);
}

TEST(OnnxImport, ExternalData) {
  if (!available()) GTEST_SKIP();
  auto dir = std::filesystem::temp_directory_path() / "tg_onnx_external_test";
  std::filesystem::create_directories(dir);
  std::vector<float> w = {1, -2, 3};
  std::ofstream(dir / "weights.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(w.data()), 12);
  Model m = add_relu_model();
  m.initializers = {float_tensor("w", {3}, {}, "weights.bin")};
  std::ofstream(dir / "model.onnx", std::ios::binary) << m.bytes();
  ImportResult r = import(dir / "model.onnx");
  auto x = TensorData::from_vector<float>({0, 3, 0}, {1, 3});
  expect_close(r.graph.run(r.feeds({x}), r.targets(), {}, Device::cpu())[0], {1, 1, 3}, {1, 3});
  // A data file that is too short names the initializer.
  std::ofstream(dir / "weights.bin", std::ios::binary).write("\0\0\0\0", 4);
  EXPECT_TG_ERROR(import(dir / "model.onnx"), ErrorCode::io_error, "initializer 'w'");
  // From bytes, external data needs a directory.
  EXPECT_TG_ERROR(import(as_bytes(m.bytes())), ErrorCode::invalid_argument, "external_data_dir");
  std::filesystem::remove_all(dir);
}

// y = If(cond, then: x + x, else: x * x): a condition known only at run time becomes if_else.
TEST(OnnxImport, IfWithRunTimeCondition) {
  if (!available()) GTEST_SKIP();
  Model m;
  m.opset = 13;
  m.inputs = {value_info("cond", kBool, {}), value_info("x", kFloat, {2})};
  m.outputs = {value_info("y", kFloat, {2})};
  Msg then_g = attr_graph("then_branch", {node("Add", {"x", "x"}, {"t"})}, {value_info("t", kFloat, {2})});
  Msg else_g = attr_graph("else_branch", {node("Mul", {"x", "x"}, {"e"})}, {value_info("e", kFloat, {2})});
  m.nodes = {node("If", {"cond"}, {"y"}, "if0", {then_g, else_g})};
  ImportResult r = import_model(m);
  ASSERT_EQ(r.inputs.size(), 2u);  // the condition stays an input
  auto x = TensorData::from_vector<float>({3, -2}, {2});
  auto run = [&](bool c) {
    return r.graph.run(r.feeds({TensorData::scalar<bool>(c), x}), r.targets(), {}, Device::cpu())[0];
  };
  expect_close(run(true), {6, -4}, {2});
  expect_close(run(false), {9, 4}, {2});
}

// Loop with a trip count of 3 and a carried value: unrolled at import time.
TEST(OnnxImport, LoopIsUnrolled) {
  if (!available()) GTEST_SKIP();
  Model m;
  m.opset = 13;
  m.inputs = {value_info("x", kFloat, {2})};
  m.outputs = {value_info("y", kFloat, {2}), value_info("ys", kFloat, {3, 2})};
  Msg three = Msg().bytes(1, "value").msg(5, Msg().varint(2, kInt64).bytes(9, std::string("\x03\0\0\0\0\0\0\0", 8))).varint(20, 4);
  // body(i, cond, v): v_next = v * 2, scan output v_next.
  Msg body = attr_graph("body",
                        {node("Identity", {"cond_in"}, {"cond_out"}), node("Add", {"v", "v"}, {"v2"}),
                         node("Identity", {"v2"}, {"scan"})},
                        {value_info("cond_out", kBool, {}), value_info("v2", kFloat, {2}),
                         value_info("scan", kFloat, {2})},
                        {value_info("i", kInt64, {}), value_info("cond_in", kBool, {}),
                         value_info("v", kFloat, {2})});
  m.nodes = {node("Constant", {}, {"n"}, "n", {three}), node("Loop", {"n", "", "x"}, {"y", "ys"}, "loop0", {body})};
  ImportResult r = import_model(m);
  auto x = TensorData::from_vector<float>({1, -1}, {2});
  std::vector<TensorData> out = r.graph.run(r.feeds({x}), r.targets(), {}, Device::cpu());
  expect_close(out[0], {8, -8}, {2});
  expect_close(out[1], {2, -2, 4, -4, 8, -8}, {3, 2});
}

// Loop with a data-dependent exit (the condition computed from the carried value) imports to
// while_loop: v doubles while sum(v) < 100. And a trip count fed at run time.
TEST(OnnxImport, LoopWithADataDependentExitImportsToWhileLoop) {
  if (!available()) GTEST_SKIP();
  Model m;
  m.opset = 13;
  m.inputs = {value_info("x", kFloat, {2})};
  m.outputs = {value_info("y", kFloat, {2})};
  Msg yes = Msg().bytes(1, "value").msg(5, Msg().varint(2, kBool).bytes(9, std::string("\x01", 1))).varint(20, 4);
  Msg hundred = Msg().bytes(1, "value").msg(5, Msg().varint(2, kFloat).bytes(9, std::string("\0\0\xc8\x42", 4))).varint(20, 4);
  Msg body = attr_graph("body",
                        {node("Add", {"v", "v"}, {"v2"}), node("ReduceSum", {"v2"}, {"s"}),
                         node("Constant", {}, {"h"}, "h", {hundred}), node("Less", {"s", "h"}, {"cond_out"})},
                        {value_info("cond_out", kBool, {1}), value_info("v2", kFloat, {2})},
                        {value_info("i", kInt64, {}), value_info("cond_in", kBool, {}), value_info("v", kFloat, {2})});
  m.nodes = {node("Constant", {}, {"c0"}, "c0", {yes}), node("Loop", {"", "c0", "x"}, {"y"}, "loop0", {body})};
  ImportResult r = import_model(m);
  EXPECT_EQ(tg::testing::count_occurrences(r.graph.to_string(), "while_loop"), 1);
  auto run = [&](std::vector<float> x) {
    return tg::testing::run_on_test_device(r.graph, r.targets(), r.feeds({TensorData::from_vector<float>(x, {2})}))[0];
  };
  for (int rep = 0; rep < 2; ++rep) {
    expect_close(run({1, 2}), {64, 128}, {2});   // sums 6, 12, 24, 48, 96 go on; 192 ends it
    expect_close(run({30, 40}), {60, 80}, {2});  // one iteration
  }

  // Loop(M, "", x) with M a graph input: body v * 2, the condition passed through.
  Model t;
  t.opset = 13;
  t.inputs = {value_info("M", kInt64, {}), value_info("x", kFloat, {2})};
  t.outputs = {value_info("y", kFloat, {2})};
  Msg twice = attr_graph("body", {node("Identity", {"cond_in"}, {"cond_out"}), node("Add", {"v", "v"}, {"v2"})},
                         {value_info("cond_out", kBool, {}), value_info("v2", kFloat, {2})},
                         {value_info("i", kInt64, {}), value_info("cond_in", kBool, {}), value_info("v", kFloat, {2})});
  t.nodes = {node("Loop", {"M", "", "x"}, {"y"}, "loop1", {twice})};
  ImportResult rt = import_model(t);
  auto x = TensorData::from_vector<float>({1, -3}, {2});
  for (int64_t n : {3, 0, 5}) {
    TensorData y = tg::testing::run_on_test_device(rt.graph, rt.targets(), rt.feeds({TensorData::scalar<int64_t>(n), x}))[0];
    const double f = static_cast<double>(int64_t{1} << n);
    expect_close(y, {f, -3 * f}, {2});
  }
}

// ---------------------------------------------------------------------------------------------
// Bad models: each raises tg::Error naming the node (name, op type, opset) and the reason.

TEST(OnnxImportErrors, TruncatedFile) {
  if (!available()) GTEST_SKIP();
  std::string bytes = add_relu_model().bytes();
  // Cut inside the graph message: protobuf parsing fails.
  EXPECT_TG_ERROR(import(as_bytes(bytes.substr(0, bytes.size() / 2))), ErrorCode::io_error,
                  "truncated or corrupt");
  EXPECT_TG_ERROR(import(std::filesystem::path("/nonexistent/model.onnx")), ErrorCode::not_found,
                  "/nonexistent/model.onnx");
}

TEST(OnnxImportErrors, CorruptTensorNamesTheNode) {
  if (!available()) GTEST_SKIP();
  Model m;
  m.outputs = {value_info("c", kFloat, {4})};
  // A Constant whose raw_data holds 3 bytes for a [4] float tensor.
  Msg bad;
  bad.varint(1, 4).varint(2, kFloat).bytes(9, "abc");
  m.nodes = {node("Constant", {}, {"c"}, "const0", {Msg().bytes(1, "value").msg(5, bad).varint(20, 4)})};
  EXPECT_TG_ERROR(import_model(m), ErrorCode::invalid_argument,
                  "node 'const0' (Constant, opset 17): attribute 'value': raw_data has 3 bytes");
}

TEST(OnnxImportErrors, UnknownOp) {
  if (!available()) GTEST_SKIP();
  Model m = add_relu_model();
  m.nodes[1] = node("FancyRelu", {"s"}, {"y"}, "fancy");
  EXPECT_TG_ERROR(import_model(m), ErrorCode::unsupported,
                  "node 'fancy' (FancyRelu, opset 17): unknown op");
}

TEST(OnnxImportErrors, UnsupportedOpset) {
  if (!available()) GTEST_SKIP();
  Model m = add_relu_model();
  m.nodes[1] = node("Gelu", {"s"}, {"y"}, "gelu0");  // Gelu exists from opset 20
  EXPECT_TG_ERROR(import_model(m), ErrorCode::unsupported,
                  "node 'gelu0' (Gelu, opset 17): unsupported opset");
  m = add_relu_model();
  m.opset = 99;
  EXPECT_TG_ERROR(import_model(m), ErrorCode::unsupported, "node 'add0' (Add, opset 99)");
}

TEST(OnnxImportErrors, MissingInput) {
  if (!available()) GTEST_SKIP();
  Model m = add_relu_model();
  m.nodes[0] = node("Add", {"x", "bias"}, {"s"}, "add0");
  EXPECT_TG_ERROR(import_model(m), ErrorCode::not_found,
                  "node 'add0' (Add, opset 17): input 1 'bias' is not a graph input");
  m.nodes[0] = node("Add", {"x"}, {"s"}, "add0");
  EXPECT_TG_ERROR(import_model(m), ErrorCode::not_found,
                  "node 'add0' (Add, opset 17): required input 1 is missing");
}

TEST(OnnxImportErrors, MismatchedShapes) {
  if (!available()) GTEST_SKIP();
  Model m = add_relu_model();
  m.initializers = {float_tensor("w", {4}, {1, 2, 3, 4})};
  EXPECT_TG_ERROR(import_model(m), ErrorCode::shape_mismatch, "node 'add0' (Add, opset 17): [add]");
  // A declared output shape that disagrees with the computed one names the producing node.
  m = add_relu_model();
  m.outputs = {value_info("y", kFloat, {-1, 5})};
  EXPECT_TG_ERROR(import_model(m), ErrorCode::shape_mismatch, "node 'relu0' (Relu, opset 17)");
}

TEST(OnnxImportErrors, UnsupportedTypes) {
  if (!available()) GTEST_SKIP();
  Model m = add_relu_model();
  m.inputs = {value_info("x", kUint16, {2, 3})};
  EXPECT_TG_ERROR(import_model(m), ErrorCode::unsupported, "graph input 'x': data type uint16");
  m = add_relu_model();
  m.nodes[1] = node("Cast", {"s"}, {"y"}, "cast0", {attr_int("to", kUint16)});
  EXPECT_TG_ERROR(import_model(m), ErrorCode::unsupported,
                  "node 'cast0' (Cast, opset 17): data type uint16 is not supported");
}

TEST(OnnxImport, SupportedOpsTable) {
  if (!available()) GTEST_SKIP();
  std::vector<OpSupport> ops = supported_ops();
  ASSERT_GT(ops.size(), 100u);
  for (size_t i = 1; i < ops.size(); ++i) {
    const OpSupport& a = ops[i - 1];
    const OpSupport& b = ops[i];
    EXPECT_LE(b.since_version, b.until_version) << b.op_type;
    // Rows of one op never overlap.
    if (a.domain == b.domain && a.op_type == b.op_type) {
      EXPECT_LT(a.until_version, b.since_version) << b.op_type;
    }
  }
}

// docs/onnx.md embeds the table generated from the converters; keep it in sync.
TEST(OnnxImport, DocsListEveryConverter) {
  if (!available()) GTEST_SKIP();
  std::ifstream in(std::filesystem::path(TG_SOURCE_DIR) / "docs" / "onnx.md");
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(doc.find(supported_ops_markdown()), std::string::npos)
      << "docs/onnx.md is out of date: replace its op table with `tg inspect --list-ops` output:\n"
      << supported_ops_markdown();
}

}  // namespace
}  // namespace tg::onnx
