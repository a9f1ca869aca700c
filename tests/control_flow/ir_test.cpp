// Control flow in the IR: the verifier's region checks, compile-time specialization of region
// bodies (on copies: the user's graph keeps its types), nested printing, executables run
// concurrently, and loops inside control_dependency blocks.
#include <thread>

#include "ir/graph.h"
#include "control_flow/test_device.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_equal;
using testing::run1_on_test_device;

TEST(ControlFlowIr, VerifierChecksTheRegionLayout) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor m = g.placeholder({}, DType::f32, "m");
  Tensor r =
      for_loop(3, {x}, [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0] * m}; })[0];
  EXPECT_NO_THROW(ir::verify(*g.impl()));
  ir::Graph broken(*g.impl());
  ir::Node& loop = broken.node(r.node_id());
  loop.regions[0].params.pop_back();
  EXPECT_TG_ERROR(ir::verify(broken), ErrorCode::internal, "region 0 has 2 parameters, expected 3");
  loop.regions.push_back(loop.regions[0]);
  EXPECT_TG_ERROR(ir::verify(broken), ErrorCode::internal, "has 2 regions, expected 1");
  loop.regions.pop_back();
  loop.attrs = ir::NoAttrs{};
  EXPECT_TG_ERROR(ir::verify(broken), ErrorCode::internal, "loop without LoopAttrs");
}

// Compiling for concrete feed types specializes the bodies of a copy; the graph the user holds
// keeps its dynamic types, and another compile for other types works.
TEST(ControlFlowIr, CompileSpecializesCopiesOfTheBodies) {
  Graph g;
  Tensor x = g.placeholder({-1}, DType::f32, "x");
  Tensor r =
      for_loop(2, {x}, [&](Tensor, std::span<const Tensor> v) { return std::vector{v[0] + x}; })[0];
  std::string before = g.to_string();
  EXPECT_NE(before.find("add(%1, %2) : f32[?]"), std::string::npos) << before;
  Executable e3 = g.compile(Device::cpu(), {{x, TensorType{{3}, DType::f32}}}, {r});
  Executable e2 = g.compile(Device::cpu(), {{x, TensorType{{2}, DType::f32}}}, {r});
  EXPECT_NE(e3.to_string().find("add(%1, %2) : f32[3]"), std::string::npos) << e3.to_string();
  EXPECT_NE(e2.to_string().find("add(%1, %2) : f32[2]"), std::string::npos) << e2.to_string();
  EXPECT_EQ(g.to_string(), before);
  expect_equal(e3.run({TensorData::from_vector<float>({1, 2, 3}, {3})})[0], {3, 6, 9}, {3});
  expect_equal(e2.run({TensorData::from_vector<float>({1, -1}, {2})})[0], {3, -3}, {2});
  // A feed whose shape breaks an op inside a body fails at compile, naming that op.
  Tensor y = g.placeholder({-1}, DType::f32, "y");
  Tensor bad = for_loop(2, {y}, [&](Tensor, std::span<const Tensor> v) {
    return std::vector{v[0] + g.constant(TensorData::from_vector<float>({1, 2}, {2}))};
  })[0];
  EXPECT_TG_ERROR(g.compile(Device::cpu(), {{y, TensorType{{3}, DType::f32}}}, {bad}),
                  ErrorCode::shape_mismatch, "[add] shapes [3] and [2] do not broadcast");
}

TEST(ControlFlowIr, NestedRegionsPrintIndented) {
  Graph g;
  Tensor x = g.placeholder({}, DType::f32, "x");
  Tensor p = g.placeholder({}, DType::bool_, "p");
  if_else(
      p,
      [&] {
        return for_loop(2, {x},
                        [&](Tensor, std::span<const Tensor> v) { return std::vector{-v[0]}; });
      },
      [&] { return std::vector{x}; });
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[]  # x\n"
            "%1 = placeholder() : bool[]  # p\n"
            "%2 = if_else(%1, %0) : f32[]\n"
            "  region then(%0 <- %0) {\n"
            "    %0 = placeholder() : f32[]  # capture0\n"
            "    %1 = constant() {value=i32[] {2}} : i32[]\n"
            "    %2 = for_loop(%1, %0) {carried=1} : f32[]\n"
            "      region body(%0, %1 <- %0) {\n"
            "        %0 = placeholder() : i32[]  # index\n"
            "        %1 = placeholder() : f32[]  # value0\n"
            "        %2 = neg(%1) : f32[]\n"
            "        yield(%2)\n"
            "      }\n"
            "    yield(%2)\n"
            "  }\n"
            "  region else(%0 <- %0) {\n"
            "    %0 = placeholder() : f32[]  # capture0\n"
            "    yield(%0)\n"
            "  }\n");
  std::string dot = to_dot(g);
  EXPECT_NE(dot.find("subgraph cluster_n2r0_n2 {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("subgraph cluster_n2r0_n2r0_ {"), std::string::npos) << dot;
  int depth = 0;
  for (char ch : dot) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
  EXPECT_EQ(depth, 0);
}

TEST(ControlFlowIr, ExecutablesRunConcurrently) {
  Graph g;
  Tensor n = g.placeholder({}, DType::i32, "n");
  Tensor r = for_loop(n, {g.constant(TensorData::scalar<int64_t>(0))},
                      [&](Tensor i, std::span<const Tensor> v) {
                        return std::vector{v[0] + cast(i, DType::i64)};
                      })[0];
  Executable exe = g.compile(Device::cpu(), {{n, TensorType{{}, DType::i32}}}, {r});
  std::vector<int64_t> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      got[t] = exe.run({TensorData::scalar<int32_t>(100 * (t + 1))})[0].to_vector<int64_t>()[0];
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    int64_t n_t = 100 * (t + 1);
    EXPECT_EQ(got[t], n_t * (n_t - 1) / 2);
  }
}

// A loop built inside a control_dependency block runs after the scope's assignment.
TEST(ControlFlowIr, LoopInsideControlDependency) {
  Graph g;
  Tensor v = g.variable(TensorData::scalar<float>(1), "v");
  Operation set3 = assign_variable(v, g.constant(3.0, DType::f32));
  Tensor r = g.control_dependency({set3}, [&] {
    return for_loop(2, {g.constant(1.0, DType::f32)}, [&](Tensor, std::span<const Tensor> a) {
      return std::vector{a[0] * read_variable(v)};
    });
  })[0];
  expect_equal(run1_on_test_device(g, r), {9}, {});
  expect_equal(g.variable_value(v), {3}, {});
}

}  // namespace
}  // namespace tg
