// Helpers shared by the dataset readers of src/data: whole-file reading (gzip or plain) and
// option checks. Errors follow the project's form "[op] <file>: what is wrong".
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error_util.h"
#include "tg/data.h"

namespace tg::data::detail {

/// Raises tg::Error(code, "[op] path: message").
template <typename... Args>
[[noreturn]] void file_fail(ErrorCode code, std::string_view op, const std::string& path,
                            fmt::format_string<Args...> f, Args&&... args) {
  fail(code, op, "{}: {}", path, fmt::format(f, std::forward<Args>(args)...));
}

/// The whole content of `path`, decompressed when it is gzip (detected by zlib from the content;
/// other files are read as they are). Raises tg::Error "[op] path: ..." with not_found for a
/// missing file and io_error for a directory, an unreadable file or a corrupt/truncated gzip
/// stream.
std::vector<uint8_t> read_file(const std::string& path, std::string_view op);

/// Raises tg::Error(invalid_argument) "[op] ..." unless layout is nhwc or nchw and
/// options.limit >= -1.
void check_options(const LoadOptions& options, std::string_view op);

/// Number of examples to keep of `available` under options.limit.
inline int64_t kept_count(int64_t available, const LoadOptions& options) {
  return options.limit < 0 ? available : std::min(available, options.limit);
}

}  // namespace tg::data::detail
