// IDX files (the MNIST distribution's format, http://yann.lecun.com/exdb/mnist/).
#include <cstring>
#include <string>

#include "data/reader.h"

namespace tg::data {
namespace {

constexpr std::string_view kOp = "idx";

struct IdxType {
  uint8_t code;
  DType dtype;      // the dtype of the returned tensor
  size_t in_bytes;  // bytes per value in the file
};
constexpr IdxType kIdxTypes[] = {{0x08, DType::u8, 1},  {0x09, DType::i8, 1},
                                 {0x0B, DType::i32, 2}, {0x0C, DType::i32, 4},
                                 {0x0D, DType::f32, 4}, {0x0E, DType::f64, 8}};

uint64_t big_endian(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// Decodes `count` big-endian values of `type` from `src` into `dst` (host order, out dtype).
void decode(const IdxType& type, const uint8_t* src, int64_t count, void* dst) {
  if (type.in_bytes == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint64_t raw = big_endian(src + static_cast<size_t>(i) * type.in_bytes, type.in_bytes);
    switch (type.code) {
      case 0x0B: static_cast<int32_t*>(dst)[i] = static_cast<int16_t>(static_cast<uint16_t>(raw)); break;
      case 0x0C: static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(static_cast<uint32_t>(raw)); break;
      case 0x0D: {
        uint32_t bits = static_cast<uint32_t>(raw);
        std::memcpy(static_cast<float*>(dst) + i, &bits, 4);
        break;
      }
      default: std::memcpy(static_cast<double*>(dst) + i, &raw, 8); break;
    }
  }
}

const IdxType& idx_type(uint8_t code, const std::string& path) {
  for (const IdxType& t : kIdxTypes) {
    if (t.code == code) return t;
  }
  detail::file_fail(ErrorCode::invalid_argument, kOp, path,
                    "unknown IDX type code 0x{:02x} (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e)",
                    code);
}

// Product of the dims times the value size, saturating at UINT64_MAX.
uint64_t data_bytes(const Shape& shape, size_t value_bytes) {
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  uint64_t total = value_bytes;
  for (int64_t d : shape) {
    const auto dim = static_cast<uint64_t>(d);
    if (dim != 0 && total > UINT64_MAX / dim) return UINT64_MAX;
    total *= dim;
  }
  return total;
}

}  // namespace

TensorData read_idx(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file(path, kOp);
  if (bytes.size() < 4) {
    detail::file_fail(ErrorCode::io_error, kOp, path,
                      "truncated: {} bytes, an IDX header needs at least 4", bytes.size());
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    detail::file_fail(ErrorCode::invalid_argument, kOp, path,
                      "bad magic number 0x{:08x} (an IDX file starts with two zero bytes, a type "
                      "code and the rank)", big_endian(bytes.data(), 4));
  }
  const IdxType& type = idx_type(bytes[2], path);
  const size_t rank = bytes[3];
  if (rank == 0) detail::file_fail(ErrorCode::invalid_argument, kOp, path, "rank 0 (no dims)");
  const size_t header = 4 + 4 * rank;
  if (bytes.size() < header) {
    detail::file_fail(ErrorCode::io_error, kOp, path,
                      "truncated: {} bytes, the header of rank {} needs {}", bytes.size(), rank,
                      header);
  }
  Shape shape(rank);
  for (size_t d = 0; d < rank; ++d) shape[d] = static_cast<int64_t>(big_endian(bytes.data() + 4 + 4 * d, 4));
  const uint64_t have = bytes.size() - header;
  const uint64_t need = data_bytes(shape, type.in_bytes);  // saturates at UINT64_MAX
  if (need > have) {
    detail::file_fail(ErrorCode::io_error, kOp, path,
                      "truncated: dims {} need {} data bytes, the file has {}",
                      shape_to_string(shape), need == UINT64_MAX ? std::string("more than 2^64")
                                                                  : std::to_string(need), have);
  }
  if (have > need) {
    detail::file_fail(ErrorCode::invalid_argument, kOp, path,
                      "{} bytes after the last value of dims {} (expected {} data bytes)",
                      have - need, shape_to_string(shape), need);
  }
  const int64_t count = static_cast<int64_t>(need / type.in_bytes);
  TensorData out(shape, type.dtype);
  decode(type, bytes.data() + header, count, out.raw_data());
  return out;
}

}  // namespace tg::data
