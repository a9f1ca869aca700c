// Shapes and tensor types.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tg/dtype.h"
#include "tg/export.h"

namespace tg {

/// Dimensions of a tensor, outermost first (row-major). -1 marks a dimension unknown until run
/// time (a "dynamic" dim). A scalar has the empty shape {}.
using Shape = std::vector<int64_t>;

/// Number of elements (1 for a scalar); -1 when any dim is dynamic.
TG_API int64_t num_elements(const Shape& s);
/// True when no dim is -1.
TG_API bool is_static(const Shape& s);
/// "[2,3,4]"; dynamic dims (-1) print as "?" (other negative, invalid, dims as numbers).
TG_API std::string shape_to_string(const Shape& s);
/// Row-major strides in elements, e.g. {12,4,1} for [2,3,4].
TG_API std::vector<int64_t> row_major_strides(const Shape& s);

/// Element type and shape of a tensor value.
struct TG_API TensorType {
  Shape shape;
  DType dtype = DType::f32;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// "f32[2,3]".
  std::string to_string() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

}  // namespace tg
