// Conformance cases of the gather family: gather (axis, batch_dims), gather_nd (batch_dims),
// gather_elements, scatter_nd and scatter_elements with every reduction. Negative indices,
// repeated indices (none: the last update in row-major order wins; add/mul round after each
// update), i32 and i64 indices, rank-0 and empty indices, 1/2/4/8-byte elements and wide slices.
#include <cmath>
#include <limits>
#include <utility>

#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::Shape;
using tg::Tensor;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Fn2 = std::function<Tensor(Tensor, Tensor)>;
using Fn3 = std::function<Tensor(Tensor, Tensor, Tensor)>;

InputSpec idx(Shape s, std::vector<double> v, DType d = DType::i64) {
  return {std::move(s), d, 0, 1, std::move(v)};
}
InputSpec ridx(Shape s, double low, double high, DType d = DType::i64) {
  return {std::move(s), d, low, high};
}
InputSpec data(Shape s, DType d = DType::f32, std::vector<double> v = {}) {
  return {std::move(s), d, -5, 5, std::move(v)};
}

OpCase case2(std::string name, InputSpec x, InputSpec i, Fn2 f, std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {std::move(x), std::move(i)};
  c.build = [f](tg::Graph&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{f(in[0], in[1])};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

OpCase case3(std::string name, InputSpec d, InputSpec i, InputSpec u, Fn3 f,
             std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {std::move(d), std::move(i), std::move(u)};
  c.build = [f](tg::Graph&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{f(in[0], in[1], in[2])};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

Fn2 gather(tg::GatherDesc d) {
  return [d](Tensor x, Tensor i) { return tg::gather(x, i, d); };
}
Fn2 gather_nd(tg::GatherNdDesc d) {
  return [d](Tensor x, Tensor i) { return tg::gather_nd(x, i, d); };
}
Fn2 gather_elements(tg::GatherElementsDesc d) {
  return [d](Tensor x, Tensor i) { return tg::gather_elements(x, i, d); };
}
Fn3 scatter_nd(tg::ScatterReduction r) {
  return [r](Tensor d, Tensor i, Tensor u) { return tg::scatter_nd(d, i, u, {.reduction = r}); };
}
Fn3 scatter_elements(int64_t axis, tg::ScatterReduction r) {
  return [axis, r](Tensor d, Tensor i, Tensor u) {
    return tg::scatter_elements(d, i, u, {.axis = axis, .reduction = r});
  };
}

std::vector<double> repeat_pattern(int n, int period) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back((i * 7) % period - (i % 3 == 0 ? period : 0));
  return v;
}

}  // namespace

TG_CONFORMANCE_CASES(gather) {
  using SR = tg::ScatterReduction;
  // gather
  cases.push_back(case2("gather_values", data({4}, DType::f32, {10, 20, 30, 40}),
                        idx({4}, {-1, 0, -4, 2}), gather({}), {40, 10, 10, 30}));
  cases.push_back(case2("gather_axis0", data({5, 3}), idx({2, 2}, {0, -1, 4, 2}), gather({})));
  cases.push_back(case2("gather_axis1_i32", data({3, 7}), idx({4}, {6, 0, -7, 3}, DType::i32),
                        gather({.axis = 1})));
  cases.push_back(case2("gather_batch_dims", data({2, 3, 4}), idx({2, 2}, {0, 2, 1, 1}),
                        gather({.axis = 1, .batch_dims = 1})));
  cases.push_back(case2("gather_batch_dims_pre", data({2, 3, 4, 5}), ridx({2, 6}, -4, 4),
                        gather({.axis = 2, .batch_dims = 1})));
  cases.push_back(case2("gather_scalar_index", data({5, 3}), idx({}, {2}), gather({})));
  cases.push_back(case2("gather_empty_indices", data({5, 3}), idx({0}, {}), gather({})));
  cases.push_back(case2("gather_wide_slices", data({10, 64}), ridx({7}, -10, 10), gather({})));
  cases.push_back(
      case2("gather_i8", data({6, 5}, DType::i8), ridx({4, 3}, -5, 5), gather({.axis = 1})));
  cases.push_back(
      case2("gather_bool", data({6}, DType::bool_), ridx({9}, -6, 6, DType::i32), gather({})));
  cases.push_back(case2("gather_i64_last_axis", data({3, 4, 5}, DType::i64), ridx({2, 2}, -5, 5),
                        gather({.axis = 2})));
  // gather_nd
  cases.push_back(case2("gather_nd_values", data({2, 2}, DType::f32, {1, 2, 3, 4}),
                        idx({2, 2}, {0, 1, -1, 0}), gather_nd({}), {2, 3}));
  cases.push_back(
      case2("gather_nd_slices", data({4, 5, 3}), idx({2, 2}, {0, 1, 3, -1}), gather_nd({})));
  cases.push_back(case2("gather_nd_batch", data({2, 3, 4}), idx({2, 1, 1}, {2, 0}),
                        gather_nd({.batch_dims = 1})));
  cases.push_back(
      case2("gather_nd_elements", data({3, 4}, DType::i32), ridx({5, 2}, -3, 3), gather_nd({})));
  cases.push_back(case2("gather_nd_wide", data({6, 32}), ridx({3, 4, 1}, -6, 6), gather_nd({})));
  // gather_elements
  cases.push_back(case2("gather_elements_values", data({2, 2}, DType::f32, {1, 2, 3, 4}),
                        idx({2, 2}, {0, 0, 1, 0}), gather_elements({.axis = 1}), {1, 1, 4, 3}));
  cases.push_back(
      case2("gather_elements_axis0_small", data({4, 5}), ridx({2, 3}, -4, 4), gather_elements({})));
  cases.push_back(case2("gather_elements_3d", data({3, 4, 5}, DType::f32), ridx({2, 6, 5}, -4, 4),
                        gather_elements({.axis = 1})));
  cases.push_back(case2("gather_elements_u8", data({3, 5}, DType::u8),
                        ridx({3, 2}, -5, 5, DType::i32), gather_elements({.axis = 1})));
  // scatter_nd
  cases.push_back(case3("scatter_nd_none_last_wins", data({5}, DType::f32, {0, 1, 2, 3, 4}),
                        idx({3, 1}, {1, 3, -4}), data({3}, DType::f32, {10, 20, 30}),
                        scatter_nd(SR::none), {0, 30, 2, 20, 4}));
  cases.push_back(case3("scatter_nd_add_repeats", data({5}, DType::f32, {0, 1, 2, 3, 4}),
                        idx({3, 1}, {1, 3, 1}), data({3}, DType::f32, {10, 20, 30}),
                        scatter_nd(SR::add), {0, 41, 2, 23, 4}));
  cases.push_back(case3("scatter_nd_slices_add", data({4, 3}), idx({4, 1}, {0, 2, 0, -1}),
                        data({4, 3}), scatter_nd(SR::add)));
  cases.push_back(case3("scatter_nd_mul", data({4, 3}), idx({3, 2}, {0, 1, 3, 2, 0, 1}), data({3}),
                        scatter_nd(SR::mul)));
  cases.push_back(case3("scatter_nd_min", data({4, 3}), idx({5, 1}, {1, 1, 2, 1, 0}), data({5, 3}),
                        scatter_nd(SR::min)));
  cases.push_back(case3("scatter_nd_max", data({4, 3}), idx({5, 1}, {1, 1, 2, 1, 0}), data({5, 3}),
                        scatter_nd(SR::max)));
  cases.push_back(case3("scatter_nd_none_i32", data({6, 2}, DType::i32), ridx({9, 1}, -6, 6),
                        data({9, 2}, DType::i32), scatter_nd(SR::none)));
  cases.push_back(case3("scatter_nd_add_i8_wrap", data({2}, DType::i8, {100, 0}),
                        idx({3, 1}, {0, 0, 1}), data({3}, DType::i8, {100, 60, -5}),
                        scatter_nd(SR::add), {4, -5}));
  cases.push_back(case3("scatter_nd_max_bool", data({4}, DType::bool_, {0, 1, 0, 0}),
                        idx({3, 1}, {0, 0, 2}), data({3}, DType::bool_, {0, 1, 0}),
                        scatter_nd(SR::max), {1, 1, 0, 0}));
  cases.push_back(case3("scatter_nd_many_repeats", data({8, 16}),
                        idx({200, 1}, repeat_pattern(200, 8)), data({200, 16}),
                        scatter_nd(SR::add)));
  // 25 updates a target, rounded after each: f16/bf16 drift past their tolerance (as on the CPU).
  cases.back().float_dtypes = {DType::f32};
  cases.push_back(
      case3("scatter_nd_empty", data({3, 2}), idx({0, 1}, {}), data({0, 2}), scatter_nd(SR::add)));
  // scatter_elements
  cases.push_back(case3("scatter_elements_none_last_wins",
                        data({2, 3}, DType::f32, {0, 0, 0, 0, 0, 0}), idx({2, 2}, {1, 1, 2, -3}),
                        data({2, 2}, DType::f32, {1, 2, 3, 4}), scatter_elements(1, SR::none),
                        {0, 2, 0, 4, 0, 3}));
  cases.push_back(case3("scatter_elements_add", data({3, 5}), ridx({3, 4}, -5, 5), data({3, 4}),
                        scatter_elements(1, SR::add)));
  cases.push_back(case3("scatter_elements_axis0_mul", data({4, 3}), ridx({6, 2}, -4, 4),
                        data({6, 2}), scatter_elements(0, SR::mul)));
  cases.push_back(case3("scatter_elements_min", data({3, 4, 2}), ridx({3, 5, 2}, -4, 4),
                        data({3, 5, 2}), scatter_elements(1, SR::min)));
  cases.push_back(case3("scatter_elements_max_nan", data({3}, DType::f32, {1, 5, 2}),
                        idx({4}, {0, 0, 1, 2}), data({4}, DType::f32, {kNaN, 9, 3, 4}),
                        scatter_elements(0, SR::max), {kNaN, 5, 4}));
  cases.push_back(case3("scatter_elements_i64_add", data({5, 5}, DType::i64), ridx({5, 5}, -5, 5),
                        data({5, 5}, DType::i64), scatter_elements(0, SR::add)));
  cases.push_back(case3("scatter_elements_none_u8", data({4, 6}, DType::u8), ridx({4, 6}, -6, 6),
                        data({4, 6}, DType::u8), scatter_elements(1, SR::none)));
}
