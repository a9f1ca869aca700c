// Compile once for inputs whose sizes vary (CompileOptions::disable_type_inference, issue 17):
// one pass-pipeline run, then each input signature is lowered without one; the results equal a
// static executable's for the same shapes; contradicting shapes raise before any kernel runs.
#include <cmath>
#include <cstring>

#include "passes/fusion_test_util.h"
#include "runtime/tgx_format.h"
#include "test_util.h"
#include "tg/model.h"
#include "tg/nn.h"

namespace tg {
namespace {

const CompileOptions kOnce{.disable_type_inference = true};

// Values of two runs equal to `rtol` relative plus `atol`.
void expect_near_values(const TensorData& got, const TensorData& want, double rtol, const std::string& what,
                        double atol = 1e-7) {
  ASSERT_EQ(got.type(), want.type()) << what;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double a = got.element_as_double(i), b = want.element_as_double(i);
    ASSERT_NEAR(a, b, rtol * std::fabs(b) + atol) << what << " element " << i;
  }
}

// One self-attention block with a residual, layer normalization and a ReLU MLP over
// x [batch, sequence, 16] (both leading dims vary).
struct AttentionBlock {
  Graph g;
  Tensor x, y;
  AttentionBlock() {
    constexpr int64_t d = 16;
    x = g.placeholder({-1, -1, d}, DType::f32, "x");
    auto w = [&](const char* name, uint64_t seed) {
      return g.variable(TensorData::random_normal({d, d}, 0.f, 0.25f, seed), name);
    };
    Tensor q = matmul(x, w("wq", 1)), k = matmul(x, w("wk", 2)), v = matmul(x, w("wv", 3));
    Tensor scores = matmul(q, transpose(k, {0, 2, 1})) * 0.25;
    Tensor h = matmul(softmax(scores, -1), v) + x;
    Tensor mu = reduce_mean(h, {.axes = {2}, .keep_dims = true});
    Tensor c = h - mu;
    Tensor var = reduce_mean(c * c, {.axes = {2}, .keep_dims = true});
    Tensor n = c * rsqrt(var + 1e-5);
    y = matmul(relu(matmul(n, w("w1", 4))), w("w2", 5)) + n;
  }
};

TEST(CompileOnce, AttentionBlockOverVaryingBatchAndSequenceCompilesOnce) {
  AttentionBlock m;
  const std::vector<Shape> shapes = {{1, 3, 16}, {2, 5, 16}, {4, 8, 16}, {1, 3, 16}, {3, 1, 16}};
  std::vector<TensorData> inputs, want;
  for (size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(TensorData::random_normal(shapes[i], 0.f, 1.f, 10 + i));
    Executable fixed = m.g.compile(Device::cpu(), {{m.x, inputs.back().type()}}, {m.y});
    want.push_back(fixed.run({inputs.back()})[0]);
  }
  const RuntimeStats before = runtime_stats();
  Executable once = m.g.compile(Device::cpu(), {{m.x, {{-1, -1, 16}, DType::f32}}}, {m.y}, {}, kOnce);
  // Each -1 became a symbol named after the placeholder and axis (runtime/symbols.h).
  const Shape symbolic{symbolic_dim("x.0"), symbolic_dim("x.1"), 16};
  EXPECT_EQ(once.input_types()[0].shape, symbolic);
  EXPECT_EQ(once.output_types()[0].shape, symbolic);
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<TensorData> out = once.run({inputs[i]});
    ASSERT_EQ(out.size(), 1u);
    expect_near_values(out[0], want[i], 1e-6, shape_to_string(shapes[i]));
  }
  EXPECT_EQ(runtime_stats().compiles - before.compiles, 1) << "one pass-pipeline run for every shape";
  EXPECT_GT(once.arena_bytes(), 0u);
}

// On CUDA each signature's program is captured after its first run: later runs of a signature
// seen before are one graph launch each, whichever signature ran in between.
TEST(CompileOnce, CudaSignaturesAreCapturedOnceEach) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here";
  AttentionBlock m;
  Executable once = m.g.compile(Device::cuda(0), {{m.x, {{-1, -1, 16}, DType::f32}}}, {m.y}, {}, kOnce);
  const std::vector<Shape> shapes = {{1, 3, 16}, {2, 5, 16}, {1, 3, 16}, {2, 5, 16}, {1, 3, 16}, {2, 5, 16}};
  RuntimeStats start{};
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i == 4) start = runtime_stats();  // both signatures have run twice (walked, then captured)
    TensorData x = TensorData::random_normal(shapes[i], 0.f, 1.f, 20 + i % 2);
    Executable cpu = m.g.compile(Device::cpu(), {{m.x, x.type()}}, {m.y});
    expect_near_values(once.run({x})[0].to(Device::cpu()), cpu.run({x})[0], 1e-4, shape_to_string(shapes[i]),
                       1e-5);
  }
  EXPECT_EQ(runtime_stats().graph_launches - start.graph_launches, 2);
}

TEST(CompileOnce, ShapesTheGraphContradictsRaiseBeforeAnyKernelRuns) {
  Graph g;
  Tensor a = g.placeholder({-1}, DType::f32, "a");
  Tensor b = g.placeholder({-1}, DType::f32, "b");
  Tensor v = g.variable(TensorData::from_vector<float>({5}, {1}), "v");
  Operation bump = assign_variable(v, v + 1.0);
  Tensor s = a + b;
  Executable exe = g.compile(Device::cpu(), {{a, {{-1}, DType::f32}}, {b, {{-1}, DType::f32}}}, {s}, {bump}, kOnce);
  std::vector<TensorData> ok = exe.run({TensorData::from_vector<float>({1, 2}, {2}),
                                        TensorData::from_vector<float>({10, 20}, {2})});
  testing::expect_equal(ok[0], {11, 22}, {2});
  EXPECT_EQ(g.variable_value(v).to_vector<float>(), std::vector<float>{6});
  EXPECT_TG_ERROR(exe.run({TensorData::from_vector<float>({1, 2, 3}, {3}),
                           TensorData::from_vector<float>({1, 2}, {2})}),
                  ErrorCode::shape_mismatch, "placeholder 'b' dim 0 is 2, but symbol a.0 is 3 (placeholder 'a' dim 0)");
  EXPECT_EQ(g.variable_value(v).to_vector<float>(), std::vector<float>{6}) << "nothing ran";
  // Ranks and fixed dims are still checked per input, naming the placeholder.
  Graph h;
  Tensor x = h.placeholder({-1, 4}, DType::f32, "x");
  Executable e2 = h.compile(Device::cpu(), {{x, {{-1, 4}, DType::f32}}}, {exp(x)}, {}, kOnce);
  EXPECT_TG_ERROR(e2.run({TensorData::zeros({2, 5})}), ErrorCode::shape_mismatch, "placeholder 'x' expects f32[x.0,4]");
  EXPECT_TG_ERROR(e2.run({TensorData::zeros({8})}), ErrorCode::shape_mismatch, "placeholder 'x'");
  // Without the option a -1 feed dim is an error, as before.
  EXPECT_TG_ERROR(h.compile(Device::cpu(), {{x, {{-1, 4}, DType::f32}}}, {exp(x)}), ErrorCode::shape_mismatch,
                  "placeholder 'x'");
}

// The file rebuilt from its sections with section `name`'s payload replaced.
std::vector<uint8_t> with_section(const std::vector<uint8_t>& b, const std::string& name, const std::string& payload) {
  std::vector<std::pair<std::string, std::string>> sections;
  for (const auto& s : runtime::tgx::read_layout(b, "t").sections) {
    sections.emplace_back(s.name, s.name == name ? payload
                                                 : std::string(reinterpret_cast<const char*>(b.data()) + s.offset, s.length));
  }
  return runtime::tgx::write_file(sections);
}

// A saved executable compiled once keeps its symbols (stored by name, so another process's
// symbol values do not matter: renaming them in the file renames them in the loaded executable)
// and runs every size with the saved one's bits, with no pass pipeline at load.
TEST(CompileOnce, SavedAndLoadedKeepsItsSymbolsAndRunsEverySize) {
  std::vector<Device> devices{Device::cpu()};
  if (Device::cuda_device_count() > 0) devices.push_back(Device::cuda(0));
  for (Device d : devices) {
    SCOPED_TRACE(d.to_string());
    AttentionBlock m;
    Executable once = m.g.compile(d, {{m.x, {{-1, -1, 16}, DType::f32}}}, {m.y}, {}, kOnce);
    const std::vector<Shape> shapes = {{1, 3, 16}, {2, 5, 16}, {3, 7, 16}};
    std::vector<TensorData> inputs, want;
    for (size_t i = 0; i < shapes.size(); ++i) {
      inputs.push_back(TensorData::random_normal(shapes[i], 0.f, 1.f, 30 + i).to(d));
      if (i < 2) want.push_back(once.run({inputs.back()})[0].to(Device::cpu()));  // 2 signatures before saving
    }
    const std::vector<uint8_t> bytes = once.save_to_bytes();
    want.push_back(once.run({inputs[2]})[0].to(Device::cpu()));
    const RuntimeStats s0 = runtime_stats();
    Executable loaded = Executable::load_from_bytes(bytes, d);
    EXPECT_EQ(runtime_stats().compiles, s0.compiles) << "the stored optimized graph, no pass pipeline";
    EXPECT_EQ(runtime_stats().executable_load_recompiles, s0.executable_load_recompiles);
    EXPECT_EQ(loaded.input_types(), once.input_types());
    EXPECT_EQ(loaded.output_types()[0].shape, (Shape{symbolic_dim("x.0"), symbolic_dim("x.1"), 16}));
    for (size_t i = 0; i < shapes.size(); ++i) {
      const TensorData got = loaded.run({inputs[i]})[0].to(Device::cpu());
      ASSERT_EQ(got.type(), want[i].type());
      EXPECT_EQ(std::memcmp(got.raw_data(), want[i].raw_data(), got.nbytes()), 0) << shape_to_string(shapes[i]);
    }
    EXPECT_EQ(runtime_stats().compiles, s0.compiles);

    // Section 'symbols' names the stored dim values; renamed there, the loaded executable's
    // symbols are the new names' (this process's values for them), with the same results.
    std::string renamed;
    for (const auto& s : runtime::tgx::read_layout(bytes, "t").sections) {
      if (s.name != "symbols") continue;
      runtime::tgx::Reader r({reinterpret_cast<const char*>(bytes.data()) + s.offset, s.length}, "t", "symbols");
      runtime::tgx::Writer w;
      const uint32_t n = r.u32();
      w.u32(n);
      for (uint32_t k = 0; k < n; ++k) {
        w.i64(r.i64());
        const std::string name = r.str();
        const uint8_t kind = r.u8();
        ASSERT_EQ(kind, 0) << name << ": the block has no derived sizes";
        w.str(name == "x.0" ? "batch" : name == "x.1" ? "seq" : name);
        w.u8(kind);
      }
      renamed = w.out();
    }
    ASSERT_FALSE(renamed.empty()) << "a file with symbols has section 'symbols'";
    Executable named = Executable::load_from_bytes(with_section(bytes, "symbols", renamed), d);
    EXPECT_EQ(named.input_types()[0].shape, (Shape{symbolic_dim("batch"), symbolic_dim("seq"), 16}));
    const TensorData got = named.run({inputs[1]})[0].to(Device::cpu());
    EXPECT_EQ(std::memcmp(got.raw_data(), want[1].raw_data(), got.nbytes()), 0);
    EXPECT_TG_ERROR(named.run({TensorData::zeros({2, 3, 15}).to(d)}), ErrorCode::shape_mismatch, "f32[batch,seq,16]");

    // A malformed section 'symbols' is an io_error naming it.
    runtime::tgx::Writer bad;
    bad.u32(1);
    bad.i64(symbolic_dim("x.0"));
    bad.str("not a name!");
    bad.u8(0);
    EXPECT_TG_ERROR(Executable::load_from_bytes(with_section(bytes, "symbols", bad.out()), d, {}, "dyn.tgx"),
                    ErrorCode::io_error, "dyn.tgx: section 'symbols' malformed");
  }
}

TEST(CompileOnce, EvictedSignaturesAreLoweredAgain) {
  testing::ScopedEnv keep_two("TG_SPECIALIZATIONS", "2");
  Graph g;
  Tensor x = g.placeholder({-1}, DType::f32, "x");
  Tensor y = reduce_sum(x * x) + x;  // a reduction whose size follows the input
  Executable exe = g.compile(Device::cpu(), {{x, {{-1}, DType::f32}}}, {y}, {}, kOnce);
  for (int round = 0; round < 2; ++round) {
    for (int64_t n : {1, 2, 3, 4}) {
      std::vector<float> xs(static_cast<size_t>(n));
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += (xs[static_cast<size_t>(i)] = static_cast<float>(i + 1)) * (i + 1.0);
      std::vector<double> want;
      for (float v : xs) want.push_back(ss + v);
      testing::expect_close(exe.run({TensorData::from_vector<float>(xs, {n})})[0], want, {n});
    }
  }
  EXPECT_EQ(exe.arena_count(), 2) << "two signatures kept (each program holds its arena)";
}

// nn::Model with CompileOptions::disable_type_inference: one executable per mode for every
// batch size (a last partial batch costs no compile).
TEST(CompileOnce, ResNet18PredictOverBatchSizesCompilesOnce) {
  nn::Model m = nn::zoo::resnet18({.input_shape = {32, 32, 3}, .num_classes = 10, .seed = 3});
  nn::Model fixed = nn::zoo::resnet18({.input_shape = {32, 32, 3}, .num_classes = 10, .seed = 3});
  m.compile(nn::Optimizer::sgd(0.1), nn::Loss::sparse_categorical_crossentropy, {nn::Metric::accuracy},
            Device::cpu(), kOnce);
  fixed.compile(nn::Optimizer::sgd(0.1));
  const RuntimeStats before = runtime_stats();
  for (int64_t n : {1, 3, 8}) {
    TensorData x = TensorData::random_normal({n, 32, 32, 3}, 0.f, 1.f, static_cast<uint64_t>(n));
    TensorData got = m.predict(x);
    TensorData want = fixed.predict(x);
    expect_near_values(got, want, 1e-5, "batch " + std::to_string(n));
  }
  // The fixed-shape model compiled one executable per batch size (3); the other one in all.
  EXPECT_EQ(runtime_stats().compiles - before.compiles, 1 + 3);
}

// fit and evaluate under the option: one training executable for every batch size (10 examples
// in batches of 4, 4 and 2), the same weights and losses as fixed-shape executables.
TEST(CompileOnce, ModelFitOverAPartialLastBatchCompilesTheStepOnce) {
  auto make = [](CompileOptions o) {
    nn::Model m = nn::zoo::mlp({.input_shape = {6}, .num_classes = 3, .seed = 7, .hidden_units = {8}});
    m.compile(nn::Optimizer::sgd(0.1), nn::Loss::sparse_categorical_crossentropy, {nn::Metric::accuracy},
              Device::cpu(), o);
    return m;
  };
  TensorData x = TensorData::random_normal({10, 6}, 0.f, 1.f, 5);
  std::vector<int32_t> labels = {0, 1, 2, 1, 0, 2, 2, 1, 0, 1};
  TensorData y = TensorData::from_vector<int32_t>(labels, {10});
  nn::Model once = make(kOnce), fixed = make({});
  const nn::FitOptions fo{.epochs = 2, .batch_size = 4, .shuffle = false, .verbose = 0};
  const RuntimeStats before = runtime_stats();
  nn::History h1 = once.fit(x, y, fo);
  const nn::Logs e1 = once.evaluate(x, y, {.batch_size = 3});
  EXPECT_EQ(runtime_stats().compiles - before.compiles, 2) << "one train and one evaluate executable";
  nn::History h2 = fixed.fit(x, y, fo);
  const nn::Logs e2 = fixed.evaluate(x, y, {.batch_size = 3});
  const auto w1 = once.get_weights(), w2 = fixed.get_weights();
  ASSERT_EQ(w1.size(), w2.size());
  for (size_t i = 0; i < w1.size(); ++i) expect_near_values(w1[i].second, w2[i].second, 1e-5, w1[i].first, 1e-6);
  EXPECT_NEAR(e1.at("loss"), e2.at("loss"), 1e-5);
}


// Slices of x [N, 128] compiled once, which become views (or stay copies) once N is known: x[:,
// 64:] (a view when N == 1, 256 bytes in), x[1:3] (512 bytes in), read by kernels and as results;
// then the same after Executable::save_to_bytes / load_from_bytes. Values equal a host computation.
TEST(CompileOnce, SliceViewsOnceTheSizesAreKnownAndAfterALoad) {
  constexpr int64_t kCols = 128;
  Graph g;
  Tensor x = g.placeholder({-1, kCols}, DType::f32, "x");
  Tensor a = x * 3.0f;
  Tensor right = slice(a, {.begin = {64}, .end = {kCols}, .axes = {1}});
  Tensor mid = slice(a, {.begin = {1}, .end = {3}, .axes = {0}});
  Tensor sum = right + 1.0f;
  Tensor mid2 = mid * mid;
  Executable once = g.compile(Device::cpu(), {{x, {{-1, kCols}, DType::f32}}}, {right, mid, sum, mid2}, {}, kOnce);
  const std::vector<uint8_t> bytes = once.save_to_bytes();
  Executable loaded = Executable::load_from_bytes(bytes, Device::cpu());
  for (Executable* exe : {&once, &loaded}) {
    for (int64_t n : {1, 2, 3, 5, 1}) {
      SCOPED_TRACE(n);
      std::vector<float> xs(static_cast<size_t>(n * kCols));
      for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k % 101) * 0.5f - static_cast<float>(n);
      const std::vector<TensorData> out = exe->run({TensorData::from_vector<float>(xs, {n, kCols})});
      std::vector<double> want_right, want_sum, want_mid, want_mid2;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < kCols; ++c) {
          const double v = 3.0 * xs[static_cast<size_t>(r * kCols + c)];
          if (c >= 64) {
            want_right.push_back(v);
            want_sum.push_back(v + 1.0);
          }
          if (r >= 1 && r < 3) {
            want_mid.push_back(v);
            want_mid2.push_back(v * v);
          }
        }
      }
      const int64_t m = std::min<int64_t>(n, 3) - 1;
      ASSERT_EQ(out.size(), 4u);
      testing::expect_close(out[0], want_right, {n, 64}, 1e-6, 0);
      testing::expect_close(out[1], want_mid, {m, kCols}, 1e-6, 0);
      testing::expect_close(out[2], want_sum, {n, 64}, 1e-6, 1e-6);
      testing::expect_close(out[3], want_mid2, {m, kCols}, 1e-6, 1e-6);
    }
  }
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// A user's symbol named like an automatic one ("d.0" is what d's varying dim 0 would be called)
// stays another size: the automatic name moves aside ("d.0_").
TEST(CompileOnce, AUserSymbolNamedLikeAnAutomaticOneIsAnotherSize) {
  Graph g;
  Tensor d = g.placeholder({-1, 3}, DType::f32, "d");
  Tensor f = g.placeholder({symbolic_dim("d.0"), 3}, DType::f32, "f");
  Executable exe = g.compile(Device::cpu(), {{d, {{-1, 3}, DType::f32}}, {f, {{symbolic_dim("d.0"), 3}, DType::f32}}},
                             {d * 2.0, f + 1.0}, {}, kOnce);
  std::vector<TensorData> out = exe.run({TensorData::full({2, 3}, DType::f32, 1.0),
                                         TensorData::full({5, 3}, DType::f32, 1.0)});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{5, 3}));
  EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>(6, 2.f));
  EXPECT_EQ(out[1].to_vector<float>(), std::vector<float>(15, 2.f));
}

}  // namespace
}  // namespace tg
