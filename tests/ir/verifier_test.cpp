// The verifier rejects hand-corrupted graphs with tg::Error(internal), and compile verifies
// before any pass walks the edges.
#include "ir/graph.h"
#include "test_util.h"

namespace tg {
namespace {

// %0 = placeholder x, %1 = exp(%0), %2 = neg(%1), %3 = sqrt(%2)
struct Chain {
  Graph g;
  Tensor x, a, b, c;
  Chain() {
    x = g.placeholder({2}, DType::f32, "x");
    a = exp(x);
    b = neg(a);
    c = sqrt(b);
  }
  ir::Node& node(int id) { return g.impl()->node(id); }
  void verify() const { ir::verify(*g.impl()); }
};

TEST(Verifier, AcceptsBuiltGraphs) {
  Chain ch;
  EXPECT_NO_THROW(ch.verify());
}

TEST(Verifier, InputReferencingALaterNode) {
  Chain ch;
  ch.node(2).inputs[0].node = 3;
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "[verify] node %2 (neg): input %3 is not an earlier node");
  ch.node(2).inputs[0].node = 2;  // itself
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "input %2 is not an earlier node");
  ch.node(2).inputs[0].node = -1;
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "input %-1");
}

TEST(Verifier, WrongArity) {
  Chain ch;
  ch.node(1).inputs.push_back({0, 0});
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "[verify] node %1 (exp): has 2 inputs, ops.def says 1");
  ch.node(1).inputs.clear();
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "has 0 inputs, ops.def says 1");
}

TEST(Verifier, MissingOutputIndex) {
  Chain ch;
  ch.node(2).inputs[0].index = 1;
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "input %1:1 does not exist");
}

TEST(Verifier, ControlInputs) {
  Chain ch;
  ch.node(2).control_inputs = {1};
  EXPECT_NO_THROW(ch.verify());
  ch.node(2).control_inputs = {3};
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "control input %3 is not an earlier node");
}

TEST(Verifier, NoOutputsAndBadIds) {
  Chain ch;
  ch.node(3).outputs.clear();
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "node %3 (sqrt): has no outputs");
  Chain ch2;
  ch2.node(2).id = 7;
  EXPECT_TG_ERROR(ch2.verify(), ErrorCode::internal, "id differs from its position 2");
}

TEST(Verifier, Regions) {
  Chain ch;
  auto body = std::make_shared<ir::Graph>();
  int p = body->add_node(ir::OpKind::placeholder, {}, ir::NoAttrs{}, {TensorType{{2}, DType::f32}});
  ch.node(3).regions.push_back(ir::Region{body, {p}, {{p, 0}}});
  EXPECT_NO_THROW(ch.verify());
  ch.node(3).regions[0].results = {{p, 1}};
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "region result %0:1 outside its body");
  ch.node(3).regions[0].results = {{4, 0}};
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "region result %4:0 outside its body");
  ch.node(3).regions[0].results = {};
  ch.node(3).regions[0].params = {1};
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "region parameter %1 is not a placeholder");
  ch.node(3).regions[0].params = {};
  body->node(0).inputs.push_back({0, 0});  // broken body: verified recursively
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "has 1 inputs, ops.def says 0");
  ch.node(3).regions[0].body = nullptr;
  EXPECT_TG_ERROR(ch.verify(), ErrorCode::internal, "region without a body");
  EXPECT_NO_THROW(ir::print_graph(*ch.g.impl()));  // the printer copes with the broken graph
}

TEST(Verifier, CompileRejectsACorruptedGraphBeforeRunningPasses) {
  Chain ch;
  TensorData feed = TensorData::from_vector<float>({1, 2}, {2});
  ch.node(1).inputs.clear();  // exp without its input: type inference would read past the span
  EXPECT_TG_ERROR(ch.g.run({{ch.x, feed}}, {ch.c}, {}, Device::cpu()), ErrorCode::internal, "[verify]");
  Chain ch2;
  ch2.node(2).inputs[0].node = 99;  // DCE would index outside the graph
  EXPECT_TG_ERROR(ch2.g.run({{ch2.x, feed}}, {ch2.c}, {}, Device::cpu()), ErrorCode::internal,
                  "input %99 is not an earlier node");
}

}  // namespace
}  // namespace tg
