// CRC-32 of the .tgx sections (zlib's crc32: the reflected polynomial 0xEDB88320, the same values),
// with carry-less multiplication (PCLMULQDQ) where the CPU has it. zlib 1.2's table-driven loop
// computed ~3.5 GB/s on one core, ~2.7 times the cost of copying the bytes: it was most of the
// time of reading a .tgx (each reading thread checksums its pieces, src/runtime/tgx_file.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tg::runtime::tgx {

/// zlib's crc32(crc, data, n): the CRC-32 of `n` bytes at `data` continuing from `crc` (0 to
/// start). Folds 64 bytes a step with PCLMULQDQ (Gopal et al., "Fast CRC Computation for Generic
/// Polynomials Using PCLMULQDQ Instruction", Intel 2009; the constants of zlib's
/// crc32_simd.c) when the CPU has it and n >= 64 (TG_CRC32_CLMUL=0: never), zlib for the rest.
uint32_t crc32(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace tg::runtime::tgx
