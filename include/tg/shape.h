// Shapes and tensor types.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tg/dtype.h"
#include "tg/export.h"

namespace tg {

/// Dimensions of a tensor, outermost first (row-major). A dim >= 0 is a size; -1 marks a size
/// unknown until run time (a "dynamic" dim); a dim value from symbolic_dim (at or below -2^40) is
/// a named symbolic size: unknown until run time too, but equal wherever the same symbol appears, which
/// lets a graph compiled once for varying sizes (CompileOptions::disable_type_inference) prove
/// dims equal and fuse. A scalar has the empty shape {}.
using Shape = std::vector<int64_t>;

/// The dim value of the symbol named `name` (interned for the process: the same name always gives
/// the same value, -2^40 - k for the k-th name, so small negative dims stay invalid). Names are
/// non-empty and at most 64 characters of letters, digits and `_ . : [ ]`; at most 2^20 names.
/// The name dim_name gives a derived symbol ("(h+1)/2", see SymbolicDimExpr) is accepted too and
/// gives that symbol (of several with that expression and different bounds, the one with the
/// smallest bound), so shapes round-trip through their names. Raises tg::Error(invalid_argument)
/// "[symbolic_dim] ..." for any other name.
/// Example: `int64_t seq = tg::symbolic_dim("seq"); g.placeholder({1, seq}, DType::i64, "ids");`
TG_API int64_t symbolic_dim(std::string_view name);
/// True for the dim value of a symbol made by symbolic_dim (false for -1 and other negatives).
TG_API bool is_symbolic_dim(int64_t d);
/// The name of a symbol's dim value; "?" for -1; for other values, the number.
TG_API std::string dim_name(int64_t d);

/// A derived symbolic dim (docs/design/0009-compile-once.md, "Derived symbols"): the size
/// floor((a * base + b) / c) of the symbol `base` (a >= 1, c >= 1), which is the op's size for
/// base sizes >= lo. Convolutions, pooling, slices to the end, pads and concats make these from a
/// symbol: a 3x3 convolution of stride 2 and padding 1 over height "h" has height "(h+1)/2"
/// (a 1, b 1, c 2).
struct SymbolicDimExpr {
  int64_t base = 0;  ///< a symbol made by symbolic_dim
  int64_t a = 1, b = 0, c = 1;
  int64_t lo = 0;
};
/// The expression of a derived symbolic dim; nullopt for a size, -1 or a symbol made by
/// symbolic_dim. Raises nothing.
TG_API std::optional<SymbolicDimExpr> symbolic_dim_expr(int64_t d);

/// Number of elements (1 for a scalar); -1 when any dim is dynamic or symbolic.
TG_API int64_t num_elements(const Shape& s);
/// True when every dim is a size (>= 0): no -1 and no symbol.
TG_API bool is_static(const Shape& s);
/// True when no dim is -1 (sizes and symbols only): the shape is known up to its symbols.
TG_API bool is_known(const Shape& s);
/// "[2,3,4]"; dynamic dims (-1) print as "?", symbols by name ("[1,seq,768]").
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
