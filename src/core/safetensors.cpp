#include "core/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error_util.h"
#include "core/file_write.h"

namespace tg::safetensors {
namespace {

[[noreturn]] void io_fail(const std::string& path, const std::string& what) {
  fail(ErrorCode::io_error, "safetensors", "{}: {}", path, what);
}

DType dtype_from_code(const std::string& code, const std::string& path) {
  for (DType t : kAllDTypes) {
    if (dtype_code(t) == code) return t;
  }
  io_fail(path, "unsupported dtype '" + code + "'");
}

}  // namespace

std::string dtype_code(DType t) {
  switch (t) {
    case DType::bool_: return "BOOL";
    case DType::i8: return "I8";
    case DType::u8: return "U8";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f32: return "F32";
    case DType::f64: return "F64";
  }
  return "?";
}

std::string serialize(const std::vector<std::pair<std::string, TensorData>>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", dtype_code(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // keeps the data 8-byte aligned, as the spec allows
  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
  out += text;
  for (const auto& [name, t] : tensors) {
    TensorData host = t.to(Device::cpu());
    if (host.nbytes()) out.append(static_cast<const char*>(host.raw_data()), host.nbytes());
  }
  return out;
}

void write(const std::string& path, const std::vector<std::pair<std::string, TensorData>>& tensors) {
  const std::string bytes = serialize(tensors);
  write_file_atomically(path, bytes.data(), bytes.size(), "safetensors");
}

std::vector<std::pair<std::string, TensorData>> read(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) io_fail(path, "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) io_fail(path, "cannot open for reading");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path);
}

namespace {

// The non-negative integer array `key` of entry `name` (JSON numbers that are not integers, or
// negative ones, are refused: a conversion would be undefined or wrap).
std::vector<uint64_t> unsigned_list(const nlohmann::json& e, const char* key, const std::string& name,
                                    const std::string& path) {
  const nlohmann::json& v = e.at(key);
  if (!v.is_array()) io_fail(path, "tensor '" + name + "' has a " + key + " that is not a list");
  std::vector<uint64_t> out;
  for (const auto& x : v) {
    if (!x.is_number_integer() || (!x.is_number_unsigned() && x.get<int64_t>() < 0)) {
      io_fail(path, "tensor '" + name + "' has a " + key + " entry " + x.dump() +
                        " that is not a non-negative integer");
    }
    out.push_back(x.get<uint64_t>());
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, TensorData>> parse(std::span<const uint8_t> bytes, const std::string& path) {
  if (bytes.size() < 8) io_fail(path, "file is shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  if (n > bytes.size() - 8) io_fail(path, "header length " + std::to_string(n) + " runs past the end of the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const std::exception& e) {
    io_fail(path, std::string("malformed JSON header: ") + e.what());
  }
  if (!header.is_object()) io_fail(path, "header is not a JSON object");
  const size_t data_begin = 8 + n, data_size = bytes.size() - data_begin;
  std::vector<std::pair<std::string, TensorData>> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& e = it.value();
    try {
      if (!e.is_object()) io_fail(path, "tensor '" + it.key() + "' is not a JSON object");
      DType t = dtype_from_code(e.at("dtype").get<std::string>(), path);
      std::vector<uint64_t> dims = unsigned_list(e, "shape", it.key(), path);
      std::vector<uint64_t> offs = unsigned_list(e, "data_offsets", it.key(), path);
      if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_size) {
        io_fail(path, "tensor '" + it.key() + "' has data_offsets outside the data");
      }
      // The bytes the shape needs, checked against the offsets before anything is allocated.
      uint64_t need = dtype_size(t);
      bool zero = false, overflow = false;
      for (uint64_t d : dims) {
        if (d == 0) zero = true;
        if (d > static_cast<uint64_t>(INT64_MAX) || (d != 0 && need > UINT64_MAX / d)) overflow = true;
        if (!overflow) need *= d;
      }
      if (zero) need = 0, overflow = false;
      if (overflow || offs[1] - offs[0] != need) {
        io_fail(path, "tensor '" + it.key() + "' has " + std::to_string(offs[1] - offs[0]) +
                          " bytes, its shape needs " + (overflow ? std::string("more than 2^64") : std::to_string(need)));
      }
      TensorData td(Shape(dims.begin(), dims.end()), t);
      if (td.nbytes()) std::memcpy(td.raw_data(), bytes.data() + data_begin + offs[0], td.nbytes());
      out.emplace_back(it.key(), std::move(td));
    } catch (const nlohmann::json::exception& ex) {
      io_fail(path, "tensor '" + it.key() + "' has a malformed entry: " + ex.what());
    }
  }
  return out;
}

}  // namespace tg::safetensors
