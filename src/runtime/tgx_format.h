// The container of saved executables (.tgx, docs/design/0008-saved-executables.md): framing,
// checksums and the bounds-checked little-endian byte reader and writer the sections use.
//
// File: "TGX1" (4 bytes), u32 format version, u32 section count, then each section:
// u32 name length, name (ASCII), u64 payload length, u64 checksum of the payload (format 2:
// CRC-32, zlib's; format 1: FNV-1a 64), payload. Every integer little-endian. The first section is "header": text lines "key=value".
#pragma once
#include <cstdint>
#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::runtime::tgx {

inline constexpr std::string_view kMagic = "TGX1";
/// The format version this build writes and the newest it reads (it reads 1 and 2 too). 3: dims
/// may be symbols (section 'symbols', executables compiled with disable_type_inference).
inline constexpr uint32_t kFormatVersion = 3;

/// The sections' checksum of `bytes` in format `version`: 2: CRC-32 (zlib's crc32_z, ~6x faster
/// than FNV-1a on weights: 18 vs 120 ms per 100 MB here); 1: FNV-1a 64 (the NVRTC cache's).
uint64_t checksum(std::string_view bytes, uint32_t version = kFormatVersion);

struct Section {
  std::string name;
  size_t offset = 0;  ///< of the payload in the file
  size_t length = 0;
  uint64_t checksum = 0;  ///< as stored
};

/// The framing of a file: its format version and sections, checksums not verified. Raises
/// tg::Error(io_error) "[load] <file>: ..." for a wrong magic or a truncated file (naming the
/// section), tg::Error(unsupported) for a format version above kFormatVersion.
struct Layout {
  uint32_t version = 0;
  std::vector<Section> sections;
};
Layout read_layout(std::span<const uint8_t> bytes, const std::string& file);

/// Rewrites every section's stored checksum to match its payload (tests and the fuzz target use
/// it to reach the parsers behind the checksums). Raises as read_layout.
void repair_checksums(std::vector<uint8_t>& bytes, const std::string& file);

/// The file from its sections (name, payload), in order, in format `version` (2 or 3: the same
/// framing and checksum; 3 marks files a format-2 reader must refuse).
std::vector<uint8_t> write_file(const std::vector<std::pair<std::string, std::string>>& sections,
                                uint32_t version = kFormatVersion);

/// The "key=value" lines of a header section, in a map (io_error naming the file for a line
/// without '=').
std::map<std::string, std::string> parse_header(std::string_view text, const std::string& file);

/// Appends little-endian values.
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  void str(std::string_view s);
  void bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& out() { return out_; }
  /// Symbolic dims (tg::symbolic_dim values) met in the types and shapes written, by value: the
  /// writer of section 'symbols' stores their names, since the values are this process's.
  void note_symbol(int64_t d);
  const std::map<int64_t, std::string>& symbols() const { return symbols_; }

 private:
  std::string out_;
  std::map<int64_t, std::string> symbols_;
};

/// Reads what Writer wrote; every read is bounds-checked and raises tg::Error(io_error)
/// "[load] <file>: section '<section>' malformed: <what>" when the payload ends early or a value
/// is out of range.
class Reader {
 public:
  Reader(std::string_view data, std::string file, std::string section)
      : data_(data), file_(std::move(file)), section_(std::move(section)) {}
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64();
  std::string str();
  std::string_view bytes(size_t n);
  /// A count of items each at least `min_item_bytes` long: refused when the rest cannot hold them.
  size_t count(size_t min_item_bytes = 1);
  size_t remaining() const { return data_.size() - pos_; }
  bool done() const { return pos_ == data_.size(); }
  [[noreturn]] void malformed(const std::string& what) const;
  const std::string& file() const { return file_; }
  const std::string& section() const { return section_; }
  /// What keeps the bytes alive when they may be aliased (Executable::load's file buffer):
  /// constants read from them then point into them instead of copying (when aligned for their
  /// dtype). Null (the default): every constant is copied.
  /// Constants of at least `unaligned_min_bytes` alias the bytes even when misaligned for their
  /// dtype: only for a device that reads them solely as bytes to upload (CUDA, no recompile).
  void set_owner(std::shared_ptr<void> owner, size_t unaligned_min_bytes = SIZE_MAX) {
    owner_ = std::move(owner);
    unaligned_min_bytes_ = unaligned_min_bytes;
  }
  const std::shared_ptr<void>& owner() const { return owner_; }
  size_t unaligned_min_bytes() const { return unaligned_min_bytes_; }
  /// The file's symbols (section 'symbols'): a stored dim value -> this process's symbol of the
  /// same name (tg::symbolic_dim). Types and shapes read map their dims through it; a dim below -1
  /// that is not in it is malformed.
  void set_symbols(std::map<int64_t, int64_t> symbols) { symbols_ = std::move(symbols); }
  /// Whether `d` is one of the file's symbols.
  bool maps(int64_t d) const { return symbols_.count(d) != 0; }
  /// `d` mapped through the file's symbols (unchanged when it is not one of them).
  int64_t symbol(int64_t d) const {
    auto it = symbols_.find(d);
    return it == symbols_.end() ? d : it->second;
  }

 private:
  std::map<int64_t, int64_t> symbols_;
  std::shared_ptr<void> owner_;
  size_t unaligned_min_bytes_ = SIZE_MAX;
  std::string_view data_;
  size_t pos_ = 0;
  std::string file_;
  std::string section_;
};

}  // namespace tg::runtime::tgx
