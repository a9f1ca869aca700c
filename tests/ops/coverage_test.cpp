// Walks ops.def: every op must run on the CPU (a CPU kernel, or run by the runtime itself) and have
// a value test and an error test.
#include "backends/cpu/cpu_backend.h"
#include "ir/op_info.h"
#include "ops/registry.h"
#include "test_util.h"

namespace tg {
namespace {

TEST(OpsDefCoverage, EveryOpHasInferenceKernelValueAndErrorTests) {
  const auto& cov = testing::coverage_registry();
  std::vector<std::string> missing;
  for (const ir::OpInfo& info : ir::all_ops()) {
    std::string name(info.name);
    if (ops::registry().infer[static_cast<size_t>(info.kind)] == nullptr) missing.push_back(name + ": type inference");
    if (!backends::runs_in_runtime(info.kind) && cpu::kernel_table().get(info.kind) == nullptr) {
      missing.push_back(name + ": CPU kernel");
    }
    auto it = cov.find(name);
    if (it == cov.end() || !it->second.count(testing::Coverage::value)) missing.push_back(name + ": value test");
    if (it == cov.end() || !it->second.count(testing::Coverage::error)) missing.push_back(name + ": error test");
  }
  for (const auto& [name, kinds] : cov) {
    ir::OpKind k;
    EXPECT_TRUE(ir::op_kind_from_name(name, &k)) << "coverage registered for unknown op '" << name << "'";
  }
  EXPECT_TRUE(missing.empty()) << "missing:\n" << [&] {
    std::string s;
    for (const auto& m : missing) s += "  " + m + "\n";
    return s;
  }();
}

}  // namespace
}  // namespace tg
