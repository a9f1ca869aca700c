// Table-driven gradient checks: each case's analytic gradient (tg::gradients) is compared with
// central finite differences in float64.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tg/tg.h"

namespace tg::testing {

struct GradCase {
  std::string name;                 ///< unique, e.g. "pow/broadcast"
  std::string op;                   ///< the ops.def row it checks (coverage)
  std::vector<Shape> input_shapes;  ///< f64 inputs; static shapes
  /// Builds the function from f64 placeholders (one per input shape).
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  double low = -2, high = 2;  ///< inputs are uniform in [low, high) (seeded)
  /// Optional fixed input values (row-major, one vector per input), e.g. to avoid kinks.
  std::vector<std::vector<double>> values = {};
  /// Inputs to differentiate (default: all).
  std::vector<int> wrt = {};
  double eps = 1e-6;
  double rtol = 1e-5, atol = 1e-7;
};

/// Registers a case (at static initialization via TG_GRAD_CASE).
bool register_grad_case(GradCase c);
const std::vector<GradCase>& grad_cases();

/// Runs one case; returns "" when it passes, else a description of the worst mismatch.
std::string check_gradient(const GradCase& c);

}  // namespace tg::testing

/// At namespace scope: TG_GRAD_CASE({.name = "exp", .op = "exp", .input_shapes = {{2, 3}},
///                                   .fn = [](auto& x) { return tg::exp(x[0]); }});
#define TG_GRAD_CASE(...)                                                            \
  static const bool TG_GRADCASE_CONCAT(tg_grad_case_, __COUNTER__) =                 \
      ::tg::testing::register_grad_case(::tg::testing::GradCase __VA_ARGS__)
#define TG_GRADCASE_CONCAT_INNER(a, b) a##b
#define TG_GRADCASE_CONCAT(a, b) TG_GRADCASE_CONCAT_INNER(a, b)
