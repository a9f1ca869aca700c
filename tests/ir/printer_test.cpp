// Text and DOT rendering of graphs, control inputs from control scopes, multi-output nodes.
#include "ir/graph.h"
#include "test_util.h"

namespace tg {
namespace {

TEST(Printer, SmallGraphExactText) {
  Graph g;
  Tensor x = g.placeholder({2, -1}, DType::f32, "x");
  Tensor c = g.constant(TensorData::from_vector<float>({1.5f, -2.f}, {2}), "c");
  exp(x);
  neg(c);
  fill(g, {3}, 0.5, DType::f64);
  iota(g, {2, 3}, 1);
  g.placeholder({}, DType::bool_);
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[2,?]  # x\n"
            "%1 = constant() {value=f32[2] {1.5, -2}} : f32[2]  # c\n"
            "%2 = exp(%0) : f32[2,?]\n"
            "%3 = neg(%1) : f32[2]\n"
            "%4 = fill() {value=0.5} : f64[3]\n"
            "%5 = iota() {axis=1} : i32[2,3]\n"
            "%6 = placeholder() : bool[]  # placeholder_6\n");
  EXPECT_EQ(g.num_nodes(), 7);
  EXPECT_EQ(ir::print_graph(*g.impl()), g.to_string());
}

TEST(Printer, ConstantValuesAreAbbreviated) {
  Graph g;
  g.constant(TensorData::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {6}));
  g.constant(2.0, DType::f64);
  EXPECT_EQ(g.to_string(),
            "%0 = constant() {value=i32[6] {1, 2, 3, 4, ...}} : i32[6]\n"
            "%1 = constant() {value=f64[] {2}} : f64[]\n");
}

TEST(Printer, ControlScopesAddControlInputs) {
  Graph g;
  Tensor x = g.placeholder({3}, DType::f32, "x");
  Tensor a = exp(x);
  g.impl()->push_control_scope({a.node_id()});
  Tensor b = neg(x);
  g.impl()->push_control_scope({a.node_id(), x.node_id()});  // nested; %1 is not repeated
  Tensor c = sqrt(b);
  g.impl()->pop_control_scope();
  g.impl()->pop_control_scope();
  Tensor d = exp(c);
  EXPECT_EQ(g.impl()->node(b.node_id()).control_inputs, (std::vector<int>{1}));
  EXPECT_EQ(g.impl()->node(c.node_id()).control_inputs, (std::vector<int>{1, 0}));
  EXPECT_TRUE(g.impl()->node(d.node_id()).control_inputs.empty());
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[3]  # x\n"
            "%1 = exp(%0) : f32[3]\n"
            "%2 = neg(%0) after(%1) : f32[3]\n"
            "%3 = sqrt(%2) after(%1, %0) : f32[3]\n"
            "%4 = exp(%3) : f32[3]\n");
  EXPECT_NO_THROW(ir::verify(*g.impl()));
}

TEST(Printer, MultiOutputNodesAndTheOperationApi) {
  Graph g;
  int id = g.impl()->add_node(ir::OpKind::placeholder, {}, ir::NoAttrs{},
                              {TensorType{{2}, DType::f32}, TensorType{{3}, DType::i32}}, "pair");
  Operation op(g.impl(), id);
  EXPECT_TRUE(op.valid());
  EXPECT_EQ(op.num_outputs(), 2);
  EXPECT_EQ(op.kind_name(), "placeholder");
  EXPECT_EQ(op.name(), "pair");
  EXPECT_EQ(op.output(1).dtype(), DType::i32);
  EXPECT_EQ(op.output(1).shape(), Shape{3});
  EXPECT_EQ(op.output(1).index(), 1);
  EXPECT_EQ(op.output(1).op().node_id(), id);
  EXPECT_EQ(op.output(0).to_string(), "%0:0 f32[2]");
  EXPECT_EQ(op.output(1).to_string(), "%0:1 i32[3]");
  EXPECT_TG_ERROR(op.output(2), ErrorCode::out_of_range, "[placeholder] output 2 of 2 outputs");
  EXPECT_TG_ERROR(op.output(-1), ErrorCode::out_of_range, "[placeholder]");
  neg(op.output(1));
  exp(op.output(0));
  EXPECT_EQ(g.to_string(),
            "%0 = placeholder() : f32[2], i32[3]  # pair\n"
            "%1 = neg(%0:1) : i32[3]\n"
            "%2 = exp(%0:0) : f32[2]\n");
}

TEST(Printer, EmptyHandles) {
  Tensor t;
  Operation o;
  EXPECT_FALSE(t.valid());
  EXPECT_FALSE(o.valid());
  EXPECT_EQ(t.to_string(), "<empty tensor>");
  EXPECT_TG_ERROR(t.shape(), ErrorCode::invalid_argument, "empty Tensor");
  EXPECT_TG_ERROR(o.kind_name(), ErrorCode::invalid_argument, "empty Tensor or Operation");
  EXPECT_TG_ERROR(exp(t), ErrorCode::invalid_argument, "[exp] input 0 is an empty Tensor");
}

// A node owning a region, built by hand (the control-flow ops that create regions come later).
std::shared_ptr<ir::Graph> graph_with_region() {
  auto body = std::make_shared<ir::Graph>();
  int p = body->add_node(ir::OpKind::placeholder, {}, ir::NoAttrs{}, {TensorType{{2}, DType::f32}}, "p");
  int r = body->add_node(ir::OpKind::neg, {{p, 0}}, ir::NoAttrs{}, {TensorType{{2}, DType::f32}});
  auto g = std::make_shared<ir::Graph>();
  int x = g->add_node(ir::OpKind::placeholder, {}, ir::NoAttrs{}, {TensorType{{2}, DType::f32}}, "x");
  int e = g->add_node(ir::OpKind::exp, {{x, 0}}, ir::NoAttrs{}, {TensorType{{2}, DType::f32}});
  g->node(e).regions.push_back(ir::Region{body, {p}, {{r, 0}}});
  return g;
}

TEST(Printer, RegionsAreIndentedBelowTheirOp) {
  auto g = graph_with_region();
  EXPECT_NO_THROW(ir::verify(*g));
  EXPECT_EQ(ir::print_graph(*g),
            "%0 = placeholder() : f32[2]  # x\n"
            "%1 = exp(%0) : f32[2]\n"
            "  region 0 {\n"
            "    %0 = placeholder() : f32[2]  # p\n"
            "    %1 = neg(%0) : f32[2]\n"
            "    yield(%1)\n"
            "  }\n");
  std::string dot = ir::graph_to_dot(*g);
  EXPECT_NE(dot.find("subgraph cluster_n1r0_ {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1r0_n0 -> n1r0_n1 [label=\"0\"];"), std::string::npos) << dot;
}

// Checks braces balance outside quoted strings and every quote is closed on its line.
void expect_valid_looking_dot(const std::string& dot) {
  EXPECT_EQ(dot.rfind("digraph tg {\n", 0), 0u) << dot;
  ASSERT_GE(dot.size(), 2u);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
  int depth = 0;
  bool in_quote = false;
  for (size_t i = 0; i < dot.size(); ++i) {
    char ch = dot[i];
    if (in_quote) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_quote = false;
      } else {
        EXPECT_NE(ch, '\n') << "unterminated string in\n" << dot;
      }
      continue;
    }
    if (ch == '"') in_quote = true;
    if (ch == '{') ++depth;
    if (ch == '}') --depth;
    EXPECT_GE(depth, 0);
  }
  EXPECT_FALSE(in_quote);
  EXPECT_EQ(depth, 0) << dot;
}

TEST(Dot, NodesEdgesAndControlEdges) {
  Graph g;
  Tensor x = g.placeholder({2, -1}, DType::f32, "x");
  Tensor c = g.constant(TensorData::from_vector<float>({1.5f, -2.f}, {2}), "c");
  Tensor y = exp(x);
  g.impl()->push_control_scope({y.node_id()});
  neg(c);
  g.impl()->pop_control_scope();
  std::string dot = to_dot(g);
  expect_valid_looking_dot(dot);
  auto has = [&](const std::string& s) { EXPECT_NE(dot.find(s), std::string::npos) << s << "\nin\n" << dot; };
  has("  n0 [label=\"placeholder 'x'\\nf32[2,?]\", shape=box];\n");
  has("  n1 [label=\"constant 'c'\\nf32[2]\\nvalue=f32[2] {1.5, -2}\", shape=box];\n");
  has("  n2 [label=\"exp\\nf32[2,?]\"];\n");
  has("  n3 [label=\"neg\\nf32[2]\"];\n");
  has("  n0 -> n2 [label=\"0\"];\n");
  has("  n1 -> n3 [label=\"0\"];\n");
  has("  n2 -> n3 [style=dashed];\n");
  EXPECT_EQ(dot.find("n0 -> n3"), std::string::npos);
}

TEST(Dot, QuotesInNamesAreEscaped) {
  Graph g;
  g.placeholder({1}, DType::f32, "say \"hi\"\\");
  std::string dot = to_dot(g);
  expect_valid_looking_dot(dot);
  EXPECT_NE(dot.find("label=\"placeholder 'say \\\"hi\\\"\\\\'\\nf32[1]\""), std::string::npos) << dot;
}

}  // namespace
}  // namespace tg
