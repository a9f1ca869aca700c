// CPU kernels of the elementwise binary family (NumPy broadcasting via broadcast.h).
//
// Integer arithmetic wraps modulo 2^bits (computed in the unsigned type: no signed-overflow UB);
// INT_MIN / -1 therefore gives INT_MIN and INT_MIN mod -1 gives 0. Integer division by zero is
// detected while computing (the divisor is replaced by a flag, never divided by) and raises
// tg::Error(invalid_argument) "[op] integer division by zero" after the loop.
#include <atomic>
#include <cmath>
#include <type_traits>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"

namespace tg::cpu {
namespace {

using K = ir::OpKind;

/// Elements per chunk for ops that cost tens of cycles per element (pow, atan2, fmod).
constexpr int64_t kSlowGrain = 4096;

// ---- integer helpers (two's complement wrap-around, no UB) ---------------------------------------

template <typename T>
using wide_unsigned_t = std::make_unsigned_t<T>;

template <typename T> T wrap_add(T a, T b) { return static_cast<T>(wide_unsigned_t<T>(a) + wide_unsigned_t<T>(b)); }
template <typename T> T wrap_sub(T a, T b) { return static_cast<T>(wide_unsigned_t<T>(a) - wide_unsigned_t<T>(b)); }
template <typename T> T wrap_mul(T a, T b) { return static_cast<T>(wide_unsigned_t<T>(a) * wide_unsigned_t<T>(b)); }
template <typename T> T wrap_neg(T a) { return static_cast<T>(wide_unsigned_t<T>(0) - wide_unsigned_t<T>(a)); }

/// a / b truncating toward zero, b != 0; MIN / -1 wraps to MIN.
template <typename T> T int_div(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_neg(a);
  }
  return static_cast<T>(a / b);
}
/// C remainder (sign of a), b != 0; anything mod -1 is 0.
template <typename T> T int_mod(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}
/// Python remainder (sign of b), b != 0.
template <typename T> T int_floor_mod(T a, T b) {
  T r = int_mod(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);  // |r| < |b|: no overflow
  }
  return r;
}
/// a / b rounded toward -inf, b != 0.
template <typename T> T int_floor_div(T a, T b) {
  T q = int_div(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (b != T(-1) && int_mod(a, b) != 0 && ((a < 0) != (b < 0))) q = static_cast<T>(q - 1);
  }
  return q;
}

// ---- floating helpers ------------------------------------------------------------------------------

/// Python/NumPy remainder: sign of b; an exact zero takes b's sign.
template <typename C> C float_floor_mod(C a, C b) {
  C r = std::fmod(a, b);
  if (r != C(0)) {
    if ((r < C(0)) != (b < C(0))) r += b;
  } else {
    r = std::copysign(C(0), b);
  }
  return r;
}

// ---- the scalar function of each op ----------------------------------------------------------------

/// True for ops that divide integers (need the zero check).
constexpr bool is_int_division(K k) {
  return k == K::div || k == K::mod || k == K::floor_mod || k == K::floor_div;
}

/// The op on compute-type values; integer division ops assume b != 0.
template <K Op, typename C>
C apply_numeric(C a, C b) {
  constexpr bool kInt = std::is_integral_v<C>;
  if constexpr (Op == K::add) { if constexpr (kInt) return wrap_add(a, b); else return a + b; }
  if constexpr (Op == K::sub) { if constexpr (kInt) return wrap_sub(a, b); else return a - b; }
  if constexpr (Op == K::mul) { if constexpr (kInt) return wrap_mul(a, b); else return a * b; }
  if constexpr (Op == K::div) { if constexpr (kInt) return int_div(a, b); else return a / b; }
  if constexpr (Op == K::maximum) {
    if constexpr (kInt) return a > b ? a : b;
    else return (a > b || a != a) ? a : b;  // a NaN a wins; a NaN b loses every comparison
  }
  if constexpr (Op == K::minimum) {
    if constexpr (kInt) return a < b ? a : b;
    else return (a < b || a != a) ? a : b;
  }
  if constexpr (Op == K::mod) { if constexpr (kInt) return int_mod(a, b); else return std::fmod(a, b); }
  if constexpr (Op == K::floor_mod) {
    if constexpr (kInt) return int_floor_mod(a, b); else return float_floor_mod(a, b);
  }
  if constexpr (Op == K::floor_div) {
    if constexpr (kInt) return int_floor_div(a, b); else return std::floor(a / b);
  }
  if constexpr (Op == K::pow) return std::pow(a, b);
  if constexpr (Op == K::atan2) return std::atan2(a, b);
  return a;
}

template <K Op, typename C>
bool apply_compare(C a, C b) {
  if constexpr (Op == K::equal) return a == b;
  if constexpr (Op == K::not_equal) return a != b;
  if constexpr (Op == K::less) return a < b;
  if constexpr (Op == K::less_equal) return a <= b;
  if constexpr (Op == K::greater) return a > b;
  if constexpr (Op == K::greater_equal) return a >= b;
  if constexpr (Op == K::logical_and) return a && b;
  if constexpr (Op == K::logical_or) return a || b;
  if constexpr (Op == K::logical_xor) return a != b;
  return false;
}

// ---- drivers ---------------------------------------------------------------------------------------

/// y = f(a, b) elementwise with broadcasting; T is the input storage type, O the output's.
template <typename T, typename O, typename F>
void run_binary(KernelContext& ctx, int64_t grain, const F& f) {
  const TensorData& a = ctx.inputs[0];
  const TensorData& b = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  auto plan = plan_broadcast<2>(y.shape(), {&a.shape(), &b.shape()}, ctx.op_name());
  if (plan.num_elements == 0) return;
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  O* py = static_cast<O*>(y.raw_data());
  for_each_row(plan, grain, [&](int64_t o, const auto& in, const auto& st, int64_t n) {
    binary_row(py + o, pa + in[0], st[0], pb + in[1], st[1], n, f);
  });
}

template <K Op>
constexpr int64_t grain_of() {
  return (Op == K::pow || Op == K::atan2 || Op == K::mod || Op == K::floor_mod) ? kSlowGrain : kGrain;
}

template <K Op>
void numeric_kernel(KernelContext& ctx) {
  constexpr auto group = (Op == K::pow || Op == K::atan2) ? DTypeGroup::floating : DTypeGroup::numeric;
  dispatch<group>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C> && is_int_division(Op)) {
      std::atomic<bool> by_zero{false};
      run_binary<T, T>(ctx, kGrain, [&by_zero](T a, T b) -> T {
        if (b == T(0)) {
          by_zero.store(true, std::memory_order_relaxed);
          return T(0);
        }
        return apply_numeric<Op, C>(a, b);
      });
      if (by_zero.load()) fail(ErrorCode::invalid_argument, ctx.op_name(), "integer division by zero");
    } else {
      run_binary<T, T>(ctx, grain_of<Op>(), [](T a, T b) -> T {
        return static_cast<T>(apply_numeric<Op, C>(static_cast<C>(a), static_cast<C>(b)));
      });
    }
  });
}

template <K Op>
void compare_kernel(KernelContext& ctx) {
  constexpr bool kLogical = Op == K::logical_and || Op == K::logical_or || Op == K::logical_xor;
  constexpr auto group = kLogical ? DTypeGroup::boolean : DTypeGroup::all;
  dispatch<group>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    run_binary<T, bool>(ctx, kGrain, [](T a, T b) -> bool {
      return apply_compare<Op, C>(static_cast<C>(a), static_cast<C>(b));
    });
  });
}

}  // namespace

void register_binary_kernels(KernelTable& t) {
  t.set(K::add, numeric_kernel<K::add>);
  t.set(K::sub, numeric_kernel<K::sub>);
  t.set(K::mul, numeric_kernel<K::mul>);
  t.set(K::div, numeric_kernel<K::div>);
  t.set(K::pow, numeric_kernel<K::pow>);
  t.set(K::maximum, numeric_kernel<K::maximum>);
  t.set(K::minimum, numeric_kernel<K::minimum>);
  t.set(K::mod, numeric_kernel<K::mod>);
  t.set(K::floor_mod, numeric_kernel<K::floor_mod>);
  t.set(K::floor_div, numeric_kernel<K::floor_div>);
  t.set(K::atan2, numeric_kernel<K::atan2>);
  t.set(K::equal, compare_kernel<K::equal>);
  t.set(K::not_equal, compare_kernel<K::not_equal>);
  t.set(K::less, compare_kernel<K::less>);
  t.set(K::less_equal, compare_kernel<K::less_equal>);
  t.set(K::greater, compare_kernel<K::greater>);
  t.set(K::greater_equal, compare_kernel<K::greater_equal>);
  t.set(K::logical_and, compare_kernel<K::logical_and>);
  t.set(K::logical_or, compare_kernel<K::logical_or>);
  t.set(K::logical_xor, compare_kernel<K::logical_xor>);
}

}  // namespace tg::cpu
