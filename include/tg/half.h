// 16-bit floating-point storage types: IEEE 754 binary16 (f16_t) and bfloat16 (bf16_t).
// Both convert to and from float with round-to-nearest-even; arithmetic is done in float.
#pragma once
#include <bit>
#include <cstdint>

namespace tg {

/// IEEE 754 binary16. Conversion from float rounds to nearest even; overflow gives +-inf.
struct f16_t {
  uint16_t bits = 0;
  f16_t() = default;
  f16_t(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a built-in float type
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
      if (e < -10) return static_cast<uint16_t>(sign);
      mant |= 0x800000u;
      int shift = 14 - e;
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1u))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into inf: correct
    return static_cast<uint16_t>(sign | half);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t out;
    if (exp == 0x1f) {
      out = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {
        int e = -1;
        do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
        out = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
      }
    } else {
      out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    return std::bit_cast<float>(out);
  }
};

/// bfloat16: the upper 16 bits of an IEEE float. Conversion rounds to nearest even; NaN stays NaN.
struct bf16_t {
  uint16_t bits = 0;
  bf16_t() = default;
  bf16_t(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
  static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace tg
