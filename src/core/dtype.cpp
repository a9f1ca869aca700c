#include "tg/dtype.h"

#include <string>

#include "tg/error.h"

namespace tg {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::bool_: case DType::i8: case DType::u8: return 1;
    case DType::f16: case DType::bf16: return 2;
    case DType::i32: case DType::f32: return 4;
    case DType::i64: case DType::f64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bool_: return "bool";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  throw Error(ErrorCode::invalid_argument, "[dtype] unknown dtype name '" + std::string(name) + "'");
}

bool is_floating(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64;
}
bool is_integer(DType t) {
  return t == DType::i8 || t == DType::u8 || t == DType::i32 || t == DType::i64;
}
bool is_signed(DType t) { return is_floating(t) || t == DType::i8 || t == DType::i32 || t == DType::i64; }

}  // namespace tg
