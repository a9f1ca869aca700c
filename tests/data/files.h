// Test helpers for tests/data: a temporary directory and writers of raw and gzip'd files, so
// the readers are tested against bytes written out by hand (never by the code under test).
#pragma once
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg::testing {

/// A fresh directory under the system temp dir, removed with its content on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("tg_data_test_" + std::to_string(rd()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// path/name as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

/// The gzip encoding of `bytes` (zlib's gz writer).
inline std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes, const std::string& scratch) {
  gzFile f = gzopen(scratch.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot open " + scratch);
  if (!bytes.empty()) gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  std::ifstream in(scratch, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// Appends `v` as `n` big-endian bytes.
inline void put_be(std::vector<uint8_t>& out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

/// An IDX header: 0, 0, type code, rank, then the dims as big-endian u32.
inline std::vector<uint8_t> idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) put_be(out, d, 4);
  return out;
}

/// A u8 IDX file: header followed by `values`.
inline std::vector<uint8_t> idx_u8(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& values) {
  std::vector<uint8_t> out = idx_header(0x08, dims);
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

}  // namespace tg::testing
