// Derived symbolic dims (issue 17, docs/design/0009-compile-once.md "Derived symbols"): sizes that
// follow a symbol (tg::symbolic_dim) through shape arithmetic, in the one form sliding windows,
// slices, pads, concats and tiles need: floor((a * s + b) / c) of a base symbol s, a >= 1,
// c >= 1. Each is a symbol too (interned by its canonical expression, e.g. "seq-1", "2*seq",
// "(seq+1)/2"), so shapes hold them like any dim and equal expressions compare equal.
// `lo`: the smallest size of s for which the expression is the op's size (below it a slice would
// clamp, a window would not fit): a signature binding s below lo is refused (runtime/symbols.h).
// The bound is part of the symbol's identity, so one graph never changes another's.
#pragma once
#include <cstdint>
#include <optional>

namespace tg::core {

struct DimExpr {
  int64_t base = 0;  ///< a symbol that is not derived
  int64_t a = 1, b = 0, c = 1;
  int64_t lo = 0;  ///< the expression holds for base sizes >= lo
};

/// floor((a * d + b) / c) for a dim d (a >= 1, c >= 1), valid for d >= lo (d's own lo kept too):
/// a size -> that value (not clamped: the caller's op decides); -1 -> -1; a symbol or derived
/// symbol -> the derived symbol (its base's expression composed), or -1 when the composition
/// leaves the form (a multiple of a floor division) or its coefficients or bound pass 2^30.
/// Symbols are interned per expression and bound (two bounds: two symbols of one name).
int64_t affine_dim(int64_t d, int64_t a, int64_t b, int64_t c, int64_t lo = 0);
/// x + y (concat's axis): sizes add; a size and a symbol give the derived symbol; two derived
/// symbols of one base without division add their coefficients; anything else -1.
int64_t add_dims(int64_t x, int64_t y);
/// The expression of a derived symbol; nullopt for other dims (sizes, -1, base symbols).
std::optional<DimExpr> derived_dim(int64_t d);
/// e's value for its base's size v (callers check v >= e.lo); false when a * v + b overflows.
inline bool eval_dim_expr(const DimExpr& e, int64_t v, int64_t* out) {
  int64_t n = 0;
  if (__builtin_mul_overflow(e.a, v, &n) || __builtin_add_overflow(n, e.b, &n)) return false;
  *out = n >= 0 ? n / e.c : -((-n + e.c - 1) / e.c);
  return true;
}

}  // namespace tg::core
