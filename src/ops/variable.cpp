// Variables: the `variable` source (value at the start of the run), read_variable (the value at
// this point of the run) and assign_variable (a side effect committed when the run succeeds).
#include "ops/builder.h"

namespace tg {
namespace {

std::vector<TensorType> infer_variable(const ir::Node& node, std::span<const TensorType>) {
  return node.outputs;
}

std::vector<TensorType> infer_read(const ir::Node& node, std::span<const TensorType> in) {
  return {in[0]};
}

bool compatible(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] >= 0 && b[i] >= 0) return false;
  }
  return true;
}

std::vector<TensorType> infer_assign(const ir::Node& node, std::span<const TensorType> in) {
  if (in[1].dtype != in[0].dtype || !compatible(in[0].shape, in[1].shape)) {
    fail(ErrorCode::shape_mismatch, "assign_variable", "value {} does not match variable {}",
         in[1].to_string(), in[0].to_string());
  }
  return {in[0]};
}

const ir::Node& variable_node(const Tensor& v, std::string_view op) {
  if (!v.valid()) fail(ErrorCode::invalid_argument, op, "variable is an empty Tensor");
  const ir::Node& n = v.graph_impl()->node(v.node_id());
  if (n.kind != ir::OpKind::variable) {
    fail(ErrorCode::invalid_argument, op, "expects a variable (from Graph::variable), got the output of '{}'",
         ir::op_name(n.kind));
  }
  return n;
}

}  // namespace

namespace ops {
void register_variable_ops(OpRegistry& r) {
  r.set(ir::OpKind::variable, infer_variable);
  r.set(ir::OpKind::read_variable, infer_read);
  r.set(ir::OpKind::assign_variable, infer_assign);
}
}  // namespace ops

Tensor Graph::variable(const TensorData& init, std::string name) {
  if (init.empty()) fail(ErrorCode::invalid_argument, "variable", "'{}': initial value is empty", name);
  if (name.empty()) name = "variable_" + std::to_string(impl_->variables()->size());
  int slot = impl_->variables()->add(name, init.to(Device::cpu()).clone());
  return ops::make_source(*this, ir::OpKind::variable, ir::VariableAttrs{slot}, init.type(), name);
}

TensorData Graph::variable_value(const Tensor& variable) const {
  const ir::Node& n = variable_node(variable, "variable_value");
  if (variable.graph_impl() != impl_) fail(ErrorCode::invalid_argument, "variable_value", "variable belongs to another graph");
  return impl_->variables()->value(std::get<ir::VariableAttrs>(n.attrs).index);
}

std::vector<Tensor> Graph::control_dependency(const std::vector<Operation>& ops,
                                              const std::function<std::vector<Tensor>()>& block) {
  std::vector<int> ids;
  for (const Operation& o : ops) {
    if (!o.valid() || o.graph_impl() != impl_) {
      fail(ErrorCode::invalid_argument, "control_dependency", "an operation is empty or from another graph");
    }
    ids.push_back(o.node_id());
  }
  impl_->push_control_scope(std::move(ids));
  struct Pop {
    ir::Graph* g;
    ~Pop() { g->pop_control_scope(); }
  } pop{impl_.get()};
  return block();
}

Tensor read_variable(Tensor variable) {
  ir::VariableAttrs slot = std::get<ir::VariableAttrs>(variable_node(variable, "read_variable").attrs);
  return ops::make_op(ir::OpKind::read_variable, {variable}, slot);
}

Operation assign_variable(Tensor variable, Tensor value) {
  ir::VariableAttrs slot = std::get<ir::VariableAttrs>(variable_node(variable, "assign_variable").attrs);
  return ops::make_op(ir::OpKind::assign_variable, {variable, value}, slot).op();
}

}  // namespace tg
