// The rewrites that take kernels out of a batch-1 attention layer (Hugging Face BERT through
// tensorgraph.torch): head-major projections (passes/project_heads.cpp), sibling merging
// (passes/merge_siblings.cpp), folds into matmuls (passes/fold_into_matmul.cpp), the
// merged projections (passes/merge_projections.cpp) and constant index arithmetic and gathers folded
// (passes/fold_constants.cpp). Values against the unfused pipeline (TG_FUSION=0) and against
// float64 references computed here; the fusing pipeline (as on CUDA) runs on the CPU.
#include <cmath>

#include "fusion_test_util.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::count_occurrences;
using testing::ScopedEnv;
using testing::ScopedFusion;

constexpr int64_t kL = 4, kH = 3, kD = 2, kN = kH * kD, kK = 5;

TensorData values(Shape shape, double scale, double shift) {
  TensorData t(shape, DType::f64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = std::sin(scale * static_cast<double>(i) + shift);
  return t;
}

// One attention layer's projections as PyTorch's nn.Linear + view + transpose give them:
// transpose(reshape(x @ W^T + b, [1, L, H, D]), [0, 2, 1, 3]), W [N, K] and b [N] constants.
struct Attention {
  Graph g;
  Tensor x;
  TensorData w[3], b[3];
  Tensor fed[3];  // the weights when fed
  Tensor q, k, v, out;
  // sdpa: as PyTorch >= 2.5 decomposes scaled_dot_product_attention for tensorgraph.torch: q and
  // k^T each scaled by sqrt(scale), a boolean mask (all true: no padding) as 0 / -inf, the safe
  // softmax's fully-masked rows as max == -inf.
  explicit Attention(int64_t batch = 1, bool fed_weights = false, bool sdpa = false) {
    x = g.placeholder({batch * kL, kK}, DType::f64, "x");
    Tensor heads[3];
    for (int i = 0; i < 3; ++i) {
      w[i] = values({kN, kK}, 0.37 + 0.1 * i, 0.2 * i);
      b[i] = values({kN}, 0.91, 1.0 + i);
      if (fed_weights) fed[i] = g.placeholder({kN, kK}, DType::f64, "w" + std::to_string(i));
      Tensor wt = fed_weights ? fed[i] : g.constant(w[i]);
      Tensor y = matmul(x, transpose(wt, {1, 0})) + g.constant(b[i]);
      heads[i] = transpose(reshape(y, {batch, kL, kH, kD}), {0, 2, 1, 3});
    }
    q = heads[0];
    k = heads[1];
    v = heads[2];
    if (!sdpa) {
      out = matmul(softmax(matmul(q, k, {.transpose_b = true}) * (1 / std::sqrt(2.0)), -1), v);
      return;
    }
    Tensor c = g.constant(std::sqrt(1 / std::sqrt(2.0)), DType::f64);
    Tensor mask = g.constant(TensorData::full({1, 1, kL, kL}, DType::bool_, 1.0));
    Tensor s = matmul(q * c, transpose(k, {0, 1, 3, 2}) * c) +
               select(mask, g.constant(0.0, DType::f64), g.constant(-INFINITY, DType::f64));
    Tensor masked = equal(reduce_max(s, {.axes = {3}, .keep_dims = true}), g.constant(-INFINITY, DType::f64));
    out = matmul(select(masked, g.constant(0.0, DType::f64), softmax(s, -1)), v);
  }
  /// q, k, v and out (`out_only`: out alone, so the projections are free to change form).
  std::vector<TensorData> run(const TensorData& xv, bool out_only = false) {
    const std::vector<Tensor> targets = out_only ? std::vector<Tensor>{out} : std::vector<Tensor>{q, k, v, out};
    Executable e = g.compile(Device::cpu(), {{x, xv.type()}}, targets);
    text = e.to_string();
    return e.run({xv});
  }
  std::string text;
};

TEST(ProjectHeads, EachProjectionIsOneBatchedMatmulWritingTheHeads) {
  const TensorData xv = values({kL, kK}, 0.53, 0.1);
  std::vector<TensorData> plain, fused, no_heads;
  std::string fused_text, no_heads_text;
  {
    ScopedFusion off("0");
    Attention a;
    plain = a.run(xv);
  }
  {
    ScopedFusion on("1");
    ScopedEnv merge_off("TG_MERGE_PROJECTIONS", "0");  // one matmul per projection (merged: below)
    Attention a;
    fused = a.run(xv);
    fused_text = a.text;
    ScopedEnv heads_off("TG_PROJECT_HEADS", "0");
    Attention b;
    no_heads = b.run(xv);
    no_heads_text = b.text;
  }
  // Without the rewrite the three heads' transposes are kernels; with it none is left (the
  // weights' transposes fold either way), and each projection is a matmul by a [H, K, D] constant.
  EXPECT_EQ(count_occurrences(no_heads_text, "= transpose("), 3) << no_heads_text;
  EXPECT_EQ(count_occurrences(fused_text, "= transpose("), 0) << fused_text;
  EXPECT_EQ(count_occurrences(fused_text, "constant() {value=f64[3,5,2]"), 3) << fused_text;
  testing::expect_all_near(plain, fused, 1e-12);
  testing::expect_all_near(plain, no_heads, 1e-12);
  // float64 reference of the query heads: q[0, h, l, d] = sum_k x[l, k] W[h*D + d, k] + b[h*D + d].
  Attention ref;
  std::vector<double> want;
  for (int64_t h = 0; h < kH; ++h) {
    for (int64_t l = 0; l < kL; ++l) {
      for (int64_t d = 0; d < kD; ++d) {
        const int64_t n = h * kD + d;
        double s = ref.b[0].data<double>()[n];
        for (int64_t kk = 0; kk < kK; ++kk) s += xv.data<double>()[l * kK + kk] * ref.w[0].data<double>()[n * kK + kk];
        want.push_back(s);
      }
    }
  }
  testing::expect_close(fused[0], want, {1, kH, kL, kD}, 1e-12, 1e-12);
}

TEST(ProjectHeads, BatchesAboveOneAndFedWeightsKeepTheirTransposes) {
  ScopedFusion on("1");
  {
    Attention a(/*batch=*/2);
    a.run(values({2 * kL, kK}, 0.53, 0.1));
    EXPECT_EQ(count_occurrences(a.text, "= transpose("), 3) << a.text;  // the heads of 2 sequences
  }
  {
    Attention a(/*batch=*/1, /*fed_weights=*/true);
    const TensorData xv = values({kL, kK}, 0.53, 0.1);
    Executable e = a.g.compile(Device::cpu(),
                               {{a.x, xv.type()}, {a.fed[0], a.w[0].type()}, {a.fed[1], a.w[1].type()},
                                {a.fed[2], a.w[2].type()}},
                               {a.q});
    const std::string text = e.to_string();
    EXPECT_EQ(count_occurrences(text, "f64[3,5,2]"), 0) << text;  // not reordered: fed each run
  }
}

TEST(FoldIntoMatmul, ScalesAndTheKeysTransposeAreTheGemmsWork) {
  const TensorData xv = values({kL, kK}, 0.53, 0.1);
  std::vector<TensorData> plain, fused, no_folds;
  std::string text, no_folds_text;
  {
    ScopedFusion off("0");
    Attention a(1, false, /*sdpa=*/true);
    plain = a.run(xv, /*out_only=*/true);
  }
  {
    ScopedFusion on("1");
    ScopedEnv merge_off("TG_MERGE_PROJECTIONS", "0");  // one matmul per projection (merged: below)
    Attention a(1, false, /*sdpa=*/true);
    fused = a.run(xv, /*out_only=*/true);
    text = a.text;
    ScopedEnv folds_off("TG_MATMUL_FOLDS", "0");
    Attention b(1, false, /*sdpa=*/true);
    no_folds = b.run(xv, /*out_only=*/true);
    no_folds_text = b.text;
  }
  // Without the folds: k's transpose and the two scales (q's alone, k's after its transpose) are
  // kernels; with them the scale is in the reordered weights and biases and q @ k^T reads k with
  // transpose_b. The all-true mask folds (simplify), and the fully-masked test joins the softmax's
  // row program: attention is the three projections' GEMMs, one bias program, q @ k^T, one row
  // program and p @ v.
  EXPECT_EQ(count_occurrences(no_folds_text, "= transpose("), 1) << no_folds_text;
  EXPECT_EQ(count_occurrences(text, "= transpose("), 0) << text;
  EXPECT_EQ(count_occurrences(text, "transpose_b=true"), 1) << text;
  EXPECT_EQ(count_occurrences(text, "= matmul("), 5) << text;
  EXPECT_EQ(count_occurrences(text, "= fused_elementwise("), 2) << text;
  EXPECT_EQ(count_occurrences(text, "= select("), 0) << text;
  EXPECT_EQ(count_occurrences(text, "= reduce_max("), 0) << text;
  // x.(w c) against (x.w) c: one rounding apart per product.
  testing::expect_all_near(plain, fused, 1e-12);
  testing::expect_all_near(plain, no_folds, 1e-12);
  // float64 reference of the attention's first row of the first head.
  Attention ref;
  auto proj = [&](int i, int64_t l, int64_t n) {
    double s = ref.b[i].data<double>()[n];
    for (int64_t kk = 0; kk < kK; ++kk) s += xv.data<double>()[l * kK + kk] * ref.w[i].data<double>()[n * kK + kk];
    return s;
  };
  std::vector<double> e(kL);
  double sum = 0;
  for (int64_t j = 0; j < kL; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < kD; ++d) dot += proj(0, 0, d) * proj(1, j, d);
    e[static_cast<size_t>(j)] = std::exp(dot / std::sqrt(2.0));
    sum += e[static_cast<size_t>(j)];
  }
  for (int64_t d = 0; d < kD; ++d) {
    double o = 0;
    for (int64_t j = 0; j < kL; ++j) o += e[static_cast<size_t>(j)] / sum * proj(2, j, d);
    EXPECT_NEAR(fused[0].element_as_double(d), o, 1e-12) << d;
  }
}

TEST(FoldIntoMatmul, AScaleOfWeightsReadElsewhereStays) {
  ScopedFusion on("1");
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f64, "x");
  Tensor w = g.constant(values({3, 4}, 0.3, 0.2));
  Tensor y = matmul(x, w) * 0.5;
  Tensor z = matmul(x * 2.0, w);  // w is read twice: not rescaled
  Executable e = g.compile(Device::cpu(), {{x, {{2, 3}, DType::f64}}}, {y, z});
  const TensorData xv = values({2, 3}, 0.9, 0.4);
  const std::vector<TensorData> r = e.run({xv});
  std::vector<double> want_y, want_z;
  const TensorData wv = values({3, 4}, 0.3, 0.2);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      double s = 0;
      for (int64_t kk = 0; kk < 3; ++kk) s += xv.data<double>()[i * 3 + kk] * wv.data<double>()[kk * 4 + j];
      want_y.push_back(s * 0.5);
      want_z.push_back(2 * s);
    }
  }
  testing::expect_close(r[0], want_y, {2, 4}, 1e-14, 1e-14);
  testing::expect_close(r[1], want_z, {2, 4}, 1e-14, 1e-14);
}

TEST(MergeProjections, QueryKeyAndValueHeadsAreOneGemmAndThreeSlices) {
  const TensorData xv = values({kL, kK}, 0.53, 0.1);
  ScopedFusion on("1");
  std::vector<TensorData> separate;
  {
    ScopedEnv off("TG_MERGE_PROJECTIONS", "0");
    Attention a(1, false, /*sdpa=*/true);
    separate = a.run(xv, /*out_only=*/true);
    EXPECT_EQ(count_occurrences(a.text, "= matmul("), 5) << a.text;
  }
  Attention b(1, false, /*sdpa=*/true);  // on by default
  const std::vector<TensorData> merged = b.run(xv, /*out_only=*/true);
  EXPECT_EQ(count_occurrences(b.text, "= matmul("), 3) << b.text;  // q, k, v in one, q @ k^T, p @ v
  EXPECT_EQ(count_occurrences(b.text, ": f64[9,4,2]"), 1) << b.text;
  EXPECT_EQ(count_occurrences(b.text, "= slice("), 3) << b.text;
  testing::expect_all_near(separate, merged, 1e-12);
}

TEST(MergeSiblings, QueryKeyAndValueBiasAddsAreOneKernel) {
  ScopedFusion on("1");
  const TensorData xv = values({kL, kK}, 0.53, 0.1);
  Attention a;
  const std::vector<TensorData> merged = a.run(xv);
  // One program writes the three biased projections (inputs: 3 matmuls, 3 biases).
  EXPECT_NE(a.text.find(": f64[3,4,2], f64[3,4,2], f64[3,4,2]"), std::string::npos) << a.text;
  ScopedEnv off("TG_MERGE_SIBLINGS", "0");
  Attention b;
  const std::vector<TensorData> separate = b.run(xv);
  EXPECT_EQ(b.text.find(": f64[3,4,2], f64[3,4,2], f64[3,4,2]"), std::string::npos) << b.text;
  testing::expect_all_near(separate, merged, 0);  // the same operations: equal
}

TEST(MergeSiblings, DependentProgramsAreNotMerged) {
  ScopedFusion on("1");
  Graph g;
  Tensor x = g.placeholder({4, 3}, DType::f64, "x");
  Tensor a = exp(x) + 1.0;
  Tensor s = reduce_sum(a, {.axes = {1}, .keep_dims = true});  // b reads a through a reduction
  Tensor b = x * s - 2.0;
  Executable e = g.compile(Device::cpu(), {{x, {{4, 3}, DType::f64}}}, {a, b});
  const TensorData xv = values({4, 3}, 0.7, 0.0);
  const std::vector<TensorData> r = e.run({xv});
  std::vector<double> want_a, want_b;
  for (int64_t i = 0; i < 4; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < 3; ++j) sum += std::exp(xv.data<double>()[i * 3 + j]) + 1;
    for (int64_t j = 0; j < 3; ++j) {
      want_a.push_back(std::exp(xv.data<double>()[i * 3 + j]) + 1);
      want_b.push_back(xv.data<double>()[i * 3 + j] * sum - 2);
    }
  }
  testing::expect_close(r[0], want_a, {4, 3}, 1e-14, 1e-14);
  testing::expect_close(r[1], want_b, {4, 3}, 1e-14, 1e-14);
}

TEST(FoldConstants, ConstantIdsTheirNegativeIndexCheckAndTheirEmbeddingFold) {
  ScopedFusion on("1");
  Graph g;
  Tensor x = g.placeholder({1, 4, 3}, DType::f32, "x");
  Tensor table =
      g.constant(TensorData::from_vector<float>({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42}, {5, 3}));
  // Position ids sliced from a buffer, checked for negative values as tensorgraph.torch does
  // (i < 0 -> i - n), then the rows they pick; token-type ids gathered from a zero buffer.
  Tensor buffer = g.constant(TensorData::from_vector<int64_t>({0, 1, 2, 3, 4}, {1, 5}));
  Tensor ids = slice(buffer, {.begin = {0, 0}, .end = {1, 4}});
  Tensor zero = g.constant(0.0, DType::i64);
  Tensor checked = select(less(ids, zero), ids - g.constant(5.0, DType::i64), ids);
  // Token-type ids gathered from a zero buffer by the position ids (Hugging Face BERT's).
  Tensor types = gather_elements(g.constant(TensorData::from_vector<int64_t>({0, 0, 0, 0, 0}, {1, 5})), ids,
                                 {.axis = 1});
  Tensor y = x + gather(table, checked, {.axis = 0}) + gather(table, types, {.axis = 0});
  Executable e = g.compile(Device::cpu(), {{x, {{1, 4, 3}, DType::f32}}}, {y});
  const std::string text = e.to_string();
  EXPECT_EQ(count_occurrences(text, "= gather("), 0) << text;
  EXPECT_EQ(count_occurrences(text, "= select("), 0) << text;
  EXPECT_EQ(count_occurrences(text, "= slice("), 0) << text;
  EXPECT_EQ(count_occurrences(text, "= gather_elements("), 0) << text;
  const TensorData r = e.run({TensorData::from_vector<float>({0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, {1, 4, 3})})[0];
  testing::expect_equal(r, {0, 2, 4, 11, 13, 15, 22, 24, 26, 33, 35, 37}, {1, 4, 3});
}

TEST(FoldConstants, AConstantIndexOutOfRangeStillRaisesWhenRun) {
  ScopedFusion on("1");
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor table = g.constant(TensorData::from_vector<float>({1, 2, 3}, {3, 1}));
  Tensor ids = g.constant(TensorData::from_vector<int64_t>({0, 7}, {2}));
  Tensor y = x + reshape(gather(table, ids, {.axis = 0}), {2});
  Executable e = g.compile(Device::cpu(), {{x, {{2}, DType::f32}}}, {y});
  EXPECT_EQ(count_occurrences(e.to_string(), "= gather("), 1);  // not folded: it raises when run
  EXPECT_THROW(e.run({TensorData::from_vector<float>({0, 0}, {2})}), Error);
}

}  // namespace
}  // namespace tg
