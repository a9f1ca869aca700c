// The row fusion pass (passes/fuse_rows.cpp) and row programs (ir/fused_rows.h): LayerNorm and
// masked softmax become one fused_elementwise node with row-reduction steps, and the fused graphs
// compute what float64 references and the unfused graphs do (TG_FUSION=1 forces the passes on
// the CPU, which runs the programs step by step).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/fused_rows.h"
#include "ops/registry.h"
#include "passes/fusion_test_util.h"
#include "test_util.h"
#include "tg/tg.h"

namespace tg {
namespace {

using testing::count;
using testing::ScopedFusion;

int64_t ir_limit() { return ir::kMaxFusedRowLength; }

/// The fused_elementwise lines of a printed executable that have row reductions.
int row_programs(const std::string& text) {
  int n = 0;
  size_t at = 0;
  while ((at = text.find("fused_elementwise(", at)) != std::string::npos) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    n += line.find("reduce_sum(") != std::string::npos || line.find("reduce_max(") != std::string::npos;
    at = end;
  }
  return n;
}

/// float64 LayerNorm of rows of z = x + r (n elements a row), times gamma plus beta.
std::vector<double> layer_norm_reference(const TensorData& x, const TensorData& r, const TensorData& gamma,
                                         const TensorData& beta, double eps) {
  const int64_t n = x.shape().back(), rows = x.num_elements() / n;
  std::vector<double> out;
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<double> z(static_cast<size_t>(n));
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) {
      z[static_cast<size_t>(j)] = x.element_as_double(i * n + j) + r.element_as_double(i * n + j);
      mean += z[static_cast<size_t>(j)];
    }
    mean /= static_cast<double>(n);
    for (double v : z) var += (v - mean) * (v - mean);
    var /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      out.push_back((z[static_cast<size_t>(j)] - mean) / std::sqrt(var + eps) * gamma.element_as_double(j) +
                    beta.element_as_double(j));
    }
  }
  return out;
}

/// float64 softmax over the last axis of s * scale + (1 - mask) * -10000 (mask [b, 1, 1, n]).
std::vector<double> masked_softmax_reference(const TensorData& s, const TensorData& mask, double scale) {
  const Shape& sh = s.shape();
  const int64_t n = sh.back(), rows = s.num_elements() / n, per_batch = rows / sh[0];
  std::vector<double> out;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t b = i / per_batch;
    std::vector<double> z(static_cast<size_t>(n));
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      z[static_cast<size_t>(j)] = s.element_as_double(i * n + j) * scale + (1 - mask.element_as_double(b * n + j)) * -10000;
      mx = std::max(mx, z[static_cast<size_t>(j)]);
    }
    for (double& v : z) sum += (v = std::exp(v - mx));
    for (double v : z) out.push_back(v / sum);
  }
  return out;
}

TensorData key_mask(int64_t batch, int64_t n) {
  std::vector<int64_t> m;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < n; ++k) m.push_back(k < n - 2 - 7 * b ? 1 : 0);
  }
  return TensorData::from_vector<int64_t>(m, {batch, 1, 1, n});
}

Tensor masked_softmax(Tensor s, Tensor mask) {
  Tensor bias = (1.0 - cast(mask, s.dtype())) * -10000.0;
  return softmax(s * 0.125 + bias, -1);
}

TG_COVERS(value, fused_elementwise);
TEST(FuseRows, LayerNormOfAResidualSumIsOneProgram) {
  // Rows of 100 (not a multiple of 32): mean, variance and normalization in one node.
  Graph g;
  Tensor x = g.placeholder({3, 4, 100}, DType::f32, "x");
  Tensor r = g.placeholder({3, 4, 100}, DType::f32, "r");
  TensorData gv = TensorData::random_uniform({100}, 0.5f, 1.5f, 3), bv = TensorData::random_uniform({100}, -0.5f, 0.5f, 4);
  Tensor y = layer_norm(x + r, g.constant(gv), g.constant(bv));
  TensorData xv = TensorData::random_uniform({3, 4, 100}, -1.f, 2.f, 1), rv = TensorData::random_uniform({3, 4, 100}, -1.f, 1.f, 2);
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, xv.type()}, {r, rv.type()}}, {y});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "fused_elementwise("), 1) << text;
  EXPECT_EQ(row_programs(text), 1) << text;
  EXPECT_EQ(count(text, "fused_reduce("), 0) << text;
  EXPECT_EQ(count(text, "reduce_sum("), 2) << text;  // the mean's and the variance's steps
  testing::expect_close(exe.run({xv, rv})[0], layer_norm_reference(xv, rv, gv, bv, 1e-5), {3, 4, 100}, 1e-5, 1e-5);
}

TEST(FuseRows, MaskedSoftmaxIsOneProgram) {
  // BERT's attention softmax: scale, an i64 key mask turned into -10000 biases, softmax over the
  // keys (rows of 37).
  Graph g;
  Tensor s = g.placeholder({2, 3, 4, 37}, DType::f32, "s");
  Tensor m = g.placeholder({2, 1, 1, 37}, DType::i64, "mask");
  Tensor p = masked_softmax(s, m);
  TensorData sv = TensorData::random_uniform({2, 3, 4, 37}, -30.f, 30.f, 5), mv = key_mask(2, 37);
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{s, sv.type()}, {m, mv.type()}}, {p});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "fused_elementwise("), 1) << text;
  EXPECT_EQ(row_programs(text), 1) << text;
  EXPECT_EQ(count(text, "= reduce_max("), 0) << text;
  EXPECT_EQ(count(text, "fused_reduce("), 0) << text;
  EXPECT_EQ(count(text, "reduce_max("), 1) << text;
  testing::expect_close(exe.run({sv, mv})[0], masked_softmax_reference(sv, mv, 0.125), {2, 3, 4, 37}, 1e-5, 1e-6);
}

TEST(FuseRows, HalfPrecisionRowsMatchTheFloat64Reference) {
  for (DType t : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(t));
    Graph g;
    Tensor x = g.placeholder({5, 77}, t, "x");
    Tensor r = g.placeholder({5, 77}, t, "r");
    Tensor m = g.placeholder({5, 1, 1, 77}, DType::i64, "mask");
    TensorData gv = TensorData::random_uniform({77}, 0.5f, 1.5f, 3, t), bv = TensorData::random_uniform({77}, -0.5f, 0.5f, 4, t);
    Tensor y = layer_norm(x + r, g.constant(gv), g.constant(bv));
    Tensor p = masked_softmax(reshape(x, {5, 1, 1, 77}), m);
    TensorData xv = TensorData::random_uniform({5, 77}, -1.f, 2.f, 1, t), rv = TensorData::random_uniform({5, 77}, -1.f, 1.f, 2, t);
    TensorData mv = key_mask(5, 77);
    ScopedFusion f("1");
    Executable exe = g.compile(Device::cpu(), {{x, xv.type()}, {r, rv.type()}, {m, mv.type()}}, {y, p});
    const std::string text = exe.to_string();
    EXPECT_EQ(row_programs(text), 2) << text;
    EXPECT_EQ(count(text, "fused_reduce("), 0) << text;
    std::vector<TensorData> out = exe.run({xv, rv, mv});
    // x + r rounds to t before the statistics: the reference reads the exact sum.
    const double tol = t == DType::f16 ? 1e-2 : 5e-2;
    testing::expect_close(out[0], layer_norm_reference(xv, rv, gv, bv, 1e-5), {5, 77}, tol, tol);
    testing::expect_close(out[1], masked_softmax_reference(xv.reshaped({5, 1, 1, 77}), mv, 0.125), {5, 1, 1, 77}, tol, 1e-3);
  }
}

TEST(FuseRows, RowsLongerThanTheLimitAreNotFused) {
  for (int64_t n : {ir_limit(), ir_limit() + 1}) {
    Graph g;
    Tensor x = g.placeholder({2, n}, DType::f32, "x");
    Tensor p = softmax(x, -1);
    TensorData xv = TensorData::random_uniform({2, n}, -3.f, 3.f, 9);
    ScopedFusion f("1");
    Executable exe = g.compile(Device::cpu(), {{x, xv.type()}}, {p});
    const std::string text = exe.to_string();
    EXPECT_EQ(row_programs(text), n <= ir_limit() ? 1 : 0) << n;
    EXPECT_EQ(count(text, "= reduce_max("), n <= ir_limit() ? 0 : 1) << n;
    // Softmax rows sum to 1 and keep their order: compare a row with its float64 softmax.
    const TensorData y = exe.run({xv})[0];
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, xv.element_as_double(n + j));
    for (int64_t j = 0; j < n; ++j) sum += std::exp(xv.element_as_double(n + j) - mx);
    for (int64_t j : {int64_t{0}, n / 2, n - 1}) {
      EXPECT_NEAR(y.element_as_double(n + j), std::exp(xv.element_as_double(n + j) - mx) / sum, 1e-9) << n << " " << j;
    }
  }
}

TEST(FuseRows, AReductionThatIsAlsoAResultIsNotAbsorbed) {
  // The mean is a result: its sum keeps its node; the row program reads it instead of computing
  // it again (it would run twice).
  Graph g;
  Tensor x = g.placeholder({6, 50}, DType::f32, "x");
  Tensor mean = reduce_mean(x, {.axes = {1}, .keep_dims = true});
  Tensor c = x - mean;
  Tensor y = c * rsqrt(reduce_mean(c * c, {.axes = {1}, .keep_dims = true}) + 1e-5);
  TensorData xv = TensorData::random_uniform({6, 50}, -1.f, 2.f, 6);
  ScopedFusion f("1");
  Executable exe = g.compile(Device::cpu(), {{x, xv.type()}}, {y, mean});
  const std::string text = exe.to_string();
  EXPECT_EQ(count(text, "= reduce_sum("), 1) << text;  // the mean's sum, once
  EXPECT_EQ(count(text, "reduce_sum("), 2) << text;    // and the variance's step
  EXPECT_EQ(row_programs(text), 1) << text;            // the variance and y
  std::vector<TensorData> out = exe.run({xv});
  const TensorData zero = TensorData::zeros({6, 50});
  std::vector<double> ones(50, 1.0), zeros(50, 0.0);
  testing::expect_close(out[0], layer_norm_reference(xv, zero, TensorData::from_vector<double>(ones, {50}),
                                                     TensorData::from_vector<double>(zeros, {50}), 1e-5),
                        {6, 50}, 1e-5, 1e-5);
  for (int64_t i = 0; i < 6; ++i) {
    double m = 0;
    for (int64_t j = 0; j < 50; ++j) m += xv.element_as_double(i * 50 + j);
    EXPECT_NEAR(out[1].element_as_double(i), m / 50, 1e-6);
  }
}

TEST(FuseRows, BertEncoderLayerMatchesTheUnfusedGraph) {
  // A BERT-like encoder layer (hidden 64, 4 heads of 16, 24 tokens, key mask): attention with
  // head reshapes and transposes, a masked softmax, residual + LayerNorm twice, a GELU FFN. With
  // the passes the softmax and both LayerNorms are one row program each and no separate
  // reduction is left; values equal the unfused graph's.
  const int64_t t = 24, h = 64, heads = 4, d = 16;
  Graph g;
  Tensor x = g.placeholder({1, t, h}, DType::f32, "x");
  Tensor mask = g.placeholder({1, 1, 1, t}, DType::i64, "mask");
  uint64_t seed = 10;
  auto weight = [&](Shape s) { return g.constant(TensorData::random_normal(s, 0.f, 0.1f, seed++)); };
  auto dense = [&](Tensor in, int64_t k, int64_t n) { return matmul(in, weight({k, n})) + weight({n}); };
  auto split_heads = [&](Tensor in) { return transpose(reshape(in, {1, t, heads, d}), {0, 2, 1, 3}); };
  Tensor q = split_heads(dense(x, h, h)), k = split_heads(dense(x, h, h)), v = split_heads(dense(x, h, h));
  Tensor scores = matmul(q, transpose(k, {0, 1, 3, 2}));
  Tensor ctx = reshape(transpose(matmul(masked_softmax(scores, mask), v), {0, 2, 1, 3}), {1, t, h});
  Tensor a = layer_norm(dense(ctx, h, h) + x, weight({h}) + 1.0, weight({h}));
  Tensor y = layer_norm(dense(gelu(dense(a, h, 4 * h)), 4 * h, h) + a, weight({h}) + 1.0, weight({h}));
  TensorData xv = TensorData::random_normal({1, t, h}, 0.f, 1.f, 1), mv = key_mask(1, t);
  auto run = [&](const char* fusion, std::string* text) {
    ScopedFusion f(fusion);
    Executable exe = g.compile(Device::cpu(), {{x, xv.type()}, {mask, mv.type()}}, {y});
    *text = exe.to_string();
    return exe.run({xv, mv});
  };
  std::string plain_text, fused_text;
  std::vector<TensorData> plain = run("0", &plain_text), fused = run("1", &fused_text);
  EXPECT_EQ(row_programs(fused_text), 3) << fused_text;
  EXPECT_EQ(count(fused_text, "fused_reduce("), 0) << fused_text;
  EXPECT_EQ(count(fused_text, "= reduce_"), 0) << fused_text;
  testing::expect_matches_unfused(plain, fused);
}

TG_COVERS(error, fused_elementwise);
TEST(FuseRows, TypeInferenceChecksRowReductionSteps) {
  ir::Node n;
  n.kind = ir::OpKind::fused_elementwise;
  ir::FusedAttrs a;
  a.shape = {3, 4};
  a.steps = {{ir::OpKind::reduce_sum, {0}, DType::f32}, {ir::OpKind::div, {0, 1}, DType::f32}};
  a.outputs = {2};
  n.attrs = a;
  std::vector<TensorType> in{{{3, 4}, DType::f32}};
  // A valid row program: x / sum of its row, of x's shape.
  std::vector<TensorType> out = ops::infer_types(n, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (TensorType{{3, 4}, DType::f32}));
  std::vector<TensorType> ints{{{3, 4}, DType::i32}};
  a.steps = {{ir::OpKind::reduce_sum, {0}, DType::i32}};
  a.outputs = {1};
  n.attrs = a;
  EXPECT_TG_ERROR(ops::infer_types(n, ints), ErrorCode::internal, "[fused_elementwise] step 0 (reduce_sum) reduces i32");
  a.steps = {{ir::OpKind::reduce_max, {1}, DType::f32}};
  n.attrs = a;
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "step 0 (reduce_max) must read one earlier value");
  // Any step: as many arguments as its op takes, each an earlier value (checked for loaded files).
  a.steps = {{ir::OpKind::add, {0}, DType::f32}};
  n.attrs = a;
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "step 0 (add) has 1 arguments, the op takes 2");
  a.steps = {{ir::OpKind::add, {0, 1}, DType::f32}};
  n.attrs = a;
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "step 0 (add) reads value 1; earlier values are 0..0");
  a.steps = {{ir::OpKind::reduce_max, {0}, DType::f32}};
  a.shape = {};
  n.attrs = a;
  std::vector<TensorType> scalar{{{}, DType::f32}};
  EXPECT_TG_ERROR(ops::infer_types(n, scalar), ErrorCode::internal, "only fused_elementwise programs of rank >= 1");
  n.kind = ir::OpKind::fused_reduce;
  a.shape = {3, 4};
  a.reduce_axes = {1};
  n.attrs = a;
  EXPECT_TG_ERROR(ops::infer_types(n, in), ErrorCode::internal, "[fused_reduce] step 0 (reduce_max) is a row reduction");
}

}  // namespace
}  // namespace tg
