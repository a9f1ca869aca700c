// CPU kernel of cast: every pair of the 9 dtypes, with fully defined results (no UB).
//   x -> bool:       x != 0 (NaN -> true)
//   bool -> x:       0 or 1
//   int -> int:      modular (two's complement wrap-around), as numpy's astype
//   int -> float:    nearest representable value (f16/bf16 via float)
//   float -> float:  round to nearest even; overflow gives +-inf (f16/bf16 via float)
//   float -> int:    truncate toward zero, saturating to the target's range (+-inf too); NaN -> 0
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"

namespace tg::cpu {
namespace {

/// Floating value v truncated into integer type I, saturating, NaN -> 0.
template <typename I, typename C>
I saturating_float_to_int(C v) {
  // lo and hi are powers of two: exact in every floating type used here.
  constexpr int kDigits = std::numeric_limits<I>::digits;  // 7, 8, 31, 63
  const C hi = std::ldexp(C(1), kDigits);                  // one past the largest value
  const C lo = std::is_signed_v<I> ? -hi : C(0);           // the smallest value
  if (v != v) return I(0);
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);  // v in (lo, hi): truncation lands in range
}

/// One element of From converted to To.
template <typename To, typename From>
To convert(From x) {
  using CF = compute_t<From>;
  using CT = compute_t<To>;
  const CF v = static_cast<CF>(x);
  if constexpr (std::is_same_v<To, bool>) {
    return v != CF(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(static_cast<CT>(v ? 1 : 0));
  } else if constexpr (std::is_integral_v<CT> && std::is_floating_point_v<CF>) {
    return saturating_float_to_int<To>(v);
  } else {
    // int -> int is modular since C++20; int/float -> float rounds to nearest.
    return static_cast<To>(static_cast<CT>(v));
  }
}

void cast_kernel(KernelContext& ctx) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  if (x.type() == y.type()) {  // no-op cast: a copy (the output has its own place in the arena)
    if (x.nbytes() > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  if (x.num_elements() != y.num_elements()) {
    fail(ErrorCode::shape_mismatch, ctx.op_name(), "input shape {} differs from output shape {}",
         str(x.shape()), str(y.shape()));
  }
  if (x.num_elements() == 0) return;
  dispatch<DTypeGroup::all>(x.dtype(), ctx.op_name(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch<DTypeGroup::all>(y.dtype(), ctx.op_name(), [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* src = static_cast<const From*>(x.raw_data());
      To* dst = static_cast<To*>(y.raw_data());
      parallel_for(x.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = convert<To, From>(src[i]);
      });
    });
  });
}

}  // namespace

void register_cast_kernels(KernelTable& t) {
  t.set(ir::OpKind::cast, cast_kernel);
  // stop_gradient is the identity when running: the output shares the input's storage.
  t.set(ir::OpKind::stop_gradient, [](KernelContext& ctx) { ctx.outputs[0] = ctx.inputs[0]; });
}

}  // namespace tg::cpu
