// Variables, control dependencies, transactional runs and safetensors save/load.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tg_test_" + name)).string();
}


std::vector<double> concat_rows(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Rows r0..r1 along axis 0 (rows of 256 bytes: views of the block).
Tensor rows(Tensor t, int64_t r0, int64_t r1) { return slice(t, {.begin = {r0}, .end = {r1}, .axes = {0}}); }

// Slices of a variable the run assigns, of a feed and of a constant (views of their buffers):
// as targets (straight, reshaped, at the buffer's start and inside it) and read by kernels and
// by another variable's assignment, they all see the value from the run's start; a variable
// assigned its own rows swapped gets them swapped once per run.
TEST(Variables, SliceViewsOfAVariableAssignedInTheRunSeeItsStartValue) {
  constexpr int64_t kCols = 64;
  std::vector<float> init(3 * kCols), cs(3 * kCols);
  for (size_t k = 0; k < init.size(); ++k) {
    init[k] = static_cast<float>(k);
    cs[k] = -static_cast<float>(k) * 0.5f;
  }
  std::vector<float> u0(2 * kCols);
  for (size_t k = 0; k < u0.size(); ++k) u0[k] = static_cast<float>(k) + 1000.0f;
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>(init, {3, kCols}), "v");
  Tensor w = g.variable(TensorData::zeros({1, kCols}), "w");
  Tensor u = g.variable(TensorData::from_vector<float>(u0, {2, kCols}), "u");
  Tensor c = g.constant(TensorData::from_vector<float>(cs, {3, kCols}), "c");
  Tensor x = g.placeholder({3, kCols}, DType::f32, "x");
  Tensor v1 = rows(v, 1, 2), v0 = rows(v, 0, 1), v12 = rows(v, 1, 3) * 1.0f, v2 = reshape(rows(v, 2, 3), {kCols});
  Tensor x2 = rows(x, 2, 3), c1 = rows(c, 1, 2), mix = rows(x, 1, 2) + rows(c, 2, 3) + rows(v, 2, 3);
  Operation step = assign_variable(v, v + 10.0f);
  Operation copy = assign_variable(w, rows(v, 2, 3));
  Operation swap = assign_variable(u, concat({rows(u, 1, 2), rows(u, 0, 1)}, 0));
  Tensor w2 = g.variable(TensorData::zeros({1, kCols}), "w2");
  Operation from_arena = assign_variable(w2, rows(x * 1.0f, 2, 3));  // a view of a value in the arena
  std::vector<float> xs(3 * kCols);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) * 2.0f + 0.5f;
  Executable exe = g.compile(Device::cpu(), {{x, {{3, kCols}, DType::f32}}}, {v1, v0, v12, v2, x2, c1, mix, u},
                             {step, copy, swap, from_arena});
  auto block = [&](const std::vector<float>& src, int64_t r0, int64_t r1, double add) {
    std::vector<double> out;
    for (int64_t k = r0 * kCols; k < r1 * kCols; ++k) out.push_back(src[static_cast<size_t>(k)] + add);
    return out;
  };
  for (int r = 0; r < 3; ++r) {
    const double add = 10.0 * r;  // v at the start of run r
    const std::vector<TensorData> out = exe.run({TensorData::from_vector<float>(xs, {3, kCols})});
    ASSERT_EQ(out.size(), 8u);
    expect_equal(out[0], block(init, 1, 2, add), {1, kCols});
    expect_equal(out[1], block(init, 0, 1, add), {1, kCols});
    expect_equal(out[2], block(init, 1, 3, add), {2, kCols});
    expect_equal(out[3], block(init, 2, 3, add), {kCols});
    expect_equal(out[4], block(xs, 2, 3, 0), {1, kCols});
    expect_equal(out[5], block(cs, 1, 2, 0), {1, kCols});
    std::vector<double> want_mix;
    for (int64_t k = 0; k < kCols; ++k) {
      want_mix.push_back(xs[static_cast<size_t>(kCols + k)] + cs[static_cast<size_t>(2 * kCols + k)] +
                         init[static_cast<size_t>(2 * kCols + k)] + add);
    }
    expect_equal(out[6], want_mix, {1, kCols});
    // u at the start of run r: rows swapped r times.
    std::vector<double> want_u = r % 2 == 0 ? block(u0, 0, 2, 0) : concat_rows(block(u0, 1, 2, 0), block(u0, 0, 1, 0));
    expect_equal(out[7], want_u, {2, kCols});
    expect_equal(g.variable_value(w), block(init, 2, 3, add), {1, kCols});
    expect_equal(g.variable_value(w2), block(xs, 2, 3, 0), {1, kCols});
  }
  expect_equal(g.variable_value(v), block(init, 0, 3, 30.0), {3, kCols});
  expect_equal(g.variable_value(u), concat_rows(block(u0, 1, 2, 0), block(u0, 0, 1, 0)), {2, kCols});
}

TG_COVERS(value, variable);
TG_COVERS(value, assign_variable);
TEST(Variables, PersistAcrossRunsAndExecutables) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2}, {2}), "v");
  Operation inc = assign_variable(v, v + 1.0);
  g.run({}, {}, {inc}, Device::cpu());
  g.run({}, {}, {inc}, Device::cpu());
  expect_equal(g.variable_value(v), {3, 4}, {2});
  // A second executable compiled from the same graph sees (and updates) the same state.
  Executable exe = g.compile(Device::cpu(), {}, {v}, {inc});
  expect_equal(exe.run({})[0], {3, 4}, {2});  // v is the value at the start of the run
  expect_equal(g.variable_value(v), {4, 5}, {2});
  expect_equal(g.run({}, {v}, {}, Device::cpu())[0], {4, 5}, {2});
}

TEST(Variables, InitialValueIsCopied) {
  Graph g;
  TensorData init = TensorData::from_vector<double>({7}, {1});
  Tensor v = g.variable(init, "v");
  init.data<double>()[0] = 8;
  expect_equal(g.variable_value(v), {7}, {1});
}

TG_COVERS(value, read_variable);
TEST(Variables, ReadOrderedAfterAssignSeesNewValue) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({10}, {1}), "v");
  Tensor before = read_variable(v);
  Operation set = assign_variable(v, g.constant(TensorData::from_vector<float>({20}, {1})));
  Tensor after = g.control_dependency({set}, [&] { return std::vector{read_variable(v)}; })[0];
  auto out = g.run({}, {v, before, after}, {}, Device::cpu());
  expect_equal(out[0], {10}, {1});  // the value at the start of the run
  expect_equal(out[1], {10}, {1});  // read built before the assign
  expect_equal(out[2], {20}, {1});  // read ordered after it
  expect_equal(g.variable_value(v), {20}, {1});
}

// The seed's case: a batch-norm running-mean update tied to exp(x) by a control dependency.
TEST(ControlDependency, KeepsSideEffectThatNoTargetReads) {
  for (bool with_dependency : {true, false}) {
    Graph g;
    Tensor x = g.placeholder({4}, DType::f32, "x");
    Tensor running_mean = g.variable(TensorData::from_vector<float>({0}, {1}), "running_mean");
    Tensor batch_mean = reshape(mean(x), {1});
    Operation update = assign_variable(running_mean, running_mean * 0.9 + batch_mean * 0.1);
    Tensor e = with_dependency ? g.control_dependency({update}, [&] { return std::vector{exp(x)}; })[0]
                               : exp(x);
    auto feed = TensorData::from_vector<float>({1, 2, 3, 6}, {4});
    auto out = g.run({{x, feed}}, {e}, {}, Device::cpu());
    expect_close(out[0], {std::exp(1.0), std::exp(2.0), std::exp(3.0), std::exp(6.0)}, {4}, 1e-6);
    expect_close(g.variable_value(running_mean), {with_dependency ? 0.3 : 0.0}, {1}, 1e-6);
    std::string compiled = g.compile(Device::cpu(), {{x, feed.type()}}, {e}).to_string();
    EXPECT_EQ(compiled.find("assign_variable") != std::string::npos, with_dependency) << compiled;
  }
}

TEST(ControlDependency, ScopeEndsWithTheBlockEvenOnError) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1}, {1}), "v");
  Operation a = assign_variable(v, v * 2.0);
  EXPECT_THROW(g.control_dependency({a}, [&]() -> std::vector<Tensor> { throw Error(ErrorCode::internal, "x"); }),
               Error);
  Tensor later = exp(v);
  EXPECT_EQ(g.to_string().find("after(%") , g.to_string().npos) << "no node may carry the dropped scope";
  (void)later;
}

TEST(Variables, FailedRunLeavesVariablesUnchanged) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor v = g.variable(TensorData::from_vector<float>({1, 1}, {2}), "v");
  Operation set = assign_variable(v, x);
  // Bad feed: rejected before anything runs.
  EXPECT_TG_ERROR(g.run({{x, TensorData::from_vector<float>({1, 2, 3}, {3})}}, {}, {set}, Device::cpu()),
                  ErrorCode::shape_mismatch, "placeholder 'x'");
  expect_equal(g.variable_value(v), {1, 1}, {2});
  // A kernel error after the assign ran: the assignment is not published.
  Tensor idx = g.placeholder({1}, DType::i32, "idx");
  Tensor picked = g.control_dependency({set}, [&] { return std::vector{gather(x, idx)}; })[0];
  EXPECT_TG_ERROR(g.run({{x, TensorData::from_vector<float>({5, 6}, {2})},
                         {idx, TensorData::from_vector<int32_t>({7}, {1})}},
                        {picked}, {}, Device::cpu()),
                  ErrorCode::out_of_range, "[gather]");
  expect_equal(g.variable_value(v), {1, 1}, {2});
  g.run({{x, TensorData::from_vector<float>({5, 6}, {2})}, {idx, TensorData::from_vector<int32_t>({1}, {1})}},
        {picked}, {}, Device::cpu());
  expect_equal(g.variable_value(v), {5, 6}, {2});
}

// read_variable needs a variable, which the placeholder-based finite-difference table cannot
// build, so its gradient is checked by hand here.
TG_COVERS(gradient, read_variable);
TEST(Variables, GradientsFlowThroughReadsToTheVariable) {
  Graph g;
  Tensor w = g.variable(TensorData::from_vector<double>({1, 2, 3}, {3}), "w");
  Tensor c = g.constant(TensorData::from_vector<double>({4, 5, 6}, {3}));
  Tensor loss = reduce_sum(read_variable(w) * c) + reduce_sum(square(read_variable(w)));
  std::vector<Tensor> grads = gradients(loss, {w});
  expect_close(g.run({}, grads, {}, Device::cpu())[0], {4 + 2, 5 + 4, 6 + 6}, {3}, 1e-15);
}

TG_COVERS(error, variable);
TG_COVERS(error, read_variable);
TG_COVERS(error, assign_variable);
TEST(Variables, Errors) {
  Graph g;
  Tensor v = g.variable(TensorData::from_vector<float>({1, 2}, {2}), "v");
  EXPECT_TG_ERROR(g.variable(TensorData::zeros({1}), "v"), ErrorCode::invalid_argument,
                  "[variable] a variable named 'v' already exists");
  EXPECT_TG_ERROR(g.variable(TensorData(), "w"), ErrorCode::invalid_argument, "[variable]");
  Tensor c = g.constant(TensorData::zeros({2}));
  EXPECT_TG_ERROR(read_variable(c), ErrorCode::invalid_argument, "[read_variable] expects a variable");
  EXPECT_TG_ERROR(assign_variable(c, c), ErrorCode::invalid_argument, "[assign_variable] expects a variable");
  EXPECT_TG_ERROR(assign_variable(v, g.constant(TensorData::zeros({3}))), ErrorCode::shape_mismatch,
                  "[assign_variable] value f32[3] does not match variable f32[2]");
  EXPECT_TG_ERROR(assign_variable(v, cast(c, DType::f64)), ErrorCode::shape_mismatch, "[assign_variable]");
}

TEST(SaveLoad, RoundTripIsBitExactAndHeaderIsStandard) {
  Graph g;
  Tensor a = g.variable(TensorData::from_vector<float>({1.5f, -0.f, 3.25e-20f, NAN}, {2, 2}), "layer1/w");
  Tensor b = g.variable(TensorData::from_vector<int64_t>({-9, 1LL << 40}, {2}), "step");
  Tensor c = g.variable(TensorData::from_vector<bool>({true, false, true}, {3}), "mask");
  Tensor d = g.variable(TensorData::from_vector<double>({}, {0, 2}), "empty");
  std::string path = temp_path("roundtrip.safetensors");
  g.save_variables(path);

  // Parse the file independently of the writer.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["layer1/w"]["dtype"], "F32");
  EXPECT_EQ(header["layer1/w"]["shape"], nlohmann::json::array({2, 2}));
  EXPECT_EQ(header["step"]["dtype"], "I64");
  EXPECT_EQ(header["mask"]["dtype"], "BOOL");
  EXPECT_EQ(header["empty"]["shape"], nlohmann::json::array({0, 2}));
  auto offs = header["step"]["data_offsets"].get<std::vector<uint64_t>>();
  ASSERT_EQ(offs[1] - offs[0], 16u);
  int64_t first;
  std::memcpy(&first, bytes.data() + 8 + n + offs[0], 8);
  EXPECT_EQ(first, -9);

  // Change the values, then load them back.
  for (Tensor t : {a, b, c}) {
    g.run({}, {}, {assign_variable(t, cast(fill(g, t.shape(), 0, DType::f32), t.dtype()))}, Device::cpu());
  }
  g.load_variables(path);
  TensorData la = g.variable_value(a);
  const uint32_t* bits = static_cast<const uint32_t*>(la.raw_data());
  float expected[] = {1.5f, -0.f, 3.25e-20f, NAN};
  EXPECT_EQ(std::memcmp(bits, expected, 16), 0) << "bit-exact, including -0 and NaN";
  expect_equal(g.variable_value(b), {-9, static_cast<double>(1LL << 40)}, {2});
  expect_equal(g.variable_value(c), {1, 0, 1}, {3});
  std::remove(path.c_str());
}

TEST(SaveLoad, MismatchesAreAllReportedAndNothingIsLoaded) {
  Graph src;
  src.variable(TensorData::from_vector<float>({1, 2}, {2}), "a");
  src.variable(TensorData::from_vector<float>({3}, {1}), "b");
  src.variable(TensorData::from_vector<float>({4}, {1}), "extra");
  std::string path = temp_path("mismatch.safetensors");
  src.save_variables(path);

  Graph g;
  Tensor a = g.variable(TensorData::from_vector<float>({0, 0}, {2}), "a");
  Tensor b = g.variable(TensorData::from_vector<double>({0}, {1}), "b");
  g.variable(TensorData::from_vector<float>({0}, {1}), "missing");
  try {
    g.load_variables(path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[load_variables]"), std::string::npos) << m;
    EXPECT_NE(m.find("'b' is f32[1] in the file, f64[1] in the graph"), std::string::npos) << m;
    EXPECT_NE(m.find("'extra' (f32[1]) is in the file but not in the graph"), std::string::npos) << m;
    EXPECT_NE(m.find("'missing' is missing from the file"), std::string::npos) << m;
  }
  expect_equal(g.variable_value(a), {0, 0}, {2});  // 'a' matched, but nothing is half-loaded
  std::remove(path.c_str());
}

TEST(SaveLoad, CorruptFilesRaiseIoError) {
  Graph g;
  g.variable(TensorData::from_vector<float>({1}, {1}), "a");
  EXPECT_TG_ERROR(g.load_variables(temp_path("does_not_exist.safetensors")), ErrorCode::io_error, "cannot open");
  std::string path = temp_path("corrupt.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out << "\x10\x00\x00\x00\x00\x00\x00\x00{not json at all";
  }
  EXPECT_TG_ERROR(g.load_variables(path), ErrorCode::io_error, "[safetensors]");
  {
    std::ofstream out(path, std::ios::binary);
    std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    uint64_t n = h.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << h << "ab";  // 2 data bytes, 4 needed
  }
  EXPECT_TG_ERROR(g.load_variables(path), ErrorCode::io_error, "data_offsets outside the data");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tg
