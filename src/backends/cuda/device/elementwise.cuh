// Device code of the elementwise kernels (unary, binary, ternary, cast, fill, iota), shared by the
// run-time generated kernels (NVRTC sees this file embedded as text, see nvrtc/compiler.h) and
// precompiled ones (nvcc). No host or CUDA headers: NVRTC may lack cuda_fp16.h, so f16 and bf16
// are plain 16-bit structs converted by hand:
//   bf16 <-> float: bit shifts, float -> bf16 rounds to nearest even, NaN stays a quiet NaN (the
//                   same bits as tg::bf16_t on the host);
//   f16  <-> float: the PTX cvt instructions (cvt.f32.f16 exact, cvt.rn.f16.f32 round to nearest
//                   even with subnormals and overflow to inf, like tg::f16_t).
// Storage types: bool (one byte 0/1), signed char, unsigned char, int, long long, f16, bf16, float,
// double. Arithmetic happens in the compute type (float for f16/bf16, the type itself otherwise)
// and is rounded once to the storage type, exactly like the CPU kernels
// (src/backends/cpu/{unary,binary,ternary,cast}.cpp): the functors below mirror them line by line
// (integer wrap-around through unsigned types, NaN-propagating maximum/minimum/clamp, ties-to-even
// round, Python floor_mod/floor_div, saturating float -> int casts with NaN -> 0).
// Integer division by zero is not computed: the checked wrappers set *flag and return 0; the host
// raises the error after the kernel.
// Transcendentals use CUDA's libdevice functions (a few ulp from glibc at most) compiled without
// fast-math and without FMA contraction (see nvrtc/compiler.cpp), so +, -, *, / and sqrt are IEEE.
#pragma once
#include "common.cuh"

namespace tg_dev {

// ---- small traits (no <type_traits> under NVRTC) ----------------------------------------------

template <class A, class B> struct is_same { static constexpr bool value = false; };
template <class A> struct is_same<A, A> { static constexpr bool value = true; };

/// Numeric properties of a compute type: is_int (integers, not bool), is_float, is_signed;
/// for integers U (same-width unsigned), W (unsigned type for squaring, >= 32 bits), digits,
/// lo and hi (the range).
template <class T> struct Num {
  static constexpr bool is_int = false, is_float = false, is_signed = false;
};
#define TG_DEV_INT_NUM(T, UT, WT, SIGNED, DIGITS, LO, HI)                         \
  template <> struct Num<T> {                                                     \
    static constexpr bool is_int = true, is_float = false, is_signed = SIGNED;   \
    typedef UT U;                                                                 \
    typedef WT W;                                                                 \
    static constexpr int digits = DIGITS;                                         \
    static TG_DEVICE_INLINE T lo() { return LO; }                                 \
    static TG_DEVICE_INLINE T hi() { return HI; }                                 \
  };
TG_DEV_INT_NUM(signed char, unsigned char, unsigned int, true, 7, (signed char)(-128), (signed char)127)
TG_DEV_INT_NUM(unsigned char, unsigned char, unsigned int, false, 8, (unsigned char)0, (unsigned char)255)
TG_DEV_INT_NUM(int, unsigned int, unsigned int, true, 31, (-2147483647 - 1), 2147483647)
TG_DEV_INT_NUM(long long, unsigned long long, unsigned long long, true, 63,
               (-9223372036854775807LL - 1), 9223372036854775807LL)
#undef TG_DEV_INT_NUM
template <> struct Num<float> { static constexpr bool is_int = false, is_float = true, is_signed = true; };
template <> struct Num<double> { static constexpr bool is_int = false, is_float = true, is_signed = true; };

// ---- 16-bit floats --------------------------------------------------------------------------------

struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };

#ifdef TG_HOST_EMULATION  // tools/kernel_emu compiles generated kernels for the host (its shim.h)
TG_DEVICE_INLINE float f16_bits_to_float(unsigned short h) { return tg_emu::f16_bits_to_float(h); }
TG_DEVICE_INLINE unsigned short float_to_f16_bits(float f) { return tg_emu::float_to_f16_bits(f); }
#else
TG_DEVICE_INLINE float f16_bits_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
TG_DEVICE_INLINE unsigned short float_to_f16_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
TG_DEVICE_INLINE float bf16_bits_to_float(unsigned short h) { return __uint_as_float(static_cast<unsigned>(h) << 16); }
TG_DEVICE_INLINE unsigned short float_to_bf16_bits(float f) {
  const unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<unsigned short>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// Compute type of a storage type.
template <class T> struct Compute { typedef T type; };
template <> struct Compute<f16> { typedef float type; };
template <> struct Compute<bf16> { typedef float type; };

/// Storage value -> compute value.
template <class T> TG_DEVICE_INLINE T cv(T x) { return x; }
TG_DEVICE_INLINE float cv(f16 x) { return f16_bits_to_float(x.bits); }
TG_DEVICE_INLINE float cv(bf16 x) { return bf16_bits_to_float(x.bits); }

/// Compute value -> storage type T (one rounding for f16/bf16).
template <class T> struct Store {
  template <class C> static TG_DEVICE_INLINE T from(C c) { return static_cast<T>(c); }
};
template <> struct Store<f16> {
  static TG_DEVICE_INLINE f16 from(float c) { f16 r; r.bits = float_to_f16_bits(c); return r; }
};
template <> struct Store<bf16> {
  static TG_DEVICE_INLINE bf16 from(float c) { bf16 r; r.bits = float_to_bf16_bits(c); return r; }
};
template <class T, class C> TG_DEVICE_INLINE T st(C c) { return Store<T>::from(c); }

/// The low sizeof(T) bytes of `bits` as a T (fill values are passed as raw bits).
template <class T> TG_DEVICE_INLINE T from_bits(long long bits) {
  union { unsigned long long u; T t; } x;
  x.u = static_cast<unsigned long long>(bits);
  return x.t;
}

/// N consecutive elements loaded or stored as one aligned vector (16 bytes at most).
template <class T, int N> struct alignas(sizeof(T) * N) Pack { T v[N]; };

// ---- math overloads (float and double) ---------------------------------------------------------

#define TG_DEV_MATH1(name, f32, f64)                                   \
  TG_DEVICE_INLINE float name(float v) { return f32(v); }              \
  TG_DEVICE_INLINE double name(double v) { return f64(v); }
TG_DEV_MATH1(m_exp, expf, exp)
TG_DEV_MATH1(m_log, logf, log)
TG_DEV_MATH1(m_log1p, log1pf, log1p)
TG_DEV_MATH1(m_expm1, expm1f, expm1)
TG_DEV_MATH1(m_sqrt, sqrtf, sqrt)
TG_DEV_MATH1(m_sin, sinf, sin)
TG_DEV_MATH1(m_cos, cosf, cos)
TG_DEV_MATH1(m_tan, tanf, tan)
TG_DEV_MATH1(m_tanh, tanhf, tanh)
TG_DEV_MATH1(m_erf, erff, erf)
TG_DEV_MATH1(m_floor, floorf, floor)
TG_DEV_MATH1(m_ceil, ceilf, ceil)
TG_DEV_MATH1(m_rint, rintf, rint)  // ties to even, like std::nearbyint in the default mode
#undef TG_DEV_MATH1
TG_DEVICE_INLINE float m_fmod(float a, float b) { return fmodf(a, b); }
TG_DEVICE_INLINE double m_fmod(double a, double b) { return fmod(a, b); }
TG_DEVICE_INLINE float m_pow(float a, float b) { return powf(a, b); }
TG_DEVICE_INLINE double m_pow(double a, double b) { return pow(a, b); }
TG_DEVICE_INLINE float m_atan2(float a, float b) { return atan2f(a, b); }
TG_DEVICE_INLINE double m_atan2(double a, double b) { return atan2(a, b); }
TG_DEVICE_INLINE float m_copysign(float a, float b) { return copysignf(a, b); }
TG_DEVICE_INLINE double m_copysign(double a, double b) { return copysign(a, b); }
TG_DEVICE_INLINE bool m_isinf(float v) { return (__float_as_uint(v) & 0x7fffffffu) == 0x7f800000u; }
TG_DEVICE_INLINE bool m_isinf(double v) {
  return (static_cast<unsigned long long>(__double_as_longlong(v)) & 0x7fffffffffffffffULL) == 0x7ff0000000000000ULL;
}

// ---- integer helpers (two's complement wrap-around, no UB) --------------------------------------

template <class T> TG_DEVICE_INLINE T wrap_add(T a, T b) {
  typedef typename Num<T>::U U;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T> TG_DEVICE_INLINE T wrap_sub(T a, T b) {
  typedef typename Num<T>::U U;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T> TG_DEVICE_INLINE T wrap_mul(T a, T b) {
  typedef typename Num<T>::W W;  // >= 32 bits: no int promotion overflow for 8-bit types
  return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
}
template <class T> TG_DEVICE_INLINE T wrap_neg(T a) {
  typedef typename Num<T>::U U;
  return static_cast<T>(static_cast<U>(static_cast<U>(0) - static_cast<U>(a)));
}
/// a / b truncating toward zero, b != 0; MIN / -1 wraps to MIN.
template <class T> TG_DEVICE_INLINE T int_div(T a, T b) {
  if constexpr (Num<T>::is_signed) {
    if (b == T(-1)) return wrap_neg(a);
  }
  return static_cast<T>(a / b);
}
/// C remainder (sign of a), b != 0; anything mod -1 is 0.
template <class T> TG_DEVICE_INLINE T int_mod(T a, T b) {
  if constexpr (Num<T>::is_signed) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}
/// Python remainder (sign of b), b != 0.
template <class T> TG_DEVICE_INLINE T int_floor_mod(T a, T b) {
  T r = int_mod(a, b);
  if constexpr (Num<T>::is_signed) {
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
  }
  return r;
}
/// a / b rounded toward -inf, b != 0.
template <class T> TG_DEVICE_INLINE T int_floor_div(T a, T b) {
  T q = int_div(a, b);
  if constexpr (Num<T>::is_signed) {
    if (b != T(-1) && int_mod(a, b) != 0 && ((a < 0) != (b < 0))) q = static_cast<T>(q - 1);
  }
  return q;
}

// ---- unary functors (compute type in, compute type or bool out) --------------------------------

struct Neg {
  template <class C> TG_DEVICE_INLINE C operator()(C v) const {
    if constexpr (Num<C>::is_int) return wrap_neg(v); else return -v;
  }
};
struct Abs {
  template <class C> TG_DEVICE_INLINE C operator()(C v) const {
    if constexpr (Num<C>::is_int && !Num<C>::is_signed) return v;
    else if constexpr (Num<C>::is_int) return v < C(0) ? wrap_neg(v) : v;
    else return v < C(0) ? -v : (v == C(0) ? C(0) : v);
  }
};
struct Square {
  template <class C> TG_DEVICE_INLINE C operator()(C v) const {
    if constexpr (Num<C>::is_int) return wrap_mul(v, v); else return v * v;
  }
};
struct Sign {
  template <class C> TG_DEVICE_INLINE C operator()(C v) const {
    if constexpr (Num<C>::is_float) {
      if (v != v) return v;
    }
    return static_cast<C>(static_cast<int>(C(0) < v) - static_cast<int>(v < C(0)));
  }
};
#define TG_DEV_UNARY(Name, expr) \
  struct Name { template <class C> TG_DEVICE_INLINE C operator()(C v) const { return expr; } };
TG_DEV_UNARY(Exp, m_exp(v))
TG_DEV_UNARY(Log, m_log(v))
TG_DEV_UNARY(Log1p, m_log1p(v))
TG_DEV_UNARY(Expm1, m_expm1(v))
TG_DEV_UNARY(Sqrt, m_sqrt(v))
TG_DEV_UNARY(Rsqrt, C(1) / m_sqrt(v))
TG_DEV_UNARY(Reciprocal, C(1) / v)
TG_DEV_UNARY(Sin, m_sin(v))
TG_DEV_UNARY(Cos, m_cos(v))
TG_DEV_UNARY(Tan, m_tan(v))
TG_DEV_UNARY(Tanh, m_tanh(v))
TG_DEV_UNARY(Erf, m_erf(v))
TG_DEV_UNARY(Floor, m_floor(v))
TG_DEV_UNARY(Ceil, m_ceil(v))
TG_DEV_UNARY(Round, m_rint(v))
#undef TG_DEV_UNARY
struct Sigmoid {  // stable for large |v|: never evaluates exp of a large positive number
  template <class C> TG_DEVICE_INLINE C operator()(C v) const {
    if (v >= C(0)) return C(1) / (C(1) + m_exp(-v));
    const C e = m_exp(v);
    return e / (C(1) + e);
  }
};
struct LogicalNot { TG_DEVICE_INLINE bool operator()(bool v) const { return !v; } };
struct IsNan { template <class C> TG_DEVICE_INLINE bool operator()(C v) const { return v != v; } };
struct IsInf { template <class C> TG_DEVICE_INLINE bool operator()(C v) const { return m_isinf(v); } };

// ---- binary functors ------------------------------------------------------------------------------

struct Add {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return wrap_add(a, b); else return a + b;
  }
};
struct Sub {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return wrap_sub(a, b); else return a - b;
  }
};
struct Mul {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return wrap_mul(a, b); else return a * b;
  }
};
/// Integer forms assume b != 0 (see checked()).
struct Div {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return int_div(a, b); else return a / b;
  }
};
struct Mod {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return int_mod(a, b); else return m_fmod(a, b);
  }
};
struct FloorMod {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) {
      return int_floor_mod(a, b);
    } else {
      C r = m_fmod(a, b);
      if (r != C(0)) {
        if ((r < C(0)) != (b < C(0))) r += b;
      } else {
        r = m_copysign(C(0), b);
      }
      return r;
    }
  }
};
struct FloorDiv {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return int_floor_div(a, b); else return m_floor(a / b);
  }
};
struct Maximum {  // a NaN a wins; a NaN b loses every comparison
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return a > b ? a : b; else return (a > b || a != a) ? a : b;
  }
};
struct Minimum {
  template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const {
    if constexpr (Num<C>::is_int) return a < b ? a : b; else return (a < b || a != a) ? a : b;
  }
};
struct Pow { template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const { return m_pow(a, b); } };
struct Atan2 { template <class C> TG_DEVICE_INLINE C operator()(C a, C b) const { return m_atan2(a, b); } };
#define TG_DEV_COMPARE(Name, op) \
  struct Name { template <class C> TG_DEVICE_INLINE bool operator()(C a, C b) const { return op; } };
TG_DEV_COMPARE(Equal, a == b)
TG_DEV_COMPARE(NotEqual, a != b)
TG_DEV_COMPARE(Less, a < b)
TG_DEV_COMPARE(LessEqual, a <= b)
TG_DEV_COMPARE(Greater, a > b)
TG_DEV_COMPARE(GreaterEqual, a >= b)
TG_DEV_COMPARE(LogicalAnd, a && b)
TG_DEV_COMPARE(LogicalOr, a || b)
TG_DEV_COMPARE(LogicalXor, a != b)
#undef TG_DEV_COMPARE

// ---- ternary --------------------------------------------------------------------------------------

/// min(max(x, lo), hi) with NaN-propagating max and min; lo > hi gives hi (numpy.clip).
struct Clamp {
  template <class C> TG_DEVICE_INLINE C operator()(C x, C lo, C hi) const {
    if constexpr (Num<C>::is_float) {
      const C m = (x > lo || x != x) ? x : lo;
      return (m < hi || m != m) ? m : hi;
    } else {
      const C m = x > lo ? x : lo;
      return m < hi ? m : hi;
    }
  }
};

// ---- appliers: storage values in, storage value out ----------------------------------------------

template <class Op, class Out, class A> TG_DEVICE_INLINE Out un(A a) { return st<Out>(Op()(cv(a))); }
template <class Op, class Out, class A, class B> TG_DEVICE_INLINE Out bin(A a, B b) {
  return st<Out>(Op()(cv(a), cv(b)));
}
/// Integer division ops: a zero divisor sets *flag and gives 0 (the host raises the error).
template <class Op, class T> TG_DEVICE_INLINE T bin_checked(T a, T b, int* flag) {
  if (b == T(0)) {
    *flag = 1;
    return T(0);
  }
  return Op()(a, b);
}
template <class Op, class Out, class A, class B, class C> TG_DEVICE_INLINE Out tern(A a, B b, C c) {
  return st<Out>(Op()(cv(a), cv(b), cv(c)));
}
template <class T> TG_DEVICE_INLINE T select(bool c, T a, T b) { return c ? a : b; }

// ---- cast -------------------------------------------------------------------------------------------

/// Floating v truncated into integer type I, saturating (+-inf too), NaN -> 0.
template <class I, class C> TG_DEVICE_INLINE I saturate(C v) {
  const C hi = static_cast<C>(1ULL << Num<I>::digits);  // a power of two: exact
  const C lo = Num<I>::is_signed ? -hi : C(0);
  if (v != v) return I(0);
  if (v <= lo) return Num<I>::lo();
  if (v >= hi) return Num<I>::hi();
  return static_cast<I>(v);
}

/// One element of From converted to To as tg::cast does (src/backends/cpu/cast.cpp): x -> bool is
/// x != 0 (NaN -> true); bool -> x is 0 or 1; int -> int wraps; float -> int saturates, NaN -> 0;
/// everything else goes through the compute types (f16/bf16 via float).
template <class To, class From> TG_DEVICE_INLINE To convert(From x) {
  typedef typename Compute<From>::type CF;
  typedef typename Compute<To>::type CT;
  const CF v = cv(x);
  if constexpr (is_same<To, bool>::value) {
    return v != CF(0);
  } else if constexpr (is_same<From, bool>::value) {
    return st<To>(static_cast<CT>(v ? 1 : 0));
  } else if constexpr (Num<CT>::is_int && Num<CF>::is_float) {
    return saturate<To>(v);
  } else {
    return st<To>(static_cast<CT>(v));
  }
}

}  // namespace tg_dev
