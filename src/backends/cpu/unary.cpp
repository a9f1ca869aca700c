// CPU kernels of the elementwise unary family.
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"

namespace tg::cpu {
namespace {

// Applies f elementwise: storage In -> compute type -> storage Out.
template <typename In, typename Out, typename F>
void map(const TensorData& x, TensorData& y, F f) {
  const In* a = static_cast<const In*>(x.raw_data());
  Out* b = static_cast<Out*>(y.raw_data());
  parallel_for(x.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) b[i] = static_cast<Out>(f(static_cast<compute_t<In>>(a[i])));
  });
}

template <ir::OpKind K>
void float_kernel(KernelContext& ctx) {
  dispatch<DTypeGroup::floating>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    map<T, T>(ctx.inputs[0], ctx.outputs[0], [](C v) -> C {
      if constexpr (K == ir::OpKind::exp) return std::exp(v);
      if constexpr (K == ir::OpKind::log) return std::log(v);
      if constexpr (K == ir::OpKind::log1p) return std::log1p(v);
      if constexpr (K == ir::OpKind::expm1) return std::expm1(v);
      if constexpr (K == ir::OpKind::sqrt) return std::sqrt(v);
      if constexpr (K == ir::OpKind::rsqrt) return C(1) / std::sqrt(v);
      if constexpr (K == ir::OpKind::reciprocal) return C(1) / v;
      if constexpr (K == ir::OpKind::sin) return std::sin(v);
      if constexpr (K == ir::OpKind::cos) return std::cos(v);
      if constexpr (K == ir::OpKind::tan) return std::tan(v);
      if constexpr (K == ir::OpKind::tanh) return std::tanh(v);
      if constexpr (K == ir::OpKind::sigmoid) {
        // Stable for large |v|: never evaluates exp of a large positive number.
        if (v >= 0) return C(1) / (C(1) + std::exp(-v));
        C e = std::exp(v);
        return e / (C(1) + e);
      }
      if constexpr (K == ir::OpKind::erf) return std::erf(v);
      if constexpr (K == ir::OpKind::floor) return std::floor(v);
      if constexpr (K == ir::OpKind::ceil) return std::ceil(v);
      if constexpr (K == ir::OpKind::round) return std::nearbyint(v);  // default mode: ties to even
      return v;
    });
  });
}

// Integer negation and squaring wrap modulo 2^bits (two's complement) instead of overflowing.
template <typename C>
C wrap_neg(C v) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(U(0) - static_cast<U>(v)));
  } else {
    return -v;
  }
}
template <typename C>
C wrap_square(C v) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<std::common_type_t<C, unsigned>>;
    return static_cast<C>(static_cast<U>(v) * static_cast<U>(v));
  } else {
    return v * v;
  }
}

template <ir::OpKind K>
void numeric_kernel(KernelContext& ctx) {
  dispatch<DTypeGroup::numeric>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    map<T, T>(ctx.inputs[0], ctx.outputs[0], [](C v) -> C {
      if constexpr (K == ir::OpKind::neg) return wrap_neg(v);
      if constexpr (K == ir::OpKind::abs) {
        if constexpr (std::is_unsigned_v<C>) return v;
        else return v < C(0) ? wrap_neg(v) : (v == C(0) ? C(0) : v);
      }
      if constexpr (K == ir::OpKind::square) return wrap_square(v);
      if constexpr (K == ir::OpKind::sign) {
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(v)) return v;
        }
        return static_cast<C>((C(0) < v) - (v < C(0)));
      }
      return v;
    });
  });
}

void logical_not_kernel(KernelContext& ctx) {
  dispatch<DTypeGroup::boolean>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto) {
    map<bool, bool>(ctx.inputs[0], ctx.outputs[0], [](bool v) { return !v; });
  });
}

template <ir::OpKind K>
void classify_kernel(KernelContext& ctx) {
  dispatch<DTypeGroup::floating>(ctx.inputs[0].dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    map<T, bool>(ctx.inputs[0], ctx.outputs[0], [](compute_t<T> v) {
      if constexpr (K == ir::OpKind::is_nan) return std::isnan(v);
      else return std::isinf(v);
    });
  });
}

}  // namespace

void register_unary_kernels(KernelTable& t) {
  using K = ir::OpKind;
  t.set(K::neg, numeric_kernel<K::neg>);
  t.set(K::abs, numeric_kernel<K::abs>);
  t.set(K::sign, numeric_kernel<K::sign>);
  t.set(K::square, numeric_kernel<K::square>);
  t.set(K::exp, float_kernel<K::exp>);
  t.set(K::log, float_kernel<K::log>);
  t.set(K::log1p, float_kernel<K::log1p>);
  t.set(K::expm1, float_kernel<K::expm1>);
  t.set(K::sqrt, float_kernel<K::sqrt>);
  t.set(K::rsqrt, float_kernel<K::rsqrt>);
  t.set(K::reciprocal, float_kernel<K::reciprocal>);
  t.set(K::sin, float_kernel<K::sin>);
  t.set(K::cos, float_kernel<K::cos>);
  t.set(K::tan, float_kernel<K::tan>);
  t.set(K::tanh, float_kernel<K::tanh>);
  t.set(K::sigmoid, float_kernel<K::sigmoid>);
  t.set(K::erf, float_kernel<K::erf>);
  t.set(K::floor, float_kernel<K::floor>);
  t.set(K::ceil, float_kernel<K::ceil>);
  t.set(K::round, float_kernel<K::round>);
  t.set(K::logical_not, logical_not_kernel);
  t.set(K::is_nan, classify_kernel<K::is_nan>);
  t.set(K::is_inf, classify_kernel<K::is_inf>);
}

}  // namespace tg::cpu
