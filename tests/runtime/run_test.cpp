// Graph::run: feeds, feed errors naming the placeholder, dynamic dims, the run cache, and
// recovery after a failed run.
#include "runtime/slice_views_check.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using testing::expect_equal;

// Pass-pipeline runs since `since` (runtime statistics): one per executable Graph::run compiled.
int64_t compiles_since(const RuntimeStats& since) { return runtime_stats().compiles - since.compiles; }

TEST(Run, FeedsAndTargets) {
  Graph g;
  Tensor x = g.placeholder({2, 2}, DType::f64, "x");
  Tensor y = g.placeholder({3}, DType::f32, "y");
  Tensor ex = exp(x);
  Tensor ny = neg(y);
  std::vector<TensorData> out =
      g.run({{x, TensorData::from_vector<double>({0, 1, -1, 2}, {2, 2})},
             {y, TensorData::from_vector<float>({1.5f, -2, 0}, {3})}},
            {ex, ny, ex}, {}, Device::cpu());
  ASSERT_EQ(out.size(), 3u);
  expect_close(out[0], {1, 2.718281828459045, 0.36787944117144233, 7.38905609893065}, {2, 2}, 1e-15);
  expect_equal(out[1], {-1.5, 2, -0}, {3});
  expect_close(out[2], {1, 2.718281828459045, 0.36787944117144233, 7.38905609893065}, {2, 2}, 1e-15);
  EXPECT_EQ(out[0].dtype(), DType::f64);
  EXPECT_EQ(out[1].dtype(), DType::f32);
}

TEST(Run, SlicesOfABlockAreViews) { testing::check_slice_views(Device::cpu(), 2); }

// Rows r0..r1 of a [rows, cols] tensor along axis 0 (a block: a view when it starts a multiple of
// 256 bytes in).
Tensor rows(Tensor t, int64_t r0, int64_t r1) { return slice(t, {.begin = {r0}, .end = {r1}, .axes = {0}}); }

// Slice views as run targets: several views of one root, a view and its root, the same view
// twice, a reshape of a view, a slice of a slice (offsets add up), a view at the root's start;
// results of the first run keep their values after a second run with other inputs.
TEST(Run, SliceViewsAsTargets) {
  constexpr int64_t kCols = 64;  // rows of 256 bytes
  Graph g;
  Tensor x = g.placeholder({4, kCols}, DType::f32, "x");
  Tensor a = x * 2.0f + 1.0f;
  Tensor s0 = rows(a, 0, 1), s1 = rows(a, 1, 2), s3 = rows(a, 3, 4);
  Tensor ss = rows(rows(a, 2, 4), 1, 2);  // row 3 again, through a view of a view
  Tensor r = reshape(s1, {8, 8});
  Tensor tail = rows(a, 1, 4);
  Executable exe = g.compile(Device::cpu(), {{x, {{4, kCols}, DType::f32}}}, {s1, a, s0, s1, r, ss, s3, tail});
  auto input = [&](int run) {
    std::vector<float> xs(4 * kCols);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) * 0.5f - 7.0f * static_cast<float>(run);
    return xs;
  };
  auto check = [&](const std::vector<TensorData>& out, int run) {
    const std::vector<float> xs = input(run);
    auto want = [&](int64_t r0, int64_t r1) {
      std::vector<double> w;
      for (int64_t i = r0 * kCols; i < r1 * kCols; ++i) w.push_back(2.0 * xs[static_cast<size_t>(i)] + 1.0);
      return w;
    };
    ASSERT_EQ(out.size(), 8u);
    expect_equal(out[0], want(1, 2), {1, kCols});
    expect_equal(out[1], want(0, 4), {4, kCols});
    expect_equal(out[2], want(0, 1), {1, kCols});
    expect_equal(out[3], want(1, 2), {1, kCols});
    expect_equal(out[4], want(1, 2), {8, 8});
    expect_equal(out[5], want(3, 4), {1, kCols});
    expect_equal(out[6], want(3, 4), {1, kCols});
    expect_equal(out[7], want(1, 4), {3, kCols});
  };
  const std::vector<TensorData> first = exe.run({TensorData::from_vector<float>(input(0), {4, kCols})});
  check(first, 0);
  const std::vector<TensorData> second = exe.run({TensorData::from_vector<float>(input(1), {4, kCols})});
  check(second, 1);
  check(first, 0);  // the first run's results are the caller's: unchanged
  // The same through Graph::run (cached executable).
  check(g.run({{x, TensorData::from_vector<float>(input(2), {4, kCols})}}, {s1, a, s0, s1, r, ss, s3, tail}, {},
              Device::cpu()),
        2);
}

// Slice views of every dtype size and along a later axis whose leading dims are 1: the offset is
// begin * (bytes of one index along the axis): bool rows of 256, bf16 rows of 128, f64/i64 rows of
// 32, f32 [1, 1, 128] from element 64, [1, 4, 64] rows 1..3. Read by kernels and as targets.
TEST(Run, SliceViewsOfEveryDtypeAndLaterAxes) {
  Graph g;
  Tensor b = g.placeholder({3, 256}, DType::bool_, "b");
  Tensor h = g.placeholder({3, 128}, DType::bf16, "h");
  Tensor d = g.placeholder({3, 32}, DType::f64, "d");
  Tensor i = g.placeholder({3, 32}, DType::i64, "i");
  Tensor f = g.placeholder({1, 1, 128}, DType::f32, "f");
  Tensor e = g.placeholder({1, 4, 64}, DType::f32, "e");
  Tensor nb = logical_not(b);
  Tensor hh = h + h;
  Tensor dd = d * 3.0;
  Tensor ii = i * g.constant(TensorData::scalar<int64_t>(5));
  Tensor ff = f - 1.0f;
  Tensor ee = e + 0.5f;
  Tensor vb = rows(nb, 1, 3), vh = rows(hh, 2, 3), vd = rows(dd, 1, 2), vi = rows(ii, 2, 3);
  Tensor vf = slice(ff, {.begin = {64}, .end = {128}, .axes = {2}});
  Tensor ve = slice(ee, {.begin = {1}, .end = {3}, .axes = {1}});
  // Kernels reading the views.
  Tensor kb = cast(vb, DType::f32), kh = cast(vh, DType::f32) * 1.0f, kd = vd + 0.25, ki = vi + vi;
  Tensor kf = vf * 2.0f, ke = ve * 2.0f;
  std::vector<uint8_t> bs(3 * 256);
  std::vector<float> hs(3 * 128), fs(128), es(4 * 64);
  std::vector<double> ds(3 * 32);
  std::vector<int64_t> is(3 * 32);
  for (size_t k = 0; k < bs.size(); ++k) bs[k] = (k * 7 % 5) == 0;
  for (size_t k = 0; k < hs.size(); ++k) hs[k] = static_cast<float>(static_cast<int>(k % 97) - 40);  // exact in bf16
  for (size_t k = 0; k < ds.size(); ++k) ds[k] = 0.125 * static_cast<double>(k) - 3;
  for (size_t k = 0; k < is.size(); ++k) is[k] = static_cast<int64_t>(k) * 11 - 500;
  for (size_t k = 0; k < fs.size(); ++k) fs[k] = static_cast<float>(k) * 0.5f;
  for (size_t k = 0; k < es.size(); ++k) es[k] = static_cast<float>(k) - 100.0f;
  std::vector<bool> bv(bs.begin(), bs.end());
  std::vector<bf16_t> hv;
  for (float v : hs) hv.push_back(bf16_t(v));
  const std::vector<TensorData> out =
      g.run({{b, TensorData::from_vector<bool>(bv, {3, 256})},
             {h, TensorData::from_vector<bf16_t>(hv, {3, 128})},
             {d, TensorData::from_vector<double>(ds, {3, 32})},
             {i, TensorData::from_vector<int64_t>(is, {3, 32})},
             {f, TensorData::from_vector<float>(fs, {1, 1, 128})},
             {e, TensorData::from_vector<float>(es, {1, 4, 64})}},
            {vb, vh, vd, vi, vf, ve, kb, kh, kd, ki, kf, ke}, {}, Device::cpu());
  ASSERT_EQ(out.size(), 12u);
  std::vector<double> wb, wh, wd, wi, wf, we;
  for (size_t k = 256; k < 3 * 256; ++k) wb.push_back(bs[k] ? 0 : 1);
  for (size_t k = 2 * 128; k < 3 * 128; ++k) wh.push_back(2.0 * hs[k]);
  for (size_t k = 32; k < 64; ++k) wd.push_back(3.0 * ds[k]);
  for (size_t k = 64; k < 96; ++k) wi.push_back(5.0 * static_cast<double>(is[k]));
  for (size_t k = 64; k < 128; ++k) wf.push_back(fs[k] - 1.0);
  for (size_t k = 64; k < 3 * 64; ++k) we.push_back(es[k] + 0.5);
  EXPECT_EQ(out[0].dtype(), DType::bool_);
  expect_equal(out[0], wb, {2, 256});
  EXPECT_EQ(out[1].dtype(), DType::bf16);
  expect_equal(out[1], wh, {1, 128});
  expect_equal(out[2], wd, {1, 32});
  EXPECT_EQ(out[3].dtype(), DType::i64);
  expect_equal(out[3], wi, {1, 32});
  expect_equal(out[4], wf, {1, 1, 64});
  expect_equal(out[5], we, {1, 2, 64});
  expect_equal(out[6], wb, {2, 256});
  expect_equal(out[7], wh, {1, 128});
  std::vector<double> wkd, wki, wkf, wke;
  for (double v : wd) wkd.push_back(v + 0.25);
  for (double v : wi) wki.push_back(2 * v);
  for (double v : wf) wkf.push_back(2 * v);
  for (double v : we) wke.push_back(2 * v);
  expect_equal(out[8], wkd, {1, 32});
  expect_equal(out[9], wki, {1, 32});
  expect_equal(out[10], wkf, {1, 1, 64});
  expect_equal(out[11], wke, {1, 2, 64});
}


TEST(Run, PlaceholderAndConstantTargetsAndNoFeeds) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::i32, "x");
  Tensor c = g.constant(TensorData::from_vector<float>({4, 9}, {2}));
  TensorData fed = TensorData::from_vector<int32_t>({7, -7}, {2});
  std::vector<TensorData> out = g.run({{x, fed}}, {x, c, sqrt(c)}, {}, Device::cpu());
  expect_equal(out[0], {7, -7}, {2});
  expect_equal(out[1], {4, 9}, {2});
  expect_equal(out[2], {2, 3}, {2});
  expect_equal(g.run({}, {sqrt(c)})[0], {2, 3}, {2});  // default device, no feeds
  EXPECT_TRUE(g.run({}, {}, {}, Device::cpu()).empty());
}

TEST(Run, MissingFeedNamesThePlaceholder) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor w = g.placeholder({2}, DType::f32, "weights");
  Tensor y = exp(w);
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::not_found,
                  "placeholder 'weights' (f32[2]) is needed but not fed");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2})}}, {y}, {}, Device::cpu()), ErrorCode::not_found,
                  "'weights'");
}

TEST(Run, WrongFeedDtypeOrShapeNamesThePlaceholder) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "input_x");
  Tensor y = exp(x);
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2, 3}, DType::f64)}}, {y}, {}, Device::cpu()),
                  ErrorCode::dtype_mismatch, "placeholder 'input_x' is f32[2,3], fed f64[2,3]");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({3, 2})}}, {y}, {}, Device::cpu()),
                  ErrorCode::shape_mismatch, "placeholder 'input_x' is f32[2,3], fed f32[3,2]");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({6})}}, {y}, {}, Device::cpu()), ErrorCode::shape_mismatch,
                  "'input_x'");
  EXPECT_TG_ERROR(g.run({{x, TensorData()}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "feed for placeholder 'input_x' is empty");
}

TEST(Run, FeedingANonPlaceholderOrTwiceRaises) {
  const RuntimeStats start = runtime_stats();
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor c = g.constant(TensorData::zeros({2}));
  Tensor y = exp(x);
  TensorData v = TensorData::zeros({2});
  EXPECT_TG_ERROR(g.run({{x, v}, {y, v}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "feed %2 (exp) is not a placeholder");
  EXPECT_TG_ERROR(g.run({{c, v}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "(constant) is not a placeholder");
  EXPECT_TG_ERROR(g.run({{x, v}, {x, v}}, {y}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "placeholder 'x' is fed twice");
  EXPECT_EQ(compiles_since(start), 0);  // failed compiles are not cached
}

TEST(Run, DynamicDimCompilesOncePerShape) {
  const RuntimeStats start = runtime_stats();
  Graph g;
  Tensor x = g.placeholder({-1, 3}, DType::f32, "x");
  Tensor y = neg(x);
  EXPECT_EQ(y.shape(), (Shape{-1, 3}));
  TensorData a = TensorData::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<float> five(15);
  for (int i = 0; i < 15; ++i) five[static_cast<size_t>(i)] = static_cast<float>(i);
  TensorData b = TensorData::from_vector<float>(five, {5, 3});
  expect_equal(g.run({{x, a}}, {y}, {}, Device::cpu())[0], {-1, -2, -3, -4, -5, -6}, {2, 3});
  EXPECT_EQ(compiles_since(start), 1);
  TensorData rb = g.run({{x, b}}, {y}, {}, Device::cpu())[0];
  expect_equal(rb, {-0., -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14}, {5, 3});
  EXPECT_EQ(compiles_since(start), 2);
  // Both executables stay cached and correct.
  expect_equal(g.run({{x, a}}, {y}, {}, Device::cpu())[0], {-1, -2, -3, -4, -5, -6}, {2, 3});
  EXPECT_EQ(compiles_since(start), 2);
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({2, 4})}}, {y}, {}, Device::cpu()), ErrorCode::shape_mismatch,
                  "placeholder 'x' is f32[?,3], fed f32[2,4]");
  // A zero-sized dynamic dim is a valid feed.
  expect_equal(g.run({{x, TensorData::zeros({0, 3})}}, {y}, {}, Device::cpu())[0], {}, {0, 3});
}

TEST(Run, CacheReusesTheExecutable) {
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor y = exp(x);
  Tensor z = sqrt(x);
  TensorData v = TensorData::from_vector<float>({0, 4}, {2});
  const RuntimeStats start = runtime_stats();
  g.run({{x, v}}, {y}, {}, Device::cpu());
  EXPECT_EQ(compiles_since(start), 1);
  expect_close(g.run({{x, v}}, {y}, {}, Device::cpu())[0], {1, 54.598150033144236}, {2}, 1e-6);
  EXPECT_EQ(compiles_since(start), 1);
  g.run({{x, v}}, {z}, {}, Device::cpu());  // other targets: another entry
  EXPECT_EQ(compiles_since(start), 2);
  g.run({{x, v}}, {y, z}, {}, Device::cpu());
  EXPECT_EQ(compiles_since(start), 3);
  g.run({{x, TensorData::from_vector<float>({1, 1}, {2})}}, {y}, {}, Device::cpu());  // same types
  EXPECT_EQ(compiles_since(start), 3);
}

TEST(Run, TensorsOfAnotherGraphAreRejected) {
  Graph g1, g2;
  Tensor x1 = g1.placeholder({2}, DType::f32, "x1");
  Tensor y1 = exp(x1);
  Tensor x2 = g2.placeholder({2}, DType::f32, "x2");
  Tensor y2 = neg(x2);  // same node ids as x1 and y1
  TensorData v = TensorData::from_vector<float>({0, 1}, {2});
  expect_close(g1.run({{x1, v}}, {y1}, {}, Device::cpu())[0], {1, 2.718281828459045}, {2});
  // Same ids as the cached entry: must not be served from g1's cache.
  EXPECT_TG_ERROR(g1.run({{x1, v}}, {y2}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "a target tensor belongs to another graph");
  EXPECT_TG_ERROR(g1.run({{x2, v}}, {y1}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "a feed belongs to another graph");
  EXPECT_TG_ERROR(g1.run({{x1, v}}, {y1}, {y2.op()}, Device::cpu()), ErrorCode::invalid_argument,
                  "a target operation belongs to another graph");
  EXPECT_TG_ERROR(g1.compile(Device::cpu(), {{x1, v.type()}}, {y2}), ErrorCode::invalid_argument,
                  "[compile] a target tensor belongs to another graph");
  EXPECT_TG_ERROR(g1.compile(Device::cpu(), {{x2, v.type()}}, {y1}), ErrorCode::invalid_argument,
                  "[compile] a feed belongs to another graph");
  EXPECT_TG_ERROR(g1.run({}, {Tensor()}, {}, Device::cpu()), ErrorCode::invalid_argument,
                  "a target tensor is empty");
}

TEST(Run, FailedRunLeavesTheGraphUsable) {
  const RuntimeStats start = runtime_stats();
  Graph g;
  Tensor x = g.placeholder({2}, DType::f32, "x");
  Tensor y = sqrt(x);
  EXPECT_TG_ERROR(g.run({}, {y}, {}, Device::cpu()), ErrorCode::not_found, "'x'");
  EXPECT_TG_ERROR(g.run({{x, TensorData::zeros({3})}}, {y}, {}, Device::cpu()), ErrorCode::shape_mismatch, "'x'");
  EXPECT_EQ(compiles_since(start), 0);
  Tensor z = neg(y);  // the graph can still grow
  std::vector<TensorData> out = g.run({{x, TensorData::from_vector<float>({9, 16}, {2})}}, {y, z}, {}, Device::cpu());
  expect_equal(out[0], {3, 4}, {2});
  expect_equal(out[1], {-3, -4}, {2});
  EXPECT_EQ(compiles_since(start), 1);
}

TEST(Run, TensorToString) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f32, "x");
  Tensor y = exp(x);
  Tensor b = is_nan(y);
  EXPECT_EQ(x.to_string(), "%0:0 f32[2,3]");
  EXPECT_EQ(y.to_string(), "%1:0 f32[2,3]");
  EXPECT_EQ(b.to_string(), "%2:0 bool[2,3]");
  EXPECT_EQ(y.rank(), 2);
  EXPECT_EQ(y.type(), (TensorType{{2, 3}, DType::f32}));
  EXPECT_EQ(y.op().kind_name(), "exp");
  EXPECT_EQ(y.op().name(), "");
  EXPECT_EQ(x.op().name(), "x");
}

TEST(Run, PlaceholderRejectsDimsBelowMinusOne) {
  Graph g;
  EXPECT_TG_ERROR(g.placeholder({2, -2}, DType::f32, "bad"), ErrorCode::invalid_argument,
                  "[placeholder] 'bad' has invalid dim -2 in [2,-2] (use -1 for dynamic)");
}

}  // namespace
}  // namespace tg
