// What an ONNX op converter sees: NodeContext (inputs, import-time values, attributes with
// ONNX defaults, errors naming the node) and the converter-table row type. Converters live in
// one file per op family (convert_<family>.cpp) and are listed in the one table of registry.cpp.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error_util.h"  // str(Shape) for messages
#include "frontends/onnx/proto.h"
#include "tg/ops.h"

namespace tg::onnx {

class Importer;

/// One node being converted.
class NodeContext {
 public:
  NodeContext(Importer& importer, const pb::NodeProto& node, int64_t opset)
      : importer_(importer), node_(node), opset_(opset) {}

  const std::string& op_type() const { return node_.op_type(); }
  const std::string& name() const { return node_.name(); }
  /// The model's opset of the node's domain.
  int64_t opset() const { return opset_; }
  const pb::NodeProto& proto() const { return node_; }
  Graph& graph();

  // Inputs. Optional inputs may be absent (beyond input_size, or named "").
  int num_inputs() const { return node_.input_size(); }
  bool has_input(int i) const;
  /// Input i; tg::Error(not_found) naming the node when absent.
  Tensor input(int i) const;
  /// Input i, or an invalid Tensor when absent.
  Tensor optional_input(int i) const;
  /// Every present input from `first` on (variadic ops).
  std::vector<Tensor> inputs_from(int first) const;

  /// The value of input i at import time (from constants, initializers, shapes, or
  /// ImportOptions::input_values); fails (unsupported) naming the node when it depends on the
  /// run-time value of a graph input that cannot be fixed, or on a variable.
  TensorData value(int i);
  /// The value of input i when it is known without fixing graph inputs (constants, shapes);
  /// nullopt when it depends on run-time data.
  std::optional<TensorData> try_value(int i);
  /// The import-time value recorded for tensor `t` (a constant made by a converter), if any.
  std::optional<TensorData> known(const Tensor& t) const;
  /// value(i) of an integer tensor of rank <= 1 as int64s.
  std::vector<int64_t> ints(int i);
  /// value(i) of a numeric tensor of rank <= 1 as doubles.
  std::vector<double> doubles(int i);
  /// value(i) of a numeric scalar (or one-element tensor) as a double.
  double scalar(int i);

  // Attributes, with the default used when absent.
  bool has_attr(std::string_view name) const;
  int64_t attr_int(std::string_view name, int64_t def) const;
  double attr_float(std::string_view name, double def) const;
  std::string attr_string(std::string_view name, std::string def = "") const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(std::string_view name, std::vector<double> def = {}) const;
  /// A TENSOR attribute's value; tg::Error(not_found) when absent.
  TensorData attr_tensor(std::string_view name) const;
  const pb::AttributeProto* find_attr(std::string_view name) const;
  /// A GRAPH attribute (If branches, Loop and Scan bodies); tg::Error(invalid_argument) when absent.
  const pb::GraphProto& attr_graph(std::string_view name) const;
  /// Converts subgraph `body` with its inputs bound to `inputs` (see Importer::import_subgraph).
  std::vector<Tensor> subgraph(const pb::GraphProto& body, const std::vector<Tensor>& inputs);
  /// Fails (invalid_argument) when a required attribute is absent.
  void require_attr(std::string_view name) const;

  // Outputs.
  int num_outputs() const { return node_.output_size(); }
  /// True when output i exists and is named (consumed or a graph output).
  bool output_used(int i) const;

  /// A constant whose value is known at import time (so later nodes may read it through value()).
  Tensor constant(const TensorData& v);
  /// A 0-d constant of `dtype`.
  Tensor scalar_constant(double v, DType dtype);
  /// A 1-d i64 constant.
  Tensor ints_constant(const std::vector<int64_t>& v);
  /// A 1-d i64 constant holding dims of which some are symbols (tg::symbolic_dim values <= -2:
  /// Shape of a tensor of symbolic shape). Its value flows through the ops that move elements
  /// without computing on them (Gather, Concat, Unsqueeze, Where...; see importer.cpp) to the
  /// ops that take a shape (Reshape, Expand, ConstantOfShape, a Slice's ends, a Range's limit).
  Tensor symbolic_ints_constant(const std::vector<int64_t>& v);
  /// Whether input i's import-time value may hold symbols (see symbolic_ints_constant).
  bool symbolic(int i) const;

  /// Raises tg::Error(code) "[onnx] node 'name' (Op, opset N): message".
  [[noreturn]] void fail(ErrorCode code, const std::string& message) const;
  template <typename... Args>
  [[noreturn]] void fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) const {
    fail(code, fmt::format(f, std::forward<Args>(args)...));
  }
  /// "node 'name' (Op, opset N)".
  std::string describe() const;

  /// An axis in [-rank, rank) made non-negative; fails (invalid_argument) otherwise.
  int64_t axis(int64_t axis, int64_t rank, std::string_view what = "axis") const;
  /// The static dim `d` of input i; fails (unsupported) when it is dynamic.
  int64_t static_dim(int i, int64_t d) const;

 private:
  Importer& importer_;
  const pb::NodeProto& node_;
  int64_t opset_;
};

/// Converts one node: returns its outputs in order (fewer than the node has when the trailing
/// optional outputs are not produced; an invalid Tensor for an unproduced middle output).
using ConvertFn = std::vector<Tensor> (*)(NodeContext& ctx);

/// A converter-table row: `op_type` of `domain` at opsets [since, until].
struct ConverterRow {
  const char* domain;
  const char* op_type;
  int since;
  int until;
  ConvertFn fn;
  const char* notes;
};

/// The one converter table (registry.cpp).
std::span<const ConverterRow> converter_table();
/// The row for (domain, op_type) covering `opset`; nullptr when none. `known` is set to whether
/// any row has that op type.
const ConverterRow* find_converter(std::string_view domain, std::string_view op_type,
                                   int64_t opset, bool* known);

// Shared helpers of the converters (helpers.cpp).
/// x cast to `dtype` (x itself when it already has it).
Tensor cast_to(Tensor x, DType dtype);
/// A 0-d constant of x's dtype.
Tensor scalar_like(Tensor x, double v);
/// Integer/bool x computed in f64 then cast back (for ops TensorGraph has only on floats).
Tensor via_f64(Tensor x, Tensor (*f)(Tensor));
/// The ONNX dtype of attribute `to` etc. as a tg dtype; fails (unsupported) naming the node.
DType dtype_attr(const NodeContext& ctx, int64_t onnx_type);
/// Conv's attributes (kernel_shape, strides, dilations, pads, auto_pad, group) applied to x
/// [N, C, spatial...] and w [M, C/group, k...] (1-d and 2-d windows), without bias
/// (convert_conv.cpp; shared with ConvInteger and QLinearConv).
Tensor conv_with_attrs(NodeContext& c, Tensor x, Tensor w);
/// ONNX/NumPy bidirectional broadcast shape of a and b (for Expand).
Shape broadcast_shape(const NodeContext& ctx, const Shape& a, const Shape& b);

// Simple elementwise converters used directly in the table.
template <Tensor (*F)(Tensor)>
std::vector<Tensor> unary(NodeContext& ctx) {
  return {F(ctx.input(0))};
}
template <Tensor (*F)(Tensor, Tensor)>
std::vector<Tensor> binary(NodeContext& ctx) {
  return {F(ctx.input(0), ctx.input(1))};
}

}  // namespace tg::onnx
