// The channels-last layout pass (passes/layout.cpp): NCHW convolutions and pooling of an imported
// model run NHWC, transposes sink through elementwise ops, reductions and transposes, and the
// values are unchanged. Compile runs it where it was measured faster (runtime::layout_pass_pays);
// TG_CHANNELS_LAST=1 / 0 forces it on / off.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "passes/fusion_test_util.h"
#include "runtime/compile.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedEnv;

// A ResNet-like NCHW block as an ONNX import builds it: conv, per-channel scale and shift (ranks 4
// and 3), relu, max pool, a 1x1 conv with a residual add, then global sums (with and without
// keep_dims, the first flattened), an average pool, and the user's own NCHW -> NHWC transpose.
// `groups` 2 makes the 1x1 conv grouped; `constant_weights` makes the weights constants (an imported
// or frozen model) instead of variables.
struct NchwNet {
  Graph g;
  Tensor x;
  std::vector<Tensor> targets;
  explicit NchwNet(int64_t batch = 2, int64_t groups = 1, bool constant_weights = false) {
    x = g.placeholder({batch, 3, 8, 8}, DType::f32, "x");
    const Conv2dDesc conv{.padding = Padding::same, .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
    Conv2dDesc conv2 = conv;
    conv2.groups = groups;
    TensorData w1v = TensorData::random_normal({4, 3, 3, 3}, 0.f, 0.5f, 1);
    TensorData w2v = TensorData::random_normal({4, 4 / groups, 1, 1}, 0.f, 0.5f, 2);
    Tensor w1 = constant_weights ? g.constant(w1v, "w1") : g.variable(w1v, "w1");
    Tensor w2 = constant_weights ? g.constant(w2v, "w2") : g.variable(w2v, "w2");
    Tensor scale = g.constant(TensorData::random_normal({1, 4, 1, 1}, 1.f, 0.2f, 3), "scale");
    Tensor shift = g.constant(TensorData::random_normal({4, 1, 1}, 0.f, 0.2f, 4), "shift");
    Tensor b = relu(conv2d(x, w1, conv) * scale + shift);
    Tensor p = max_pool2d(b, {.kernel_size = {2, 2}, .data_layout = Layout::nchw});
    Tensor r = conv2d(p, w2, conv2) + p;
    targets = {r,
               reduce_sum(r, {.axes = {2, 3}}),
               reshape(reduce_sum(r, {.axes = {2, 3}, .keep_dims = true}), {batch, 4}),
               avg_pool2d(r, {.kernel_size = {2, 2}, .data_layout = Layout::nchw}),
               transpose(b, {0, 2, 3, 1})};
  }
};

TEST(ChannelsLast, NchwBlockRunsNhwcWithTransposesOnlyAtItsEdgesAndTheSameValues) {
  TensorData xv = TensorData::random_normal({2, 3, 8, 8}, 0.f, 1.f, 9);
  std::vector<TensorData> want, got;
  std::string text;
  {
    ScopedEnv off("TG_CHANNELS_LAST", "0");
    NchwNet net;
    Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}}, net.targets);
    EXPECT_EQ(count(exe.to_string(), "data_layout=nchw"), 4) << exe.to_string();
    want = exe.run({xv});
  }
  {
    ScopedEnv on("TG_CHANNELS_LAST", "1");
    NchwNet net;
    Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}}, net.targets);
    text = exe.to_string();
    got = exe.run({xv});
  }
  EXPECT_EQ(count(text, "data_layout=nchw"), 0) << text;
  EXPECT_EQ(count(text, "data_layout=nhwc"), 4) << text;
  // x into NHWC; r and the average pool back to NCHW as results. The global sums read the NHWC
  // value ([N,C] needs no transpose; [N,1,1,C] -> [N,C,1,1] is a reshape) and the user's
  // transpose of b cancels with the pass's.
  EXPECT_EQ(count(text, "= transpose("), 3) << text;
  testing::expect_all_near(want, got, 1e-5);
}

// Without TG_CHANNELS_LAST compile runs the pass where it was measured faster: on the CPU for
// any NCHW convolution; on CUDA only for dense convolutions with a batch of at least 32 (NCHW ran
// faster at batch 1 and with depthwise convolutions on the H200). TG_CHANNELS_LAST forces it.
TEST(ChannelsLast, DefaultRunsWhereMeasuredFaster) {
  ScopedEnv unset("TG_CHANNELS_LAST", "");
  {
    NchwNet net;
    Executable exe = net.g.compile(Device::cpu(), {{net.x, net.x.type()}}, net.targets);
    EXPECT_EQ(count(exe.to_string(), "data_layout=nchw"), 0) << exe.to_string();
    EXPECT_EQ(count(exe.to_string(), "data_layout=nhwc"), 4) << exe.to_string();
  }
  auto pays = [](int64_t batch, int64_t groups, Device d, bool constant_weights = false) {
    NchwNet net(batch, groups, constant_weights);
    return runtime::layout_pass_pays(*net.x.graph_impl(), d);
  };
  EXPECT_TRUE(pays(2, 1, Device::cpu()));
  EXPECT_TRUE(pays(2, 2, Device::cpu()));
  EXPECT_FALSE(pays(2, 1, Device::cuda(0)));
  EXPECT_FALSE(pays(31, 1, Device::cuda(0)));
  EXPECT_TRUE(pays(32, 1, Device::cuda(0)));
  EXPECT_TRUE(pays(128, 1, Device::cuda(0)));
  EXPECT_FALSE(pays(32, 2, Device::cuda(0)));
  // Constant weights are stored OHWI once (passes::pack_conv_weights): converted at any batch on
  // CUDA, but not with a grouped convolution.
  EXPECT_TRUE(pays(1, 1, Device::cuda(0), true));
  EXPECT_TRUE(pays(31, 1, Device::cuda(0), true));
  EXPECT_FALSE(pays(1, 2, Device::cuda(0), true));
  {
    Graph g;  // no NCHW convolution: nothing to convert on any device
    Tensor x = g.placeholder({64, 3, 8, 8}, DType::f32, "x");
    Tensor y = max_pool2d(x, {.kernel_size = {2, 2}, .data_layout = Layout::nchw});
    (void)y;
    EXPECT_FALSE(runtime::layout_pass_pays(*x.graph_impl(), Device::cpu()));
    EXPECT_FALSE(runtime::layout_pass_pays(*x.graph_impl(), Device::cuda(0)));
  }
  {
    ScopedEnv off("TG_CHANNELS_LAST", "0");
    EXPECT_FALSE(pays(2, 1, Device::cpu()));
    EXPECT_FALSE(pays(128, 1, Device::cuda(0)));
    NchwNet net;
    Executable exe = net.g.compile(Device::cpu(), {{net.x, net.x.type()}}, net.targets);
    EXPECT_EQ(count(exe.to_string(), "data_layout=nchw"), 4) << exe.to_string();
  }
  {
    ScopedEnv on("TG_CHANNELS_LAST", "1");
    EXPECT_TRUE(pays(2, 2, Device::cuda(0)));
  }
}

// One graph compiled on the CPU and run on `feeds` with the layout pass off (TG_CHANNELS_LAST=0)
// and on (=1): each executable's text and results. `compile` builds the graph in `g` and compiles it.
struct OffOn {
  std::string off_text, on_text;
  std::vector<TensorData> off, on;
};
template <class Compile>
OffOn off_and_on(const std::vector<TensorData>& feeds, Compile compile) {
  OffOn r;
  for (const bool on : {false, true}) {
    ScopedEnv e("TG_CHANNELS_LAST", on ? "1" : "0");
    Graph g;
    Executable exe = compile(g);
    (on ? r.on_text : r.off_text) = exe.to_string();
    (on ? r.on : r.off) = exe.run(feeds);
  }
  return r;
}

// The CPU default converts grouped (here depthwise) and dilated NCHW convolutions too: same values.
TEST(ChannelsLast, CpuDefaultConvertsDepthwiseConvolutionsWithTheSameValues) {
  TensorData xv = TensorData::random_normal({3, 4, 9, 7}, 0.f, 1.f, 21);
  auto run = [&](const char* env) {
    ScopedEnv e("TG_CHANNELS_LAST", env);
    Graph g;
    Tensor x = g.placeholder({3, 4, 9, 7}, DType::f32, "x");
    Tensor w = g.constant(TensorData::random_normal({4, 1, 3, 3}, 0.f, 0.5f, 22), "w");
    Conv2dDesc d{.padding = Padding::same, .groups = 4, .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
    d.dilations = {2, 1};
    Tensor y = max_pool2d(relu(conv2d(x, w, d)), {.kernel_size = {2, 2}, .data_layout = Layout::nchw});
    Executable exe = g.compile(Device::cpu(), {{x, xv.type()}}, {y});
    return std::make_pair(exe.to_string(), exe.run({xv})[0]);
  };
  const auto [text_default, got] = run("");
  const auto [text_off, want] = run("0");
  EXPECT_EQ(count(text_default, "data_layout=nhwc"), 2) << text_default;
  EXPECT_EQ(count(text_off, "data_layout=nhwc"), 0) << text_off;
  testing::expect_all_near({want}, {got}, 1e-5);
}

TEST(ChannelsLast, GraphsWithoutNchwOpsAreUnchanged) {
  ScopedEnv on("TG_CHANNELS_LAST", "1");
  Graph g;
  Tensor x = g.placeholder({1, 4, 4, 2}, DType::f32, "x");
  Tensor y = transpose(relu(x), {0, 3, 1, 2});  // an NCHW view of NHWC data, no conv or pool
  Executable exe = g.compile(Device::cpu(), {{x, x.type()}}, {y});
  EXPECT_EQ(count(exe.to_string(), "= transpose("), 1) << exe.to_string();
}

// A channels-last input fed as its NHWC permutation and transposed to NCHW in the graph (how
// tensorgraph.torch feeds a saved activation, docs/design/0010 step 3), and a result asked for as
// transpose(y, [0,2,3,1]) (a saved activation handed back NHWC): the convolution reads the NHWC
// input and the NHWC result is the kernel's own, so the only transpose left is the NCHW result's.
TEST(ChannelsLast, GraphTransposesFromNhwcInputsAndToNhwcResultsCancel) {
  TensorData xv = TensorData::random_normal({2, 8, 8, 3}, 0.f, 1.f, 31);
  const OffOn r = off_and_on({xv}, [](Graph& g) {
    Tensor x_nhwc = g.placeholder({2, 8, 8, 3}, DType::f32, "x");
    Tensor x = transpose(x_nhwc, {0, 3, 1, 2});
    Tensor w = g.constant(TensorData::random_normal({4, 3, 3, 3}, 0.f, 0.5f, 32), "w");
    const Conv2dDesc conv{.padding = Padding::same, .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
    Tensor y = relu(conv2d(x, w, conv));
    return g.compile(Device::cpu(), {{x_nhwc, {{2, 8, 8, 3}, DType::f32}}}, {y, transpose(y, {0, 2, 3, 1})});
  });
  EXPECT_EQ(count(r.off_text, "= transpose("), 2) << r.off_text;
  EXPECT_EQ(count(r.on_text, "data_layout=nhwc"), 1) << r.on_text;
  EXPECT_EQ(count(r.on_text, "= transpose("), 1) << r.on_text;
  testing::expect_all_near(r.off, r.on, 1e-5);
}

// [N,C,1,1] values (global pooling's result, a squeeze-and-excitation scale, its gradient's
// broadcast) against an NHWC region: their NHWC order is a reshape, so the elementwise ops and the
// broadcast stay NHWC and the only transposes are the input's and the result's.
TEST(ChannelsLast, PerSampleChannelValuesAndTheirBroadcastsStayNhwc) {
  TensorData xv = TensorData::random_normal({2, 3, 6, 6}, 0.f, 1.f, 41);
  const OffOn r = off_and_on({xv}, [](Graph& g) {
    Tensor x = g.placeholder({2, 3, 6, 6}, DType::f32, "x");
    Tensor w = g.constant(TensorData::random_normal({4, 3, 3, 3}, 0.f, 0.5f, 42), "w");
    const Conv2dDesc conv{.padding = Padding::same, .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
    Tensor y = relu(conv2d(x, w, conv));
    Tensor s = sigmoid(reduce_sum(y, {.axes = {2, 3}, .keep_dims = true}));  // [2,4,1,1]
    Tensor z = y * s + broadcast_to(s * 0.5f, {2, 4, 6, 6});
    Tensor out = conv2d(z, g.constant(TensorData::random_normal({4, 4, 1, 1}, 0.f, 0.5f, 43), "w2"), conv);
    return g.compile(Device::cpu(), {{x, {{2, 3, 6, 6}, DType::f32}}}, {out});
  });
  EXPECT_EQ(count(r.on_text, "data_layout=nhwc"), 2) << r.on_text;
  EXPECT_EQ(count(r.on_text, "= transpose("), 2) << r.on_text;
  testing::expect_all_near(r.off, r.on, 1e-5);
}

// A training graph's backward ops as a converter from another framework builds them (PyTorch's
// convolution_backward, max/avg pool backward in NCHW): they run NHWC too, and the weights
// gradient keeps the weights' OIHW layout without a transpose.
TEST(ChannelsLast, BackwardOpsRunNhwcWithTheSameValues) {
  TensorData xv = TensorData::random_normal({2, 3, 8, 8}, 0.f, 1.f, 11);
  TensorData dyv = TensorData::random_normal({2, 4, 8, 8}, 0.f, 1.f, 12);
  const OffOn r = off_and_on({xv, dyv}, [](Graph& g) {
    Tensor x = g.placeholder({2, 3, 8, 8}, DType::f32, "x");
    Tensor dy = g.placeholder({2, 4, 8, 8}, DType::f32, "dy");
    const Conv2dDesc conv{.padding = Padding::same, .data_layout = Layout::nchw, .weights_layout = Layout::oihw};
    Tensor w = g.constant(TensorData::random_normal({4, 3, 3, 3}, 0.f, 0.5f, 13), "w");
    const Pool2dDesc pool{.kernel_size = {2, 2}, .data_layout = Layout::nchw};
    Tensor dx = conv2d_backward_data(dy, w, {2, 3, 8, 8}, conv);
    Tensor dw = conv2d_backward_weights(dy, x, {4, 3, 3, 3}, conv);
    Tensor p = relu(dx) * 2.0f;  // elementwise between NHWC ops: no transposes
    Tensor pooled = max_pool2d(p, pool);
    Tensor dmax = max_pool2d_backward(pooled * pooled, p, pool);
    Tensor davg = avg_pool2d_backward(pooled, p, pool);
    return g.compile(Device::cpu(), {{x, x.type()}, {dy, dy.type()}}, {dx, dw, dmax, davg});
  });
  EXPECT_EQ(count(r.off_text, "data_layout=nhwc"), 0) << r.off_text;
  EXPECT_EQ(count(r.on_text, "data_layout=nchw"), 0) << r.on_text;
  EXPECT_EQ(count(r.on_text, "data_layout=nhwc"), 5) << r.on_text;
  testing::expect_all_near(r.off, r.on, 1e-4);
  // A backward graph without forward convolutions: its gradients' batch decides on CUDA.
  ScopedEnv unset("TG_CHANNELS_LAST", "");
  auto backward_pays = [](int64_t batch, int64_t groups, Device d) {
    Graph g;
    Tensor dy = g.placeholder({batch, 4, 8, 8}, DType::f32, "dy");
    Tensor x = g.placeholder({batch, 4, 8, 8}, DType::f32, "x");
    const Conv2dDesc conv{.padding = Padding::same, .groups = groups, .data_layout = Layout::nchw,
                          .weights_layout = Layout::oihw};
    (void)conv2d_backward_weights(dy, x, {4, 4 / groups, 3, 3}, conv);
    return runtime::layout_pass_pays(*dy.graph_impl(), d);
  };
  EXPECT_TRUE(backward_pays(2, 1, Device::cpu()));
  EXPECT_FALSE(backward_pays(2, 1, Device::cuda(0)));
  EXPECT_TRUE(backward_pays(32, 1, Device::cuda(0)));
  EXPECT_FALSE(backward_pays(32, 2, Device::cuda(0)));
}

}  // namespace
}  // namespace tg
