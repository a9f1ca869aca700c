// The .tgx checksum's CRC-32 (src/runtime/crc32.h): zlib's values, on every length around the
// carry-less multiplication path's steps (64-byte blocks, 16-byte tail, bytes after it), at
// unaligned addresses and continued from a running CRC.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/crc32.h"

namespace {

using tg::runtime::tgx::crc32;

TEST(TgxCrc32, CheckValueAndZlibsOnEveryShortLength) {
  const char* check = "123456789";  // the CRC-32 check value (IEEE 802.3, as zlib): 0xCBF43926
  EXPECT_EQ(crc32(0, reinterpret_cast<const uint8_t*>(check), std::strlen(check)), 0xCBF43926u);
  EXPECT_EQ(crc32(0, nullptr, 0), 0u);
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(4096 + 3);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (size_t n = 0; n <= 1100; ++n) {
    for (size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {
      const uint32_t start = n % 3 == 0 ? 0u : static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32(start, bytes.data() + offset, n),
                static_cast<uint32_t>(crc32_z(start, bytes.data() + offset, n)))
          << "n=" << n << " offset=" << offset << " start=" << start;
    }
  }
}

TEST(TgxCrc32, LargeBufferInPiecesEqualsOnePass) {
  std::vector<uint8_t> bytes((size_t{3} << 20) + 77);
  std::mt19937 rng(11);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const auto want = static_cast<uint32_t>(crc32_z(0, bytes.data(), bytes.size()));
  EXPECT_EQ(crc32(0, bytes.data(), bytes.size()), want);
  uint32_t running = 0;  // continued piece by piece, as a stream
  for (size_t at = 0; at < bytes.size(); at += 100003) {
    running = crc32(running, bytes.data() + at, std::min<size_t>(100003, bytes.size() - at));
  }
  EXPECT_EQ(running, want);
}

}  // namespace
