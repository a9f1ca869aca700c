#include "core/file_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error_util.h"

namespace tg {

void write_file_atomically(const std::string& path, const void* data, size_t size, std::string_view op) {
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
  const char* p = static_cast<const char*>(data);
  for (size_t left = size; left > 0;) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      give_up("write failed");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
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
