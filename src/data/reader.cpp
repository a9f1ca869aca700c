#include "data/reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace tg::data::detail {
namespace {

constexpr unsigned kChunkBytes = 1u << 20;

struct GzCloser {
  void operator()(gzFile_s* f) const {
    if (f) gzclose_r(f);
  }
};

}  // namespace

std::vector<uint8_t> read_file(const std::string& path, std::string_view op) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) file_fail(ErrorCode::not_found, op, path, "no such file");
  if (std::filesystem::is_directory(path, ec)) {
    file_fail(ErrorCode::io_error, op, path, "is a directory, not a file");
  }
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file) file_fail(ErrorCode::io_error, op, path, "cannot open ({})", std::strerror(errno));
  // Buffers sized for the file (small files, e.g. a fuzzer's, cost no 1 MiB allocations); the
  // chunks grow up to kChunkBytes for what decompresses into more.
  const uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  const unsigned fitted = ec ? kChunkBytes : static_cast<unsigned>(std::clamp<uintmax_t>(file_bytes + 1, 8192, kChunkBytes));
  gzbuffer(file.get(), fitted);
  unsigned chunk = fitted;
  std::vector<uint8_t> bytes;
  for (;;) {
    size_t old_size = bytes.size();
    bytes.resize(old_size + chunk);
    int n = gzread(file.get(), bytes.data() + old_size, chunk);
    int errnum = Z_OK;
    const char* message = gzerror(file.get(), &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
      file_fail(ErrorCode::io_error, op, path, "corrupt or truncated gzip data ({})", message);
    }
    bytes.resize(old_size + static_cast<size_t>(n));
    if (n == 0) break;
    chunk = std::min(kChunkBytes, chunk * 2);
  }
  // gzclose_r reports a stream that ended in the middle of a gzip member (a truncated file).
  int status = gzclose_r(file.release());
  if (status != Z_OK) {
    file_fail(ErrorCode::io_error, op, path, "truncated gzip data (zlib status {})", status);
  }
  return bytes;
}

void check_options(const LoadOptions& options, std::string_view op) {
  if (options.layout != Layout::nhwc && options.layout != Layout::nchw) {
    fail(ErrorCode::invalid_argument, op, "layout must be nhwc or nchw");
  }
  if (options.limit < -1) {
    fail(ErrorCode::invalid_argument, op, "limit must be >= 0 or -1 (all), got {}", options.limit);
  }
}

}  // namespace tg::data::detail
