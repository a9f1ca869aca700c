// The IR graph: an arena of nodes with stable dense ids, in build order (so every node's inputs
// have smaller ids than the node itself).
#pragma once
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/op_info.h"
#include "ir/variables.h"
#include "tg/graph.h"

namespace tg::ir {

/// Output `index` of node `node`.
struct ValueRef {
  int node = -1;
  int index = 0;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
  friend auto operator<=>(const ValueRef&, const ValueRef&) = default;
};

class Graph;

/// A sub-graph owned by a node (the bodies of if/for/while). Its parameters are placeholder nodes
/// of `body`, bound in order when the region runs (for the control-flow ops: the op's own
/// parameters, then one per captured value, see ops.def); its results are values of `body`.
/// Bodies share the variable store of the outer graph and are immutable once built (passes that
/// refine them work on copies).
struct Region {
  std::shared_ptr<Graph> body;
  std::vector<int> params;
  std::vector<ValueRef> results;
};

struct Node {
  int id = -1;
  OpKind kind = OpKind::constant;
  Attrs attrs;
  std::vector<ValueRef> inputs;
  std::vector<TensorType> outputs;
  std::vector<int> control_inputs;  ///< nodes that must run before this one
  std::vector<Region> regions;
  std::string name;
};

class Graph {
 public:
  /// Appends a node; control inputs of the enclosing control_dependency scopes are added.
  int add_node(OpKind kind, std::vector<ValueRef> inputs, Attrs attrs,
               std::vector<TensorType> outputs, std::string name = "");
  Node& node(int id) { return nodes_.at(static_cast<size_t>(id)); }
  const Node& node(int id) const { return nodes_.at(static_cast<size_t>(id)); }
  int size() const { return static_cast<int>(nodes_.size()); }
  const TensorType& type(ValueRef v) const { return node(v.node).outputs.at(static_cast<size_t>(v.index)); }
  std::deque<Node>& nodes() { return nodes_; }
  const std::deque<Node>& nodes() const { return nodes_; }

  /// Control-dependency scopes: every node added while a scope is open gets its ops as control
  /// inputs.
  void push_control_scope(std::vector<int> ops) { control_scopes_.push_back(std::move(ops)); }
  void pop_control_scope() { control_scopes_.pop_back(); }

  /// State the runtime keeps with the graph (tg::Graph::run's executables), opaque to the IR;
  /// guarded by runtime_mutex().
  std::mutex& runtime_mutex() { return runtime_mutex_; }
  std::shared_ptr<void>& runtime_state() { return runtime_state_; }

  /// The variables' values, shared with every copy of this graph (compiled executables).
  const std::shared_ptr<VariableStore>& variables() const { return variables_; }

  Graph() = default;
  /// An empty graph whose variables are `variables` (a region body shares its outer graph's).
  explicit Graph(std::shared_ptr<VariableStore> variables) : variables_(std::move(variables)) {}
  /// Copies the nodes and shares the variable store (not the runtime state or scopes); used by
  /// compile.
  Graph(const Graph& other) : nodes_(other.nodes_), variables_(other.variables_) {}

 private:
  std::deque<Node> nodes_;
  std::shared_ptr<VariableStore> variables_ = std::make_shared<VariableStore>();
  std::vector<std::vector<int>> control_scopes_;
  std::mutex runtime_mutex_;
  std::shared_ptr<void> runtime_state_;
};

/// Text form: one line per node, "%2 = add(%0, %1) : f32[2,3]"; regions indented below their op.
std::string print_graph(const Graph& g);
/// Graphviz DOT.
std::string graph_to_dot(const Graph& g);
/// Checks structural invariants (inputs refer to earlier nodes and existing outputs, arity
/// matches ops.def, control inputs exist, region results exist). Raises tg::Error(internal).
void verify(const Graph& g);

}  // namespace tg::ir
