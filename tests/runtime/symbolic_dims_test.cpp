// Symbolic dims (issue 17): named sizes that propagate through shape inference, unify where an op
// needs two of them equal, are reported by Executable::input_types(), let the passes fuse values
// of symbolic shape, and are bound per input signature (a contradiction names both placeholders,
// the symbol and the sizes before any kernel runs).
#include <cstring>
#include <limits>

#include "core/dim_expr.h"
#include "passes/fusion_test_util.h"
#include "runtime/compile.h"
#include "test_util.h"
#include "tg/nn.h"

namespace tg {
namespace {

const CompileOptions kOnce{.disable_type_inference = true};

TensorData ramp(const Shape& shape, double scale) {
  TensorData t(shape, DType::f32);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = static_cast<float>(scale * (i % 17) - 3.0);
  return t;
}

TEST(SymbolicDims, NamesAreInternedAndPrinted) {
  const int64_t seq = symbolic_dim("seq");
  EXPECT_LE(seq, -(int64_t{1} << 40));
  EXPECT_TRUE(is_symbolic_dim(seq));
  EXPECT_FALSE(is_symbolic_dim(-1));
  EXPECT_FALSE(is_symbolic_dim(-2));  // small negatives stay invalid dims
  EXPECT_FALSE(is_symbolic_dim(seq - (int64_t{1} << 19)));  // in the range, but no name yet
  EXPECT_EQ(symbolic_dim("seq"), seq);
  EXPECT_NE(symbolic_dim("batch"), seq);
  EXPECT_EQ(dim_name(seq), "seq");
  EXPECT_EQ(shape_to_string({1, seq, 768}), "[1,seq,768]");
  EXPECT_EQ(shape_to_string({-1, 2}), "[?,2]");
  EXPECT_EQ((TensorType{{seq, 4}, DType::f16}).to_string(), "f16[seq,4]");
  EXPECT_EQ(num_elements({seq, 4}), -1);
  EXPECT_FALSE(is_static({seq, 4}));
  EXPECT_TRUE(is_known({seq, 4}));
  EXPECT_FALSE(is_known({-1, 4}));
  EXPECT_TG_ERROR(symbolic_dim(""), ErrorCode::invalid_argument, "[symbolic_dim]");
  EXPECT_TG_ERROR(symbolic_dim("a b"), ErrorCode::invalid_argument, "'a b'");
  EXPECT_TG_ERROR(symbolic_dim(std::string(65, 'x')), ErrorCode::invalid_argument, "1 to 64");
}

TEST(SymbolicDims, ShapesPropagateThroughOpsWhenBuilt) {
  Graph g;
  const int64_t b = symbolic_dim("batch"), s = symbolic_dim("seq");
  Tensor x = g.placeholder({b, s, 12}, DType::f32, "x");
  Tensor w = g.constant(TensorData::full({12, 8}, DType::f32, 0.5));
  EXPECT_EQ(matmul(x, w).shape(), (Shape{b, s, 8}));
  EXPECT_EQ(relu(matmul(x, w) * 2.0 + 1.0).shape(), (Shape{b, s, 8}));
  Tensor heads = reshape(x, {b, s, 3, 4});
  EXPECT_EQ(heads.shape(), (Shape{b, s, 3, 4}));
  EXPECT_EQ(reshape(heads, {-1, s, 12}).shape(), (Shape{b, s, 12}));  // the -1 inferred as b
  EXPECT_EQ(reshape(heads, {b, s, -1}).shape(), (Shape{b, s, 12}));
  EXPECT_EQ(reshape(x, {-1, 12}).shape(), (Shape{-1, 12}));  // b * s: known at run time
  Tensor xt = transpose(x, {0, 2, 1});
  EXPECT_EQ(xt.shape(), (Shape{b, 12, s}));
  EXPECT_EQ(softmax(matmul(x, xt), -1).shape(), (Shape{b, s, s}));
  EXPECT_EQ(reduce_sum(x, {.axes = {1}}).shape(), (Shape{b, 12}));
  EXPECT_EQ(reduce_sum(x, {.axes = {2}, .keep_dims = true}).shape(), (Shape{b, s, 1}));
  EXPECT_EQ(concat({x, x}, 2).shape(), (Shape{b, s, 24}));
  EXPECT_EQ(concat({x, x}, 1).shape(), (Shape{b, core::add_dims(s, s), 12}));  // 2*seq
  EXPECT_EQ(dim_name(concat({x, x}, 1).shape()[1]), "2*seq");
  EXPECT_EQ(expand_dims(x, 1).shape(), (Shape{b, 1, s, 12}));
  // Slices and pads of a symbolic dim are derived symbols (core/dim_expr.h), or -1 when their
  // size is not one expression of it (x[:, :1] is min(1, seq)).
  EXPECT_EQ(slice(x, {.begin = {0}, .end = {1}, .axes = {1}}).shape(), (Shape{b, -1, 12}));
  EXPECT_EQ(dim_name(pad(x, {.before = {0, 1, 0}, .after = {0, 1, 0}}).shape()[1]), "seq+2");
  EXPECT_EQ(pad(x, {.before = {0, 0, 1}, .after = {0, 0, 0}}).shape(), (Shape{b, s, 13}));
  // A size against a symbol gives the size (the symbol's value is checked once bound).
  EXPECT_EQ((x + g.placeholder({2, 1, 12}, DType::f32, "y")).shape(), (Shape{2, s, 12}));
  EXPECT_TG_ERROR(reshape(x, {b, s, 5}), ErrorCode::shape_mismatch, "reshape");
}

// Derived symbols: the sizes slices, pads, concats, tiles, convolutions and pools give a symbolic
// dim, named by their canonical expression (equal expressions are one symbol), composed.
TEST(SymbolicDims, DerivedSizesAreSymbolsOfTheirExpression) {
  Graph g;
  const int64_t h = symbolic_dim("h"), n = symbolic_dim("n");
  Tensor x = g.placeholder({n, h, h, 4}, DType::f32, "x");  // NHWC
  auto dim = [](const Tensor& t, size_t i) { return dim_name(t.shape()[i]); };
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(dim(slice(x, {.begin = {1}, .end = {kEnd}, .axes = {1}}), 1), "h-1");
  EXPECT_EQ(dim(slice(x, {.begin = {1}, .end = {-2}, .axes = {1}}), 1), "h-3");
  EXPECT_EQ(dim(slice(x, {.begin = {0}, .end = {kEnd}, .strides = {2}, .axes = {1}}), 1), "(h+1)/2");
  EXPECT_EQ(dim(tile(x, {1, 3, 1, 1}), 1), "3*h");
  Tensor w = g.constant(TensorData::full({3, 3, 4, 8}, DType::f32, 0.1));  // HWIO
  Tensor valid = conv2d(x, w, {.strides = {2, 2}, .padding = Padding::valid});
  EXPECT_EQ(dim(valid, 1), "(h-1)/2");  // floor((h - 3) / 2) + 1
  Tensor same = conv2d(x, w, {.strides = {2, 2}, .padding = Padding::same});
  EXPECT_EQ(dim(same, 1), "(h+1)/2");  // ceil(h / 2)
  EXPECT_EQ(same.shape()[1], same.shape()[2]);
  // Composed: a 2x2 stride-2 max pool of the valid conv: floor(((h-1)/2 - 2) / 2) + 1 = floor((h-1)/4).
  Tensor pooled = max_pool2d(valid, {.kernel_size = {2, 2}, .strides = {2, 2}});
  EXPECT_EQ(dim(pooled, 1), "(h-1)/4");
  // x[:, 1:] padded by 1 on each side is h+1; concat with x is 2*h+1; one symbol each.
  Tensor grown = pad(slice(x, {.begin = {1}, .end = {kEnd}, .axes = {1}}), {.before = {0, 1, 0, 0}, .after = {0, 1, 0, 0}});
  EXPECT_EQ(dim(grown, 1), "h+1");
  EXPECT_EQ(dim(concat({grown, x}, 1), 1), "2*h+1");
  EXPECT_EQ(concat({grown, x}, 1).shape()[1], core::affine_dim(h, 2, 1, 1, /*lo=*/1));  // x[1:] holds from 1
}

// The bound a derived size holds from belongs to the symbol (expression and bound), so building
// another graph whose same expression holds from a larger size changes nothing for this one; and
// compositions that would overflow give -1, never a wrapped expression.
TEST(SymbolicDims, DerivedBoundsAreTheirOwnAndCompositionsDoNotOverflow) {
  const int64_t h = symbolic_dim("bounds_h");
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  Graph a;
  Tensor xa = a.placeholder({h}, DType::f32, "x");
  Tensor ya = pad(xa, {.before = {1}, .after = {0}}) * 2.0;  // bounds_h+1, from 0
  Executable once = a.compile(Device::cpu(), {{xa, {{h}, DType::f32}}}, {ya}, {}, kOnce);
  Graph b;
  Tensor xb = b.placeholder({h}, DType::f32, "x");
  Tensor yb = pad(slice(xb, {.begin = {3}, .end = {kEnd}, .axes = {0}}), {.before = {4}, .after = {0}});
  EXPECT_EQ(dim_name(yb.shape()[0]), "bounds_h+1");           // the same expression...
  EXPECT_NE(yb.shape()[0], ya.shape()[0]);                     // ...from 3: another symbol
  testing::expect_equal(once.run({TensorData::from_vector<float>({5}, {1})})[0], {0, 10}, {2});
  EXPECT_EQ(once.run({TensorData::zeros({0})})[0].shape(), (Shape{1}));
  // (h+7)/8 sliced from 2^61: b * c would wrap; the slice's size is -1 (known at run time).
  Tensor pooled = max_pool2d(b.placeholder({1, h, 1, 1}, DType::f32, "p"),
                             {.kernel_size = {1, 1}, .strides = {8, 1}, .padding = Padding::same});
  EXPECT_EQ(dim_name(pooled.shape()[1]), "(bounds_h+7)/8");
  EXPECT_EQ(slice(pooled, {.begin = {int64_t{1} << 61}, .end = {kEnd}, .axes = {1}}).shape()[1], -1);
}

// A derived symbol's name gives that symbol back (symbolic_dim), so shapes round-trip through
// their names (Python shows them as str); of two symbols of one expression, the one with the
// smaller bound. symbolic_dim_expr gives the expression.
TEST(SymbolicDims, DerivedNamesGiveTheirSymbolBack) {
  const int64_t h = symbolic_dim("roundtrip_h");
  const int64_t from3 = core::affine_dim(h, 1, -1, 1, 3);  // roundtrip_h-1, from 3
  const int64_t from1 = core::affine_dim(h, 1, -1, 1, 1);  // the same expression from 1
  ASSERT_NE(from1, from3);
  EXPECT_EQ(dim_name(from3), "roundtrip_h-1");
  EXPECT_EQ(symbolic_dim("roundtrip_h-1"), from1);
  const int64_t half = core::affine_dim(h, 1, 1, 2);  // (roundtrip_h+1)/2
  EXPECT_EQ(dim_name(half), "(roundtrip_h+1)/2");
  EXPECT_EQ(symbolic_dim(dim_name(half)), half);
  const std::optional<SymbolicDimExpr> e = symbolic_dim_expr(half);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->base, h);
  EXPECT_EQ(e->a, 1);
  EXPECT_EQ(e->b, 1);
  EXPECT_EQ(e->c, 2);
  EXPECT_EQ(e->lo, 0);
  EXPECT_EQ(symbolic_dim_expr(from3)->lo, 3);
  EXPECT_FALSE(symbolic_dim_expr(h).has_value());
  EXPECT_FALSE(symbolic_dim_expr(7).has_value());
  EXPECT_FALSE(symbolic_dim_expr(-1).has_value());
  EXPECT_TG_ERROR(symbolic_dim("(roundtrip_h+5)/3"), ErrorCode::invalid_argument, "a derived symbol");
}

// A derived size unified with another symbol (x[1:] + y) is checked against it per signature,
// before any kernel runs, with both symbols named.
TEST(SymbolicDims, AUnifiedDerivedSizeIsCheckedAgainstItsPartner) {
  Graph g;
  Tensor x = g.placeholder({-1}, DType::f32, "ux");
  Tensor y = g.placeholder({-1}, DType::f32, "uy");
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  Tensor z = relu(slice(x, {.begin = {1}, .end = {kEnd}, .axes = {0}}) + y) * 2.0 + 1.0;
  Executable e = g.compile(Device::cpu(), {{x, {{-1}, DType::f32}}, {y, {{-1}, DType::f32}}}, {z}, {}, kOnce);
  testing::expect_equal(e.run({TensorData::from_vector<float>({9, 1, 2}, {3}),
                               TensorData::from_vector<float>({1, -5}, {2})})[0],
                        {5, 1}, {2});
  EXPECT_TG_ERROR(e.run({TensorData::zeros({10}), TensorData::zeros({5})}), ErrorCode::shape_mismatch,
                  "symbol ux.0 is 10, so the graph's size ux.0-1 is 9, but it must equal symbol uy.0, which is 5");
  EXPECT_TG_ERROR(e.run({TensorData::zeros({0}), TensorData::zeros({5})}), ErrorCode::shape_mismatch,
                  "ux.0-1 is below its bound");
}

// A network over a symbolic image size: one compile, the derived sizes bound per signature with
// the fixed-shape executables' values; with the CUDA pass pipeline (TG_FUSION=1) the elementwise
// tails of the convolutions, of derived shapes, are fused.
TEST(SymbolicDims, ConvNetOverVaryingImageSizesCompilesOnce) {
  Graph g;
  Tensor x = g.placeholder({-1, -1, -1, 3}, DType::f32, "x");
  Tensor w1 = g.constant(TensorData::random_normal({3, 3, 3, 8}, 0.f, 0.3f, 1));
  Tensor w2 = g.constant(TensorData::random_normal({3, 3, 8, 4}, 0.f, 0.3f, 2));
  Tensor a = relu(conv2d(x, w1, {.strides = {2, 2}, .padding = Padding::valid}) * 0.5 + 0.25);
  Tensor p = max_pool2d(a, {.kernel_size = {2, 2}, .strides = {2, 2}});
  Tensor y = relu(conv2d(p, w2, {.padding = Padding::same}) - 0.1);
  const RuntimeStats s0 = runtime_stats();
  Executable once = g.compile(Device::cpu(), {{x, {{-1, -1, -1, 3}, DType::f32}}}, {y}, {}, kOnce);
  EXPECT_EQ(runtime_stats().compiles - s0.compiles, 1);
  const Shape out = once.output_types()[0].shape;
  EXPECT_EQ(dim_name(out[1]), "(x.1-1)/4");
  EXPECT_EQ(dim_name(out[2]), "(x.2-1)/4");
  for (const Shape& shape : {Shape{1, 9, 9, 3}, Shape{2, 16, 11, 3}, Shape{1, 5, 21, 3}}) {
    const TensorData in = TensorData::random_normal(shape, 0.f, 1.f, 7);
    const TensorData want = g.compile(Device::cpu(), {{x, in.type()}}, {y}).run({in})[0];
    const TensorData got = once.run({in})[0];
    ASSERT_EQ(got.type(), want.type()) << shape_to_string(shape);
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0) << shape_to_string(shape);
  }
  EXPECT_EQ(runtime_stats().compiles - s0.compiles, 4);  // the three fixed-shape references
  // Below the sizes the expressions hold from (the 3x3 window must fit: x.1 >= 3), before any kernel.
  EXPECT_TG_ERROR(once.run({TensorData::zeros({1, 2, 9, 3})}), ErrorCode::shape_mismatch,
                  "symbol x.1 is 2, but the graph's size (x.1-1)/2 needs x.1 >= 3");
  {
    testing::ScopedEnv fusion("TG_FUSION", "1");
    Executable fused = g.compile(Device::cpu(), {{x, {{-1, -1, -1, 3}, DType::f32}}}, {y}, {}, kOnce);
    EXPECT_NE(fused.to_string().find("fused_elementwise"), std::string::npos) << fused.to_string();
    const TensorData in = TensorData::random_normal({2, 16, 11, 3}, 0.f, 1.f, 9);
    const TensorData want = once.run({in})[0], got = fused.run({in})[0];
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0);
  }
  // Saved and loaded: the derived symbols are stored by expression (section 'symbols').
  Executable loaded = Executable::load_from_bytes(once.save_to_bytes(), Device::cpu());
  EXPECT_EQ(loaded.output_types(), once.output_types());
  const TensorData in = TensorData::random_normal({1, 13, 7, 3}, 0.f, 1.f, 8);
  const TensorData want = once.run({in})[0], got = loaded.run({in})[0];
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0);
}

// A placeholder bound at compile time (runtime::compile_graph's `bound`, as nn::Model binds
// is_training) binds its declared symbols like a feed: a fed dim of the same symbol must agree.
TEST(SymbolicDims, BoundPlaceholdersBindTheirDeclaredSymbols) {
  Graph g;
  const int64_t n = symbolic_dim("n_bound");
  Tensor a = g.placeholder({n}, DType::f32, "a");
  Tensor b = g.placeholder({n}, DType::f32, "b");
  Tensor y = a * b;
  const TensorData bv = TensorData::from_vector<float>({1, 2, 3}, {3});
  Executable ok = runtime::compile_graph(g.impl(), Device::cpu(), {{a, {{3}, DType::f32}}}, {y}, {}, {}, {{b, bv}});
  testing::expect_equal(ok.run({TensorData::from_vector<float>({2, 2, 2}, {3})})[0], {2, 4, 6}, {3});
  EXPECT_TG_ERROR(runtime::compile_graph(g.impl(), Device::cpu(), {{a, {{4}, DType::f32}}}, {y}, {}, {}, {{b, bv}}),
                  ErrorCode::shape_mismatch, "placeholder 'b' dim 0 is 3, but symbol n_bound is 4 (placeholder 'a' dim 0)");
}

TEST(SymbolicDims, BroadcastingUnifiesSymbolsAndAContradictingFeedNamesBoth) {
  Graph g;
  Tensor a = g.placeholder({-1, 4}, DType::f32, "a");
  Tensor b = g.placeholder({-1, 4}, DType::f32, "b");
  Tensor y = a * 2.0 + b;
  Executable e = g.compile(Device::cpu(), {{a, {{-1, 4}, DType::f32}}, {b, {{-1, 4}, DType::f32}}}, {y}, {}, kOnce);
  const std::vector<TensorType> in = e.input_types();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(is_symbolic_dim(in[0].shape[0]));
  EXPECT_EQ(dim_name(in[0].shape[0]), "a.0");  // b.0 was unified into a.0 by the add
  EXPECT_EQ(in[1].shape, in[0].shape);
  EXPECT_EQ(e.output_types()[0].shape, in[0].shape);
  for (int64_t n : {3, 1, 6}) {
    const TensorData va = ramp({n, 4}, 0.5), vb = ramp({n, 4}, -1.0);
    const TensorData got = e.run({va, vb})[0];
    ASSERT_EQ(got.shape(), (Shape{n, 4}));
    for (int64_t i = 0; i < n * 4; ++i) {
      EXPECT_FLOAT_EQ(got.data<float>()[i], 2 * va.data<float>()[i] + vb.data<float>()[i]) << "n " << n;
    }
  }
  EXPECT_TG_ERROR(e.run({ramp({3, 4}, 1), ramp({5, 4}, 1)}), ErrorCode::shape_mismatch,
                  "placeholder 'b' dim 0 is 5, but symbol a.0 is 3 (placeholder 'a' dim 0)");
  EXPECT_TG_ERROR(e.run({ramp({3, 4}, 1), ramp({3, 5}, 1)}), ErrorCode::shape_mismatch, "placeholder 'b'");
}

TEST(SymbolicDims, NamedSymbolsInReshapeTargetsAreBoundPerSignature) {
  Graph g;
  const int64_t b = symbolic_dim("batch"), s = symbolic_dim("seq");
  Tensor x = g.placeholder({b, s, 8}, DType::f32, "x");
  // Split into 2 heads of 4 and back, as attention does, scaling on the way.
  Tensor heads = transpose(reshape(x, {b, s, 2, 4}), {0, 2, 1, 3});  // [b, 2, s, 4]
  Tensor y = reshape(transpose(heads * 3.0, {0, 2, 1, 3}), {b, s, 8});
  Executable e = g.compile(Device::cpu(), {{x, {{b, s, 8}, DType::f32}}}, {y}, {}, kOnce);
  EXPECT_EQ(e.input_types()[0].shape, (Shape{b, s, 8}));
  EXPECT_EQ(e.output_types()[0].shape, (Shape{b, s, 8}));
  const RuntimeStats before = runtime_stats();
  for (const Shape& shape : {Shape{1, 3, 8}, Shape{2, 5, 8}, Shape{1, 3, 8}}) {
    const TensorData vx = ramp(shape, 0.25);
    const TensorData got = e.run({vx})[0];
    ASSERT_EQ(got.shape(), shape);
    for (int64_t i = 0; i < vx.num_elements(); ++i) EXPECT_FLOAT_EQ(got.data<float>()[i], 3 * vx.data<float>()[i]);
  }
  EXPECT_EQ(runtime_stats().compiles - before.compiles, 0);
}

// With fusion on (TG_FUSION=1 fuses on the CPU too), a graph of symbolic shape fuses as the same
// graph of a fixed shape does: a chain of elementwise ops, and a layer normalization's row program.
TEST(SymbolicDims, ValuesOfSymbolicShapeFuseLikeFixedShapes) {
  testing::ScopedFusion fusion("1");
  Graph g;
  const int64_t s = symbolic_dim("seq");
  Tensor x = g.placeholder({s, 16}, DType::f32, "x");
  Tensor gamma = g.constant(ramp({16}, 0.125)), beta = g.constant(ramp({16}, 0.0625));
  Tensor h = relu(x * 2.0 + 1.0) * x;
  Tensor y = layer_norm(h, gamma, beta);
  Executable once = g.compile(Device::cpu(), {{x, {{s, 16}, DType::f32}}}, {y}, {}, kOnce);
  for (int64_t n : {5, 2}) {
    const TensorData vx = ramp({n, 16}, 0.3);
    Executable fixed = g.compile(Device::cpu(), {{x, vx.type()}}, {y});
    for (const char* op : {"fused_elementwise", "fused_reduce", "reduce_", " add", " mul", " relu"}) {
      EXPECT_EQ(testing::count(once.to_string(), op), testing::count(fixed.to_string(), op))
          << op << "\nsymbolic:\n" << once.to_string() << "\nfixed:\n" << fixed.to_string();
    }
    testing::expect_all_near(fixed.run({vx}), once.run({vx}), 1e-6);
  }
  EXPECT_GE(testing::count(once.to_string(), "fused_elementwise"), 1) << once.to_string();
}

// A softmax over a symbolic row length (attention scores over the sequence) is one row program,
// as for a fixed length; a signature with rows over the row programs' limit is refused before
// anything runs.
TEST(SymbolicDims, SoftmaxOverASymbolicRowLengthIsOneRowProgram) {
  testing::ScopedFusion fusion("1");
  Graph g;
  const int64_t s = symbolic_dim("seq");
  Tensor x = g.placeholder({2, s, s}, DType::f32, "scores");
  Tensor y = softmax(x * 0.5, -1);
  Executable once = g.compile(Device::cpu(), {{x, {{2, s, s}, DType::f32}}}, {y}, {}, kOnce);
  for (int64_t n : {1, 3, 7}) {
    const TensorData vx = ramp({2, n, n}, 0.4);
    Executable fixed = g.compile(Device::cpu(), {{x, vx.type()}}, {y});
    EXPECT_EQ(testing::count(once.to_string(), "fused_elementwise"), testing::count(fixed.to_string(), "fused_elementwise"))
        << "n " << n << "\nsymbolic:\n" << once.to_string() << "\nfixed:\n" << fixed.to_string();
    EXPECT_EQ(testing::count(once.to_string(), "reduce_"), testing::count(fixed.to_string(), "reduce_"));
    testing::expect_all_near(fixed.run({vx}), once.run({vx}), 1e-6);
  }
  Graph h;
  Tensor r = h.placeholder({2, s}, DType::f32, "rows");
  Executable rows = h.compile(Device::cpu(), {{r, {{2, s}, DType::f32}}}, {softmax(r, -1)}, {}, kOnce);
  EXPECT_TG_ERROR(rows.run({TensorData::zeros({2, 8193})}), ErrorCode::unsupported, "rows of 8193 elements");
  testing::expect_all_near({TensorData::full({2, 8192}, DType::f32, 1.0 / 8192)}, rows.run({TensorData::zeros({2, 8192})}),
                           1e-6);
}

}  // namespace
}  // namespace tg
