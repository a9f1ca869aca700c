// A tiny writer of ONNX protobuf messages for tests: builds ModelProto bytes field by field
// (protobuf wire format: varints and length-delimited fields), so the tests need neither the
// protobuf library nor model files on disk. Field numbers are those of onnx/onnx.proto.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace tg::onnx::testing {

/// One protobuf message under construction.
class Msg {
 public:
  Msg& varint(int field, uint64_t v) {
    key(field, 0);
    put_varint(v);
    return *this;
  }
  Msg& bytes(int field, const std::string& s) {
    key(field, 2);
    put_varint(s.size());
    out_ += s;
    return *this;
  }
  Msg& msg(int field, const Msg& m) { return bytes(field, m.str()); }
  Msg& f32(int field, float v) {
    key(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    out_.append(b, 4);
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void key(int field, int wire) { put_varint((static_cast<uint64_t>(field) << 3) | wire); }
  void put_varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

// ONNX element types used by the tests.
inline constexpr int kFloat = 1, kInt64 = 7, kUint16 = 4, kBool = 9;

/// TypeProto of a tensor; a dim of -1 becomes a symbolic dim "N".
inline Msg tensor_type(int elem, const std::vector<int64_t>& dims) {
  Msg shape;
  for (int64_t d : dims) {
    Msg dim;
    if (d >= 0) dim.varint(1, static_cast<uint64_t>(d));
    else dim.bytes(2, "N");
    shape.msg(1, dim);
  }
  Msg t;
  t.varint(1, static_cast<uint64_t>(elem)).msg(2, shape);
  return Msg().msg(1, t);
}

/// TypeProto of a tensor whose dims are strings: digits give a size, anything else a dim_param.
inline Msg tensor_type_named(int elem, const std::vector<std::string>& dims) {
  Msg shape;
  for (const std::string& d : dims) {
    Msg dim;
    if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) dim.varint(1, std::stoull(d));
    else dim.bytes(2, d);
    shape.msg(1, dim);
  }
  Msg t;
  t.varint(1, static_cast<uint64_t>(elem)).msg(2, shape);
  return Msg().msg(1, t);
}

/// ValueInfoProto with dims as in tensor_type_named.
inline Msg value_info_named(const std::string& name, int elem, const std::vector<std::string>& dims) {
  return Msg().bytes(1, name).msg(2, tensor_type_named(elem, dims));
}

/// ValueInfoProto.
inline Msg value_info(const std::string& name, int elem, const std::vector<int64_t>& dims) {
  return Msg().bytes(1, name).msg(2, tensor_type(elem, dims));
}

/// TensorProto with float values in raw_data (or with external data when `location` is set).
inline Msg float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<float>& values, const std::string& location = "") {
  Msg t;
  for (int64_t d : dims) t.varint(1, static_cast<uint64_t>(d));
  t.varint(2, kFloat).bytes(8, name);
  if (location.empty()) {
    t.bytes(9, std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  } else {
    t.msg(13, Msg().bytes(1, "location").bytes(2, location));
    t.varint(14, 1);  // data_location = EXTERNAL
  }
  return t;
}

/// AttributeProto of type INT (2), FLOAT (1) or INTS (7).
inline Msg attr_int(const std::string& name, int64_t v) {
  return Msg().bytes(1, name).varint(3, static_cast<uint64_t>(v)).varint(20, 2);
}
inline Msg attr_float(const std::string& name, float v) {
  return Msg().bytes(1, name).f32(2, v).varint(20, 1);
}
inline Msg attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  Msg m;
  m.bytes(1, name);
  for (int64_t x : v) m.varint(8, static_cast<uint64_t>(x));
  return m.varint(20, 7);
}

/// A GraphProto of `nodes` with `outputs` (If branches, loop bodies), as AttributeProto `name`.
inline Msg attr_graph(const std::string& name, const std::vector<Msg>& nodes,
                      const std::vector<Msg>& outputs, const std::vector<Msg>& inputs = {}) {
  Msg g;
  for (const Msg& n : nodes) g.msg(1, n);
  g.bytes(2, name + "_body");
  for (const Msg& i : inputs) g.msg(11, i);
  for (const Msg& o : outputs) g.msg(12, o);
  return Msg().bytes(1, name).msg(6, g).varint(20, 5);
}

/// NodeProto.
inline Msg node(const std::string& op, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, const std::string& name = "",
                const std::vector<Msg>& attrs = {}) {
  Msg n;
  for (const auto& i : inputs) n.bytes(1, i);
  for (const auto& o : outputs) n.bytes(2, o);
  if (!name.empty()) n.bytes(3, name);
  n.bytes(4, op);
  for (const Msg& a : attrs) n.msg(5, a);
  return n;
}

/// A ModelProto (IR version 8) of one graph importing the default domain at `opset`.
struct Model {
  std::vector<Msg> nodes, inputs, outputs, initializers;
  int64_t opset = 17;

  std::string bytes() const {
    Msg g;
    for (const Msg& n : nodes) g.msg(1, n);
    g.bytes(2, "test");
    for (const Msg& i : initializers) g.msg(5, i);
    for (const Msg& i : inputs) g.msg(11, i);
    for (const Msg& o : outputs) g.msg(12, o);
    Msg m;
    m.varint(1, 8).bytes(2, "tg-test").msg(7, g);
    m.msg(8, Msg().bytes(1, "").varint(2, static_cast<uint64_t>(opset)));
    return m.str();
  }
};

inline std::vector<uint8_t> as_bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace tg::onnx::testing
