#include "core/file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error_util.h"

namespace tg {

namespace {

// Writes all of data to fd; false with errno set on failure.
bool write_all(int fd, const char* p, size_t left) {
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::string& path, const void* data, size_t size, std::string_view op) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device, FIFO or socket (/dev/null, /dev/stdout): written in place. Renaming a temporary
    // over it replaced /dev/null itself with a regular file.
    if (S_ISDIR(st.st_mode)) fail(ErrorCode::io_error, op, "{}: is a directory", path);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(ErrorCode::io_error, op, "{}: cannot open for writing: {}", path, std::strerror(errno));
    const bool ok = write_all(fd, static_cast<const char*>(data), size);
    const int e = errno;
    ::close(fd);
    if (!ok) fail(ErrorCode::io_error, op, "{}: write failed: {}", path, std::strerror(e));
    return;
  }
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(ErrorCode::io_error, op, "{}: cannot open for writing: {}", path, std::strerror(errno));
  const auto give_up = [&](const char* what) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(ErrorCode::io_error, op, "{}: {}: {} (the file there, if any, is unchanged)", path, what, std::strerror(e));
  };
  if (!write_all(fd, static_cast<const char*>(data), size)) give_up("write failed");
  if (::fsync(fd) != 0) give_up("write failed (fsync)");
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(ErrorCode::io_error, op, "{}: write failed (close): {} (the file there, if any, is unchanged)", path,
         std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(ErrorCode::io_error, op, "{}: cannot replace the file: {}", path, std::strerror(e));
  }
}

}  // namespace tg
