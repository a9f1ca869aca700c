// Element conversion helpers for code that is not performance-critical (constants, printing,
// tests). Kernels use typed loops instead.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "tg/dtype.h"

namespace tg {

/// Element i of a buffer of `dtype`, as double.
inline double load_as_double(DType dtype, const void* p, int64_t i) {
  switch (dtype) {
    case DType::bool_: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::f16: return static_cast<float>(static_cast<const f16_t*>(p)[i]);
    case DType::bf16: return static_cast<float>(static_cast<const bf16_t*>(p)[i]);
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f64: return static_cast<const double*>(p)[i];
  }
  return 0;
}

/// v truncated toward zero into integer type I, saturating at I's limits (+-inf too); NaN -> 0.
/// Well-defined for every double, unlike static_cast (as tg::cast on the CPU).
template <typename I>
inline I saturate_to_int(double v) {
  const double hi = std::ldexp(1.0, std::numeric_limits<I>::digits);  // one past the largest
  const double lo = std::numeric_limits<I>::is_signed ? -hi : 0.0;
  if (std::isnan(v)) return I(0);
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

/// Stores `v` as element i, converting like tg::cast (truncation toward zero for integers,
/// saturating, NaN -> 0; v != 0 for bool).
inline void store_from_double(DType dtype, void* p, int64_t i, double v) {
  switch (dtype) {
    case DType::bool_: static_cast<bool*>(p)[i] = v != 0; break;
    case DType::i8: static_cast<int8_t*>(p)[i] = saturate_to_int<int8_t>(v); break;
    case DType::u8: static_cast<uint8_t*>(p)[i] = saturate_to_int<uint8_t>(v); break;
    case DType::i32: static_cast<int32_t*>(p)[i] = saturate_to_int<int32_t>(v); break;
    case DType::i64: static_cast<int64_t*>(p)[i] = saturate_to_int<int64_t>(v); break;
    case DType::f16: static_cast<f16_t*>(p)[i] = f16_t(static_cast<float>(v)); break;
    case DType::bf16: static_cast<bf16_t*>(p)[i] = bf16_t(static_cast<float>(v)); break;
    case DType::f32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(p)[i] = v; break;
  }
}

}  // namespace tg
