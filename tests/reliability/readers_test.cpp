// Readers of untrusted bytes (issue 19): the inputs fuzzing found, and sizes declared bigger than
// the file, refused with a tg::Error naming the file before anything is allocated. The fuzz
// targets are fuzz/*.cpp; reproducers of the crashes they found are fuzz/regressions/<target>/,
// each replayed here.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "npy.h"
#include "test_util.h"
#include "tg/onnx.h"
#include "tg/tg.h"
#include "test_paths.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A .npy version 1.0 file with `header` (as written) and `data_bytes` zero bytes of data.
Bytes npy(const std::string& header, size_t data_bytes) {
  Bytes b(10 + header.size() + data_bytes, 0);
  std::memcpy(b.data(), "\x93NUMPY\x01\x00", 8);
  b[8] = static_cast<uint8_t>(header.size() & 0xff);
  b[9] = static_cast<uint8_t>(header.size() >> 8);
  std::memcpy(b.data() + 10, header.data(), header.size());
  return b;
}

TEST(NpyReader, ReadsWhatWriteNpyWrote) {
  const fs::path p = fs::temp_directory_path() / "tg_readers_test.npy";
  TensorData t = TensorData::from_vector<float>({1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f}, {2, 3});
  cli::write_npy(p, t);
  TensorData back = cli::read_npy(p);
  testing::expect_equal(back, {1.5, -2, 3.25, 0, 7, 8}, {2, 3});
  fs::remove(p);
}

TEST(NpyReader, MalformedHeadersAreErrorsNotCrashes) {
  // Found by fuzz_npy: a key without ':' or value read past the header (std::string index out of
  // range), an empty descr underflowed substr, a shape without parentheses was cut wrongly.
  for (const std::string& header : {std::string("{'descr'"), std::string("{'descr':"), std::string("{'descr': '"),
                                    std::string("{'descr': '<f4', 'fortran_order': False, 'shape': 3}"),
                                    std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,"),
                                    std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}"),
                                    std::string("{'descr': <f4, 'fortran_order': False, 'shape': (1,)}")}) {
    SCOPED_TRACE(header);
    EXPECT_TG_ERROR(cli::parse_npy(npy(header, 64), "x.npy"), ErrorCode::io_error, "x.npy");
  }
  EXPECT_TG_ERROR(cli::parse_npy(npy("{'descr': '', 'fortran_order': False, 'shape': (1,), }", 8), "e.npy"),
                  ErrorCode::unsupported, "unsupported .npy dtype ''");
  EXPECT_TG_ERROR(cli::parse_npy(bytes_of("\x93NUMPY"), "short.npy"), ErrorCode::io_error, "not a .npy file");
  Bytes v9 = npy("{}", 0);
  v9[6] = 9;
  EXPECT_TG_ERROR(cli::parse_npy(v9, "v9.npy"), ErrorCode::io_error, "format version 9");
  Bytes cut = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
  cut[8] = 0xff;  // header length 0x??ff, beyond the file
  EXPECT_TG_ERROR(cli::parse_npy(cut, "cut.npy"), ErrorCode::io_error, "truncated header");
}

TEST(NpyReader, DeclaredSizeBeyondTheFileIsRefusedBeforeAllocating) {
  // A shape of 10^18 float64 values in a 100-byte file: refused without trying 8 EB (found by
  // fuzz_npy as an allocation over the limit), and a shape whose size overflows 64 bits.
  EXPECT_TG_ERROR(cli::parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000000000,), }", 16),
                                 "big.npy"),
                  ErrorCode::io_error, "needs 8000000000000000000 bytes, the file has 16");
  EXPECT_TG_ERROR(cli::parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", 0),
                                 "overflow.npy"),
                  ErrorCode::io_error, "more than 2^64");
  // A zero dim: nothing needed, whatever the other dims.
  TensorData empty = cli::parse_npy(
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296), }", 0), "empty.npy");
  EXPECT_EQ(empty.shape(), (Shape{0, 4294967296}));
}

// The 8-byte length, the JSON header and `data_bytes` zero bytes.
Bytes safetensors_file(const std::string& json, size_t data_bytes) {
  Bytes b(8 + json.size() + data_bytes, 0);
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(i)] = static_cast<uint8_t>(json.size() >> (8 * i));
  std::memcpy(b.data() + 8, json.data(), json.size());
  return b;
}

TEST(SafetensorsReader, DeclaredSizeBeyondTheDataIsRefusedBeforeAllocating) {
  // data_offsets that fit the file with a shape of 2^62 f32 values: the shape's size is checked
  // against the offsets before the tensor is allocated (it was allocated first: 16 EiB).
  EXPECT_TG_ERROR(safetensors::parse(safetensors_file(
                      R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8), "w.st"),
                  ErrorCode::io_error, "tensor 'w' has 8 bytes, its shape needs more than 2^64");
  EXPECT_TG_ERROR(safetensors::parse(safetensors_file(
                      R"({"w":{"dtype":"F64","shape":[1000000,1000000],"data_offsets":[0,8]}})", 8), "w.st"),
                  ErrorCode::io_error, "its shape needs 8000000000000");
}

TEST(SafetensorsReader, MalformedEntriesAreIoErrors) {
  // Numbers that are not non-negative integers (a float shape was cast to int64: undefined for
  // 1e300), entries that are not objects.
  for (const std::string& json : {std::string(R"({"w":{"dtype":"F32","shape":[1e300],"data_offsets":[0,4]}})"),
                                  std::string(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})"),
                                  std::string(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0.5,4]}})"),
                                  std::string(R"({"w":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})"),
                                  std::string(R"({"w":[1,2]})"), std::string(R"({"w":{"dtype":7}})")}) {
    SCOPED_TRACE(json);
    EXPECT_TG_ERROR(safetensors::parse(safetensors_file(json, 4), "m.st"), ErrorCode::io_error, "m.st");
  }
  auto ok = safetensors::parse(safetensors_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4), "ok.st");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].second.shape(), (Shape{1}));
}

// A TensorProto: dims (field 1, varints), data_type (field 2), and optionally raw_data (field 9).
Bytes tensor_proto(const std::vector<uint64_t>& dims, int data_type, const std::string& raw = "", bool with_raw = false) {
  Bytes b;
  auto varint = [&](uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      b.push_back(static_cast<uint8_t>(byte | (v ? 0x80 : 0)));
    } while (v);
  };
  for (uint64_t d : dims) {
    b.push_back(0x08);
    varint(d);
  }
  b.push_back(0x10);
  varint(static_cast<uint64_t>(data_type));
  if (with_raw) {
    b.push_back(0x4a);
    varint(raw.size());
    b.insert(b.end(), raw.begin(), raw.end());
  }
  return b;
}

TEST(TensorProtoReader, DeclaredSizeBeyondTheDataIsRefusedBeforeAllocating) {
  // Found by fuzz_tensor_proto: dims of 2^40 x 2^20 floats without data were allocated (4 EiB)
  // before the data was counted.
  EXPECT_TG_ERROR(onnx::parse_tensor_proto(tensor_proto({uint64_t{1} << 40, uint64_t{1} << 20}, 1)),
                  ErrorCode::invalid_argument, "float_data holds 0 values, expected 1152921504606846976");
  EXPECT_TG_ERROR(onnx::parse_tensor_proto(tensor_proto({uint64_t{1} << 40, uint64_t{1} << 20}, 1, "abcd", true)),
                  ErrorCode::invalid_argument, "raw_data has 4 bytes, expected 4611686018427387904");
  // Elements that fit int64 whose bytes do not.
  EXPECT_TG_ERROR(onnx::parse_tensor_proto(tensor_proto({uint64_t{1} << 61}, 11)), ErrorCode::invalid_argument,
                  "overflow");
  TensorData ok = onnx::parse_tensor_proto(tensor_proto({2}, 1, std::string("\0\0\x80\x3f\0\0\0\x40", 8), true));
  testing::expect_equal(ok, {1, 2}, {2});
}

TEST(IdxReader, DeclaredSizeBeyondTheFileIsRefused) {
  const fs::path p = fs::temp_directory_path() / "tg_readers_test.idx";
  // u8, rank 3, dims 2^32 - 1 each: refused as truncated, nothing allocated.
  std::ofstream(p, std::ios::binary) << std::string("\x00\x00\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 16);
  EXPECT_TG_ERROR(data::read_idx(p.string()), ErrorCode::io_error, "need more than 2^64 data bytes");
  fs::remove(p);
}

// Every committed reproducer (fuzz/regressions/<target>/*) is read by the reader it crashed:
// now a tg::Error or a value, never a crash.
TEST(FuzzRegressions, EveryReproducerIsAnErrorOrAValue) {
  const fs::path root = fs::path(TG_SOURCE_DIR) / "fuzz" / "regressions";
  if (!fs::exists(root)) GTEST_SKIP() << "no fuzz/regressions";
  int replayed = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    const std::string target = dir.path().filename().string();
    for (const auto& f : fs::directory_iterator(dir.path())) {
      SCOPED_TRACE(f.path().string());
      std::ifstream in(f.path(), std::ios::binary);
      Bytes b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        if (target == "fuzz_npy") {
          (void)cli::parse_npy(b, f.path().string());
        } else if (target == "fuzz_safetensors") {
          (void)safetensors::parse(b, f.path().string());
        } else if (target == "fuzz_onnx_import") {
          (void)onnx::import(std::span<const uint8_t>(b));
        } else if (target == "fuzz_tensor_proto") {
          (void)onnx::parse_tensor_proto(b);
        } else if (target == "fuzz_mnist" || target == "fuzz_cifar10") {
          const fs::path p = fs::temp_directory_path() / "tg_fuzz_regression.bin";
          std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()) + 1,
                                                   static_cast<std::streamsize>(b.empty() ? 0 : b.size() - 1));
          if (target == "fuzz_mnist") (void)data::read_idx(p.string());
          else (void)data::load_cifar10({p.string()});
        } else {
          ADD_FAILURE() << "unknown target directory " << target;
        }
      } catch (const Error&) {
      }
      ++replayed;
    }
  }
  EXPECT_GT(replayed, 0);
}

}  // namespace
}  // namespace tg
