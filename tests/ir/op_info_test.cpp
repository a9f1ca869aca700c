// The ops.def table: names, lookups, arities and traits are consistent.
#include <set>

#include "ir/op_info.h"
#include "test_util.h"

namespace tg {
namespace {

TEST(OpInfo, TableIsIndexedByKindAndNamesAreUnique) {
  std::span<const ir::OpInfo> ops = ir::all_ops();
  ASSERT_EQ(static_cast<int>(ops.size()), ir::kNumOpKinds);
  std::set<std::string_view> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(ops[i].kind), i) << ops[i].name;
    EXPECT_EQ(&ir::op_info(ops[i].kind), &ops[i]);
    EXPECT_TRUE(names.insert(ops[i].name).second) << "duplicate op name " << ops[i].name;
    EXPECT_FALSE(ops[i].name.empty());
    for (char c : ops[i].name) {
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << ops[i].name;
    }
  }
}

TEST(OpInfo, NameLookupRoundTrips) {
  for (const ir::OpInfo& info : ir::all_ops()) {
    ir::OpKind k{};
    ASSERT_TRUE(ir::op_kind_from_name(info.name, &k)) << info.name;
    EXPECT_EQ(k, info.kind);
    EXPECT_EQ(ir::op_name(k), info.name);
  }
  ir::OpKind k = ir::OpKind::exp;
  EXPECT_FALSE(ir::op_kind_from_name("softmax", &k));  // a composite: no row
  EXPECT_FALSE(ir::op_kind_from_name("", &k));
  EXPECT_FALSE(ir::op_kind_from_name("Exp", &k));
  EXPECT_EQ(k, ir::OpKind::exp);  // untouched on failure
}

TEST(OpInfo, ArityMatchesFamily) {
  for (const ir::OpInfo& info : ir::all_ops()) {
    switch (info.family) {
      case ir::OpFamily::source:
        EXPECT_EQ(info.arity, 0) << info.name;
        EXPECT_TRUE(info.traits & ir::kSource) << info.name;
        break;
      case ir::OpFamily::random:  // sources, except random_uniform_like (like, key)
        if (info.kind == ir::OpKind::random_uniform_like) {
          EXPECT_EQ(info.arity, 2) << info.name;
        } else {
          EXPECT_EQ(info.arity, 0) << info.name;
          EXPECT_TRUE(info.traits & ir::kSource) << info.name;
        }
        break;
      case ir::OpFamily::unary:
      case ir::OpFamily::cast:
        EXPECT_EQ(info.arity, 1) << info.name;
        EXPECT_TRUE(info.traits & ir::kElementwise) << info.name;
        break;
      case ir::OpFamily::binary:
        EXPECT_EQ(info.arity, 2) << info.name;
        EXPECT_TRUE(info.traits & ir::kElementwise) << info.name;
        break;
      case ir::OpFamily::ternary:
        EXPECT_EQ(info.arity, 3) << info.name;
        break;
      case ir::OpFamily::variable:
        EXPECT_EQ(info.arity == 0, info.kind == ir::OpKind::variable) << info.name;
        break;
      default:
        EXPECT_TRUE(info.arity == -1 || info.arity >= 1) << info.name;
    }
    // Only sources have no data inputs.
    EXPECT_EQ(info.arity == 0, (info.traits & ir::kSource) != 0) << info.name;
    // Commutativity only makes sense for two operands.
    if (info.traits & ir::kCommutative) EXPECT_EQ(info.arity, 2) << info.name;
  }
}

TEST(OpInfo, SpotChecks) {
  EXPECT_EQ(ir::op_info(ir::OpKind::exp).family_name, "unary");
  EXPECT_EQ(ir::op_info(ir::OpKind::concat).arity, -1);
  EXPECT_EQ(ir::op_info(ir::OpKind::scatter_nd).arity, 3);
  EXPECT_TRUE(ir::has_trait(ir::OpKind::add, ir::kCommutative));
  EXPECT_FALSE(ir::has_trait(ir::OpKind::sub, ir::kCommutative));
  EXPECT_TRUE(ir::has_trait(ir::OpKind::exp, ir::kDifferentiable));
  EXPECT_FALSE(ir::has_trait(ir::OpKind::is_nan, ir::kDifferentiable));
  EXPECT_TRUE(ir::has_trait(ir::OpKind::reshape, ir::kDataMovement));
  EXPECT_TRUE(ir::has_trait(ir::OpKind::placeholder, ir::kSource));
}

TEST(OpInfo, FamilyNamesMatchTheFamilyList) {
  std::set<std::string_view> families;
#define TG_TEST_FAMILY(f) families.insert(#f);
  TG_OP_FAMILIES(TG_TEST_FAMILY)
#undef TG_TEST_FAMILY
  for (const ir::OpInfo& info : ir::all_ops()) {
    EXPECT_TRUE(families.count(info.family_name)) << info.name << " has family " << info.family_name;
  }
}

}  // namespace
}  // namespace tg
