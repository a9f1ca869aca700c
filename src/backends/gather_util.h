// Host-side helpers shared by the CPU and CUDA gather/scatter kernels (backends/<backend>/gather.cpp).
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "core/error_util.h"
#include "tg/shape.h"

namespace tg::backends {

/// Product of dims [begin, end) of s.
inline int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= s[d];
  return p;
}

/// Position of flat element `i` of `shape`, as "[1,0,2]" (for error messages).
inline std::string position(const Shape& shape, int64_t i) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = shape[d] == 0 ? 0 : i % shape[d];
    i = shape[d] == 0 ? 0 : i / shape[d];
  }
  return fmt::format("[{}]", fmt::join(c, ","));
}

/// Checks indices.shape[d] <= x.shape[d] for d != axis (inference checks it too; kernels never
/// trust shapes they index with); tg::Error(shape_mismatch) naming `op` otherwise.
inline void check_element_shapes(const Shape& xs, const Shape& is, int64_t axis, const char* op) {
  bool ok = xs.size() == is.size();
  for (size_t d = 0; ok && d < xs.size(); ++d) ok = static_cast<int64_t>(d) == axis || is[d] <= xs[d];
  if (!ok) fail(ErrorCode::shape_mismatch, op, "indices shape {} does not fit {}", str(is), str(xs));
}

}  // namespace tg::backends
