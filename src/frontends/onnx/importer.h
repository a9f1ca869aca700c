// The importer's state while one ModelProto becomes a Graph (importer.cpp), shared with
// NodeContext (node_context.cpp).
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontends/onnx/converter.h"
#include "frontends/onnx/proto.h"
#include "tg/onnx.h"

namespace tg::onnx {

/// An ONNX value (a named edge of the model graph) and what is known about it at import time.
struct Value {
  Tensor tensor;
  std::optional<TensorData> known;  ///< its value, once known (constants, folded shapes)
  std::vector<std::string> deps;    ///< graph inputs its value depends on (sorted, unique)
  bool variable_dep = false;        ///< depends on a variable (an initializer made variable)
  bool random = false;              ///< depends on random numbers drawn at run time
  std::string producer;             ///< NodeContext::describe() of the node that made it
  /// Its import-time value may hold symbols (dims <= -2, tg::symbolic_dim) standing for sizes
  /// known at run time: made by Shape of a tensor of symbolic shape, then moved by ops that do
  /// not compute on elements (see NodeContext::symbolic_ints_constant).
  bool symbolic = false;
};

/// Thrown (internally) when a node needs the import-time value of graph inputs; import() asks
/// ImportOptions::input_values for them and imports again with those inputs fixed.
struct NeedInputValues {
  std::vector<std::string> names;
  std::string where;  ///< "[onnx] node '...' (Op, opset N): input 1 ('shape')"
};

class Importer {
 public:
  Importer(const pb::ModelProto& model, const ImportOptions& options, std::filesystem::path dir,
           const std::map<std::string, TensorData>& fixed);
  ImportResult run();

  Graph& graph() { return graph_; }
  const std::filesystem::path& external_dir() const { return dir_; }
  /// The value named `name`, or nullptr.
  Value* find(const std::string& name);
  /// Import-time value of input `i` of the node (see NodeContext::value).
  TensorData value_of(const NodeContext& ctx, int i);
  /// The value of input `i` when it is known or computable from constants alone (nullopt when
  /// it depends on graph inputs, variables or random numbers).
  std::optional<TensorData> try_value_of(const NodeContext& ctx, int i);
  /// The value recorded for `t` by note_known, if any.
  std::optional<TensorData> known_of(const Tensor& t) const;
  /// Records that `t` holds `v` (for constants made by converters).
  void note_known(const Tensor& t, const TensorData& v);
  /// Records that `t`'s value holds symbols (NodeContext::symbolic_ints_constant).
  void note_symbolic(const Tensor& t) { symbolic_by_tensor_.insert({t.node_id(), t.index()}); }
  /// Converts the nodes of `body` (an If branch, a Loop or Scan body) with its graph inputs bound
  /// to `inputs`; names of the enclosing graphs stay visible, names defined inside do not leak
  /// out. Returns the body's outputs.
  std::vector<Tensor> import_subgraph(const NodeContext& ctx, const pb::GraphProto& body,
                                      const std::vector<Tensor>& inputs);

 private:
  void add_opsets();
  void add_initializers(ImportResult& result);
  void add_inputs(ImportResult& result);
  void convert_node(const pb::NodeProto& node, int index);
  /// Raises tg::Error(invalid_argument) when a node writes a value another node, an initializer
  /// or a graph input already defines (ONNX's single assignment).
  void check_single_assignment(const google::protobuf::RepeatedPtrField<pb::NodeProto>& nodes);
  void add_outputs(ImportResult& result);
  int64_t opset_of(const std::string& domain) const;

  const pb::ModelProto& model_;
  const ImportOptions& options_;
  std::filesystem::path dir_;
  const std::map<std::string, TensorData>& fixed_;
  Graph graph_;
  std::map<std::string, int64_t> opsets_;
  std::unordered_map<std::string, Value> values_;
  std::map<std::pair<int, int>, TensorData> known_by_tensor_;
  std::set<std::pair<int, int>> symbolic_by_tensor_;
  /// What the subgraphs converted for the current node depend on through outer-scope names
  /// (merged into the node's outputs; saved and restored around nested nodes).
  Value pending_;
};

/// "node 'name' (Op, opset N)" for node number `index` of the graph.
std::string describe_node(const pb::NodeProto& node, int64_t opset);

}  // namespace tg::onnx
