// Constant matmul weights stored transposed (passes.h: store_matmul_weights_transposed): PyTorch's
// nn.Linear keeps W as [out, in] and multiplies x W^T; our constant folding turns W^T into a
// [in, out] constant, so cuBLASLt ran an "NN" GEMM where PyTorch runs "TN", and its heuristic picks
// other (for BERT-base's batch-1 projections, slower) kernels. This pass stores a 2-D constant
// read only as a matmul's b operand as [N, K] and sets transpose_b. Opt-in while measured
// (TG_MATMUL_WEIGHTS_TN=1). After the matmul folds, before fusion.
#include <map>

#include "passes/passes.h"
#include "passes/readers.h"
#include "passes/transposed_constant.h"

namespace tg::passes {

bool store_matmul_weights_transposed(ir::Graph& g, const std::vector<ir::ValueRef>& roots,
                                     const ScalarEvaluator& eval) {
  if (!eval) return false;
  const ReaderCounts readers = count_readers(g, roots);
  std::map<int, std::vector<int>> matmuls_of;  // constant -> matmuls reading it as b, untransposed
  for (const ir::Node& n : g.nodes()) {
    if (n.kind != ir::OpKind::matmul || n.inputs.size() != 2 || !n.control_inputs.empty()) continue;
    if (std::get<MatmulDesc>(n.attrs).transpose_b || n.inputs[1].index != 0) continue;
    matmuls_of[n.inputs[1].node].push_back(n.id);
  }
  bool changed = false;
  for (auto& [id, matmuls] : matmuls_of) {
    ir::Node& c = g.node(id);
    if (c.kind != ir::OpKind::constant || !c.control_inputs.empty() || c.outputs.size() != 1) continue;
    const TensorType& ct = c.outputs[0];
    if (ct.shape.size() != 2 || !is_static(ct.shape) || !is_floating(ct.dtype)) continue;
    auto r = readers.find({id, 0});
    if (r == readers.end() || r->second != static_cast<int>(matmuls.size())) continue;  // read elsewhere too
    bool ok = true;
    for (int m : matmuls) ok = ok && g.node(m).inputs[0].node != id;
    if (!ok) continue;
    std::optional<TensorData> out = transposed_constant(c, {1, 0}, eval);
    if (!out) continue;
    c.outputs[0] = out->type();
    c.attrs = ir::ConstantAttrs{*std::move(out)};
    for (int m : matmuls) std::get<MatmulDesc>(g.node(m).attrs).transpose_b = true;
    changed = true;
  }
  return changed;
}

}  // namespace tg::passes
