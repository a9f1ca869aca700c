// Runs every registered gradient case and checks that every differentiable op of ops.def has one.
#include <set>

#include "autodiff/gradcheck.h"
#include "ir/op_info.h"
#include "test_util.h"

namespace tg {
namespace {

class GradCheck : public ::testing::TestWithParam<size_t> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const testing::GradCase& c = testing::grad_cases().at(GetParam());
  EXPECT_EQ(testing::check_gradient(c), "") << c.name;
}

INSTANTIATE_TEST_SUITE_P(AllOps, GradCheck,
                         ::testing::Range<size_t>(0, testing::grad_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string n = testing::grad_cases()[info.param].name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

TEST(GradCheckCoverage, EveryDifferentiableOpHasAGradientCheck) {
  std::set<std::string> checked;
  for (const auto& c : testing::grad_cases()) checked.insert(c.op);
  for (const auto& [op, kinds] : testing::coverage_registry()) {
    if (kinds.count(testing::Coverage::gradient)) checked.insert(op);
  }
  std::string missing;
  for (const ir::OpInfo& info : ir::all_ops()) {
    if ((info.traits & ir::kDifferentiable) && !checked.count(std::string(info.name))) {
      missing += " " + std::string(info.name);
    }
  }
  EXPECT_EQ(missing, "") << "differentiable ops without a gradient check:" << missing;
}

}  // namespace
}  // namespace tg
