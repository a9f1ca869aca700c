// docs/ops.md documents every op of ops.def (a heading naming it, or its name in code font).
#include <fstream>
#include <regex>
#include <sstream>

#include "ir/op_info.h"
#include "test_util.h"
#include "test_paths.h"

namespace tg {
namespace {

TEST(OpsDoc, EveryOpOfOpsDefIsDocumented) {
  std::ifstream in(std::string(TG_SOURCE_DIR) + "/docs/ops.md");
  ASSERT_TRUE(in) << "docs/ops.md is missing: run scripts/gen-ops-doc.sh";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::string missing;
  for (const ir::OpInfo& info : ir::all_ops()) {
    std::string name(info.name);
    std::regex heading("(^|\\n)#+ [^\\n]*\\b" + name + "\\b");
    bool documented = std::regex_search(doc, heading) || doc.find("`" + name + "`") != std::string::npos ||
                      doc.find("`" + name + "(") != std::string::npos;
    if (!documented) missing += " " + name;
  }
  EXPECT_EQ(missing, "") << "ops without a section in docs/ops.md:" << missing;
}

}  // namespace
}  // namespace tg
