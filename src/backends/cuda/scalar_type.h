// DType -> the element type enum of the precompiled kernels' launchers (kernels/reduce.h).
#pragma once
#include "backends/cuda/kernels/reduce.h"
#include "tg/dtype.h"

namespace tg::cuda {

inline kernels::ScalarType scalar_type(DType d) {
  using S = kernels::ScalarType;
  switch (d) {
    case DType::bool_: return S::bool_;
    case DType::i8: return S::i8;
    case DType::u8: return S::u8;
    case DType::i32: return S::i32;
    case DType::i64: return S::i64;
    case DType::f16: return S::f16;
    case DType::bf16: return S::bf16;
    case DType::f32: return S::f32;
    case DType::f64: return S::f64;
  }
  return S::f32;
}

}  // namespace tg::cuda
