// Gradient checks (finite differences) and hand-computed gradients of the gather op family.
#include "autodiff/gradcheck.h"
#include "test_util.h"

namespace tg {
namespace {

using testing::expect_close;
using Xs = std::vector<Tensor>;
using R = ScatterReduction;

// An i64 index constant in the graph of `like`.
Tensor idx(const Tensor& like, std::vector<int64_t> values, Shape shape) {
  Graph g(like.graph_impl());
  return g.constant(TensorData::from_vector<int64_t>(values, std::move(shape)));
}

// ---- finite-difference checks ------------------------------------------------------------------

TG_GRAD_CASE({.name = "gather/axis0_repeats",
              .op = "gather",
              .input_shapes = {{3, 2}},
              .fn = [](const Xs& x) {
                return gather(x[0], idx(x[0], {0, 0, 2, -1}, {4}));
              }});
TG_GRAD_CASE({.name = "gather/axis1_2d_indices_negative",
              .op = "gather",
              .input_shapes = {{2, 4, 3}},
              .fn = [](const Xs& x) {
                return gather(x[0], idx(x[0], {-1, 0, 3, 3, -4, 2}, {3, 2}), {.axis = -2});
              }});
TG_GRAD_CASE({.name = "gather/scalar_index",
              .op = "gather",
              .input_shapes = {{2, 3}},
              .fn = [](const Xs& x) { return gather(x[0], idx(x[0], {-1}, {}), {.axis = 1}); }});
TG_GRAD_CASE(
    {.name = "gather/batch_dims1",
     .op = "gather",
     .input_shapes = {{2, 3, 4}},
     .fn = [](const Xs& x) {
       return gather(x[0], idx(x[0], {0, 0, -1, 2, 1, 1}, {2, 3}), {.axis = 2, .batch_dims = -1});
     }});
TG_GRAD_CASE({.name = "gather/batch_dims1_middle_axis",
              .op = "gather",
              .input_shapes = {{2, 3, 2}},
              .fn = [](const Xs& x) {
                return gather(x[0], idx(x[0], {2, 2, 0, -2}, {2, 2}), {.axis = 1, .batch_dims = 1});
              }});
TG_GRAD_CASE({.name = "gather/batch_dims2",
              .op = "gather",
              .input_shapes = {{2, 2, 3, 2}},
              .fn = [](const Xs& x) {
                return gather(x[0], idx(x[0], {0, 2, 1, 1, -1, 0, 2, 2}, {2, 2, 2}),
                              {.axis = 2, .batch_dims = 2});
              }});
TG_GRAD_CASE({.name = "gather/batch_dims_all_index_dims",
              .op = "gather",
              .input_shapes = {{3, 4}},
              .fn = [](const Xs& x) {
                return gather(x[0], idx(x[0], {3, -4, 3}, {3}), {.axis = 1, .batch_dims = 1});
              }});

TG_GRAD_CASE({.name = "gather_nd/elements",
              .op = "gather_nd",
              .input_shapes = {{3, 4}},
              .fn = [](const Xs& x) {
                return gather_nd(x[0], idx(x[0], {0, 1, 2, -1, 0, 1}, {3, 2}));
              }});
TG_GRAD_CASE({.name = "gather_nd/slices_k_lt_rank",
              .op = "gather_nd",
              .input_shapes = {{3, 2, 2}},
              .fn = [](const Xs& x) {
                return gather_nd(x[0], idx(x[0], {2, 0, -1, 1, 2, 2}, {2, 3, 1}));
              }});
TG_GRAD_CASE(
    {.name = "gather_nd/batch_dims1",
     .op = "gather_nd",
     .input_shapes = {{2, 3, 2}},
     .fn = [](const Xs& x) {
       return gather_nd(x[0], idx(x[0], {1, 1, 0, 2, -1, 0}, {2, 3, 1}), {.batch_dims = 1});
     }});
TG_GRAD_CASE(
    {.name = "gather_nd/batch_dims1_elements",
     .op = "gather_nd",
     .input_shapes = {{2, 3, 2}},
     .fn = [](const Xs& x) {
       return gather_nd(x[0], idx(x[0], {1, 1, 1, 1, 0, 0, 2, -1}, {2, 2, 2}), {.batch_dims = 1});
     }});

TG_GRAD_CASE({.name = "gather_elements/axis0",
              .op = "gather_elements",
              .input_shapes = {{3, 2}},
              .fn = [](const Xs& x) {
                return gather_elements(x[0], idx(x[0], {2, 0, 2, -1, 0, 1, 1, 1}, {4, 2}));
              }});
TG_GRAD_CASE({.name = "gather_elements/last_axis_smaller_indices",
              .op = "gather_elements",
              .input_shapes = {{3, 4}},
              .fn = [](const Xs& x) {
                return gather_elements(x[0], idx(x[0], {3, 3, 0, -1, 1, 2}, {2, 3}), {.axis = -1});
              }});

// scatter_nd: data [4, 2]; rows 3 and 0 (and 3 again for the repeat cases).
Tensor scatter_rows(const Xs& x, R r, bool repeat) {
  Tensor i = repeat ? idx(x[0], {3, 0, -1}, {3, 1}) : idx(x[0], {3, 0, 1}, {3, 1});
  return scatter_nd(x[0], i, x[1], {.reduction = r});
}
TG_GRAD_CASE({.name = "scatter_nd/none",
              .op = "scatter_nd",
              .input_shapes = {{4, 2}, {3, 2}},
              .fn = [](const Xs& x) { return scatter_rows(x, R::none, false); }});
TG_GRAD_CASE({.name = "scatter_nd/none_repeated_last_writer",
              .op = "scatter_nd",
              .input_shapes = {{4, 2}, {3, 2}},
              .fn = [](const Xs& x) { return scatter_rows(x, R::none, true); }});
TG_GRAD_CASE({.name = "scatter_nd/add_repeated",
              .op = "scatter_nd",
              .input_shapes = {{4, 2}, {3, 2}},
              .fn = [](const Xs& x) { return scatter_rows(x, R::add, true); }});
TG_GRAD_CASE({.name = "scatter_nd/mul_repeated",
              .op = "scatter_nd",
              .input_shapes = {{4, 2}, {3, 2}},
              .fn = [](const Xs& x) { return scatter_rows(x, R::mul, true); }});
TG_GRAD_CASE({.name = "scatter_nd/min_repeated",
              .op = "scatter_nd",
              .input_shapes = {{4, 2}, {3, 2}},
              .fn = [](const Xs& x) { return scatter_rows(x, R::min, true); }});
TG_GRAD_CASE({.name = "scatter_nd/max_repeated",
              .op = "scatter_nd",
              .input_shapes = {{4, 2}, {3, 2}},
              .fn = [](const Xs& x) { return scatter_rows(x, R::max, true); }});
TG_GRAD_CASE({.name = "scatter_nd/none_elements_2d_indices",
              .op = "scatter_nd",
              .input_shapes = {{3, 3}, {2, 2}},
              .fn = [](const Xs& x) {
                return scatter_nd(x[0], idx(x[0], {0, 0, 2, 1, -1, -1, 1, 2}, {2, 2, 2}), x[1]);
              }});
TG_GRAD_CASE({.name = "scatter_nd/add_wrt_updates_only",
              .op = "scatter_nd",
              .input_shapes = {{5}, {4}},
              .fn =
                  [](const Xs& x) {
                    return scatter_nd(x[0], idx(x[0], {4, 4, 0, 4}, {4, 1}), x[1] * x[1],
                                      {.reduction = R::add});
                  },
              .wrt = {1}});

// scatter_elements: data [3, 4], along axis 1 (columns 2, 0 of rows 0 and 1; repeats in row 0).
Tensor scatter_cols(const Xs& x, R r, bool repeat) {
  Tensor i =
      repeat ? idx(x[0], {2, -2, 2, 0, 3, 1}, {2, 3}) : idx(x[0], {2, 0, 1, 0, 3, 1}, {2, 3});
  return scatter_elements(x[0], i, x[1], {.axis = -1, .reduction = r});
}
TG_GRAD_CASE({.name = "scatter_elements/none",
              .op = "scatter_elements",
              .input_shapes = {{3, 4}, {2, 3}},
              .fn = [](const Xs& x) { return scatter_cols(x, R::none, false); }});
TG_GRAD_CASE({.name = "scatter_elements/none_repeated_last_writer",
              .op = "scatter_elements",
              .input_shapes = {{3, 4}, {2, 3}},
              .fn = [](const Xs& x) { return scatter_cols(x, R::none, true); }});
TG_GRAD_CASE({.name = "scatter_elements/add_repeated",
              .op = "scatter_elements",
              .input_shapes = {{3, 4}, {2, 3}},
              .fn = [](const Xs& x) { return scatter_cols(x, R::add, true); }});
TG_GRAD_CASE({.name = "scatter_elements/mul_repeated",
              .op = "scatter_elements",
              .input_shapes = {{3, 4}, {2, 3}},
              .fn = [](const Xs& x) { return scatter_cols(x, R::mul, true); }});
TG_GRAD_CASE({.name = "scatter_elements/min_repeated",
              .op = "scatter_elements",
              .input_shapes = {{3, 4}, {2, 3}},
              .fn = [](const Xs& x) { return scatter_cols(x, R::min, true); }});
TG_GRAD_CASE({.name = "scatter_elements/max_repeated",
              .op = "scatter_elements",
              .input_shapes = {{3, 4}, {2, 3}},
              .fn = [](const Xs& x) { return scatter_cols(x, R::max, true); }});
TG_GRAD_CASE(
    {.name = "scatter_elements/axis0",
     .op = "scatter_elements",
     .input_shapes = {{3, 2}, {2, 2}},
     .fn = [](const Xs& x) {
       return scatter_elements(x[0], idx(x[0], {2, 0, 0, -1}, {2, 2}), x[1], {.reduction = R::add});
     }});

// ---- hand-computed gradients -------------------------------------------------------------------

// The vector-Jacobian products of y = f(inputs) with cotangent `ct`, evaluated.
std::vector<TensorData> run_vjp(Graph& g, Tensor y, const std::vector<Tensor>& xs,
                                const TensorData& ct) {
  return testing::run_cpu(g, vjp({y}, xs, {g.constant(ct)}));
}

TensorData f64(std::vector<double> v, Shape s) {
  return TensorData::from_vector<double>(std::move(v), std::move(s));
}

TEST(GatherRules, RepeatedIndicesAccumulate) {
  Graph g;
  Tensor x = g.constant(f64({5, 6, 7}, {3}));
  Tensor y = gather(x, idx(x, {0, 0, 2}, {3}));
  auto grads = testing::run_cpu(g, gradients(y, {x}));
  expect_close(grads[0], {2, 0, 1}, {3});
}

TEST(GatherRules, F32AndNegativeIndices) {
  Graph g;
  Tensor x = g.constant(TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  Tensor y = gather(x, idx(x, {-1, -1, 0}, {3}), {.axis = 1});
  auto grads = testing::run_cpu(g, gradients(y, {x}));
  EXPECT_EQ(grads[0].dtype(), DType::f32);
  expect_close(grads[0], {1, 2, 1, 2}, {2, 2});
}

TEST(GatherRules, BatchDimsWithNegativeIndices) {
  Graph g;
  Tensor x = g.constant(f64({0, 0, 0, 0, 0, 0}, {2, 3}));
  // y[b, i] = x[b, idx[b, i]]
  Tensor y = gather(x, idx(x, {-1, 0, 1, 1}, {2, 2}), {.axis = 1, .batch_dims = 1});
  auto grads = run_vjp(g, y, {x}, f64({1, 2, 3, 4}, {2, 2}));
  expect_close(grads[0], {2, 0, 1, 0, 7, 0}, {2, 3});
}

TEST(GatherRules, GatherNdBatchDimsSlices) {
  Graph g;
  Tensor x = g.constant(f64(std::vector<double>(12, 0.0), {2, 3, 2}));
  // y[b, i, :] = x[b, idx[b, i, 0], :]
  Tensor y = gather_nd(x, idx(x, {2, 2, 0, -3}, {2, 2, 1}), {.batch_dims = 1});
  auto grads = run_vjp(g, y, {x}, f64({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}));
  expect_close(grads[0], {0, 0, 0, 0, 4, 6, 12, 14, 0, 0, 0, 0}, {2, 3, 2});
}

TEST(GatherRules, GatherElementsAxis1) {
  Graph g;
  Tensor x = g.constant(f64(std::vector<double>(6, 0.0), {2, 3}));
  Tensor y = gather_elements(x, idx(x, {1, 1, 2, 0}, {2, 2}), {.axis = 1});
  auto grads = run_vjp(g, y, {x}, f64({1, 2, 3, 4}, {2, 2}));
  expect_close(grads[0], {0, 3, 0, 4, 0, 3}, {2, 3});
}

TEST(GatherRules, DynamicShapes) {
  Graph g;
  Tensor x = g.placeholder({-1, 2}, DType::f64, "x");
  Tensor i = g.placeholder({-1}, DType::i32, "i");
  Tensor y = gather(x, i);
  auto grads = vjp({y}, {x}, {y * 2.0});
  auto out = testing::run_cpu(g, grads,
                              {{x, f64({1, 2, 3, 4, 5, 6}, {3, 2})},
                               {i, TensorData::from_vector<int32_t>({2, 2, 0}, {3})}});
  expect_close(out[0], {2, 4, 0, 0, 20, 24}, {3, 2});
}

TEST(GatherRules, ScatterNdNoneLastWriterGetsTheCotangent) {
  Graph g;
  Tensor data = g.constant(f64({0, 0, 0, 0}, {4}));
  Tensor upd = g.constant(f64({7, 8, 9}, {3}));
  Tensor y = scatter_nd(data, idx(data, {1, 3, -3}, {3, 1}), upd);
  auto grads = run_vjp(g, y, {data, upd}, f64({1, 2, 3, 4}, {4}));
  expect_close(grads[0], {1, 0, 3, 0}, {4});
  expect_close(grads[1], {0, 4, 2}, {3});
}

TEST(GatherRules, ScatterNdAddBothGetEverything) {
  Graph g;
  Tensor data = g.constant(f64({0, 0, 0}, {3}));
  Tensor upd = g.constant(f64({7, 8}, {2}));
  Tensor y = scatter_nd(data, idx(data, {2, 2}, {2, 1}), upd, {.reduction = R::add});
  auto grads = run_vjp(g, y, {data, upd}, f64({1, 2, 3}, {3}));
  expect_close(grads[0], {1, 2, 3}, {3});
  expect_close(grads[1], {3, 3}, {2});
}

TEST(GatherRules, ScatterMulWithAZeroUpdate) {
  Graph g;
  Tensor data = g.constant(f64({5, 2}, {2}));
  Tensor upd = g.constant(f64({3, 0, 4}, {3}));
  // out[0] = 5 * 3 * 0, out[1] = 2 * 4
  Tensor y = scatter_nd(data, idx(data, {0, 0, 1}, {3, 1}), upd, {.reduction = R::mul});
  auto grads = run_vjp(g, y, {data, upd}, f64({1, 10}, {2}));
  expect_close(grads[0], {0, 40}, {2});
  expect_close(grads[1], {0, 15, 20}, {3});
}

TEST(GatherRules, ScatterMaxTiesShareEqually) {
  Graph g;
  Tensor data = g.constant(f64({1, 5, 3}, {3}));
  Tensor upd = g.constant(f64({4, 4, 2, 3}, {4}));
  // out = [4 (updates 0 and 1), 5 (data), 3 (data and update 3)]
  Tensor y = scatter_elements(data, idx(data, {0, 0, 1, 2}, {4}), upd, {.reduction = R::max});
  auto grads = run_vjp(g, y, {data, upd}, f64({1, 2, 4}, {3}));
  expect_close(grads[0], {0, 2, 2}, {3});
  expect_close(grads[1], {0.5, 0.5, 0, 2}, {4});
}

TEST(GatherRules, ScatterElementsNoneRepeated) {
  Graph g;
  Tensor data = g.constant(f64({0, 0, 0, 0}, {2, 2}));
  Tensor upd = g.constant(f64({1, 1, 1, 1}, {2, 2}));
  // Each row of updates writes one column twice; the second write (j = 1) wins.
  Tensor y = scatter_elements(data, idx(data, {0, 0, 1, 1}, {2, 2}), upd, {.axis = 1});
  auto grads = run_vjp(g, y, {data, upd}, f64({1, 2, 3, 4}, {2, 2}));
  expect_close(grads[0], {0, 2, 3, 0}, {2, 2});
  expect_close(grads[1], {0, 1, 0, 4}, {2, 2});
}

TEST(GatherRules, ScatterNdDynamicShapes) {
  Graph g;
  Tensor data = g.placeholder({-1}, DType::f64, "data");
  Tensor upd = g.placeholder({-1}, DType::f64, "upd");
  Tensor i = g.placeholder({-1, 1}, DType::i64, "i");
  Tensor y = scatter_nd(data, i, upd);
  auto grads = vjp({y}, {data, upd}, {data * 0.0 + 1.0});
  auto out = testing::run_cpu(g, grads,
                              {{data, f64({1, 2, 3}, {3})},
                               {upd, f64({4, 5}, {2})},
                               {i, TensorData::from_vector<int64_t>({2, 0}, {2, 1})}});
  expect_close(out[0], {0, 1, 0}, {3});
  expect_close(out[1], {1, 1}, {2});
}

TEST(GatherRules, BatchDimsNeedStaticIndices) {
  Graph g;
  Tensor x = g.placeholder({2, 3}, DType::f64, "x");
  Tensor i = g.placeholder({2, -1}, DType::i32, "i");
  Tensor y = gather(x, i, {.axis = 1, .batch_dims = 1});
  EXPECT_TG_ERROR(gradients(y, {x}), ErrorCode::unsupported, "[gradients] gather with batch_dims");
  Tensor z = gather_nd(x, reshape(i, {2, -1, 1}), {.batch_dims = 1});
  EXPECT_TG_ERROR(gradients(z, {x}), ErrorCode::unsupported, "[gradients] gather_nd");
}

}  // namespace
}  // namespace tg
