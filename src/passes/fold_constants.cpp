// Folding of constants (passes.h: fold_constants): a model's weights are constants of the graph,
// so their cast to the compute precision (autocast's casts of matmul and conv operands) and their
// transposes (ONNX Gemm with transB, the layout pass's OIHW -> HWIO) are computed once at compile
// time instead of on every run, also for weights in device memory (tensorgraph.torch's, copied to
// the host for it);
// so are index computations on constant indices (integer and bool elementwise ops, slices,
// reshapes and broadcasts, up to 1 MiB: a position embedding's ids sliced from a buffer and
// checked for negative values) and gathers of a constant table by constant (or uniform: fill)
// indices (up to 16 MiB: the position and token-type embeddings of a BERT with its parameters
// compiled in).
#include "passes/passes.h"

namespace tg::passes {
namespace {

constexpr size_t kMaxFoldedBytes = size_t{1} << 30;  // larger results stay computed per run

constexpr size_t kMaxFoldedIndexBytes = size_t{1} << 20;    // integer/bool elementwise and slices
constexpr size_t kMaxFoldedGatherBytes = size_t{16} << 20;  // gathers of constant rows

bool is_index_dtype(DType d) { return is_integer(d) || d == DType::bool_; }

/// Casts and transposes: what is done to weights (autocast, ONNX Gemm's transB, the layout pass's
/// OIHW -> HWIO).
bool weight_op(const ir::Node& n) { return n.kind == ir::OpKind::cast || n.kind == ir::OpKind::transpose; }

/// What a node may fold to at most (bytes), 0 when its kind is not folded here: casts and
/// transposes (weights); integer and bool elementwise ops, slices, reshapes and broadcasts (index
/// arithmetic on constant indices: a position embedding's ids, their negative-index check); gathers (the rows such ids
/// pick from a constant table).
size_t fold_limit(const ir::Graph& g, const ir::Node& n) {
  if (weight_op(n)) return kMaxFoldedBytes;
  if (n.kind == ir::OpKind::gather || n.kind == ir::OpKind::gather_elements) return kMaxFoldedGatherBytes;
  const ir::OpFamily f = ir::op_info(n.kind).family;
  const bool elementwise = (f == ir::OpFamily::unary || f == ir::OpFamily::binary || f == ir::OpFamily::ternary) &&
                           ir::has_trait(n.kind, ir::kElementwise);
  const bool shape_op =
      n.kind == ir::OpKind::slice || n.kind == ir::OpKind::reshape || n.kind == ir::OpKind::broadcast_to;
  if ((elementwise || shape_op) && n.outputs.size() == 1 && is_index_dtype(n.outputs[0].dtype)) {
    for (const ir::ValueRef& v : n.inputs) {
      if (!is_index_dtype(g.type(v).dtype)) return 0;
    }
    return kMaxFoldedIndexBytes;
  }
  return 0;
}

bool foldable(const ir::Graph& g, const ir::Node& n) {
  const size_t limit = fold_limit(g, n);
  if (limit == 0 || n.inputs.empty()) return false;
  if (n.outputs.size() != 1 || !n.control_inputs.empty() || !n.regions.empty()) return false;
  for (const ir::ValueRef& v : n.inputs) {
    const ir::Node& in = g.node(v.node);
    const bool known = in.kind == ir::OpKind::constant ||
                       (in.kind == ir::OpKind::fill && !weight_op(n) && is_static(in.outputs[0].shape));
    if (!known || !in.control_inputs.empty()) return false;
  }
  const TensorType& t = n.outputs[0];
  if (!is_static(t.shape)) return false;
  return static_cast<size_t>(num_elements(t.shape)) * dtype_size(t.dtype) <= limit;
}

}  // namespace

bool fold_constants(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep,
                    const ScalarEvaluator& eval) {
  if (!eval) return false;
  bool changed = false;
  for (ir::Node& n : g.nodes()) {  // in order: a fold can make its readers foldable
    if (!foldable(g, n)) continue;
    std::vector<TensorData> args;
    bool on_host = true;
    for (const ir::ValueRef& v : n.inputs) {
      const ir::Node& in = g.node(v.node);
      if (in.kind == ir::OpKind::fill) {  // a uniform value (simplify makes them): its elements
        const TensorType& ft = in.outputs[0];
        if (static_cast<size_t>(num_elements(ft.shape)) * dtype_size(ft.dtype) > kMaxFoldedIndexBytes) {
          on_host = false;
          break;
        }
        args.push_back(TensorData::full(ft.shape, ft.dtype, std::get<ir::FillAttrs>(in.attrs).value));
        continue;
      }
      const TensorData& value = std::get<ir::ConstantAttrs>(in.attrs).value;
      if (value.device().is_cpu()) {
        args.push_back(value);
      } else if (weight_op(n)) {
        // A weight that lives on the device (tensorgraph.torch's frozen parameters, shared with
        // PyTorch through DLPack): its transpose or cast is computed once here, on a host copy,
        // instead of in every run (53 OIHW -> HWIO transposes, 317 us of ResNet-50's batch-1
        // replay under the layout pass). The result is uploaded with the other constants.
        args.push_back(value.to(Device::cpu()));
      } else {
        on_host = false;  // index arithmetic on device values: not worth a copy
      }
    }
    if (!on_host) continue;
    TensorData out(n.outputs[0].shape, n.outputs[0].dtype);
    if (!eval(n, args, out)) continue;  // e.g. a gather index out of range: raised when run
    n.kind = ir::OpKind::constant;
    n.attrs = ir::ConstantAttrs{out};
    n.inputs.clear();
    changed = true;
  }
  if (changed) eliminate_dead_code(g, roots, root_ops, keep);
  return changed;
}

}  // namespace tg::passes
