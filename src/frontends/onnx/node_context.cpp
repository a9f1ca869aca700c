// NodeContext: inputs, import-time values, attributes and errors of the node being converted.
#include <fmt/format.h>

#include "core/error_util.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/tensor_proto.h"

namespace tg::onnx {

Graph& NodeContext::graph() { return importer_.graph(); }

std::string NodeContext::describe() const { return describe_node(node_, opset_); }

void NodeContext::fail(ErrorCode code, const std::string& message) const {
  throw Error(code, fmt::format("[onnx] {}: {}", describe(), message));
}

bool NodeContext::has_input(int i) const {
  return i >= 0 && i < node_.input_size() && !node_.input(i).empty();
}

Tensor NodeContext::input(int i) const {
  if (!has_input(i)) fail(ErrorCode::not_found, "required input {} is missing", i);
  Value* v = importer_.find(node_.input(i));
  if (!v) fail(ErrorCode::not_found, "input {} '{}' is not defined", i, node_.input(i));
  return v->tensor;
}

Tensor NodeContext::optional_input(int i) const { return has_input(i) ? input(i) : Tensor(); }

std::vector<Tensor> NodeContext::inputs_from(int first) const {
  std::vector<Tensor> out;
  for (int i = first; i < node_.input_size(); ++i) {
    if (has_input(i)) out.push_back(input(i));
  }
  return out;
}

TensorData NodeContext::value(int i) {
  input(i);  // fails when absent
  return importer_.value_of(*this, i);
}

std::optional<TensorData> NodeContext::try_value(int i) {
  input(i);
  return importer_.try_value_of(*this, i);
}

std::optional<TensorData> NodeContext::known(const Tensor& t) const { return importer_.known_of(t); }

const pb::GraphProto& NodeContext::attr_graph(std::string_view name) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a || !a->has_g()) fail(ErrorCode::invalid_argument, "graph attribute '{}' is missing", name);
  return a->g();
}

std::vector<Tensor> NodeContext::subgraph(const pb::GraphProto& body,
                                          const std::vector<Tensor>& inputs) {
  return importer_.import_subgraph(*this, body, inputs);
}

std::vector<int64_t> NodeContext::ints(int i) {
  TensorData v = value(i);
  if (!is_integer(v.dtype()) || v.rank() > 1) {
    fail(ErrorCode::invalid_argument, "input {} must be a 0-d or 1-d integer tensor, got {}", i,
         v.type().to_string());
  }
  if (v.dtype() == DType::i64) return v.to_vector<int64_t>();  // exact beyond 2^53
  // Narrower integers are exact as doubles (the i64 values near 2^63 are not: converting their
  // doubles back overflowed, found by fuzzing).
  std::vector<int64_t> out(static_cast<size_t>(v.num_elements()));
  for (int64_t k = 0; k < v.num_elements(); ++k) {
    out[k] = static_cast<int64_t>(v.element_as_double(k));
  }
  return out;
}

std::vector<double> NodeContext::doubles(int i) {
  TensorData v = value(i);
  if (v.rank() > 1) {
    fail(ErrorCode::invalid_argument, "input {} must be 0-d or 1-d, got {}", i,
         v.type().to_string());
  }
  std::vector<double> out(static_cast<size_t>(v.num_elements()));
  for (int64_t k = 0; k < v.num_elements(); ++k) out[k] = v.element_as_double(k);
  return out;
}

double NodeContext::scalar(int i) {
  TensorData v = value(i);
  if (v.num_elements() != 1) {
    fail(ErrorCode::invalid_argument, "input {} must hold one value, got {}", i,
         v.type().to_string());
  }
  return v.element_as_double(0);
}

const pb::AttributeProto* NodeContext::find_attr(std::string_view name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool NodeContext::has_attr(std::string_view name) const { return find_attr(name) != nullptr; }

void NodeContext::require_attr(std::string_view name) const {
  if (!has_attr(name)) fail(ErrorCode::invalid_argument, "required attribute '{}' is missing", name);
}

namespace {

void check_type(const NodeContext& ctx, const pb::AttributeProto& a,
                pb::AttributeProto::AttributeType want, const char* want_name) {
  // Old exporters leave `type` unset (UNDEFINED); accept those.
  if (a.type() != pb::AttributeProto::UNDEFINED && a.type() != want) {
    ctx.fail(ErrorCode::invalid_argument, "attribute '{}' must be {}", a.name(), want_name);
  }
}

}  // namespace

int64_t NodeContext::attr_int(std::string_view name, int64_t def) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a) return def;
  check_type(*this, *a, pb::AttributeProto::INT, "an int");
  return a->i();
}

double NodeContext::attr_float(std::string_view name, double def) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a) return def;
  check_type(*this, *a, pb::AttributeProto::FLOAT, "a float");
  return a->f();
}

std::string NodeContext::attr_string(std::string_view name, std::string def) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a) return def;
  check_type(*this, *a, pb::AttributeProto::STRING, "a string");
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(std::string_view name, std::vector<int64_t> def) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a) return def;
  check_type(*this, *a, pb::AttributeProto::INTS, "a list of ints");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> NodeContext::attr_floats(std::string_view name, std::vector<double> def) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a) return def;
  check_type(*this, *a, pb::AttributeProto::FLOATS, "a list of floats");
  return {a->floats().begin(), a->floats().end()};
}

TensorData NodeContext::attr_tensor(std::string_view name) const {
  const pb::AttributeProto* a = find_attr(name);
  if (!a) fail(ErrorCode::not_found, "attribute '{}' is missing", name);
  check_type(*this, *a, pb::AttributeProto::TENSOR, "a tensor");
  try {
    return tensor_from_proto(a->t(), importer_.external_dir());
  } catch (const Error& e) {
    fail(e.code(), "attribute '{}': {}", name, e.what());
  }
}

bool NodeContext::output_used(int i) const {
  return i >= 0 && i < node_.output_size() && !node_.output(i).empty();
}

Tensor NodeContext::constant(const TensorData& v) {
  Tensor t = graph().constant(v);
  importer_.note_known(t, v);
  return t;
}

Tensor NodeContext::symbolic_ints_constant(const std::vector<int64_t>& v) {
  Tensor t = ints_constant(v);
  importer_.note_symbolic(t);
  return t;
}

bool NodeContext::symbolic(int i) const {
  if (!has_input(i)) return false;
  const Value* v = importer_.find(node_.input(i));
  return v != nullptr && v->symbolic;
}

Tensor NodeContext::scalar_constant(double v, DType dtype) {
  return constant(TensorData::full({}, dtype, v));
}

Tensor NodeContext::ints_constant(const std::vector<int64_t>& v) {
  return constant(TensorData::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}));
}

int64_t NodeContext::axis(int64_t axis, int64_t rank, std::string_view what) const {
  if (axis < -rank || axis >= rank) {
    fail(ErrorCode::invalid_argument, "{} {} is out of range for rank {}", what, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t NodeContext::static_dim(int i, int64_t d) const {
  Tensor x = input(i);
  if (d < 0 || d >= x.rank() || x.shape()[d] < 0) {
    fail(ErrorCode::unsupported, "dim {} of input {} must be static (input {})", d, i,
         str(x.shape()));
  }
  return x.shape()[d];
}

}  // namespace tg::onnx
