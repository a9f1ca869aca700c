// ONNX import: an ONNX model (ModelProto, https://onnx.ai) becomes a TensorGraph Graph.
//
//   tg::onnx::ImportResult m = tg::onnx::import("resnet18.onnx");
//   std::vector<tg::TensorData> y = m.graph.run(m.feeds({image}), m.targets());
//
// Each graph input that no initializer provides becomes a placeholder (named as in the model;
// unknown or symbolic dims become -1), each initializer a constant (or a variable, on request;
// an initializer that is also a graph input is that input's default value, which
// ImportOptions::initializer_values replaces),
// and the graph outputs become the targets, in the model's order. Nodes are lowered one by one
// through converters keyed by (domain, op type, opset range) onto the public op API; the
// supported ops are listed by supported_ops() and in docs/onnx.md.
//
// Shapes are static in TensorGraph: values that determine a shape (Reshape's shape, Slice's
// starts, Expand's shape, ...) must be computable when the model is imported. They are folded
// from constants, initializers and the shapes of tensors; when one depends on the value of a
// graph input, ImportOptions::input_values is asked for it and the input becomes a constant.
//
// Errors: tg::Error naming the node - "[onnx] node 'conv1' (Conv, opset 13): <reason>" - for a
// truncated or corrupt file (io_error / invalid_argument), an unknown op (unsupported), an op
// not defined at the model's opset (unsupported), a missing input (not_found), mismatched shapes
// or dtypes (the error of the op builder, prefixed with the node), and unsupported attribute
// values or data types (unsupported). No protobuf types appear in this header.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg::onnx {

/// True when this build has the ONNX frontend (protobuf and the ONNX schema were found); when
/// false every import raises tg::Error(unsupported).
TG_API bool available();

/// The newest opset of the default ("ai.onnx") domain the converters were written against;
/// models importing a newer one raise tg::Error(unsupported).
inline constexpr int64_t kMaxOpset = 28;

struct ImportOptions {
  /// Initializers become variables (Graph::variable, named as the initializer) instead of
  /// constants, so an imported model can be fine-tuned and checkpointed.
  bool initializers_as_variables = false;
  /// Shapes for graph inputs (by name) replacing the declared ones, e.g. to fix dynamic dims.
  /// Each must have the declared rank and agree with every static declared dim, where -1 or a
  /// symbol (tg::symbolic_dim) leaves the dim open (CompileOptions::disable_type_inference)
  /// (tg::Error(shape_mismatch)).
  /// Unknown names raise tg::Error(not_found).
  std::map<std::string, Shape> input_shapes = {};
  /// Asked for the value of graph input `name` when a shape depends on it (see above); return
  /// the value to make that input a constant of it, or nullopt to fail the import
  /// (tg::Error(unsupported) naming the node). Unset: such models fail to import.
  std::function<std::optional<TensorData>(const std::string& name)> input_values = {};
  /// Values replacing the defaults of graph inputs that an initializer provides, by input name.
  /// ONNX lets a feed override such an input (IR < 4 models list every initializer among the
  /// graph inputs; the spec: "an initializer with the same name as a graph input specifies a
  /// default value for that input"). The value becomes the constant (or variable) in place of
  /// the initializer's. Each must have the initializer's dtype (tg::Error(dtype_mismatch)) and a
  /// shape the input's declaration accepts (tg::Error(shape_mismatch)); a name that is not a graph
  /// input with an initializer raises tg::Error(not_found).
  std::map<std::string, TensorData> initializer_values = {};
  /// Directory that external-data file names are relative to (default: the model file's
  /// directory; required for external data when importing from bytes).
  std::filesystem::path external_data_dir = {};
};

/// A named tensor of the imported graph.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct TG_API ImportResult {
  Graph graph;
  /// The placeholders, in the model's graph-input order (inputs provided by initializers or
  /// fixed through ImportOptions::input_values are not among them).
  std::vector<NamedTensor> inputs;
  /// The graph outputs, in the model's order.
  std::vector<NamedTensor> outputs;
  /// The initializers made variables (ImportOptions::initializers_as_variables), in model order.
  std::vector<NamedTensor> variables;
  /// Graph inputs fixed at import time through ImportOptions::input_values.
  std::vector<std::string> fixed_inputs;
  int64_t ir_version = 0;
  /// The model's opset of the default domain.
  int64_t opset = 0;
  std::string producer_name;
  std::string producer_version;

  /// The output tensors, to pass as Graph::run targets.
  std::vector<Tensor> targets() const;
  /// Pairs `values` (one per input, in inputs order) with the placeholders. Raises
  /// tg::Error(invalid_argument) for a wrong count.
  Feeds feeds(const std::vector<TensorData>& values) const;
};

/// A graph input of a model as its file declares it, before any import.
struct InputInfo {
  std::string name;
  DType dtype = DType::f32;
  /// The declared dims, -1 for a symbolic or unknown dim; nullopt when the model does not declare
  /// the input's rank.
  std::optional<Shape> shape = std::nullopt;
  /// An initializer provides the input's default value (ImportOptions::initializer_values may
  /// replace it); listed only by model_inputs(path, true).
  bool has_default = false;
};

/// The graph inputs of the model file at `path` that no initializer provides, in the model's
/// order, as declared (nothing is imported: the nodes are not read, so a model whose shapes depend
/// on an input's value still lists that input); with `with_defaults`, also those an initializer
/// provides (has_default). Lets a caller learn what to feed before choosing ImportOptions. Raises
/// tg::Error(not_found) for a missing file, tg::Error(io_error) for one that is not a valid ONNX
/// model, and tg::Error(unsupported) "[onnx] graph input 'x': ..." for an input that is not a
/// tensor or has an element type TensorGraph lacks (e.g. uint16, string).
TG_API std::vector<InputInfo> model_inputs(const std::filesystem::path& path, bool with_defaults = false);

/// Imports the model file at `path` (external data relative to its directory). Raises tg::Error
/// (not_found) for a missing file, else as described at the top of this header.
TG_API ImportResult import(const std::filesystem::path& path, const ImportOptions& options = {});
/// Imports a serialized ModelProto held in memory.
TG_API ImportResult import(std::span<const uint8_t> model_bytes, const ImportOptions& options = {});

/// Reads a serialized TensorProto (the input_*.pb / output_*.pb files of the ONNX test data) as
/// a host tensor; `name` receives the tensor's name when given. Raises tg::Error(not_found /
/// io_error) for an unreadable file and tg::Error(unsupported) for a data type TensorGraph does
/// not have (e.g. uint16, string, complex64).
TG_API TensorData read_tensor_proto(const std::filesystem::path& path, std::string* name = nullptr);
/// Parses a TensorProto from memory, as read_tensor_proto.
TG_API TensorData parse_tensor_proto(std::span<const uint8_t> bytes, std::string* name = nullptr);

/// One converter-table row: `op_type` of `domain` ("" is ai.onnx) is supported at opsets
/// [since_version, until_version] (until_version == kMaxOpset: up to the newest known).
struct OpSupport {
  std::string domain;
  std::string op_type;
  int64_t since_version = 1;
  int64_t until_version = kMaxOpset;
  std::string notes;  ///< what the converter does not support, if anything
};
/// Every converter-table row, ordered by domain, op type, then since_version.
TG_API std::vector<OpSupport> supported_ops();
/// docs/onnx.md's table of supported ops (Markdown), generated from supported_ops().
TG_API std::string supported_ops_markdown();

}  // namespace tg::onnx
