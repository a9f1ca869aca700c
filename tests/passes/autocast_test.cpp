// The autocast pass (passes/autocast.cpp): under CompileOptions::precision bf16/f16 on a fusing
// backend (TG_FUSION=1 forces it on the CPU), convolutions and matmuls take 16-bit operands and
// give 16-bit results in the graph, and values computed only for them are stored in 16 bits.
// Checked on the CPU against float64 references of the documented rounding: operands rounded,
// sums in float32 or wider, the result rounded once.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/autodiff.h"
#include "tg/half.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedFusion;

float round_bf16(float v) { return static_cast<float>(bf16_t(v)); }

std::vector<float> values_of(const TensorData& t) {
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.element_as_double(static_cast<int64_t>(i)));
  return v;
}

// y = relu(x * 2) feeding a 3x3 "same" convolution (NHWC, HWIO) with weights w.
struct ConvNet {
  Graph g;
  Tensor x, w, y, z;
  ConvNet() {
    x = g.placeholder({1, 4, 4, 2}, DType::f32, "x");
    TensorData wv = TensorData::random_normal({3, 3, 2, 3}, 0.f, 0.7f, 11);
    w = g.variable(wv, "w");
    y = relu(x * 2.0);
    z = conv2d(y, w, {.padding = Padding::same});
  }
};

TensorData x_value() { return TensorData::random_normal({1, 4, 4, 2}, 0.1f, 1.3f, 5); }

// conv2d of bf16-rounded operands summed in double, then rounded to bf16 once: z[0, i, j, o].
std::vector<float> reference_bf16_conv(const std::vector<float>& y, const std::vector<float>& w) {
  std::vector<float> z(4 * 4 * 3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int o = 0; o < 3; ++o) {
        double s = 0;
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw)
            for (int c = 0; c < 2; ++c) {
              const int ih = i + kh - 1, iw = j + kw - 1;
              if (ih < 0 || ih >= 4 || iw < 0 || iw >= 4) continue;
              s += static_cast<double>(round_bf16(y[(ih * 4 + iw) * 2 + c])) *
                   round_bf16(w[((kh * 3 + kw) * 2 + c) * 3 + o]);
            }
        z[(i * 4 + j) * 3 + o] = round_bf16(static_cast<float>(s));
      }
  return z;
}

TEST(Autocast, ConvolutionRunsOnBf16OperandsAndRoundsItsResultOnce) {
  ConvNet net;
  TensorData xv = x_value();
  ScopedFusion f("1");
  Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}}, {net.z}, {}, {.precision = ComputePrecision::bf16});
  const std::string text = exe.to_string();
  // The convolution is bf16 in the graph; relu(x * 2) is written only as bf16 (one program whose
  // single output is the conv's operand); the result is widened back to f32 for the target.
  EXPECT_EQ(count(text, "= conv2d("), 1) << text;
  EXPECT_NE(text.find("groups=1, data_layout=nhwc, weights_layout=hwio} : bf16[1,4,4,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("outputs=[6]} : bf16[1,4,4,2]"), std::string::npos) << text;
  EXPECT_EQ(count(text, "f32[1,4,4,2]"), 1) << text;  // the placeholder only
  EXPECT_EQ(text.find(":f32; cast(6):f32"), std::string::npos) << text;  // no dead widening step
  EXPECT_NE(text.find(": bf16[3,3,2,3]"), std::string::npos) << text;  // the weights' cast
  std::vector<TensorData> r = exe.run({xv});
  ASSERT_EQ(r[0].type(), (TensorType{{1, 4, 4, 3}, DType::f32}));

  std::vector<float> yv = values_of(xv);
  for (float& v : yv) v = std::max(v * 2.f, 0.f);
  const std::vector<float> want = reference_bf16_conv(yv, values_of(net.g.variable_value(net.w)));
  const std::vector<float> got = values_of(r[0]);
  for (size_t i = 0; i < want.size(); ++i) {
    // Both are bf16 values: equal, or one bf16 step apart where the f32 and f64 sums round differently.
    EXPECT_LE(std::fabs(got[i] - want[i]), std::ldexp(std::fabs(want[i]), -7) + 1e-30) << i;
    EXPECT_EQ(got[i], round_bf16(got[i])) << i;
  }
}

TEST(Autocast, OtherReadersOfAConvolutionOperandSeeItRoundedButTargetsKeepFloat32) {
  // y feeds the convolution and y + 1; y + 1 reads the bf16-stored y. A target y keeps its f32 value.
  TensorData xv = x_value();
  std::vector<float> yv = values_of(xv);
  for (float& v : yv) v = std::max(v * 2.f, 0.f);
  ScopedFusion f("1");
  {
    ConvNet net;
    Tensor plus = net.y + 1.0;
    Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}}, {net.z, plus}, {},
                                   {.precision = ComputePrecision::bf16});
    const std::vector<float> got = values_of(exe.run({xv})[1]);
    for (size_t i = 0; i < yv.size(); ++i) EXPECT_EQ(got[i], round_bf16(yv[i]) + 1.f) << i;
  }
  {
    ConvNet net;
    Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}}, {net.z, net.y}, {},
                                   {.precision = ComputePrecision::bf16});
    const std::vector<float> got = values_of(exe.run({xv})[1]);
    for (size_t i = 0; i < yv.size(); ++i) EXPECT_EQ(got[i], yv[i]) << i;
  }
}

TEST(Autocast, GradientsStayCloseToFloat32) {
  // loss = sum(conv(relu(2x), w)^2): its gradients for w and x under bf16 against the f32 graph's.
  TensorData xv = x_value();
  auto grads = [&](ComputePrecision p) {
    ConvNet net;
    Tensor loss = reduce_sum(square(net.z));
    std::vector<Tensor> gr = gradients(loss, {net.w, net.x});
    Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}}, gr, {}, {.precision = p});
    return exe.run({xv});
  };
  ScopedFusion f("1");
  std::vector<TensorData> low = grads(ComputePrecision::bf16), exact = grads(ComputePrecision::f32);
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(low[k].type(), exact[k].type());
    const std::vector<float> a = values_of(low[k]), b = values_of(exact[k]);
    double scale = 0;
    for (float v : b) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 3e-2 * scale) << k << " " << i;
  }
}

TEST(Autocast, MaxPoolBeforeAConvolutionRunsOnTheRoundedValues) {
  // p = max_pool2d(relu(x)) feeds a convolution: the pool and its backward run in bf16, so relu(x)
  // is stored only in bf16; p equals the rounded f32 pool exactly (rounding is monotonic).
  Graph g;
  Tensor x = g.placeholder({1, 4, 4, 2}, DType::f32, "x");
  Tensor w = g.variable(TensorData::random_normal({1, 1, 2, 3}, 0.f, 0.7f, 3), "w");
  Pool2dDesc pd{.kernel_size = {2, 2}, .strides = {2, 2}};
  Tensor p = max_pool2d(relu(x), pd);
  Tensor z = conv2d(p, w);
  std::vector<Tensor> gr = gradients(reduce_sum(square(z)), {x});
  TensorData xv = x_value();
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, xv.type()}}, {p, gr[0]}, {}, {.precision = ComputePrecision::bf16});
  const std::string text = exe.to_string();
  EXPECT_NE(text.find("data_layout=nhwc} : bf16[1,2,2,2]"), std::string::npos) << text;  // max_pool2d
  EXPECT_NE(text.find("data_layout=nhwc} : bf16[1,4,4,2]"), std::string::npos) << text;  // its backward
  std::vector<TensorData> r = exe.run({xv});
  const std::vector<float> xs = values_of(xv), got = values_of(r[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int c = 0; c < 2; ++c) {
        float m = 0;  // relu
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b) m = std::max(m, xs[((2 * i + a) * 4 + 2 * j + b) * 2 + c]);
        EXPECT_EQ(got[(i * 2 + j) * 2 + c], round_bf16(m)) << i << j << c;
      }
}

// a = conv(relu(2x), w) * p + q is written by one program and summed by a fused reduction. Under
// bf16 it is an activation stored in 16 bits between the kernels (as torch.autocast keeps it) when
// the sums only feed variables (an optimizer's gradient): the sums see round_bf16(a). It keeps
// float32 when the sums are results (a loss) or when a reaches an assignment elementwise.
TEST(Autocast, ActivationsBetweenProgramsAreStoredInBf16UnlessTheyReachAResultOrAnAssignment) {
  TensorData xv = x_value();
  TensorData pv = TensorData::random_normal({1, 4, 4, 3}, 1.f, 0.5f, 7);
  TensorData qv = TensorData::random_normal({1, 4, 4, 3}, 0.f, 1.f, 8);
  ScopedFusion f("1");
  enum Use { sums_assigned, sums_are_results, a_assigned };
  for (Use use : {sums_assigned, sums_are_results, a_assigned}) {
    ConvNet net;
    Tensor p = net.g.placeholder({1, 4, 4, 3}, DType::f32, "p");
    Tensor q = net.g.placeholder({1, 4, 4, 3}, DType::f32, "q");
    Tensor a = net.z * p + q;
    Tensor s1 = reduce_sum(a), s2 = reduce_sum(a * a);
    Tensor v1 = net.g.variable(TensorData::zeros({}, DType::f32), "v1");
    Tensor v2 = net.g.variable(TensorData::zeros({}, DType::f32), "v2");
    Tensor v = net.g.variable(TensorData::zeros({1, 4, 4, 3}, DType::f32), "v");
    std::vector<Tensor> targets;
    std::vector<Operation> ops;
    if (use == sums_are_results) targets = {s1, s2};
    else ops = {assign_variable(v1, s1), assign_variable(v2, s2)};
    if (use == a_assigned) ops.push_back(assign_variable(v, a * 0.5));
    Executable exe = net.g.compile(Device::cpu(), {{net.x, xv.type()}, {p, pv.type()}, {q, qv.type()}}, targets, ops,
                                   {.precision = ComputePrecision::bf16});
    std::vector<TensorData> r = exe.run({xv, pv, qv});
    const bool rounded = use == sums_assigned;
    // The writer rounds (a last cast step, a bf16 output); the reduction widens (a first cast step).
    const std::string text = exe.to_string();
    EXPECT_EQ(text.find("cast(5):bf16}, outputs=[6]} : bf16[1,4,4,3]") != std::string::npos, rounded) << text;
    EXPECT_EQ(text.find("fused_reduce(%9) {shape=[1,4,4,3], steps={cast(0):f32;") != std::string::npos, rounded)
        << text;

    std::vector<float> yv = values_of(xv);
    for (float& e : yv) e = std::max(e * 2.f, 0.f);
    const std::vector<float> z = reference_bf16_conv(yv, values_of(net.g.variable_value(net.w)));
    const std::vector<float> ps = values_of(pv), qs = values_of(qv);
    double sum = 0, sum_sq = 0;
    int inexact = 0;
    for (size_t i = 0; i < z.size(); ++i) {
      const float ai = z[i] * ps[i] + qs[i];
      inexact += ai != round_bf16(ai);
      const float stored = rounded ? round_bf16(ai) : ai;
      sum += stored;
      sum_sq += static_cast<double>(stored * stored);
    }
    ASSERT_GT(inexact, 40);  // the rounding is visible in these values
    const double got1 = use == sums_are_results ? values_of(r[0])[0] : values_of(net.g.variable_value(v1))[0];
    const double got2 = use == sums_are_results ? values_of(r[1])[0] : values_of(net.g.variable_value(v2))[0];
    EXPECT_NEAR(got1, sum, 1e-6 * std::fabs(sum) + 1e-6) << use;
    EXPECT_NEAR(got2, sum_sq, 1e-6 * sum_sq) << use;
    if (use == a_assigned) {
      const std::vector<float> got = values_of(net.g.variable_value(v));
      for (size_t i = 0; i < z.size(); ++i) EXPECT_EQ(got[i], (z[i] * ps[i] + qs[i]) * 0.5f) << i;
    }
  }
}

TEST(Autocast, ChainedMatmulsPassTheir16BitResultOn) {
  // (a @ b) @ c: the inner result feeds the outer matmul in f16 directly (no cast back and forth,
  // no unused widening); casts: a, b, c narrowed and the final result widened.
  Graph g;
  Tensor a = g.placeholder({2, 3}, DType::f32, "a");
  Tensor b = g.placeholder({3, 4}, DType::f32, "b");
  Tensor c = g.placeholder({4, 2}, DType::f32, "c");
  Tensor y = matmul(matmul(a, b), c);
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{a, a.type()}, {b, b.type()}, {c, c.type()}}, {y}, {},
                             {.precision = ComputePrecision::f16});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "= cast("), 4) << text;
  EXPECT_EQ(count(text, "= matmul("), 2) << text;
  EXPECT_NE(text.find("= matmul(%"), std::string::npos) << text;
  EXPECT_EQ(exe.output_types()[0], (TensorType{{2, 2}, DType::f32}));
}

TEST(Autocast, MatmulUnderF16AndNothingElseChanges) {
  Graph g;
  Tensor a = g.placeholder({3, 4}, DType::f32, "a");
  Tensor b = g.placeholder({4, 2}, DType::f32, "b");
  Tensor c = matmul(a, b);
  Tensor other = exp(a);  // no tensor-core op: no casts
  TensorData av = TensorData::random_normal({3, 4}, 0.f, 1.f, 2), bv = TensorData::random_normal({4, 2}, 0.f, 1.f, 3);
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{a, av.type()}, {b, bv.type()}}, {c, other}, {},
                             {.precision = ComputePrecision::f16});
  const std::string text = exe.to_string();
  EXPECT_NE(text.find("= matmul("), std::string::npos) << text;
  EXPECT_NE(text.find(": f16[3,2]"), std::string::npos) << text;
  std::vector<TensorData> r = exe.run({av, bv});
  const std::vector<float> x = values_of(av), y = values_of(bv), got = values_of(r[0]), e = values_of(r[1]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += static_cast<double>(static_cast<float>(f16_t(x[i * 4 + k]))) * static_cast<float>(f16_t(y[k * 2 + j]));
      const float want = static_cast<float>(f16_t(static_cast<float>(s)));
      EXPECT_LE(std::fabs(got[i * 2 + j] - want), std::ldexp(std::fabs(want), -10) + 1e-6) << i << "," << j;
    }
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(e[i], std::exp(x[i])) << i;

  // Without fusion (the CPU's default) the pass does not run: the matmul stays f32.
  ScopedFusion off("0");
  Executable plain = g.compile(Device::cpu(), {{a, av.type()}, {b, bv.type()}}, {c}, {},
                               {.precision = ComputePrecision::f16});
  EXPECT_EQ(plain.to_string().find("f16"), std::string::npos) << plain.to_string();
}

}  // namespace
}  // namespace tg
