// Folding of casts and transposes of constants (passes.h: fold_constants): a model's weights are
// constants of the graph, so their cast to the compute precision (autocast's casts of matmul and
// conv operands) and their transposes (ONNX Gemm with transB) are computed once at compile time
// instead of on every run.
#include "passes/passes.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxFoldedBytes = size_t{1} << 30;  // larger results stay computed per run

bool foldable(const ir::Graph& g, const ir::Node& n) {
  if (n.kind != ir::OpKind::cast && n.kind != ir::OpKind::transpose) return false;
  if (n.inputs.size() != 1 || n.outputs.size() != 1 || !n.control_inputs.empty() || !n.regions.empty()) return false;
  const ir::Node& in = g.node(n.inputs[0].node);
  if (in.kind != ir::OpKind::constant || !in.control_inputs.empty()) return false;
  const TensorType& t = n.outputs[0];
  if (!is_static(t.shape)) return false;
  return static_cast<size_t>(num_elements(t.shape)) * dtype_size(t.dtype) <= kMaxFoldedBytes;
}

}  // namespace

bool fold_constants(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep,
                    const ScalarEvaluator& eval) {
  if (!eval) return false;
  bool changed = false;
  for (ir::Node& n : g.nodes()) {  // in order: a fold can make its readers foldable
    if (!foldable(g, n)) continue;
    const TensorData& value = std::get<ir::ConstantAttrs>(g.node(n.inputs[0].node).attrs).value;
    if (!value.device().is_cpu()) continue;
    TensorData out(n.outputs[0].shape, n.outputs[0].dtype);
    const std::vector<TensorData> args{value};
    if (!eval(n, args, out)) continue;
    n.kind = ir::OpKind::constant;
    n.attrs = ir::ConstantAttrs{out};
    n.inputs.clear();
    changed = true;
  }
  if (changed) eliminate_dead_code(g, roots, root_ops, keep);
  return changed;
}

}  // namespace tg::passes
