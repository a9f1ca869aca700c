// Element types of tensors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tg/export.h"
#include "tg/half.h"

namespace tg {

/// Element type of a tensor. f16 and bf16 are stored in 16 bits and computed in f32.
enum class DType : uint8_t { bool_, i8, u8, i32, i64, f16, bf16, f32, f64 };

inline constexpr DType kAllDTypes[] = {DType::bool_, DType::i8,   DType::u8,  DType::i32, DType::i64,
                                       DType::f16,   DType::bf16, DType::f32, DType::f64};

/// Size of one element in bytes (bool is one byte).
TG_API size_t dtype_size(DType t);
/// Lower-case name: "bool", "i8", "u8", "i32", "i64", "f16", "bf16", "f32", "f64".
TG_API std::string_view dtype_name(DType t);
/// Parses a name produced by dtype_name; raises tg::Error(invalid_argument) otherwise.
TG_API DType dtype_from_name(std::string_view name);
/// f16, bf16, f32, f64.
TG_API bool is_floating(DType t);
/// i8, u8, i32, i64.
TG_API bool is_integer(DType t);
/// Integers and floats (everything but bool).
inline bool is_numeric(DType t) { return t != DType::bool_; }
/// Signed integers and floats.
TG_API bool is_signed(DType t);

/// Maps a C++ element type to its DType: bool, int8_t, uint8_t, int32_t, int64_t, f16_t, bf16_t,
/// float, double.
template <typename T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<f16_t> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bf16_t> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <typename T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace tg
