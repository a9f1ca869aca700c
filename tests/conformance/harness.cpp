#include "conformance/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "backends/backend.h"
#include "core/convert.h"
#include "core/philox.h"
#include "test_paths.h"

#ifndef TG_CONFORMANCE_DIR
#error "tests/CMakeLists.txt must define TG_CONFORMANCE_DIR (the tests/conformance source dir)"
#endif

namespace tg::conformance {

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64: return {1e-12, 1e-14};
    case DType::f32: return {1e-5, 1e-6};
    case DType::f16: return {2e-3, 1e-4};
    case DType::bf16: return {1e-2, 1e-3};
    default: return {0, 0};
  }
}

std::vector<Device> available_devices() {
  std::vector<Device> out;
  for (Device d : {Device::cpu(), Device::cuda(0)}) {
    try {
      backends::backend_for(d);  // raises unsupported when the build has no backend for d
      out.push_back(d);
    } catch (const Error&) {
    }
  }
  return out;
}

std::string backend_name(Device device) { return device.is_cpu() ? "cpu" : "cuda"; }

// ---------------------------------------------------------------------------------------------
// Registry

namespace {
struct Family {
  std::string name;
  RegisterFn fn;
};
std::vector<Family>& families() {
  static std::vector<Family> f;
  return f;
}
std::vector<std::string>& duplicates() {
  static std::vector<std::string> d;
  return d;
}
}  // namespace

bool register_family(const char* family, RegisterFn fn) {
  for (const Family& f : families()) {
    if (f.name == family) duplicates().push_back(family);
  }
  families().push_back({family, fn});
  return true;
}

const std::vector<std::string>& duplicate_families() { return duplicates(); }

const std::vector<OpCase>& all_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<Family> fams = families();
    std::stable_sort(fams.begin(), fams.end(), [](const Family& a, const Family& b) { return a.name < b.name; });
    std::vector<OpCase> out;
    for (const Family& f : fams) f.fn(out);
    return out;
  }();
  return cases;
}

const OpCase* find_case(std::string_view name) {
  for (const OpCase& c : all_cases()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Inputs

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : s) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

double random_value(const InputSpec& spec, uint64_t seed, uint64_t i) {
  double u = philox::uniform_f64(seed, i);
  if (spec.dtype == DType::bool_) return u < 0.5 ? 1.0 : 0.0;
  double v = spec.low + (spec.high - spec.low) * u;
  return is_integer(spec.dtype) ? std::floor(v) : v;
}

TensorData make_input(const InputSpec& spec, DType dtype, uint64_t seed) {
  TensorData t(spec.shape, dtype);
  int64_t n = t.num_elements();
  if (!spec.values.empty() && static_cast<int64_t>(spec.values.size()) != n) {
    throw Error(ErrorCode::invalid_argument,
                fmt::format("[conformance] {} explicit values for shape {}", spec.values.size(),
                            shape_to_string(spec.shape)));
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = spec.values.empty() ? random_value(spec, seed, static_cast<uint64_t>(i))
                                   : spec.values[static_cast<size_t>(i)];
    store_from_double(dtype, t.raw_data(), i, v);
  }
  return t;
}

/// Exact copy of a floating tensor as f64 (other dtypes unchanged).
TensorData as_f64(const TensorData& t) {
  if (!is_floating(t.dtype()) || t.dtype() == DType::f64) return t;
  TensorData out(t.shape(), DType::f64);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    out.data<double>()[i] = load_as_double(t.dtype(), t.raw_data(), i);
  }
  return out;
}

/// v rounded to `dtype` (floating dtypes), as a result in that dtype would be.
double round_to(DType dtype, double v) {
  switch (dtype) {
    case DType::f16: return static_cast<float>(f16_t(static_cast<float>(v)));
    case DType::bf16: return static_cast<float>(bf16_t(static_cast<float>(v)));
    case DType::f32: return static_cast<float>(v);
    default: return v;
  }
}

}  // namespace

bool is_floating_case(const OpCase& c) {
  return std::any_of(c.inputs.begin(), c.inputs.end(), [](const InputSpec& s) { return is_floating(s.dtype); });
}

std::vector<TensorData> make_inputs(const OpCase& c, DType float_dtype) {
  uint64_t seed = c.seed ? c.seed : fnv1a(c.name);
  std::vector<TensorData> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    DType dtype = is_floating(spec.dtype) ? float_dtype : spec.dtype;
    // One stream per input: the seed mixed with the input's position.
    out.push_back(make_input(spec, dtype, seed ^ (0x9E3779B97F4A7C15ull * (i + 1))));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Comparison

namespace {

bool close(double a, double r, Tolerance tol, DType actual_dtype) {
  if (std::isnan(r)) return std::isnan(a);
  if (std::isinf(a) || std::isinf(r)) return a == r || (std::isinf(a) && a == round_to(actual_dtype, r));
  return std::fabs(a - r) <= tol.atol + tol.rtol * std::fabs(r);
}

template <typename RefAt>
std::string compare_elements(const TensorData& actual, int64_t n, RefAt ref_at, Tolerance tol) {
  std::string out;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = actual.element_as_double(i), r = ref_at(i);
    if (close(a, r, tol, actual.dtype())) continue;
    if (++bad <= 3) {
      out += fmt::format("{}element {}: got {:.9g}, want {:.17g} (diff {:.3g}, tol {:.3g})", out.empty() ? "" : "; ",
                         i, a, r, std::fabs(a - r), tol.atol + tol.rtol * std::fabs(r));
    }
  }
  if (bad > 3) out += fmt::format("; {} mismatches in all of {}", bad, n);
  return out;
}

}  // namespace

std::string compare(const TensorData& actual, const TensorData& reference, Tolerance tol) {
  if (actual.shape() != reference.shape()) {
    return fmt::format("shape {} differs from the reference's {}", shape_to_string(actual.shape()),
                       shape_to_string(reference.shape()));
  }
  return compare_elements(actual, actual.num_elements(), [&](int64_t i) { return reference.element_as_double(i); },
                          tol);
}

std::string compare(const TensorData& actual, const std::vector<double>& expected, Tolerance tol) {
  if (static_cast<size_t>(actual.num_elements()) != expected.size()) {
    return fmt::format("{} elements, expected values have {}", actual.num_elements(), expected.size());
  }
  return compare_elements(actual, actual.num_elements(), [&](int64_t i) { return expected[static_cast<size_t>(i)]; },
                          tol);
}

// ---------------------------------------------------------------------------------------------
// Running

namespace {

// On a GPU the case runs three times: the first run walks the nodes, the third replays the
// captured CUDA graph; `first` receives the first run's results (the third's are returned).
std::vector<TensorData> run_graph(const OpCase& c, const std::vector<TensorData>& inputs, Device device,
                                  std::vector<TensorData>* first = nullptr) {
  Graph g;
  std::vector<Tensor> placeholders;
  Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    placeholders.push_back(g.placeholder(inputs[i].shape(), inputs[i].dtype(), fmt::format("in{}", i)));
    feeds.emplace_back(placeholders.back(), inputs[i]);
  }
  std::vector<Tensor> outputs = c.build(g, placeholders);
  std::vector<TensorData> results = g.run(feeds, outputs, {}, device);
  // Compared element by element on the host: one copy each (not one per element read).
  for (TensorData& r : results) r = r.to(Device::cpu());
  if (first != nullptr && !device.is_cpu()) {
    *first = std::move(results);
    for (int again = 0; again < 2; ++again) results = g.run(feeds, outputs, {}, device);
    for (TensorData& r : results) r = r.to(Device::cpu());
  }
  return results;
}

Tolerance tolerance_for(const OpCase& c, DType dtype) {
  auto it = c.tolerance.find(dtype);
  return it != c.tolerance.end() ? it->second : default_tolerance(dtype);
}

// Appends "output i: why" for each output that does not match.
std::string check_outputs(const OpCase& c, const std::vector<TensorData>& actual,
                          const std::vector<TensorData>& reference, DType variant_dtype) {
  if (actual.size() != reference.size()) {
    return fmt::format("{} outputs, the reference has {}", actual.size(), reference.size());
  }
  std::string out;
  for (size_t i = 0; i < actual.size(); ++i) {
    bool floating = is_floating(actual[i].dtype());
    if (!floating && actual[i].dtype() != reference[i].dtype()) {
      out += fmt::format("output {}: dtype {}, the reference has {}; ", i, dtype_name(actual[i].dtype()),
                         dtype_name(reference[i].dtype()));
      continue;
    }
    Tolerance tol = floating ? tolerance_for(c, variant_dtype) : Tolerance{};
    std::string why = compare(actual[i], reference[i], tol);
    if (!why.empty()) out += fmt::format("output {}: {}; ", i, why);
  }
  return out;
}

std::string check_expected(const OpCase& c, const std::vector<TensorData>& actual) {
  if (c.expected.empty()) return "";
  if (c.expected.size() != actual.size()) {
    return fmt::format("{} outputs, {} expected", actual.size(), c.expected.size());
  }
  std::string out;
  for (size_t i = 0; i < actual.size(); ++i) {
    Tolerance tol = is_floating(actual[i].dtype()) ? c.expected_tolerance : Tolerance{};
    std::string why = compare(actual[i], c.expected[i], tol);
    if (!why.empty()) out += fmt::format("output {} vs expected: {}; ", i, why);
  }
  return out;
}

std::string prefixed(const char* prefix, const std::string& why) { return why.empty() ? why : prefix + why; }

// One variant: a floating case with its floating inputs in `dtype`, or the "base" variant of a
// non-floating case (`dtype` unused).
VariantResult run_variant(const OpCase& c, Device device, bool floating, DType dtype) {
  VariantResult r;
  r.variant = floating ? std::string(dtype_name(dtype)) : "base";
  try {
    std::vector<TensorData> inputs = make_inputs(c, dtype);
    std::vector<TensorData> first;
    std::vector<TensorData> actual = run_graph(c, inputs, device, &first);
    std::string why;
    if (floating) {
      std::vector<TensorData> ref_inputs;
      for (const TensorData& t : inputs) ref_inputs.push_back(as_f64(t));
      std::vector<TensorData> reference;
      try {
        reference = run_graph(c, ref_inputs, Device::cpu());
      } catch (const Error& e) {
        throw Error(e.code(), std::string("float64 reference on the CPU: ") + e.what());
      }
      why = check_outputs(c, actual, reference, dtype);
      if (!first.empty()) why += prefixed("first run: ", check_outputs(c, first, reference, dtype));
      if (dtype == DType::f64) why += check_expected(c, actual);
    } else {
      if (!device.is_cpu()) {
        const std::vector<TensorData> reference = run_graph(c, inputs, Device::cpu());
        why = check_outputs(c, actual, reference, dtype);
        if (!first.empty()) why += prefixed("first run: ", check_outputs(c, first, reference, dtype));
      }
      why += check_expected(c, actual);
    }
    r.passed = why.empty();
    r.message = why;
  } catch (const Error& e) {
    r.message = fmt::format("tg::Error({}): {}", error_code_name(e.code()), e.what());
  } catch (const std::exception& e) {
    r.message = fmt::format("exception: {}", e.what());
  }
  return r;
}

}  // namespace

CaseResult run_case(const OpCase& c, Device device) {
  CaseResult result{c.name, device, {}};
  if (!c.build) {
    result.variants.push_back({"base", false, "case has no build function"});
    return result;
  }
  if (!is_floating_case(c)) {
    result.variants.push_back(run_variant(c, device, false, DType::f64));
    return result;
  }
  std::vector<DType> dtypes = {DType::f64};
  for (DType d : c.float_dtypes) {
    if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end()) dtypes.push_back(d);
  }
  for (DType d : dtypes) result.variants.push_back(run_variant(c, device, true, d));
  return result;
}

OpCase unary_case(std::string name, Tensor (*op)(Tensor), double low, double high, Shape shape,
                  DType dtype) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(shape), dtype, low, high}};
  c.build = [op](Graph&, const std::vector<Tensor>& in) { return std::vector<Tensor>{op(in[0])}; };
  return c;
}

OpCase binary_case(std::string name, Tensor (*op)(Tensor, Tensor), Shape a, Shape b, double low,
                   double high, DType dtype) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(a), dtype, low, high}, InputSpec{std::move(b), dtype, low, high}};
  c.build = [op](Graph&, const std::vector<Tensor>& in) { return std::vector<Tensor>{op(in[0], in[1])}; };
  return c;
}

// ---------------------------------------------------------------------------------------------
// Expectations

namespace {
std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}
}  // namespace

Expectations parse_expectations(std::string_view text) {
  Expectations ex;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t hash = line.find('#');
    std::string entry = trim(std::string_view(line).substr(0, hash));
    if (entry.empty()) continue;  // blank or comment-only line
    std::string reason = hash == std::string::npos ? "" : trim(std::string_view(line).substr(hash + 1));
    if (entry.find_first_of(" \t") != std::string::npos) {
      ex.errors.push_back(fmt::format("line {}: '{}' is not one case name", number, entry));
    } else if (reason.empty()) {
      ex.errors.push_back(fmt::format("line {}: '{}' has no '# reason'", number, entry));
    } else if (!ex.entries.emplace(entry, reason).second) {
      ex.errors.push_back(fmt::format("line {}: '{}' is listed twice", number, entry));
    }
  }
  return ex;
}

std::string expectations_path(Device device) {
  return std::string(TG_CONFORMANCE_DIR) + "/expectations/" + backend_name(device) + ".txt";
}

Expectations load_expectations(Device device) {
  std::ifstream f(expectations_path(device));
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_expectations(ss.str());
}

std::vector<std::string> check_against_expectations(const CaseResult& result, const Expectations& ex,
                                                    std::vector<std::string>* expected_failures) {
  std::vector<std::string> problems;
  const std::string& name = result.case_name;
  const std::string where = fmt::format("on {} ({})", result.device.to_string(), expectations_path(result.device));
  bool case_listed = ex.entries.count(name) > 0;
  bool any_failed = false;
  for (const VariantResult& v : result.variants) {
    std::string entry = name + "/" + v.variant;
    bool variant_listed = ex.entries.count(entry) > 0;
    any_failed = any_failed || !v.passed;
    if (!v.passed && !case_listed && !variant_listed) {
      problems.push_back(fmt::format("{} fails {}: {}\n  (if the backend does not support it yet, list "
                                     "'{}  # reason')", entry, where, v.message, entry));
    } else if (!v.passed && expected_failures) {
      expected_failures->push_back(fmt::format("{}: {}", entry, v.message));
    }
    if (v.passed && variant_listed) {
      problems.push_back(fmt::format("{} passes but is listed {}: remove the line", entry, where));
    }
  }
  if (case_listed && !any_failed) {
    problems.push_back(fmt::format("{} passes but is listed {}: remove the line", name, where));
  }
  return problems;
}

}  // namespace tg::conformance
