#include "test_util.h"

namespace tg::testing {

namespace {
std::map<std::string, std::set<Coverage>>& registry() {
  static std::map<std::string, std::set<Coverage>> r;
  return r;
}
}  // namespace

bool register_coverage(std::string_view op, Coverage kind) {
  registry()[std::string(op)].insert(kind);
  return true;
}
const std::map<std::string, std::set<Coverage>>& coverage_registry() { return registry(); }

std::vector<TensorData> run_cpu(Graph& g, const std::vector<Tensor>& targets, const Feeds& feeds) {
  return g.run(feeds, targets, {}, Device::cpu());
}

TensorData run1(Graph& g, Tensor target, const Feeds& feeds) { return run_cpu(g, {target}, feeds)[0]; }

namespace {
void check_shape(const TensorData& actual, const std::vector<double>& expected, const Shape& shape) {
  ASSERT_EQ(actual.shape(), shape) << "got " << actual.to_string();
  ASSERT_EQ(static_cast<size_t>(actual.num_elements()), expected.size()) << "test data size";
}
}  // namespace

void expect_close(const TensorData& actual, const std::vector<double>& expected, const Shape& shape,
                  double rtol, double atol) {
  check_shape(actual, expected, shape);
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = actual.element_as_double(static_cast<int64_t>(i)), e = expected[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i << ": got " << a << ", expected NaN";
    } else if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "element " << i;
    } else {
      EXPECT_NEAR(a, e, atol + rtol * std::fabs(e)) << "element " << i << " of " << actual.to_string();
    }
  }
}

void expect_equal(const TensorData& actual, const std::vector<double>& expected, const Shape& shape) {
  check_shape(actual, expected, shape);
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = actual.element_as_double(static_cast<int64_t>(i)), e = expected[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i;
    } else {
      EXPECT_EQ(a, e) << "element " << i << " of " << actual.to_string();
    }
  }
}

int count_occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace tg::testing
