#include "npy.h"

#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string_view>
#include <vector>

#include "tg/error.h"

namespace tg::cli {
namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& msg) { throw tg::Error(code, "[tg run] " + msg); }

const char* npy_descr(DType d) {
  switch (d) {
    case DType::bool_: return "|b1";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::bf16: return "<f4";  // NumPy has no bfloat16: written as float32
  }
  return "";
}

DType dtype_of_descr(const std::string& d, const std::string& file) {
  static const std::map<std::string, DType> kDescr = {
      {"|b1", DType::bool_}, {"|i1", DType::i8},  {"|u1", DType::u8},  {"<i4", DType::i32},
      {"<i8", DType::i64},   {"<f2", DType::f16}, {"<f4", DType::f32}, {"<f8", DType::f64},
      {"b1", DType::bool_},  {"i1", DType::i8},   {"u1", DType::u8}};
  auto it = kDescr.find(d);
  if (it == kDescr.end()) fail(ErrorCode::unsupported, file + ": unsupported .npy dtype '" + d + "'");
  return it->second;
}

// The value of `key` in the header dict ("'descr': '<f4', ..."): a quoted string (with its
// quotes), a parenthesized tuple (with its parentheses) or a bare word.
std::string header_field(const std::string& h, const std::string& key, const std::string& file) {
  auto malformed = [&]() -> std::string {
    fail(ErrorCode::io_error, file + ": the .npy header's '" + key + "' has no value");
  };
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) fail(ErrorCode::io_error, file + ": .npy header lacks '" + key + "'");
  size_t colon = h.find(':', k + key.size() + 2);
  if (colon == std::string::npos) return malformed();
  size_t begin = h.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos) return malformed();
  size_t end = h[begin] == '(' ? h.find(')', begin)
               : h[begin] == '\'' ? h.find('\'', begin + 1)
                                  : h.find_first_of(",}", begin);
  if (end == std::string::npos) return malformed();
  if (h[begin] == '(' || h[begin] == '\'') ++end;  // the closing ) or '
  return h.substr(begin, end - begin);
}

// Bytes per element of `t` in a .npy file.
size_t npy_item_bytes(DType t) {
  switch (t) {
    case DType::bool_: case DType::i8: case DType::u8: return 1;
    case DType::f16: case DType::bf16: return 2;
    case DType::i32: case DType::f32: return 4;
    case DType::i64: case DType::f64: return 8;
  }
  return 1;
}

}  // namespace

TensorData parse_npy(std::span<const uint8_t> bytes, const std::string& file) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
    fail(ErrorCode::io_error, file + ": not a .npy file");
  }
  const uint8_t major = bytes[6];
  if (major < 1 || major > 3) {
    fail(ErrorCode::io_error, file + ": .npy format version " + std::to_string(major) + " (1 to 3 are known)");
  }
  size_t hlen = 0, pos = 0;
  if (major == 1) {
    hlen = size_t{bytes[8]} | size_t{bytes[9]} << 8;
    pos = 10;
  } else {
    if (bytes.size() < 12) fail(ErrorCode::io_error, file + ": truncated header");
    for (int i = 0; i < 4; ++i) hlen |= size_t{bytes[8 + i]} << (8 * i);
    pos = 12;
  }
  if (hlen > bytes.size() - pos) {
    fail(ErrorCode::io_error, file + ": truncated header (" + std::to_string(hlen) + " bytes declared, " +
                                  std::to_string(bytes.size() - pos) + " in the file)");
  }
  const std::string header(reinterpret_cast<const char*>(bytes.data() + pos), hlen);
  pos += hlen;
  std::string descr = header_field(header, "descr", file);
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'') {
    fail(ErrorCode::io_error, file + ": the .npy header's descr " + descr + " is not a quoted string");
  }
  DType dtype = dtype_of_descr(descr.substr(1, descr.size() - 2), file);
  if (header_field(header, "fortran_order", file) != "False") {
    fail(ErrorCode::unsupported, file + ": Fortran-order arrays are not supported");
  }
  std::string dims = header_field(header, "shape", file);
  auto bad_shape = [&]() {
    fail(ErrorCode::io_error, file + ": the .npy header's shape " + dims + " is not a list of sizes");
  };
  if (dims.size() < 2 || dims.front() != '(' || dims.back() != ')') bad_shape();
  Shape shape;
  // Size of the data the shape declares, compared with the file before allocating anything.
  const uint64_t have = bytes.size() - pos;
  uint64_t need = npy_item_bytes(dtype);
  bool overflow = false;
  std::string_view list(dims.data() + 1, dims.size() - 2);
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view tok = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    const size_t b = tok.find_first_not_of(' ');
    if (b == std::string_view::npos) continue;
    const size_t e = tok.find_last_not_of(' ') + 1;
    int64_t d = -1;
    auto [end, ec] = std::from_chars(tok.data() + b, tok.data() + e, d);
    if (ec != std::errc() || end != tok.data() + e || d < 0) bad_shape();
    shape.push_back(d);
    const auto ud = static_cast<uint64_t>(d);
    if (ud != 0 && need > UINT64_MAX / ud) overflow = true;
    need = overflow ? need : need * ud;
  }
  for (int64_t d : shape) {
    if (d == 0) need = 0, overflow = false;
  }
  if (overflow || need > have) {
    fail(ErrorCode::io_error, file + ": fewer bytes than its shape needs (shape " + dims + " of " +
                                  descr + " needs " + (overflow ? std::string("more than 2^64") : std::to_string(need)) +
                                  " bytes, the file has " + std::to_string(have) + ")");
  }
  TensorData t(shape, dtype);
  if (t.nbytes()) std::memcpy(t.raw_data(), bytes.data() + pos, t.nbytes());
  return t;
}

TensorData read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::not_found, "cannot open '" + path.string() + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path.string());
}

void write_npy(const std::filesystem::path& path, TensorData t) {
  t = t.to(tg::Device::cpu());
  if (t.dtype() == DType::bf16) {
    TensorData f(t.shape(), DType::f32);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      f.data<float>()[i] = static_cast<float>(t.element_as_double(i));
    }
    t = f;
  }
  std::string dims;  // "2, 3"; "4," for rank 1; "" for a scalar
  for (size_t i = 0; i < t.shape().size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(t.shape()[i]);
  }
  if (t.rank() == 1) dims += ",";
  std::string header = "{'descr': '" + std::string(npy_descr(t.dtype())) +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorCode::io_error, "cannot write '" + path.string() + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  auto hlen = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&hlen), 2);
  out << header;
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
}

}  // namespace tg::cli
