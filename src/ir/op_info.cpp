#include "ir/op_info.h"

#include <array>

namespace tg::ir {
namespace {
constexpr std::array<OpInfo, kNumOpKinds> kOpTable = {{
#define TG_OP(name, family, arity, traits) \
  {OpKind::name, #name, OpFamily::family, #family, arity, static_cast<uint32_t>(traits)},
#include "ir/ops.def"
#undef TG_OP
}};
}  // namespace

const OpInfo& op_info(OpKind kind) { return kOpTable[static_cast<size_t>(kind)]; }
std::span<const OpInfo> all_ops() { return kOpTable; }

bool op_kind_from_name(std::string_view name, OpKind* out) {
  for (const OpInfo& info : kOpTable) {
    if (info.name == name) {
      *out = info.kind;
      return true;
    }
  }
  return false;
}

}  // namespace tg::ir
