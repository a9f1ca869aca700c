// Internals of the control family shared by the builders (src/ops/control*.cpp), type inference
// (infer_graph_types, used by src/passes/infer_types.cpp) and the gradient rules (src/autodiff/rules/control*.cpp).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/regions.h"
#include "tg/graph.h"

namespace tg::ops {

/// Output types of `node` for `inputs`. For a node with regions, the region bodies are first
/// replaced by copies whose parameter types are set from `inputs` and whose types are inferred
/// again (loops until the loop values' types are stable), so graphs sharing the old bodies are
/// not touched. Raises the ops' errors.
std::vector<TensorType> infer_node_types(ir::Node& node, std::span<const TensorType> inputs);

/// Infers the types of every node of `g` again, in order, from the current input types
/// (placeholders keep theirs; nodes with regions as infer_node_types). Raises the ops' errors.
/// True when any type changed.
bool infer_graph_types(ir::Graph& g);

/// Appends a control-flow node of `kind` with `inputs` (operands, then captured values),
/// `attrs` and `regions` to the inputs' graph (checked by the op's type inference) and returns
/// its outputs. `control_inputs` are added to those of the enclosing control_dependency scopes.
std::vector<Tensor> make_control_op(ir::OpKind kind, const std::vector<Tensor>& inputs,
                                    ir::Attrs attrs, std::vector<ir::Region> regions,
                                    const std::vector<int>& control_inputs = {});

/// Copies the body of `region` into `dst` (appending nodes, types inferred again for the new
/// argument types) with its parameters replaced by `args`; returns the copies of its results.
/// Parameters may be results. Control inputs inside the body are kept.
std::vector<ir::ValueRef> inline_region(const ir::Region& region, ir::Graph& dst,
                                        const std::vector<ir::ValueRef>& args);

/// a and b with the dims on which they differ set to -1 (dynamic). Raises
/// tg::Error(dtype_mismatch / shape_mismatch) "[op] <what> is <a> <where_a> but <b> <where_b>"
/// when the dtypes or ranks differ, e.g. "[for_loop] value 0 is f32[2] entering the loop but
/// f64[2] returned by the body (dtypes must agree)".
TensorType merge_types(const TensorType& a, const TensorType& b, std::string_view op,
                       std::string_view what, std::string_view where_a, std::string_view where_b);

/// Tensors of `g` for the values `refs`.
std::vector<Tensor> tensors_of(const std::shared_ptr<ir::Graph>& g,
                               const std::vector<ir::ValueRef>& refs);

}  // namespace tg::ops
