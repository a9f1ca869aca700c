// Reading a .tgx file for Executable::load (docs/design/0008-saved-executables.md, "Loading
// copies the weights once"): the whole file in one buffer that constants may alias, read by
// parallel preads with each section payload's CRC-32 computed while reading.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tg/device.h"

namespace tg::backends {
class FileUpload;
}

namespace tg::runtime::tgx {

// A file's bytes in one buffer that constants may alias (tgx::Reader::set_owner), read by
// parallel preads (the file holds the weights; the page cache copies at several GB/s a thread),
// with the CRC-32 of each section's payload computed by the reading threads as they go (format 2
// and later), while the bytes are in their caches, instead of in a second pass over the buffer.
struct FileBytes {
  std::shared_ptr<uint8_t[]> data;
  size_t size = 0;
  struct Crc {
    size_t offset, length;
    uint64_t crc;
  };
  std::vector<Crc> crcs;  ///< per section payload; empty when the framing was not read first
  /// The 'graph' payload (the constants) uploaded to a device as it was read (read_file's
  /// `upload_to`; backends/file_upload.h), or null; its extent in the file.
  std::shared_ptr<backends::FileUpload> upload;
  size_t upload_offset = 0, upload_bytes = 0;
  std::span<const uint8_t> span() const { return {data.get(), size}; }
  /// The CRC computed while reading of the payload at [offset, offset + length), if any.
  const uint64_t* crc_of(size_t offset, size_t length) const {
    for (const Crc& c : crcs) {
      if (c.offset == offset && c.length == length) return &c.crc;
    }
    return nullptr;
  }
};

/// The file at `path` (format 2 and later: with each payload's CRC-32 in `crcs`; format 1 or a
/// framing that does not parse: `crcs` empty, the loader then computes and reports). Small files
/// are read by the calling thread alone. With `upload_to` (a device whose backend takes it:
/// backends::start_file_upload), each piece of the 'graph' payload is also handed to the device's
/// upload by the thread that read it (`upload`), before anything is checked: the loader uses the
/// uploaded bytes only once the file has passed its checks. Raises tg::Error(io_error)
/// "[load] <path>: ..." when the path is not a regular file, cannot be opened or read.
FileBytes read_file(const std::string& path, const Device* upload_to = nullptr);

/// Reads exactly `n` bytes at offset `at` of the open file `fd`, whose size is `size` bytes, into
/// `out` (short reads and EINTR retried). False when [at, at + n) is past the end or a read fails.
bool pread_exact(int fd, uint64_t size, uint64_t at, size_t n, void* out);

/// The `n`-byte (n <= 8) little-endian unsigned integer at `p` (the .tgx framing's integers).
uint64_t little_endian(const uint8_t* p, int n);

}  // namespace tg::runtime::tgx
