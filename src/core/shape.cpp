#include "tg/shape.h"

#include <deque>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>

#include "core/dim_expr.h"
#include "core/error_util.h"

namespace tg {
namespace {

// The process's symbol names: symbol k has dim value kFirstSymbol - k. Names are never removed, so a dim
// value stays valid for the process (a deque keeps references stable while it grows).
struct SymbolTable {
  std::mutex mu;
  std::deque<std::string> names;
  std::unordered_map<std::string, int64_t> index;
  std::unordered_map<int64_t, core::DimExpr> derived;  ///< derived symbols' expressions (core/dim_expr.h)
};

SymbolTable& symbols() {
  static SymbolTable* t = new SymbolTable;  // never destroyed: used from static destructors too
  return *t;
}

constexpr size_t kMaxSymbols = size_t{1} << 20;
constexpr int64_t kFirstSymbol = -(int64_t{1} << 40);  // far from the small negatives users mistype

}  // namespace

bool is_symbolic_dim(int64_t d) {
  if (d > kFirstSymbol || d <= kFirstSymbol - static_cast<int64_t>(kMaxSymbols)) return false;
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mu);
  return static_cast<uint64_t>(kFirstSymbol - d) < t.names.size();
}

namespace {

// The symbol of key `key` (t.mu held), interned now if new, shown as `name` (its key for
// symbolic_dim; a derived symbol's key adds its bound, so its name may repeat).
int64_t intern(SymbolTable& t, std::string_view key, std::string_view name) {
  auto it = t.index.find(std::string(key));
  if (it != t.index.end()) return it->second;
  if (t.names.size() >= kMaxSymbols) {
    fail(ErrorCode::invalid_argument, "symbolic_dim", "more than {} symbol names", kMaxSymbols);
  }
  const int64_t d = kFirstSymbol - static_cast<int64_t>(t.names.size());
  t.names.emplace_back(name);
  t.index.emplace(std::string(key), d);
  return d;
}

}  // namespace

int64_t symbolic_dim(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '.' || c == ':' || c == '[' || c == ']');
  }
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mu);
  if (!ok) {
    // A derived symbol's name (its expression): the one with the smallest bound. Its key is the
    // name when the bound is 0, else "name|lo=N".
    int64_t found = 0, lo = 0;
    for (const auto& [d, e] : t.derived) {
      if (t.names[static_cast<size_t>(kFirstSymbol - d)] == name && (found == 0 || e.lo < lo)) found = d, lo = e.lo;
    }
    if (found != 0) return found;
    fail(ErrorCode::invalid_argument, "symbolic_dim",
         "name '{}' must be 1 to 64 letters, digits or '_.:[]' (or a derived symbol's, such as '(h+1)/2')",
         std::string(name.substr(0, 80)));
  }
  return intern(t, name, name);
}

std::optional<SymbolicDimExpr> symbolic_dim_expr(int64_t d) {
  const std::optional<core::DimExpr> e = core::derived_dim(d);
  if (!e) return std::nullopt;
  return SymbolicDimExpr{e->base, e->a, e->b, e->c, e->lo};
}

namespace core {

std::optional<DimExpr> derived_dim(int64_t d) {
  if (d > kFirstSymbol || d <= kFirstSymbol - static_cast<int64_t>(kMaxSymbols)) return std::nullopt;
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mu);
  auto it = t.derived.find(d);
  if (it == t.derived.end()) return std::nullopt;
  return it->second;
}

int64_t affine_dim(int64_t d, int64_t a, int64_t b, int64_t c, int64_t lo) {
  if (d >= 0) {
    const int64_t n = a * d + b;
    return n >= 0 ? n / c : -((-n + c - 1) / c);
  }
  if (!is_symbolic_dim(d) || a < 1 || c < 1) return -1;
  DimExpr e{d, 1, 0, 1, 0};
  if (std::optional<DimExpr> inner = derived_dim(d)) e = *inner;
  // floor((a * floor((e.a s + e.b) / e.c) + b) / c) in the form, when it is one.
  DimExpr r{e.base, 0, 0, 0, e.lo};
  bool over = false;
  auto mul = [&](int64_t x, int64_t y) {
    int64_t z = 0;
    over = over || __builtin_mul_overflow(x, y, &z);
    return z;
  };
  auto add = [&](int64_t x, int64_t y) {
    int64_t z = 0;
    over = over || __builtin_add_overflow(x, y, &z);
    return z;
  };
  if (a == 1) {  // floor((floor(x / e.c) + b) / c) = floor((x + b e.c) / (e.c c))
    r.a = e.a, r.b = add(e.b, mul(b, e.c)), r.c = mul(e.c, c);
  } else if (e.c == 1) {
    r.a = mul(a, e.a), r.b = add(mul(a, e.b), b), r.c = c;
  } else {
    return -1;
  }
  // d (as an input of this step) is the op's size for d >= lo: the base's bound for that.
  if (lo > 0) {  // e.a s + e.b >= lo e.c suffices (floor((e.a s + e.b) / e.c) >= lo)
    const int64_t need = add(mul(lo, e.c), -e.b);
    r.lo = std::max(r.lo, need <= 0 ? 0 : (need + e.a - 1) / e.a);
  }
  constexpr int64_t kMax = int64_t{1} << 30;
  if (over || r.a > kMax || r.c > kMax || r.b > kMax || r.b < -kMax || r.lo > kMax) return -1;
  const int64_t g = std::gcd(std::gcd(r.a, r.c), r.b < 0 ? -r.b : r.b);
  if (g > 1) r.a /= g, r.b /= g, r.c /= g;
  if (r.a == 1 && r.b == 0 && r.c == 1) return e.base;
  const std::string base = dim_name(e.base);
  const std::string scaled = r.a == 1 ? base : fmt::format("{}*{}", r.a, base);
  const std::string num = r.b == 0 ? scaled : fmt::format("{}{}{}", scaled, r.b > 0 ? '+' : '-', r.b > 0 ? r.b : -r.b);
  const std::string name = r.c == 1 ? num : r.b != 0 ? fmt::format("({})/{}", num, r.c) : fmt::format("{}/{}", num, r.c);
  // One symbol per expression and bound: the same expression from ops with other bounds (x[1:]
  // holds from 1, a valid 2-wide window from 2) is another symbol of the same name, so no graph
  // changes another's bounds.
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mu);
  const int64_t out = intern(t, r.lo == 0 ? name : fmt::format("{}|lo={}", name, r.lo), name);
  t.derived.emplace(out, r);
  return out;
}

int64_t add_dims(int64_t x, int64_t y) {
  if (x >= 0 && y >= 0) return x + y;
  if (x >= 0 || y >= 0) return affine_dim(x >= 0 ? y : x, 1, x >= 0 ? x : y, 1);
  if (!is_symbolic_dim(x) || !is_symbolic_dim(y)) return -1;
  auto expr = [](int64_t d) { return derived_dim(d).value_or(DimExpr{d, 1, 0, 1, 0}); };
  const DimExpr ex = expr(x), ey = expr(y);
  if (ex.base != ey.base || ex.c != 1 || ey.c != 1) return -1;
  return affine_dim(ex.base, ex.a + ey.a, ex.b + ey.b, 1, std::max(ex.lo, ey.lo));
}

}  // namespace core

std::string dim_name(int64_t d) {
  if (d == -1) return "?";
  if (d <= kFirstSymbol && d > kFirstSymbol - static_cast<int64_t>(kMaxSymbols)) {
    SymbolTable& t = symbols();
    std::lock_guard lock(t.mu);
    const uint64_t k = static_cast<uint64_t>(kFirstSymbol - d);
    if (k < t.names.size()) return t.names[k];
  }
  return std::to_string(d);
}

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

bool is_static(const Shape& s) {
  for (int64_t d : s) {
    if (d < 0) return false;
  }
  return true;
}

bool is_known(const Shape& s) {
  for (int64_t d : s) {
    if (d == -1) return false;
  }
  return true;
}

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    // -1 prints as "?", symbols by name; negative values that name no symbol are invalid and print
    // as numbers so that error messages show them.
    out += s[i] >= 0 ? std::to_string(s[i]) : dim_name(s[i]);
  }
  return out + "]";
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + shape_to_string(shape);
}

}  // namespace tg
