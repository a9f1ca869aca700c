// CRC-32 with carry-less multiplication (crc32.h).
#include "runtime/crc32.h"

#include <zlib.h>

#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TG_CRC32_CLMUL 1
#endif

namespace tg::runtime::tgx {
namespace {

#ifdef TG_CRC32_CLMUL
// acc folded 128 bits forward by the constants k (x^(128+64), x^128 mod P), xor next.
__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i acc, __m128i next, __m128i k) {
  const __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(hi, next), lo);
}

// The CRC of `len` bytes (len >= 64, a multiple of 16) from the bit-inverted state `crc`; returns
// the inverted state (the caller inverts). Four 128-bit lanes folded 64 bytes a step, folded into
// one, then 16 bytes a step, reduced to 64 and then 32 bits (Barrett). Constants: the bit-reflected
// x^(k) mod P(x) of the paper for P = 0x104C11DB7, as in zlib's contrib crc32_simd.c.
__attribute__((target("pclmul,sse4.1"))) uint32_t crc32_clmul(const uint8_t* buf, size_t len, uint32_t crc) {
  alignas(16) static const uint64_t k1k2[] = {0x0154442bd4, 0x01c6e41596};
  alignas(16) static const uint64_t k3k4[] = {0x01751997d0, 0x00ccaa009e};
  alignas(16) static const uint64_t k5k0[] = {0x0163cd6124, 0x0000000000};
  alignas(16) static const uint64_t poly[] = {0x01db710641, 0x01f7011641};
#define load(p) _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))

  __m128i x1 = load(buf + 0x00), x2 = load(buf + 0x10), x3 = load(buf + 0x20), x4 = load(buf + 0x30);
  x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(k1k2));
  buf += 64;
  len -= 64;
  while (len >= 64) {  // four lanes, 64 bytes a step
    const __m128i x5 = _mm_clmulepi64_si128(x1, x0, 0x00), x6 = _mm_clmulepi64_si128(x2, x0, 0x00),
                  x7 = _mm_clmulepi64_si128(x3, x0, 0x00), x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
    x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
    x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
    x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
    x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
    x1 = _mm_xor_si128(_mm_xor_si128(x1, x5), load(buf + 0x00));
    x2 = _mm_xor_si128(_mm_xor_si128(x2, x6), load(buf + 0x10));
    x3 = _mm_xor_si128(_mm_xor_si128(x3, x7), load(buf + 0x20));
    x4 = _mm_xor_si128(_mm_xor_si128(x4, x8), load(buf + 0x30));
    buf += 64;
    len -= 64;
  }
  // The four lanes into one.
  x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(k3k4));
  x1 = fold(x1, x2, x0);
  x1 = fold(x1, x3, x0);
  x1 = fold(x1, x4, x0);
  while (len >= 16) {  // 16 bytes a step
    x1 = fold(x1, load(buf), x0);
    buf += 16;
    len -= 16;
  }
  // 128 bits to 64.
  x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
  x3 = _mm_setr_epi32(~0, 0, ~0, 0);
  x1 = _mm_srli_si128(x1, 8);
  x1 = _mm_xor_si128(x1, x2);
  x0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(k5k0));
  x2 = _mm_srli_si128(x1, 4);
  x1 = _mm_and_si128(x1, x3);
  x1 = _mm_clmulepi64_si128(x1, x0, 0x00);
  x1 = _mm_xor_si128(x1, x2);
  // Barrett reduction to 32 bits.
  x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(poly));
  x2 = _mm_and_si128(x1, x3);
  x2 = _mm_clmulepi64_si128(x2, x0, 0x10);
  x2 = _mm_and_si128(x2, x3);
  x2 = _mm_clmulepi64_si128(x2, x0, 0x00);
  x1 = _mm_xor_si128(x1, x2);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
#undef load
}

// TG_CRC32_CLMUL=0: zlib's loop only (to compare; read once).
bool have_clmul() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
                          !(std::getenv("TG_CRC32_CLMUL") && std::string_view(std::getenv("TG_CRC32_CLMUL")) == "0");
  return yes;
}
#endif

}  // namespace

uint32_t crc32(uint32_t crc, const uint8_t* data, size_t n) {
#ifdef TG_CRC32_CLMUL
  if (n >= 64 && have_clmul()) {
    const size_t head = n & ~size_t{15};
    crc = ~crc32_clmul(data, head, ~crc);
    data += head;
    n -= head;
  }
#endif
  return static_cast<uint32_t>(crc32_z(crc, data, n));
}

}  // namespace tg::runtime::tgx
