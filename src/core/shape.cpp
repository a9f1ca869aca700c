#include "tg/shape.h"

#include <string>

namespace tg {

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

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    // Only -1 means dynamic; other negative dims are invalid and print as numbers so that error
    // messages show them.
    out += s[i] == -1 ? std::string("?") : std::to_string(s[i]);
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
