// Helpers to raise tg::Error with messages in the project's form: "[op] what (shapes)".
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

#include "tg/error.h"
#include "tg/shape.h"

namespace tg {

/// Raises tg::Error(code, "[op] " + formatted message).
template <typename... Args>
[[noreturn]] void fail(ErrorCode code, std::string_view op, fmt::format_string<Args...> f,
                       Args&&... args) {
  throw Error(code, fmt::format("[{}] ", op) + fmt::format(f, std::forward<Args>(args)...));
}

/// Raises tg::Error(internal) when `cond` is false: for invariants, not user mistakes.
#define TG_CHECK_INTERNAL(cond, what)                                                         \
  do {                                                                                        \
    if (!(cond)) throw ::tg::Error(::tg::ErrorCode::internal, std::string("internal: ") + (what)); \
  } while (0)

/// "[2,3]" for messages.
inline std::string str(const Shape& s) { return shape_to_string(s); }

}  // namespace tg
