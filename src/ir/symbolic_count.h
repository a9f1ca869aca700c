// Element counts of shapes with symbolic dims (tg::symbolic_dim): coef times a product of
// symbols, so that passes can tell two symbolic shapes hold as many elements (fusion) and
// reshape can infer [b, s, 768] -> [-1, s, 12, 64]'s -1 as b.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "tg/shape.h"

namespace tg::ir {

/// coef * product(symbols) (sorted); `unknown` when a dim is -1 or another negative that is no
/// symbol (then nothing else is meaningful).
/// coef saturates at INT64_MAX instead of overflowing (callers that need exact sizes check
/// is_static and num_elements first).
struct SymbolicCount {
  int64_t coef = 1;
  std::vector<int64_t> symbols;
  bool unknown = false;
  bool is_static() const { return !unknown && symbols.empty(); }
  friend bool operator==(const SymbolicCount&, const SymbolicCount&) = default;
};

/// The count of `s`, leaving out dim `skip` (-1: none).
inline SymbolicCount symbolic_count(const Shape& s, int64_t skip = -1) {
  SymbolicCount c;
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int64_t>(i) == skip) continue;
    if (is_symbolic_dim(s[i])) {
      c.symbols.push_back(s[i]);
    } else if (s[i] < 0) {
      c.unknown = true;  // -1 (or an invalid dim, which the op's rule reports)
    } else if (__builtin_mul_overflow(c.coef, s[i], &c.coef)) {
      c.coef = INT64_MAX;
    }
  }
  std::sort(c.symbols.begin(), c.symbols.end());
  return c;
}

/// An int64 standing for the element count of `s` in comparisons: num_elements(s) for static
/// shapes; for symbolic ones a value <= -2 equal for equal symbolic counts (interned for the
/// process), never equal to a static count; INT64_MIN when a dim is -1. Size thresholds must
/// check `>= 0` first.
inline int64_t count_key(const Shape& s) {
  const SymbolicCount c = symbolic_count(s);
  if (c.unknown) return INT64_MIN;
  if (c.symbols.empty()) return c.coef;
  static std::mutex mu;
  static auto* keys = new std::map<std::pair<int64_t, std::vector<int64_t>>, int64_t>;
  std::lock_guard lock(mu);
  auto [it, added] = keys->emplace(std::make_pair(c.coef, c.symbols), -2 - static_cast<int64_t>(keys->size()));
  return it->second;
}

}  // namespace tg::ir
