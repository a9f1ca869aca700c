#include "ops/builder.h"

#include <algorithm>

namespace tg::ops {

std::vector<Tensor> make_op_multi(ir::OpKind kind, const std::vector<Tensor>& inputs,
                                  ir::Attrs attrs) {
  std::string_view op = ir::op_name(kind);
  if (inputs.empty()) fail(ErrorCode::internal, op, "make_op without inputs");
  std::shared_ptr<ir::Graph> g;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) fail(ErrorCode::invalid_argument, op, "input {} is an empty Tensor", i);
    if (!g) g = inputs[i].graph_impl();
    if (inputs[i].graph_impl() != g) {
      fail(ErrorCode::invalid_argument, op, "input {} belongs to another graph than input 0", i);
    }
  }
  ir::Node n;
  n.kind = kind;
  n.attrs = std::move(attrs);
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) {
    n.inputs.push_back({t.node_id(), t.index()});
    types.push_back(t.type());
  }
  std::vector<TensorType> out = infer_types(n, types);
  int id = g->add_node(kind, std::move(n.inputs), std::move(n.attrs), std::move(out));
  std::vector<Tensor> result;
  for (int i = 0; i < static_cast<int>(g->node(id).outputs.size()); ++i) result.emplace_back(g, id, i);
  return result;
}

Tensor make_op(ir::OpKind kind, const std::vector<Tensor>& inputs, ir::Attrs attrs) {
  return make_op_multi(kind, inputs, std::move(attrs))[0];
}

Tensor make_source(Graph& g, ir::OpKind kind, ir::Attrs attrs, TensorType type, std::string name) {
  ir::Node n;
  n.kind = kind;
  n.attrs = std::move(attrs);
  n.outputs = {type};
  std::vector<TensorType> out = infer_types(n, {});
  int id = g.impl()->add_node(kind, {}, std::move(n.attrs), std::move(out), std::move(name));
  return Tensor(g.impl(), id, 0);
}

Tensor scalar_like(const Tensor& like, double value, DType dtype) {
  Graph g(like.graph_impl());
  return g.constant(value, dtype);
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    fail(ErrorCode::invalid_argument, op, "axis {} is out of range for rank {}", axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    std::string_view op) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(normalize_axis(a, rank, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    fail(ErrorCode::invalid_argument, op, "axes [{}] name a dim twice", fmt::join(axes, ","));
  }
  return out;
}

namespace {
thread_local SymbolEqualities* t_equalities = nullptr;
}  // namespace

RecordSymbolEqualities::RecordSymbolEqualities(SymbolEqualities& into) : previous_(t_equalities) {
  t_equalities = &into;
}
RecordSymbolEqualities::~RecordSymbolEqualities() { t_equalities = previous_; }

bool unify_dims(int64_t a, int64_t b, int64_t& out) {
  if (a == b || b == -1) {
    out = a;
  } else if (a == -1) {
    out = b;
  } else if (a >= 0 && b >= 0) {
    return false;
  } else if (a >= 0 || b >= 0) {
    out = a >= 0 ? a : b;  // a symbol and a size: the size (the symbol's value is checked per run)
  } else {
    out = std::max(a, b);
    if (t_equalities) t_equalities->pairs.emplace_back(a, b);
  }
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (!unify_dims(da, db, out[i])) {
      fail(ErrorCode::shape_mismatch, op, "shapes {} and {} do not broadcast", str(a), str(b));
    }
  }
  return out;
}

void check_same_dtype(std::span<const TensorType> types, std::string_view op) {
  for (size_t i = 1; i < types.size(); ++i) {
    if (types[i].dtype != types[0].dtype) {
      fail(ErrorCode::dtype_mismatch, op, "operand dtypes differ: {} and {} (use cast)",
           types[0].to_string(), types[i].to_string());
    }
  }
}

}  // namespace tg::ops
