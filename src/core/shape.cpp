#include "tg/shape.h"

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/error_util.h"

namespace tg {
namespace {

// The process's symbol names: symbol k has dim value kFirstSymbol - k. Names are never removed, so a dim
// value stays valid for the process (a deque keeps references stable while it grows).
struct SymbolTable {
  std::mutex mu;
  std::deque<std::string> names;
  std::unordered_map<std::string, int64_t> index;
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

int64_t symbolic_dim(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '.' || c == ':' || c == '[' || c == ']');
  }
  if (!ok) {
    fail(ErrorCode::invalid_argument, "symbolic_dim",
         "name '{}' must be 1 to 64 letters, digits or '_.:[]'", std::string(name.substr(0, 80)));
  }
  SymbolTable& t = symbols();
  std::lock_guard lock(t.mu);
  auto it = t.index.find(std::string(name));
  if (it != t.index.end()) return it->second;
  if (t.names.size() >= kMaxSymbols) {
    fail(ErrorCode::invalid_argument, "symbolic_dim", "more than {} symbol names", kMaxSymbols);
  }
  const int64_t d = kFirstSymbol - static_cast<int64_t>(t.names.size());
  t.names.emplace_back(name);
  t.index.emplace(std::string(name), d);
  return d;
}

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
