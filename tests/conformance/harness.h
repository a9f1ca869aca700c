// The conformance harness (DESIGN.md section 4): every op case runs on every available device
// and is checked against a float64 reference computed on the CPU.
//
// A case (OpCase) names its inputs (shape, dtype, explicit values or a random range), a build
// function that turns placeholders into outputs, optional hand-computed expected values, and
// tolerances. For each device the runner evaluates "variants":
//   - floating cases (at least one floating input): one variant per dtype in {f64} +
//     float_dtypes (default f32, f16, bf16). Every floating input is made in that dtype (random
//     values are drawn in double and rounded to it); the reference is the same case run on the
//     CPU with those exact (rounded) values cast to f64. Floating outputs must agree within the
//     variant's tolerance, other outputs (bool, indices) exactly. The f64 variant is also checked
//     against `expected` when given.
//   - other cases: one variant "base" with the declared dtypes, checked against `expected` and,
//     on a device other than the CPU, exactly against the CPU's result.
//
// A per-backend expectations file (expectations/<backend>.txt) lists what a backend does not
// support yet, one entry a line with a reason: `case_name  # reason` (every variant of the case)
// or `case_name/f16  # reason` (one variant). A listed entry that passes fails the suite (so the
// list stays true), and so does an unlisted failure.
//
// Adding cases for an op family: create tests/conformance/cases_<family>.cpp with
//
//   #include "conformance/harness.h"
//   TG_CONFORMANCE_CASES(binary) {
//     cases.push_back({.name = "add", .inputs = {{.shape = {3, 5}}, {.shape = {5}}},
//                      .build = [](tg::Graph&, const std::vector<tg::Tensor>& in) {
//                        return std::vector{tg::add(in[0], in[1])};
//                      }});
//   }
//
// (the tests glob picks the file up; see cases_unary.cpp for helpers such as unary_case).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tg/tg.h"

namespace tg::conformance {

/// One input of a case. Random values are uniform in [low, high) (integers: whole numbers in
/// [low, high); bool: true with probability 1/2), drawn from Philox seeded by the case, so every
/// run and every device sees the same data.
struct InputSpec {
  Shape shape;
  DType dtype = DType::f32;  ///< any floating dtype marks the input as swept over the variants
  double low = -1;
  double high = 1;
  std::vector<double> values = {};  ///< explicit row-major values instead of random ones
};

/// |actual - reference| <= atol + rtol * |reference|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/// Tolerance of results in `dtype` against the float64 reference: f64 1e-12/1e-14, f32
/// 1e-5/1e-6, f16 2e-3/1e-4, bf16 1e-2/1e-3; exact for non-floating dtypes.
Tolerance default_tolerance(DType dtype);

using BuildFn = std::function<std::vector<Tensor>(Graph& g, const std::vector<Tensor>& inputs)>;

struct OpCase {
  std::string name;  ///< unique; lower-case letters, digits and '_'
  std::vector<InputSpec> inputs;
  BuildFn build;
  /// Optional hand-computed values, one vector per output (row-major), checked on the f64
  /// variant (floating cases) or the base variant.
  std::vector<std::vector<double>> expected = {};
  /// Floating dtypes to sweep besides f64 (which is always run).
  std::vector<DType> float_dtypes = {DType::f32, DType::f16, DType::bf16};
  /// Per-dtype overrides of default_tolerance.
  std::map<DType, Tolerance> tolerance = {};
  /// Tolerance of the comparison with `expected`.
  Tolerance expected_tolerance = {1e-12, 1e-14};
  /// 0: derived from the name.
  uint64_t seed = 0;
};

/// Outcome of one variant of a case on one device.
struct VariantResult {
  std::string variant;  ///< "f64", "f32", "f16", "bf16" or "base"
  bool passed = false;
  std::string message;  ///< why it failed
};

struct CaseResult {
  std::string case_name;
  Device device;
  std::vector<VariantResult> variants;
};

/// Every device this build has a backend for (today: the CPU).
std::vector<Device> available_devices();
/// "cpu" or "cuda": names the expectations file.
std::string backend_name(Device device);

/// Every registered case, in family order then registration order.
const std::vector<OpCase>& all_cases();
/// The case named `name`, or nullptr.
const OpCase* find_case(std::string_view name);

/// The input values of `c` for a variant: floating inputs made in `float_dtype`.
std::vector<TensorData> make_inputs(const OpCase& c, DType float_dtype);
/// True when a case has at least one floating input.
bool is_floating_case(const OpCase& c);
/// Runs every variant of `c` on `device`; never throws for a failing variant.
CaseResult run_case(const OpCase& c, Device device);

/// "" when `actual` matches `reference` (shapes equal; NaN matches NaN, an infinity the same
/// infinity, also when the reference only overflows in actual's dtype), otherwise a description
/// of the first mismatches.
std::string compare(const TensorData& actual, const TensorData& reference, Tolerance tol);
std::string compare(const TensorData& actual, const std::vector<double>& expected, Tolerance tol);

/// A parsed expectations file: entry ("case" or "case/variant") -> reason.
struct Expectations {
  std::map<std::string, std::string> entries;
  std::vector<std::string> errors;  ///< malformed lines (no reason, duplicates, spaces)
};
Expectations parse_expectations(std::string_view text);
/// The file of `device`'s backend; a missing file means no entries.
std::string expectations_path(Device device);
Expectations load_expectations(Device device);

/// A case applying `op` to one random input of `shape`, uniform in [low, high).
OpCase unary_case(std::string name, Tensor (*op)(Tensor), double low, double high,
                  Shape shape = {3, 37}, DType dtype = DType::f32);
/// A case applying `op` to two random inputs (shapes may broadcast), uniform in [low, high).
OpCase binary_case(std::string name, Tensor (*op)(Tensor, Tensor), Shape a, Shape b, double low,
                   double high, DType dtype = DType::f32);

/// What is wrong with `result` given the backend's expectations: an unlisted variant that fails,
/// or a listed entry ("case" or "case/variant") that passes. Empty when all is as listed.
/// `expected_failures` receives the listed failures (for the log).
std::vector<std::string> check_against_expectations(const CaseResult& result, const Expectations& ex,
                                                    std::vector<std::string>* expected_failures = nullptr);

/// Registration of a family's cases; use TG_CONFORMANCE_CASES.
using RegisterFn = void (*)(std::vector<OpCase>& cases);
bool register_family(const char* family, RegisterFn fn);
/// Families registered more than once (a mistake the suite reports).
const std::vector<std::string>& duplicate_families();

}  // namespace tg::conformance

/// At namespace scope in tests/conformance/cases_<family>.cpp, followed by a function body that
/// appends OpCases to `cases`.
#define TG_CONFORMANCE_CASES(family)                                                        \
  static void tg_conformance_cases_##family(std::vector<::tg::conformance::OpCase>& cases); \
  [[maybe_unused]] static const bool tg_conformance_registered_##family =                   \
      ::tg::conformance::register_family(#family, &tg_conformance_cases_##family);          \
  static void tg_conformance_cases_##family(std::vector<::tg::conformance::OpCase>& cases)
