// The public Graph, Tensor and Operation classes.
#include "tg/graph.h"

#include "core/convert.h"
#include "core/error_util.h"
#include "ir/graph.h"
#include "ops/builder.h"
#include "runtime/compile.h"

namespace tg {

namespace {
const ir::Node& node_of(const std::shared_ptr<ir::Graph>& g, int id) {
  if (!g) throw Error(ErrorCode::invalid_argument, "[tensor] use of an empty Tensor or Operation");
  return g->node(id);
}
}  // namespace

const Shape& Tensor::shape() const { return node_of(graph_, node_).outputs.at(index_).shape; }
DType Tensor::dtype() const { return node_of(graph_, node_).outputs.at(index_).dtype; }
TensorType Tensor::type() const { return node_of(graph_, node_).outputs.at(index_); }
Operation Tensor::op() const { return Operation(graph_, node_); }
std::string Tensor::to_string() const {
  if (!graph_) return "<empty tensor>";
  return fmt::format("%{}:{} {}", node_, index_, type().to_string());
}

std::string Operation::kind_name() const { return std::string(ir::op_name(node_of(graph_, node_).kind)); }
const std::string& Operation::name() const { return node_of(graph_, node_).name; }
int Operation::num_outputs() const { return static_cast<int>(node_of(graph_, node_).outputs.size()); }
Tensor Operation::output(int i) const {
  if (i < 0 || i >= num_outputs()) {
    fail(ErrorCode::out_of_range, kind_name(), "output {} of {} outputs", i, num_outputs());
  }
  return Tensor(graph_, node_, i);
}

Graph::Graph() : impl_(std::make_shared<ir::Graph>()) {}

Tensor Graph::placeholder(Shape shape, DType dtype, std::string name) {
  for (int64_t d : shape) {
    if (d < -1 && !is_symbolic_dim(d)) {  // symbols: tg::symbolic_dim
      fail(ErrorCode::invalid_argument, "placeholder", "'{}' has invalid dim {} in {} (use -1 for dynamic)", name,
           d, str(shape));
    }
  }
  if (name.empty()) name = "placeholder_" + std::to_string(impl_->size());
  return ops::make_source(*this, ir::OpKind::placeholder, ir::NoAttrs{}, {std::move(shape), dtype},
                          std::move(name));
}

Tensor Graph::constant(const TensorData& value, std::string name) {
  if (value.empty()) fail(ErrorCode::invalid_argument, "constant", "value is an empty TensorData");
  // A deep copy, as documented: the caller may still write into `value` through data<T>().
  return ops::make_source(*this, ir::OpKind::constant, ir::ConstantAttrs{value.to(Device::cpu()).clone()},
                          value.type(), std::move(name));
}

Tensor Graph::constant(double value, DType dtype) {
  return constant(TensorData::full({}, dtype, value));
}

namespace {
// The run cache is keyed by node ids, so a tensor of another graph must be rejected before the
// lookup (it could otherwise hit an entry of this graph with the same ids).
void check_run_owner(const std::shared_ptr<ir::Graph>& graph, const std::shared_ptr<ir::Graph>& owner,
                     bool valid, std::string_view what) {
  if (!valid) fail(ErrorCode::invalid_argument, "run", "{} is empty", what);
  if (owner != graph) fail(ErrorCode::invalid_argument, "run", "{} belongs to another graph", what);
}
}  // namespace

std::vector<TensorData> Graph::run(const Feeds& feeds, const std::vector<Tensor>& targets,
                                   const std::vector<Operation>& target_ops, Device device) {
  for (const auto& f : feeds) check_run_owner(impl_, f.first.graph_impl(), f.first.valid(), "a feed");
  for (const Tensor& t : targets) check_run_owner(impl_, t.graph_impl(), t.valid(), "a target tensor");
  for (const Operation& o : target_ops) {
    check_run_owner(impl_, o.graph_impl(), o.valid(), "a target operation");
  }
  std::string key = device.to_string() + "|";
  FeedTypes types;
  std::vector<TensorData> inputs;
  for (const auto& [t, v] : feeds) {
    if (v.empty()) {
      fail(ErrorCode::invalid_argument, "run", "feed for placeholder '{}' is empty", t.op().name());
    }
    types.emplace_back(t, v.type());
    inputs.push_back(v);
    key += fmt::format("{}:{};", t.node_id(), v.type().to_string());
  }
  key += "|";
  for (const Tensor& t : targets) key += fmt::format("{}:{},", t.node_id(), t.index());
  key += "|";
  for (const Operation& o : target_ops) key += fmt::format("{},", o.node_id());
  Executable exe;
  {
    std::lock_guard<std::mutex> lock(impl_->runtime_mutex());
    auto& entries = runtime::graph_state(*impl_).executables;
    auto it = entries.find(key);
    if (it != entries.end()) exe = it->second;
  }
  if (!exe.valid()) {
    exe = compile(device, types, targets, target_ops);
    std::lock_guard<std::mutex> lock(impl_->runtime_mutex());
    runtime::graph_state(*impl_).executables.emplace(key, exe);
  }
  return exe.run(inputs);
}

Executable Graph::compile(Device device, const FeedTypes& feed_types,
                          const std::vector<Tensor>& targets, const std::vector<Operation>& target_ops,
                          CompileOptions options) {
  return runtime::compile_graph(impl_, device, feed_types, targets, target_ops, options);
}

std::string Graph::to_string() const { return ir::print_graph(*impl_); }
int Graph::num_nodes() const { return impl_->size(); }

std::string to_dot(const Graph& g) { return ir::graph_to_dot(*g.impl()); }

}  // namespace tg
