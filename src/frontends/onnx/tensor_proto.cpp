// ONNX TensorProto <-> TensorData.
#include "frontends/onnx/tensor_proto.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error_util.h"
#include "tg/onnx.h"

namespace tg::onnx {
namespace {

constexpr const char* kTypeNames[] = {
    "undefined", "float",      "uint8",          "int8",        "uint16",       "int16",
    "int32",     "int64",      "string",         "bool",        "float16",      "double",
    "uint32",    "uint64",     "complex64",      "complex128",  "bfloat16",     "float8e4m3fn",
    "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4",        "float4e2m1",
    "float8e8m0", "uint2",     "int2"};

[[noreturn]] void bad(ErrorCode code, const std::string& what) { throw Error(code, what); }

// Elements of `shape`, checked against overflow.
int64_t checked_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) bad(ErrorCode::invalid_argument, fmt::format("negative dim in {}", str(shape)));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      bad(ErrorCode::invalid_argument, fmt::format("dims {} overflow", str(shape)));
    }
    n *= d;
  }
  return n;
}

// Copies a typed repeated field into `out`, converting each element to the storage type T.
template <typename T, typename Field>
void copy_field(const Field& field, TensorData& out, const char* field_name, DType dtype) {
  int64_t n = out.num_elements();
  if (field.size() != n) {
    bad(ErrorCode::invalid_argument,
        fmt::format("{} holds {} values, expected {} for {}", field_name, field.size(), n,
                    out.type().to_string()));
  }
  auto* dst = static_cast<T*>(out.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, uint16_t>) {
      dst[i] = static_cast<uint16_t>(field.Get(static_cast<int>(i)));  // f16/bf16 bits
    } else {
      dst[i] = static_cast<T>(field.Get(static_cast<int>(i)));
    }
  }
  (void)dtype;
}

// Reads `length` bytes at `offset` of the external file named in `proto`.
std::string read_external(const pb::TensorProto& proto, const std::filesystem::path& dir,
                          size_t expected) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  auto parse = [](const std::string& key, const std::string& text) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
      bad(ErrorCode::invalid_argument, fmt::format("external data {} '{}' is not a count", key, text));
    }
    return v;
  };
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse(kv.key(), kv.value());
    else if (kv.key() == "length") length = parse(kv.key(), kv.value());
  }
  if (location.empty()) bad(ErrorCode::invalid_argument, "external data without a location");
  if (dir.empty()) {
    bad(ErrorCode::invalid_argument,
        "external data needs ImportOptions::external_data_dir when importing from bytes");
  }
  std::filesystem::path rel(location);
  if (rel.is_absolute() || rel.lexically_normal().string().starts_with("..")) {
    bad(ErrorCode::invalid_argument,
        fmt::format("external data location '{}' is outside the model's directory", location));
  }
  std::filesystem::path file = dir / rel;
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    bad(ErrorCode::io_error, fmt::format("external data '{}' is a directory, not a file", file.string()));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(ErrorCode::not_found, fmt::format("external data file '{}' not found", file.string()));
  if (length >= 0 && static_cast<size_t>(length) != expected) {
    bad(ErrorCode::invalid_argument,
        fmt::format("external data length {} differs from the {} bytes the dims need", length,
                    expected));
  }
  in.seekg(0, std::ios::end);
  auto size = static_cast<int64_t>(in.tellg());
  if (offset > size || static_cast<uint64_t>(size - offset) < expected) {
    bad(ErrorCode::io_error,
        fmt::format("external data file '{}' has {} bytes, needs {} at offset {}", file.string(),
                    size, expected, offset));
  }
  std::string bytes(expected, '\0');
  in.seekg(offset);
  in.read(bytes.data(), static_cast<std::streamsize>(expected));
  if (!in) bad(ErrorCode::io_error, fmt::format("cannot read external data file '{}'", file.string()));
  return bytes;
}

}  // namespace

std::optional<DType> dtype_from_onnx(int32_t t) {
  switch (t) {
    case pb::TensorProto::FLOAT: return DType::f32;
    case pb::TensorProto::UINT8: return DType::u8;
    case pb::TensorProto::INT8: return DType::i8;
    case pb::TensorProto::INT32: return DType::i32;
    case pb::TensorProto::INT64: return DType::i64;
    case pb::TensorProto::BOOL: return DType::bool_;
    case pb::TensorProto::FLOAT16: return DType::f16;
    case pb::TensorProto::DOUBLE: return DType::f64;
    case pb::TensorProto::BFLOAT16: return DType::bf16;
    default: return std::nullopt;
  }
}

int32_t onnx_type_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return pb::TensorProto::FLOAT;
    case DType::u8: return pb::TensorProto::UINT8;
    case DType::i8: return pb::TensorProto::INT8;
    case DType::i32: return pb::TensorProto::INT32;
    case DType::i64: return pb::TensorProto::INT64;
    case DType::bool_: return pb::TensorProto::BOOL;
    case DType::f16: return pb::TensorProto::FLOAT16;
    case DType::f64: return pb::TensorProto::DOUBLE;
    case DType::bf16: return pb::TensorProto::BFLOAT16;
  }
  return pb::TensorProto::UNDEFINED;
}

std::string onnx_type_name(int32_t t) {
  if (t >= 0 && t < static_cast<int32_t>(std::size(kTypeNames))) return kTypeNames[t];
  return fmt::format("type {}", t);
}

DType require_dtype(int32_t t) {
  std::optional<DType> d = dtype_from_onnx(t);
  if (!d) bad(ErrorCode::unsupported, fmt::format("data type {} is not supported", onnx_type_name(t)));
  return *d;
}

TensorData tensor_from_proto(const pb::TensorProto& proto, const std::filesystem::path& external_dir) {
  DType dtype = require_dtype(proto.data_type());
  if (proto.has_segment()) bad(ErrorCode::unsupported, "segmented tensors are not supported");
  Shape shape(proto.dims().begin(), proto.dims().end());
  int64_t n = checked_count(shape);
  if (n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dtype_size(dtype))) {
    bad(ErrorCode::invalid_argument, fmt::format("dims {} overflow", str(shape)));
  }
  size_t nbytes = static_cast<size_t>(n) * dtype_size(dtype);
  const TensorType type{shape, dtype};
  // The data the dims declare is checked against the data present before anything is allocated
  // (dims are a few bytes of the file; the tensor they declare may be exabytes).
  if (proto.data_location() == pb::TensorProto::EXTERNAL) {
    std::string bytes = read_external(proto, external_dir, nbytes);  // checks the file's size
    TensorData out(shape, dtype);
    if (nbytes) std::memcpy(out.raw_data(), bytes.data(), nbytes);
    return out;
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != nbytes) {
      bad(ErrorCode::invalid_argument,
          fmt::format("raw_data has {} bytes, expected {} for {}", raw.size(), nbytes,
                      type.to_string()));
    }
    TensorData out(shape, dtype);
    if (nbytes) std::memcpy(out.raw_data(), raw.data(), nbytes);  // little-endian, as ONNX
    return out;
  }
  auto check_count = [&](int64_t have, const char* field_name) {
    if (have != n) {
      bad(ErrorCode::invalid_argument,
          fmt::format("{} holds {} values, expected {} for {}", field_name, have, n, type.to_string()));
    }
  };
  switch (dtype) {
    case DType::f32: check_count(proto.float_data_size(), "float_data"); break;
    case DType::f64: check_count(proto.double_data_size(), "double_data"); break;
    case DType::i64: check_count(proto.int64_data_size(), "int64_data"); break;
    default: check_count(proto.int32_data_size(), "int32_data"); break;
  }
  TensorData out(shape, dtype);
  switch (dtype) {
    case DType::f32: copy_field<float>(proto.float_data(), out, "float_data", dtype); break;
    case DType::f64: copy_field<double>(proto.double_data(), out, "double_data", dtype); break;
    case DType::i64: copy_field<int64_t>(proto.int64_data(), out, "int64_data", dtype); break;
    case DType::i32: copy_field<int32_t>(proto.int32_data(), out, "int32_data", dtype); break;
    case DType::i8: copy_field<int8_t>(proto.int32_data(), out, "int32_data", dtype); break;
    case DType::u8: copy_field<uint8_t>(proto.int32_data(), out, "int32_data", dtype); break;
    case DType::bool_: {
      copy_field<uint8_t>(proto.int32_data(), out, "int32_data", dtype);
      auto* p = static_cast<uint8_t*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] != 0;
      break;
    }
    case DType::f16:
    case DType::bf16: copy_field<uint16_t>(proto.int32_data(), out, "int32_data", dtype); break;
  }
  return out;
}

pb::TensorProto tensor_to_proto(const TensorData& value, const std::string& name) {
  pb::TensorProto p;
  if (!name.empty()) p.set_name(name);
  p.set_data_type(onnx_type_of(value.dtype()));
  for (int64_t d : value.shape()) p.add_dims(d);
  TensorData host = value.to(Device::cpu());
  p.set_raw_data(std::string(static_cast<const char*>(host.raw_data()), host.nbytes()));
  return p;
}

}  // namespace tg::onnx

namespace tg::onnx {

TensorData parse_tensor_proto(std::span<const uint8_t> bytes, std::string* name) {
  pb::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(ErrorCode::io_error,
                "[onnx] not a valid TensorProto (truncated or corrupt data)");
  }
  if (name) *name = proto.name();
  try {
    return tensor_from_proto(proto, {});
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("[onnx] tensor '{}': {}", proto.name(), e.what()));
  }
}

TensorData read_tensor_proto(const std::filesystem::path& path, std::string* name) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorCode::io_error, fmt::format("[onnx] '{}' is a directory, not a tensor file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::not_found, fmt::format("[onnx] cannot open '{}'", path.string()));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return parse_tensor_proto(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, name);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} (file '{}')", e.what(), path.string()));
  }
}

}  // namespace tg::onnx
