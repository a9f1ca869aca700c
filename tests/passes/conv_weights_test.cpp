// Packing of constant weights: a constant read only as conv2d weights is stored in the layout the
// backend reads in place (passes/conv_weights.cpp; CUDA: OHWI for NHWC data), once, at compile
// time; a constant read only as matmuls' b operand is stored transposed, read with transpose_b
// (passes/matmul_weights.cpp, opt-in TG_MATMUL_WEIGHTS_TN=1). The pass is run here directly with a chosen preference, and each rewritten
// convolution is evaluated with the CPU backend's kernel against the original one.
#include <gtest/gtest.h>

#include "passes/passes.h"
#include "runtime/compile.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::count_occurrences;

// OHWI for NHWC data, OIHW for NCHW (the CUDA backend's answer).
std::optional<Layout> as_cudnn(const Conv2dDesc& d, DType) {
  return d.data_layout == Layout::nhwc ? Layout::ohwi : Layout::oihw;
}

// Output 0 of node `id` of `g`, evaluated on the CPU from its inputs' constants (x given).
TensorData evaluate(const ir::Graph& g, int id, const TensorData& x) {
  const ir::Node& n = g.node(id);
  std::vector<TensorData> args{x, std::get<ir::ConstantAttrs>(g.node(n.inputs[1].node).attrs).value};
  TensorData out(n.outputs[0].shape, n.outputs[0].dtype);
  EXPECT_TRUE(runtime::evaluate_on_cpu(n, args, out));
  return out;
}

void expect_same(const TensorData& a, const TensorData& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    EXPECT_NEAR(a.element_as_double(i), b.element_as_double(i), 1e-5) << "element " << i;
  }
}

TEST(PackConvWeights, ConstantWeightsAreStoredInTheBackendsLayout) {
  Graph g;
  TensorData xv = TensorData::random_uniform({2, 7, 6, 4}, -1, 1, 1);
  Tensor x = g.placeholder(xv.shape(), DType::f32, "x");
  // OIHW (PyTorch's, kept by the layout pass) and HWIO (TensorFlow's) constants with NHWC data,
  // grouped; an NCHW convolution with HWIO weights; a constant also read by a reshape (left alone,
  // since that reader needs its order); a variable (not a constant).
  const Conv2dDesc oihw{.padding = Padding::same, .groups = 2, .weights_layout = Layout::oihw};
  const Conv2dDesc hwio{.strides = {2, 1}, .padding = Padding::valid, .weights_layout = Layout::hwio};
  Conv2dDesc nchw = hwio;
  nchw.data_layout = Layout::nchw;
  Tensor w1 = g.constant(TensorData::random_uniform({6, 2, 3, 2}, -1, 1, 2), "w1");
  Tensor w2 = g.constant(TensorData::random_uniform({3, 2, 4, 5}, -1, 1, 3), "w2");
  Tensor w3 = g.constant(TensorData::random_uniform({7, 2, 4, 3}, -1, 1, 4), "w3");
  Tensor w4 = g.constant(TensorData::random_uniform({1, 1, 4, 4}, -1, 1, 5), "w4");
  Tensor v = g.variable(TensorData::random_uniform({6, 2, 3, 2}, -1, 1, 6), "v");
  std::vector<Tensor> ys{conv2d(x, w1, oihw), conv2d(x, w2, hwio), conv2d(transpose(x, {0, 3, 1, 2}), w3, nchw),
                         conv2d(x, w4, hwio), conv2d(x, v, oihw), reshape(w4, {4, 4})};
  ir::Graph ir_graph(*x.graph_impl());
  passes::infer_types(ir_graph);
  std::vector<ir::ValueRef> roots;
  for (const Tensor& y : ys) roots.push_back({y.node_id(), y.index()});
  const ir::Graph before = ir_graph;
  ASSERT_TRUE(passes::pack_conv_weights(ir_graph, roots, as_cudnn, runtime::evaluate_on_cpu));
  // Each convolution: its node id is unchanged (the pass rewrites in place).
  struct Want {
    int conv;
    Layout layout;
    Shape weights;
  };
  const int c1 = ys[0].node_id(), c2 = ys[1].node_id(), c3 = ys[2].node_id();
  const int c4 = ys[3].node_id(), c5 = ys[4].node_id();
  for (const Want& w : {Want{c1, Layout::ohwi, {6, 3, 2, 2}}, Want{c2, Layout::ohwi, {5, 3, 2, 4}},
                        Want{c3, Layout::oihw, {3, 4, 7, 2}}, Want{c4, Layout::hwio, {1, 1, 4, 4}}}) {
    SCOPED_TRACE(w.conv);
    const ir::Node& n = ir_graph.node(w.conv);
    EXPECT_EQ(std::get<Conv2dDesc>(n.attrs).weights_layout, w.layout);
    EXPECT_EQ(ir_graph.type(n.inputs[1]).shape, w.weights);
    const TensorData xin = w.conv == c3 ? TensorData::random_uniform({2, 4, 7, 6}, -1, 1, 7) : xv;
    expect_same(evaluate(ir_graph, w.conv, xin), evaluate(before, w.conv, xin));
  }
  EXPECT_EQ(std::get<Conv2dDesc>(ir_graph.node(c5).attrs).weights_layout, Layout::oihw);  // a variable
  // A backend without a preference (the CPU's): nothing changes.
  ir::Graph again(before);
  EXPECT_FALSE(passes::pack_conv_weights(again, roots, [](const Conv2dDesc&, DType) { return std::optional<Layout>{}; },
                                         runtime::evaluate_on_cpu));
}


TEST(StoreMatmulWeightsTransposed, ConstantBOperandsAreReadWithTransposeB) {
  Graph g;
  TensorData xv = TensorData::random_uniform({3, 5}, -1, 1, 1);
  Tensor x = g.placeholder(xv.shape(), DType::f32, "x");
  TensorData wv = TensorData::random_uniform({5, 4}, -1, 1, 2);
  Tensor w = g.constant(wv, "w");                                          // two matmuls read it
  Tensor u = g.constant(TensorData::random_uniform({5, 4}, -1, 1, 3), "u");  // also a result
  std::vector<Tensor> ys{matmul(x, w), matmul(x * 2.0f, w), matmul(x, u), u};
  ir::Graph ir_graph(*x.graph_impl());
  passes::infer_types(ir_graph);
  std::vector<ir::ValueRef> roots;
  for (const Tensor& y : ys) roots.push_back({y.node_id(), y.index()});
  const ir::Graph before(ir_graph);
  ASSERT_TRUE(passes::store_matmul_weights_transposed(ir_graph, roots, runtime::evaluate_on_cpu));
  for (int k = 0; k < 3; ++k) {
    const ir::Node& n = ir_graph.node(ys[static_cast<size_t>(k)].node_id());
    const bool packed = k < 2;  // u is read by the result too: left alone
    EXPECT_EQ(std::get<MatmulDesc>(n.attrs).transpose_b, packed) << k;
    EXPECT_EQ(ir_graph.type(n.inputs[1]).shape, packed ? Shape({4, 5}) : Shape({5, 4})) << k;
  }
  const ir::Node& m = ir_graph.node(ys[0].node_id());
  expect_same(evaluate(ir_graph, m.id, xv), evaluate(before, m.id, xv));
}

}  // namespace
}  // namespace tg
