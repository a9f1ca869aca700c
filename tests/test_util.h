// Shared test helpers: op coverage registration, running graphs, value and error assertions.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tg/tg.h"

namespace tg::testing {

/// value/error: op tests (tests/ops/coverage_test.cpp); gradient: a hand-computed gradient test
/// for an op that TG_GRAD_CASE cannot express (tests/autodiff/gradcheck_test.cpp).
enum class Coverage { value, error, gradient };

/// Records that some test checks `op` (a name from ops.def) for values or errors. Used at static
/// initialization by the macros below; tests/ops/coverage_test.cpp checks every op has both.
bool register_coverage(std::string_view op, Coverage kind);
const std::map<std::string, std::set<Coverage>>& coverage_registry();

/// Runs `targets` on the CPU with `feeds`.
std::vector<TensorData> run_cpu(Graph& g, const std::vector<Tensor>& targets, const Feeds& feeds = {});
/// Runs one target on the CPU.
TensorData run1(Graph& g, Tensor target, const Feeds& feeds = {});

/// How many times `what` occurs in `text` (e.g. an op's name in a compiled graph's text form).
int count_occurrences(const std::string& text, const std::string& what);

/// Element-wise comparison with |a - e| <= atol + rtol * |e|; NaN matches NaN, inf matches inf of
/// the same sign. Shapes must agree.
void expect_close(const TensorData& actual, const std::vector<double>& expected, const Shape& shape,
                  double rtol = 1e-6, double atol = 1e-6);
/// Exact comparison (integers, bools, and floats that must be bit-for-bit).
void expect_equal(const TensorData& actual, const std::vector<double>& expected, const Shape& shape);

}  // namespace tg::testing

#define TG_CONCAT_INNER(a, b) a##b
#define TG_CONCAT(a, b) TG_CONCAT_INNER(a, b)
/// At namespace scope: this file has value (or error) tests for `op`.
#define TG_COVERS(kind, op)                                       \
  static const bool TG_CONCAT(tg_coverage_, __COUNTER__) =        \
      ::tg::testing::register_coverage(#op, ::tg::testing::Coverage::kind)

/// Expects `stmt` to raise tg::Error with `code` and a message containing `substr`.
#define EXPECT_TG_ERROR(stmt, expected_code, substr)                                                   \
  do {                                                                                        \
    try {                                                                                     \
      stmt;                                                                                   \
      ADD_FAILURE() << "expected tg::Error from: " #stmt;                                     \
    } catch (const ::tg::Error& e) {                                                          \
      EXPECT_EQ(e.code(), expected_code) << e.what();                                                  \
      EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)                        \
          << "message '" << e.what() << "' lacks '" << substr << "'";                         \
    }                                                                                         \
  } while (0)
