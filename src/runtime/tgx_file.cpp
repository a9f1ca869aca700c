// Reading a .tgx file (tgx_file.h).
#include "runtime/tgx_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "backends/file_upload.h"
#include "core/error_util.h"
#include "core/parallel.h"
#include "core/phase_times.h"
#include "runtime/crc32.h"
#include "runtime/tgx_format.h"

namespace tg::runtime::tgx {
namespace {

// A buffer of `size` bytes, not zeroed, backed by huge pages where the kernel gives them
// (madvise; a first touch then faults 2 MiB at once instead of 4 KiB: the read of a 100 MB file
// into fresh memory was bound by its page faults).
std::shared_ptr<uint8_t[]> file_buffer(size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (size >= kHuge) {
    const size_t len = (size + kHuge - 1) / kHuge * kHuge + kHuge;
    void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
      auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) / kHuge * kHuge);
      ::madvise(aligned, len - static_cast<size_t>(aligned - static_cast<uint8_t*>(base)), MADV_HUGEPAGE);
      return std::shared_ptr<uint8_t[]>(aligned, [base, len](uint8_t*) { ::munmap(base, len); });
    }
  }
  return std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(size, 1)]);  // not zeroed
}

struct Extent {
  size_t offset, length;
  std::string name;
};

// The payloads' extents from the section framing, read with a few small preads (format 2 and
// later only; anything unexpected: empty, and the checksums are computed after the read).
std::vector<Extent> payload_extents(int fd, size_t size) {
  const auto read_at = [&](size_t at, size_t n, void* out) { return pread_exact(fd, size, at, n, out); };
  const auto le = little_endian;
  std::vector<Extent> out;
  uint8_t head[12];
  if (!read_at(0, 12, head) || std::memcmp(head, runtime::tgx::kMagic.data(), 4) != 0) return {};
  const uint64_t version = le(head + 4, 4), count = le(head + 8, 4);
  if (version < 2 || version > runtime::tgx::kFormatVersion || count > 64) return {};
  size_t at = 12;
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t len[4];
    if (!read_at(at, 4, len)) return {};
    const uint64_t name_len = le(len, 4);
    if (name_len > 64 || name_len > size) return {};
    std::string name(name_len, '\0');
    uint8_t framing[16];
    if (!read_at(at + 4, name_len, name.data()) || !read_at(at + 4 + name_len, 16, framing)) return {};
    at += 4 + name_len + 16;
    const uint64_t length = le(framing, 8);
    if (length > size - at) return {};
    out.push_back({at, static_cast<size_t>(length), std::move(name)});
    at += length;
  }
  return out;
}

}  // namespace

bool pread_exact(int fd, uint64_t size, uint64_t at, size_t n, void* out) {
  if (at > size || n > size - at) return false;
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, static_cast<char*>(out) + done, n - done, static_cast<off_t>(at + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

uint64_t little_endian(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

FileBytes read_file(const std::string& path, const Device* upload_to) {
  phases::Scope timed("load_read_file");
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    fail(ErrorCode::io_error, "load", "{}: not a regular file", path);  // a directory's size is no file size
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::io_error, "load", "{}: cannot open for reading", path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0) fail(ErrorCode::io_error, "load", "{}: cannot read its size", path);
  FileBytes f;
  f.size = static_cast<size_t>(st.st_size);
  f.data = file_buffer(f.size);
  // Pieces of at most 2 MiB that never straddle a payload's ends, each read and (inside a
  // payload) checksummed by one thread.
  const std::vector<Extent> payloads = payload_extents(fd, f.size);
  // The graph payload (the constants) goes to the device as it is read.
  int uploaded = -1;
  if (upload_to != nullptr) {
    for (size_t i = 0; i < payloads.size(); ++i) {
      if (payloads[i].name != "graph") continue;
      f.upload = backends::start_file_upload(*upload_to, payloads[i].length);
      if (f.upload) {
        uploaded = static_cast<int>(i);
        f.upload_offset = payloads[i].offset;
        f.upload_bytes = payloads[i].length;
      }
      break;
    }
  }
  struct Piece {
    size_t lo, hi;
    int payload;  // index in payloads, or -1
    uint64_t crc;
  };
  std::vector<Piece> pieces;
  {
    constexpr size_t kPiece = size_t{2} << 20;
    size_t at = 0;
    const auto add = [&](size_t end, int payload) {
      while (at < end) {
        const size_t hi = std::min(end, at + kPiece);
        pieces.push_back({at, hi, payload, 0});
        at = hi;
      }
    };
    for (size_t i = 0; i < payloads.size(); ++i) {
      add(payloads[i].offset, -1);
      add(payloads[i].offset + payloads[i].length, static_cast<int>(i));
    }
    add(f.size, -1);
  }
  std::atomic<bool> failed{false};
  // Small files on the calling thread alone (starting the thread team costs more than it saves).
  const auto n_pieces = static_cast<int64_t>(pieces.size());
  core::parallel_for(n_pieces, f.size < (size_t{8} << 20) ? n_pieces : 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end && !failed; ++p) {
      Piece& piece = pieces[static_cast<size_t>(p)];
      size_t at = piece.lo;
      while (at < piece.hi) {
        const ssize_t got = ::pread(fd, f.data.get() + at, piece.hi - at, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          failed = true;
          break;
        }
        at += static_cast<size_t>(got);
      }
      if (piece.payload >= 0 && at == piece.hi) {
        piece.crc = crc32(0, f.data.get() + piece.lo, piece.hi - piece.lo);
        if (piece.payload == uploaded) f.upload->piece(piece.lo - f.upload_offset, f.data.get() + piece.lo, piece.hi - piece.lo);
      }
    }
  });
  if (failed) fail(ErrorCode::io_error, "load", "{}: read failed", path);
  if (f.upload) f.upload->pieces_done();
  for (size_t i = 0; i < payloads.size(); ++i) {
    uLong crc = crc32_z(0L, Z_NULL, 0);
    for (const Piece& piece : pieces) {
      if (piece.payload == static_cast<int>(i)) {
        crc = crc32_combine(crc, static_cast<uLong>(piece.crc), static_cast<z_off_t>(piece.hi - piece.lo));
      }
    }
    f.crcs.push_back({payloads[i].offset, payloads[i].length, crc});
  }
  return f;
}

}  // namespace tg::runtime::tgx
