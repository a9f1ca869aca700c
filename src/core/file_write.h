// Writing a whole file so that a failure never destroys the one already there.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tg {

/// Writes `size` bytes to `path` through a temporary file in the same directory
/// (`path.tmp.<pid>.<n>`), flushed to the disk (fsync) and then renamed over `path` (POSIX rename:
/// atomic on one file system), so a reader sees the old file or the new one, never a part, and a
/// failed write (a full disk, a read-only directory, a missing directory) leaves an existing file
/// as it was and no temporary behind. Raises tg::Error(io_error) "[op] path: what: reason"
/// (strerror of the failing call) on any failure.
void write_file_atomically(const std::string& path, const void* data, size_t size, std::string_view op);

}  // namespace tg
