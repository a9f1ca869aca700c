#include "runtime/tgx_format.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error_util.h"
#include "core/parallel.h"
#include "runtime/crc32.h"
#include "tg/shape.h"

namespace tg::runtime::tgx {

uint64_t checksum(std::string_view bytes, uint32_t version) {
  if (version >= 2) {
    // CRC-32 of chunks in parallel, combined (crc32_combine): the same value as one pass.
    constexpr int64_t kChunk = int64_t{4} << 20;
    const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
    const int64_t n = static_cast<int64_t>(bytes.size());
    const int64_t chunks = std::max<int64_t>(1, (n + kChunk - 1) / kChunk);
    if (chunks == 1) return crc32(0, data, bytes.size());
    std::vector<uLong> crcs(static_cast<size_t>(chunks));
    core::parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
        crcs[static_cast<size_t>(c)] = crc32(0, data + lo, static_cast<size_t>(hi - lo));
      }
    });
    uLong crc = crcs[0];
    for (int64_t c = 1; c < chunks; ++c) {
      const int64_t len = std::min(n, (c + 1) * kChunk) - c * kChunk;
      crc = crc32_combine(crc, crcs[static_cast<size_t>(c)], static_cast<z_off_t>(len));
    }
    return crc;
  }
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

Layout read_layout(std::span<const uint8_t> bytes, const std::string& file) {
  const size_t n = bytes.size();
  if (n < 12) fail(ErrorCode::io_error, "load", "{}: truncated in section 'file header' ({} bytes, needs 12)", file, n);
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    fail(ErrorCode::io_error, "load", "{}: not a saved executable: wrong magic in section 'file header' (expected \"{}\")",
         file, kMagic);
  }
  Layout l;
  l.version = static_cast<uint32_t>(le(bytes.data() + 4, 4));
  if (l.version == 0) {  // never written: a damaged file, not one from a newer TensorGraph
    fail(ErrorCode::io_error, "load",
         "{}: section 'file header': format version 0 is not one this build reads (1..{}; the file is corrupt)", file,
         kFormatVersion);
  }
  if (l.version > kFormatVersion) {
    fail(ErrorCode::unsupported, "load", "{}: section 'file header': format version {} is not one this build reads (1..{})",
         file, l.version, kFormatVersion);
  }
  const uint64_t count = le(bytes.data() + 8, 4);
  size_t at = 12;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string which = l.sections.empty() ? fmt::format("#{}", i) : fmt::format("#{} (after '{}')", i, l.sections.back().name);
    if (n - at < 4) fail(ErrorCode::io_error, "load", "{}: truncated in section {}: no name", file, which);
    const uint64_t name_len = le(bytes.data() + at, 4);
    at += 4;
    if (name_len > 64) fail(ErrorCode::io_error, "load", "{}: corrupt section name in section {}", file, which);
    if (n - at < name_len) fail(ErrorCode::io_error, "load", "{}: truncated in section {}: no name", file, which);
    Section s;
    s.name.assign(reinterpret_cast<const char*>(bytes.data() + at), name_len);
    for (char c : s.name) {
      if (c < 0x20 || c > 0x7e) fail(ErrorCode::io_error, "load", "{}: corrupt section name in section {}", file, which);
    }
    at += name_len;
    if (n - at < 16) {
      fail(ErrorCode::io_error, "load", "{}: truncated in section '{}' (no length and checksum)", file, s.name);
    }
    const uint64_t length = le(bytes.data() + at, 8);
    s.checksum = le(bytes.data() + at + 8, 8);
    at += 16;
    if (length > n - at) {
      fail(ErrorCode::io_error, "load", "{}: truncated in section '{}' ({} bytes declared, {} left in the file)", file,
           s.name, length, n - at);
    }
    s.offset = at;
    s.length = static_cast<size_t>(length);
    at += s.length;
    l.sections.push_back(std::move(s));
  }
  if (at != n) fail(ErrorCode::io_error, "load", "{}: {} bytes after the last section '{}'", file, n - at,
                    l.sections.empty() ? "file header" : l.sections.back().name);
  return l;
}

void repair_checksums(std::vector<uint8_t>& bytes, const std::string& file) {
  const Layout l = read_layout(bytes, file);
  for (const Section& s : l.sections) {
    const uint64_t sum = checksum({reinterpret_cast<const char*>(bytes.data()) + s.offset, s.length}, l.version);
    for (int i = 0; i < 8; ++i) bytes[s.offset - 8 + static_cast<size_t>(i)] = static_cast<uint8_t>(sum >> (8 * i));
  }
}

std::vector<uint8_t> write_file(const std::vector<std::pair<std::string, std::string>>& sections,
                                uint32_t version) {
  Writer w;
  w.bytes(kMagic.data(), kMagic.size());
  w.u32(version);
  w.u32(static_cast<uint32_t>(sections.size()));
  for (const auto& [name, payload] : sections) {
    w.u32(static_cast<uint32_t>(name.size()));
    w.bytes(name.data(), name.size());
    w.u64(payload.size());
    w.u64(checksum(payload, version));
    w.bytes(payload.data(), payload.size());
  }
  return std::vector<uint8_t>(w.out().begin(), w.out().end());
}

std::map<std::string, std::string> parse_header(std::string_view text, const std::string& file) {
  std::map<std::string, std::string> h;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      fail(ErrorCode::io_error, "load", "{}: section 'header' malformed: line without '='", file);
    }
    h[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return h;
}

void Writer::note_symbol(int64_t d) {
  if (is_symbolic_dim(d) && !symbols_.count(d)) symbols_.emplace(d, dim_name(d));
}

void Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
}
void Writer::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
}
void Writer::f64(double v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, 8);
  u64(b);
}
void Writer::str(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  bytes(s.data(), s.size());
}

void Reader::malformed(const std::string& what) const {
  fail(ErrorCode::io_error, "load", "{}: section '{}' malformed: {}", file_, section_, what);
}

std::string_view Reader::bytes(size_t n) {
  if (n > remaining()) malformed(fmt::format("needs {} bytes at offset {}, {} left", n, pos_, remaining()));
  std::string_view v = data_.substr(pos_, n);
  pos_ += n;
  return v;
}
uint8_t Reader::u8() { return static_cast<uint8_t>(bytes(1)[0]); }
uint32_t Reader::u32() {
  auto b = bytes(4);
  return static_cast<uint32_t>(le(reinterpret_cast<const uint8_t*>(b.data()), 4));
}
uint64_t Reader::u64() {
  auto b = bytes(8);
  return le(reinterpret_cast<const uint8_t*>(b.data()), 8);
}
double Reader::f64() {
  const uint64_t b = u64();
  double v = 0;
  std::memcpy(&v, &b, 8);
  return v;
}
std::string Reader::str() {
  const uint32_t n = u32();
  return std::string(bytes(n));
}
size_t Reader::count(size_t min_item_bytes) {
  const uint32_t n = u32();
  if (min_item_bytes > 0 && n > remaining() / min_item_bytes) {
    malformed(fmt::format("a count of {} items does not fit in the {} bytes left", n, remaining()));
  }
  return n;
}

}  // namespace tg::runtime::tgx
