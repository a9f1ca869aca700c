// read_idx: every IDX type code, plain and gzip files, and errors for missing, truncated,
// corrupt and malformed files (each naming the file).
#include <climits>

#include "data/files.h"
#include "test_util.h"
#include "tg/data.h"

namespace tg {
namespace {

using testing::idx_header;
using testing::idx_u8;
using testing::put_be;
using testing::TempDir;
using testing::write_bytes;

TEST(ReadIdx, U8Rank3PlainFile) {
  TempDir dir;
  std::vector<uint8_t> values = {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255};
  write_bytes(dir.file("a.idx"), idx_u8({2, 2, 3}, values));
  TensorData t = data::read_idx(dir.file("a.idx"));
  EXPECT_EQ(t.dtype(), DType::u8);
  testing::expect_equal(t, {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255}, {2, 2, 3});
}

TEST(ReadIdx, GzipFileIsDetectedByContent) {
  TempDir dir;
  std::vector<uint8_t> plain = idx_u8({3}, {7, 8, 9});
  // Named without ".gz": gzip is recognised from the bytes, not the name.
  write_bytes(dir.file("labels"), testing::gzip_bytes(plain, dir.file("scratch.gz")));
  testing::expect_equal(data::read_idx(dir.file("labels")), {7, 8, 9}, {3});
}

TEST(ReadIdx, BigEndianSignedAndFloatTypes) {
  TempDir dir;
  std::vector<uint8_t> i8 = idx_header(0x09, {2});
  i8.insert(i8.end(), {0xFF, 0x7F});  // -1, 127
  write_bytes(dir.file("i8"), i8);
  testing::expect_equal(data::read_idx(dir.file("i8")), {-1, 127}, {2});

  std::vector<uint8_t> i16 = idx_header(0x0B, {3});
  put_be(i16, 0xFFFE, 2);  // -2
  put_be(i16, 0x0102, 2);  // 258
  put_be(i16, 0x8000, 2);  // -32768
  write_bytes(dir.file("i16"), i16);
  TensorData t16 = data::read_idx(dir.file("i16"));
  EXPECT_EQ(t16.dtype(), DType::i32);  // widened
  testing::expect_equal(t16, {-2, 258, -32768}, {3});

  std::vector<uint8_t> i32 = idx_header(0x0C, {1, 2});
  put_be(i32, 0x80000000u, 4);
  put_be(i32, 0x00010203u, 4);  // 66051
  write_bytes(dir.file("i32"), i32);
  testing::expect_equal(data::read_idx(dir.file("i32")), {double(INT_MIN), 66051}, {1, 2});

  std::vector<uint8_t> f32 = idx_header(0x0D, {2});
  put_be(f32, 0x3FC00000u, 4);  // 1.5f
  put_be(f32, 0xC0490FDBu, 4);  // -3.14159274f
  write_bytes(dir.file("f32"), f32);
  TensorData tf = data::read_idx(dir.file("f32"));
  EXPECT_EQ(tf.dtype(), DType::f32);
  testing::expect_equal(tf, {1.5, double(-3.14159274f)}, {2});

  std::vector<uint8_t> f64 = idx_header(0x0E, {1});
  put_be(f64, 0xC004000000000000ull, 8);  // -2.5
  write_bytes(dir.file("f64"), f64);
  testing::expect_equal(data::read_idx(dir.file("f64")), {-2.5}, {1});
}

TEST(ReadIdx, ZeroSizedDimIsAnEmptyTensor) {
  TempDir dir;
  write_bytes(dir.file("e"), idx_header(0x08, {0, 28, 28}));
  TensorData t = data::read_idx(dir.file("e"));
  EXPECT_EQ(t.shape(), (Shape{0, 28, 28}));
}

TEST(ReadIdx, MissingFileIsNotFound) {
  TempDir dir;
  EXPECT_TG_ERROR(data::read_idx(dir.file("nope.idx")), ErrorCode::not_found,
                  "[idx] " + dir.file("nope.idx") + ": no such file");
  EXPECT_TG_ERROR(data::read_idx(dir.path()), ErrorCode::io_error, "is a directory");
}

TEST(ReadIdx, MalformedHeadersAreInvalidArguments) {
  TempDir dir;
  const std::string f = dir.file("bad.idx");
  write_bytes(f, {0x01, 0x00, 0x08, 0x03});
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::invalid_argument, "bad magic number 0x01000803");
  write_bytes(f, {0x00, 0x00, 0x0A, 0x01, 0, 0, 0, 0});
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::invalid_argument, "unknown IDX type code 0x0a");
  write_bytes(f, {0x00, 0x00, 0x08, 0x00});
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::invalid_argument, "rank 0");
  std::vector<uint8_t> trailing = idx_u8({2}, {1, 2, 3});
  write_bytes(f, trailing);
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::invalid_argument,
                  "[idx] " + f + ": 1 bytes after the last value of dims [2]");
}

TEST(ReadIdx, TruncatedFilesAreIoErrors) {
  TempDir dir;
  const std::string f = dir.file("short.idx");
  write_bytes(f, {0x00, 0x00});
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error, "truncated: 2 bytes");
  write_bytes(f, {0x00, 0x00, 0x08, 0x02, 0, 0, 0, 2});
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error, "the header of rank 2 needs 12");
  write_bytes(f, idx_u8({2, 2, 3}, std::vector<uint8_t>(11, 0)));
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error,
                  "[idx] " + f + ": truncated: dims [2,2,3] need 12 data bytes, the file has 11");
  std::vector<uint8_t> i32 = idx_header(0x0C, {2});
  put_be(i32, 5, 4);
  i32.push_back(0);  // 5 of the 8 data bytes
  write_bytes(f, i32);
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error, "need 8 data bytes, the file has 5");
  write_bytes(f, idx_header(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}));
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error, "need more than 2^64 data bytes");
}

TEST(ReadIdx, CorruptGzipIsAnIoError) {
  TempDir dir;
  std::vector<uint8_t> plain = idx_u8({64}, std::vector<uint8_t>(64, 3));
  std::vector<uint8_t> gz = testing::gzip_bytes(plain, dir.file("scratch.gz"));
  ASSERT_GT(gz.size(), 20u);
  const std::string f = dir.file("x.gz");
  write_bytes(f, std::vector<uint8_t>(gz.begin(), gz.begin() + static_cast<long>(gz.size() / 2)));
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error, "[idx] " + f + ": ");
  std::vector<uint8_t> bad_crc = gz;
  bad_crc[gz.size() - 8] ^= 0xFF;  // the CRC-32 of the trailer
  write_bytes(f, bad_crc);
  EXPECT_TG_ERROR(data::read_idx(f), ErrorCode::io_error, "corrupt or truncated gzip data");
}

}  // namespace
}  // namespace tg
