// Runs every conformance case on every available device (one test per device and case), checks
// the expectations files, and tests the harness itself.
#include <fstream>
#include <set>

#include "conformance/harness.h"
#include "test_util.h"

namespace tg::conformance {
namespace {

struct Param {
  Device device;
  std::string case_name;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.device.to_string() << " " << p.case_name; }

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (Device d : available_devices()) {
    for (const OpCase& c : all_cases()) out.push_back({d, c.name});
  }
  return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string s = backend_name(info.param.device) + std::to_string(info.param.device.index) + "_" +
                  info.param.case_name;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

const Expectations& expectations_of(Device d) {
  static std::map<std::string, Expectations> cache;
  auto it = cache.find(backend_name(d));
  if (it == cache.end()) it = cache.emplace(backend_name(d), load_expectations(d)).first;
  return it->second;
}

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, MatchesReference) {
  const Param& p = GetParam();
  const OpCase* c = find_case(p.case_name);
  ASSERT_NE(c, nullptr);
  std::vector<std::string> expected_failures;
  for (const std::string& problem :
       check_against_expectations(run_case(*c, p.device), expectations_of(p.device), &expected_failures)) {
    ADD_FAILURE() << problem;
  }
  for (const std::string& f : expected_failures) std::cout << "[ expected failure ] " << f << "\n";
}

INSTANTIATE_TEST_SUITE_P(AllCases, Conformance, ::testing::ValuesIn(all_params()), param_name);

TEST(ConformanceSuite, CasesAreWellFormed) {
  EXPECT_TRUE(duplicate_families().empty()) << "family registered twice: " << duplicate_families()[0];
  ASSERT_FALSE(all_cases().empty());
  std::set<std::string> names;
  for (const OpCase& c : all_cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name " << c.name;
    EXPECT_FALSE(c.name.empty());
    for (char ch : c.name) {
      EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') << c.name;
    }
    EXPECT_TRUE(static_cast<bool>(c.build)) << c.name;
    for (const InputSpec& s : c.inputs) {
      EXPECT_TRUE(is_static(s.shape)) << c.name;
      if (s.values.empty()) EXPECT_LT(s.low, s.high) << c.name;
    }
    for (DType d : c.float_dtypes) EXPECT_TRUE(is_floating(d)) << c.name;
  }
}

TEST(ConformanceSuite, ExpectationFilesAreValid) {
  // The CPU's file must be found whatever the working directory (the path is compiled in).
  EXPECT_TRUE(std::ifstream(expectations_path(Device::cpu())).good()) << expectations_path(Device::cpu());
  const std::set<std::string> variants = {"base", "f64", "f32", "f16", "bf16"};
  for (Device d : available_devices()) {
    const Expectations& ex = expectations_of(d);
    for (const std::string& e : ex.errors) ADD_FAILURE() << expectations_path(d) << ": " << e;
    for (const auto& [entry, reason] : ex.entries) {
      size_t slash = entry.find('/');
      std::string name = entry.substr(0, slash);
      EXPECT_NE(find_case(name), nullptr) << expectations_path(d) << " lists unknown case '" << name << "'";
      if (slash != std::string::npos) {
        EXPECT_TRUE(variants.count(entry.substr(slash + 1))) << "unknown variant in '" << entry << "'";
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The harness itself.

TEST(ConformanceHarness, ParsesExpectations) {
  Expectations ex = parse_expectations(
      "# header comment\n"
      "\n"
      "exp  # not yet\n"
      "  erf/bf16\t# needs a kernel  \n"
      "no_reason\n"
      "two names # x\n"
      "exp # again\n");
  EXPECT_EQ(ex.entries.size(), 2u);
  EXPECT_EQ(ex.entries.at("exp"), "not yet");
  EXPECT_EQ(ex.entries.at("erf/bf16"), "needs a kernel");
  ASSERT_EQ(ex.errors.size(), 3u);
  EXPECT_NE(ex.errors[0].find("line 5: 'no_reason' has no '# reason'"), std::string::npos) << ex.errors[0];
  EXPECT_NE(ex.errors[1].find("line 6"), std::string::npos) << ex.errors[1];
  EXPECT_NE(ex.errors[2].find("listed twice"), std::string::npos) << ex.errors[2];
}

TEST(ConformanceHarness, ComparesWithTolerance) {
  TensorData ref = TensorData::from_vector<double>({1, 100, 0, std::nan(""), INFINITY}, {5});
  TensorData good = TensorData::from_vector<float>({1.000001f, 100.0001f, 5e-7f, NAN, INFINITY}, {5});
  EXPECT_EQ(compare(good, ref, {1e-5, 1e-6}), "");
  TensorData bad = TensorData::from_vector<float>({1.1f, 100, 0, 0, -INFINITY}, {5});
  std::string why = compare(bad, ref, {1e-5, 1e-6});
  EXPECT_NE(why.find("element 0: got 1.10000002"), std::string::npos) << why;
  EXPECT_NE(why.find("element 3"), std::string::npos) << why;  // NaN expected
  EXPECT_NE(why.find("element 4"), std::string::npos) << why;  // wrong infinity
  EXPECT_NE(compare(bad.reshaped({5, 1}), ref, {1, 1}).find("shape [5,1] differs"), std::string::npos);
  // A reference that only overflows in the result's dtype matches that infinity.
  TensorData big = TensorData::from_vector<double>({70000}, {1});
  EXPECT_EQ(compare(TensorData::full({1}, DType::f16, 70000), big, {2e-3, 0}), "");
  EXPECT_EQ(compare(TensorData::from_vector<int32_t>({1, 2}, {2}), std::vector<double>{1, 2}, {}), "");
  EXPECT_NE(compare(TensorData::from_vector<int32_t>({1, 2}, {2}), std::vector<double>{1, 3}, {}), "");
}

TEST(ConformanceHarness, InputsAreDeterministicInRangeAndRoundedPerVariant) {
  OpCase c = unary_case("harness_inputs", exp, -2, 3, {1000});
  c.inputs.push_back(InputSpec{{500}, DType::i32, -3, 4});
  c.inputs.push_back(InputSpec{{300}, DType::bool_});
  std::vector<TensorData> a = make_inputs(c, DType::f32), b = make_inputs(c, DType::f32);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].to_vector<float>(), b[0].to_vector<float>());
  EXPECT_EQ(a[1].dtype(), DType::i32);  // non-floating inputs keep their dtype
  std::set<int32_t> ints;
  for (float v : a[0].to_vector<float>()) {
    EXPECT_GE(v, -2.f);
    EXPECT_LE(v, 3.f);
  }
  for (int32_t v : a[1].to_vector<int32_t>()) ints.insert(v);
  EXPECT_EQ(ints, (std::set<int32_t>{-3, -2, -1, 0, 1, 2, 3}));
  int trues = 0;
  for (bool v : a[2].to_vector<bool>()) trues += v;
  EXPECT_GT(trues, 100);
  EXPECT_LT(trues, 200);
  // The f16 variant holds the same draws rounded to f16.
  std::vector<TensorData> h = make_inputs(c, DType::f16);
  EXPECT_EQ(h[0].dtype(), DType::f16);
  for (int64_t i = 0; i < 1000; i += 97) {
    EXPECT_EQ(h[0].element_as_double(i), static_cast<float>(f16_t(static_cast<float>(a[0].element_as_double(i)))));
  }
  OpCase other = c;
  other.name = "harness_inputs_2";
  EXPECT_NE(make_inputs(other, DType::f32)[0].to_vector<float>(), a[0].to_vector<float>());
}

TEST(ConformanceHarness, ReportsWrongResultsAndErrorsPerVariant) {
  OpCase wrong = unary_case("harness_wrong", exp, 0, 1, {4});
  wrong.inputs[0].values = {0, 1, 2, 3};
  wrong.expected = {{1, 2.718281828459045, 7.38905609893065, 20}};  // last one is wrong
  wrong.float_dtypes = {DType::f32};
  CaseResult r = run_case(wrong, Device::cpu());
  ASSERT_EQ(r.variants.size(), 2u);
  EXPECT_EQ(r.variants[0].variant, "f64");
  EXPECT_FALSE(r.variants[0].passed);
  EXPECT_NE(r.variants[0].message.find("output 0 vs expected: element 3"), std::string::npos) << r.variants[0].message;
  EXPECT_EQ(r.variants[1].variant, "f32");
  EXPECT_TRUE(r.variants[1].passed) << r.variants[1].message;  // f32 agrees with the reference

  OpCase throws = unary_case("harness_throws", logical_not, 0, 1);  // logical_not rejects floats
  CaseResult t = run_case(throws, Device::cpu());
  ASSERT_EQ(t.variants.size(), 4u);
  for (const VariantResult& v : t.variants) {
    EXPECT_FALSE(v.passed);
    EXPECT_NE(v.message.find("tg::Error(dtype_mismatch): [logical_not]"), std::string::npos) << v.message;
  }

  OpCase ints = unary_case("harness_ints", abs, -5, 5, {8}, DType::i32);
  CaseResult ir = run_case(ints, Device::cpu());
  ASSERT_EQ(ir.variants.size(), 1u);
  EXPECT_EQ(ir.variants[0].variant, "base");
  EXPECT_TRUE(ir.variants[0].passed) << ir.variants[0].message;
}

TEST(ConformanceHarness, ExpectationsMustStayTrue) {
  CaseResult r{"op", Device::cpu(), {{"f64", true, ""}, {"f32", true, ""}, {"f16", false, "too far"}}};
  // Unlisted failure.
  std::vector<std::string> p = check_against_expectations(r, parse_expectations(""));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("op/f16 fails on cpu"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("too far"), std::string::npos) << p[0];
  // Listed by variant or by case: fine, and reported as an expected failure.
  std::vector<std::string> expected;
  EXPECT_TRUE(check_against_expectations(r, parse_expectations("op/f16 # no f16"), &expected).empty());
  EXPECT_EQ(expected, (std::vector<std::string>{"op/f16: too far"}));
  EXPECT_TRUE(check_against_expectations(r, parse_expectations("op # partly"), nullptr).empty());
  // A listed variant that passes is stale.
  p = check_against_expectations(r, parse_expectations("op/f16 # x\nop/f32 # y"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("op/f32 passes but is listed"), std::string::npos) << p[0];
  // A listed case whose variants all pass is stale.
  r.variants[2].passed = true;
  p = check_against_expectations(r, parse_expectations("op # x"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("op passes but is listed"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("remove the line"), std::string::npos) << p[0];
}

TEST(ConformanceHarness, DevicesIncludeTheCpu) {
  std::vector<Device> d = available_devices();
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0], Device::cpu());
  EXPECT_EQ(backend_name(Device::cpu()), "cpu");
  EXPECT_EQ(backend_name(Device::cuda(1)), "cuda");
  EXPECT_NE(expectations_path(Device::cpu()).find("conformance/expectations/cpu.txt"), std::string::npos);
}

}  // namespace
}  // namespace tg::conformance
