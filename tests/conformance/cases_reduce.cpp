// Conformance cases of the reduce family: reduce_sum/prod/max/min/and/or over any axes and
// argmax/argmin. Shapes reach both device mappings (reduced axis innermost / kept axis
// innermost), the split over a long reduced extent with few outputs, several non-adjacent
// reduced groups, keep_dims, rank 0, empty reductions (the identity), NaN propagation, integer
// wrap-around and first-index ties.
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

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Reduce = Tensor (*)(Tensor, tg::ReduceDesc);

OpCase red(std::string name, Reduce op, Shape shape, tg::ReduceDesc desc, DType dtype = DType::f32,
           double low = 0.5, double high = 1.5, std::vector<double> values = {},
           std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(shape), dtype, low, high, std::move(values)}};
  c.build = [op, desc](tg::Graph&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{op(in[0], desc)};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

using ArgReduce = Tensor (*)(Tensor, tg::ArgReduceDesc);

OpCase arg(std::string name, ArgReduce op, Shape shape, tg::ArgReduceDesc desc,
           DType dtype = DType::f32, std::vector<double> values = {},
           std::vector<double> expected = {}) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(shape), dtype, -10, 10, std::move(values)}};
  c.build = [op, desc](tg::Graph&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{op(in[0], desc)};
  };
  if (!expected.empty()) c.expected = {std::move(expected)};
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(reduce) {
  // sum: both mappings, splits, multi-group passes, keep_dims.
  cases.push_back(red("sum_values", tg::reduce_sum, {2, 3}, {.axes = {1}}, DType::f32, 0, 1,
                      {1, 2, 3, 4, 5, 6}, {6, 15}));
  cases.push_back(red("sum_inner", tg::reduce_sum, {3, 37, 5}, {.axes = {2}}));
  cases.push_back(red("sum_middle", tg::reduce_sum, {3, 37, 5}, {.axes = {1}}));
  cases.push_back(red("sum_outer_keep", tg::reduce_sum, {37, 6}, {.axes = {0}, .keep_dims = true}));
  cases.push_back(red("sum_all", tg::reduce_sum, {7, 11, 13}, {}));
  cases.push_back(red("sum_two_groups", tg::reduce_sum, {4, 5, 6, 7}, {.axes = {0, 2}}));
  cases.push_back(red("sum_two_groups_inner", tg::reduce_sum, {4, 5, 6, 7},
                      {.axes = {1, 3}, .keep_dims = true}));
  cases.push_back(red("sum_long_row_split", tg::reduce_sum, {3, 20000}, {.axes = {1}}));
  cases.push_back(red("sum_long_column_split", tg::reduce_sum, {9000, 3}, {.axes = {0}}));
  cases.push_back(red("sum_nhwc_stats", tg::reduce_sum, {4, 30, 30, 16}, {.axes = {0, 1, 2}}));
  cases.push_back(red("sum_size1_axis", tg::reduce_sum, {3, 1, 4}, {.axes = {1}}));
  cases.push_back(red("sum_rank0", tg::reduce_sum, {}, {}, DType::f32, 0, 1, {2.5}, {2.5}));
  cases.push_back(
      red("sum_empty", tg::reduce_sum, {0, 4}, {.axes = {0}}, DType::f32, 0, 1, {}, {0, 0, 0, 0}));
  cases.push_back(red("sum_empty_output", tg::reduce_sum, {0, 4}, {.axes = {1}}));
  cases.push_back(red("sum_i32_wrap", tg::reduce_sum, {3}, {}, DType::i32, 0, 1, {2147483647, 1, 5},
                      {-2147483643}));
  cases.push_back(red("sum_i8_wrap", tg::reduce_sum, {2, 3}, {.axes = {1}}, DType::i8, 0, 1,
                      {100, 100, 1, -128, -1, 0}, {-55, 127}));
  cases.push_back(red("sum_i64", tg::reduce_sum, {33, 65}, {.axes = {0}}, DType::i64, -1000, 1000));
  cases.push_back(red("sum_u8", tg::reduce_sum, {5, 100}, {.axes = {1}}, DType::u8, 0, 255));
  // prod
  cases.push_back(red("prod_rows", tg::reduce_prod, {6, 40}, {.axes = {1}}, DType::f32, 0.9, 1.1));
  cases.push_back(
      red("prod_columns", tg::reduce_prod, {40, 6}, {.axes = {0}}, DType::f32, 0.9, 1.1));
  cases.push_back(
      red("prod_i32_wrap", tg::reduce_prod, {3}, {}, DType::i32, 0, 1, {65536, 65536, 3}, {0}));
  cases.push_back(
      red("prod_empty", tg::reduce_prod, {2, 0}, {.axes = {1}}, DType::i32, 0, 1, {}, {1, 1}));
  // max / min
  cases.push_back(red("max_inner", tg::reduce_max, {5, 77}, {.axes = {1}}, DType::f32, -5, 5));
  cases.push_back(red("min_middle", tg::reduce_min, {3, 50, 9}, {.axes = {1}}, DType::f32, -5, 5));
  cases.push_back(
      red("max_long_split", tg::reduce_max, {2, 30000}, {.axes = {1}}, DType::f32, -5, 5));
  cases.push_back(red("max_nan", tg::reduce_max, {2, 3}, {.axes = {1}}, DType::f32, 0, 1,
                      {1, kNaN, 3, -kInf, 2, 1}, {kNaN, 2}));
  cases.push_back(red("min_nan_columns", tg::reduce_min, {3, 2}, {.axes = {0}}, DType::f32, 0, 1,
                      {1, 4, kNaN, 2, -1, kInf}, {kNaN, 2}));
  cases.push_back(red("max_empty", tg::reduce_max, {0, 2}, {.axes = {0}}, DType::f32, 0, 1, {},
                      {-kInf, -kInf}));
  cases.push_back(
      red("min_empty_i32", tg::reduce_min, {0}, {}, DType::i32, 0, 1, {}, {2147483647}));
  cases.push_back(red("max_i8", tg::reduce_max, {4, 9}, {.axes = {0}}, DType::i8, -128, 127));
  cases.push_back(red("min_i64", tg::reduce_min, {9, 4}, {.axes = {1}}, DType::i64, -1e12, 1e12));
  // and / or
  cases.push_back(red("and_rows", tg::reduce_and, {6, 5}, {.axes = {1}}, DType::bool_));
  cases.push_back(
      red("or_columns", tg::reduce_or, {5, 6}, {.axes = {0}, .keep_dims = true}, DType::bool_));
  cases.push_back(red("and_values", tg::reduce_and, {2, 3}, {.axes = {1}}, DType::bool_, 0, 1,
                      {1, 1, 1, 1, 0, 1}, {1, 0}));
  cases.push_back(red("or_empty", tg::reduce_or, {0}, {}, DType::bool_, 0, 1, {}, {0}));
  cases.push_back(red("and_long", tg::reduce_and, {3000, 4}, {.axes = {0}}, DType::bool_, 0, 1,
                      std::vector<double>(12000, 1.0), {1, 1, 1, 1}));
  // argmax / argmin
  cases.push_back(arg("argmax_inner", tg::argmax, {5, 33}, {.axis = 1}));
  cases.push_back(arg("argmin_middle", tg::argmin, {4, 33, 7}, {.axis = 1, .keep_dims = true}));
  cases.push_back(arg("argmax_outer", tg::argmax, {40, 3}, {.axis = 0}));
  cases.push_back(arg("argmax_long_split", tg::argmax, {2, 25000}, {.axis = 1}));
  cases.push_back(arg("argmin_long_column_split", tg::argmin, {20000, 2}, {.axis = 0}));
  cases.push_back(arg("argmax_ties", tg::argmax, {2, 4}, {.axis = 1}, DType::f32,
                      {1, 3, 3, 2, 5, 5, 5, 5}, {1, 0}));
  cases.push_back(arg("argmin_ties_columns", tg::argmin, {3, 2}, {.axis = 0}, DType::f32,
                      {2, 1, 1, 1, 1, 0}, {1, 2}));
  cases.push_back(arg("argmax_nan", tg::argmax, {2, 4}, {.axis = 1}, DType::f32,
                      {1, kNaN, 9, kNaN, 1, 2, 3, 4}, {1, 3}));
  cases.push_back(
      arg("argmin_nan", tg::argmin, {5}, {.axis = 0}, DType::f32, {3, -kInf, kNaN, -1, kNaN}, {2}));
  cases.push_back(arg("argmax_i32", tg::argmax, {6, 10}, {.axis = 1}, DType::i32));
  cases.push_back(arg("argmin_u8", tg::argmin, {10, 6}, {.axis = 0}, DType::u8));
  cases.push_back(arg("argmax_bool", tg::argmax, {3, 3}, {.axis = 1}, DType::bool_,
                      {0, 1, 1, 0, 0, 0, 1, 0, 1}, {1, 0, 0}));
  cases.push_back(arg("argmax_long_ties", tg::argmax, {1, 5000}, {.axis = 1}, DType::i32,
                      std::vector<double>(5000, 7.0), {0}));
  cases.push_back(arg("argmax_empty_output", tg::argmax, {0, 3}, {.axis = 1}));
}
