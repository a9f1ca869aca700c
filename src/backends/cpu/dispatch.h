// Dtype dispatch and per-dtype helpers for CPU kernels.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/error_util.h"
#include "tg/dtype.h"

namespace tg::cpu {

/// Arithmetic type used to compute on storage type T: float for f16/bf16, T otherwise.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>, float, T>;

template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<compute_t<T>>;

/// Dtype groups a kernel accepts.
enum class DTypeGroup { all, numeric, floating, integer, boolean };

template <DTypeGroup G, typename T>
inline constexpr bool in_group_v =
    G == DTypeGroup::all ||
    (G == DTypeGroup::numeric && !std::is_same_v<T, bool>) ||
    (G == DTypeGroup::floating && is_float_v<T>) ||
    (G == DTypeGroup::integer && std::is_integral_v<T> && !std::is_same_v<T, bool>) ||
    (G == DTypeGroup::boolean && std::is_same_v<T, bool>);

/// Calls f(T{}) with T the C++ storage type of `dtype` (bool, int8_t, uint8_t, int32_t, int64_t,
/// f16_t, bf16_t, float, double) when dtype is in group G; only those instantiations are
/// compiled. Raises tg::Error(dtype_mismatch) "[op] dtype X is not supported" otherwise.
template <DTypeGroup G, typename F>
void dispatch(DType dtype, const char* op, F&& f) {
  bool done = false;
  auto call = [&](auto tag) {
    using T = decltype(tag);
    if constexpr (in_group_v<G, T>) {
      f(tag);
      done = true;
    }
  };
  switch (dtype) {
    case DType::bool_: call(bool{}); break;
    case DType::i8: call(int8_t{}); break;
    case DType::u8: call(uint8_t{}); break;
    case DType::i32: call(int32_t{}); break;
    case DType::i64: call(int64_t{}); break;
    case DType::f16: call(f16_t{}); break;
    case DType::bf16: call(bf16_t{}); break;
    case DType::f32: call(float{}); break;
    case DType::f64: call(double{}); break;
  }
  if (!done) fail(ErrorCode::dtype_mismatch, op, "dtype {} is not supported", dtype_name(dtype));
}

}  // namespace tg::cpu
