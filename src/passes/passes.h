// Graph passes. Each is a small unit returning whether it changed the graph.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "ir/fused_rows.h"
#include "ir/graph.h"

namespace tg::passes {

/// A pass over a graph: rewrites it and remaps `roots`, `root_ops` and `keep`; true when changed.
using GraphPass = std::function<bool(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                                     std::vector<int>& keep)>;

/// Runs `pass` on a copy of every region body of g's nodes (results as roots, the body's nodes with
/// side effects as root ops, parameters as kept nodes) and puts back the copies it changed. True
/// when any changed.
bool run_on_region_bodies(ir::Graph& g, const GraphPass& pass);

/// Dead-code elimination: keeps exactly the nodes that `roots` (values) and `root_ops` reach
/// through data and control edges, compacts ids (order kept) and remaps `roots`/`root_ops` (and
/// `keep`, nodes to keep as well, e.g. fed placeholders) in place.
bool eliminate_dead_code(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                         std::vector<int>& keep);

/// Re-runs type inference on every node in order with the current input types (placeholders
/// keep the types they hold). A node with regions gets copies of its bodies, re-inferred for its
/// input types (ops::infer_node_types). Raises the ops' errors. Returns true when any type
/// changed.
bool infer_types(ir::Graph& g);

/// Evaluates node `n` (its output type as given) on host tensors `args` into `out` (allocated
/// with that type); false when it cannot (the op raises, e.g. an integer division by zero, or has
/// no evaluation). The runtime gives one built on the CPU backend's kernels, so passes include no
/// backend.
using ScalarEvaluator =
    std::function<bool(const ir::Node& n, std::span<const TensorData> args, TensorData& out)>;

/// Simplification with static shapes (passes/simplify.cpp): propagates uniform values (fills,
/// all-equal constants) through elementwise ops (evaluated by `eval`) and sums, select(c, a, a)
/// -> a, mul(cast(bool), 0) -> 0; then removes what became dead. Region bodies too (on copies).
/// Run after infer_types.
bool simplify(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep,
              const ScalarEvaluator& eval);

/// Constant folding (passes/fold_constants.cpp) of casts and transposes of constants (results up
/// to 1 GiB; a constant in device memory is copied to the host for them), integer/bool elementwise ops, slices, reshapes and broadcasts of constants (up to 1 MiB) and gathers of
/// constants by constant or uniform (fill) indices (up to 16 MiB): each becomes a constant holding
/// its value, computed by `eval` (left alone where it cannot: an index out of range raises at run time);
/// then dead-code elimination. Remaps `roots`, `root_ops`, `keep`; true when it folded anything.
bool fold_constants(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep,
                    const ScalarEvaluator& eval);

/// The weights layout a backend's conv2d reads in place for a convolution `desc` on tensors of
/// `dtype`, or nullopt when every layout costs the same (backends::Backend::packed_conv_weights).
using ConvWeightsLayout = std::function<std::optional<Layout>(const Conv2dDesc& desc, DType dtype)>;

/// Packing of constant conv2d weights (passes/conv_weights.cpp), after the layout pass: a constant
/// read only as conv2d weights is stored in the layout `preferred` names (permuted by `eval`'s
/// transpose, on a host copy of device memory) and the convolutions' weights_layout set to it, so
/// no run permutes it (CUDA: OHWI filters for NHWC data). True when it packed anything.
bool pack_conv_weights(ir::Graph& g, const std::vector<ir::ValueRef>& roots, const ConvWeightsLayout& preferred,
                       const ScalarEvaluator& eval);

/// Constant matmul weights stored transposed (passes/matmul_weights.cpp): a 2-D floating constant
/// read only as the b operand of matmuls without transpose_b becomes its transpose, and those
/// matmuls read it with transpose_b (PyTorch's "TN" GEMM of nn.Linear). True when it changed any.
bool store_matmul_weights_transposed(ir::Graph& g, const std::vector<ir::ValueRef>& roots,
                                     const ScalarEvaluator& eval);

/// Inlines every if_else whose predicate is a bool constant (passes/inline_branches.cpp): the
/// taken branch's nodes replace it; then dead-code elimination. Remaps `roots`, `root_ops`, `keep`.
bool inline_constant_branches(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                              std::vector<int>& keep);

/// Cheap branches as selects (passes/select_branches.cpp), on backends that fuse, before
/// infer_types: an if_else whose predicate is a one-element bool and whose two branches hold at
/// most 16 fusible elementwise ops each (no control inputs, no integer division) becomes both
/// branches inlined and select(reshape(predicate, []), then, else) per result; the values are the
/// taken branch's, computed by the same ops. Region bodies too. Then dead-code elimination.
/// Remaps `roots`, `root_ops`, `keep`; true when it rewrote an if_else.
bool select_cheap_branches(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                           std::vector<int>& keep);

/// Common-subexpression elimination (passes/cse.cpp) of pure nodes without regions whose
/// attributes compare exactly (small constants, fills, elementwise, reductions, views, casts,
/// variable values): a node is replaced by an earlier equal one whose control inputs are among its
/// own, its other control inputs moving to its readers; then dead-code elimination. Remaps
/// `roots` and `root_ops` (which gain the control inputs of a replaced target).
bool eliminate_common_subexpressions(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                                     std::vector<int>& keep);

/// Channels-last layout (passes/layout.cpp), after simplify, where runtime::layout_pass_pays:
/// NCHW conv2d, max_pool2d and avg_pool2d run NHWC between transposes, which sink through
/// elementwise ops, reductions and transposes (pairs cancel; one that moves only size-1 dims
/// becomes a reshape). Values are unchanged. Then dead-code elimination; remaps `roots`, `root_ops`, `keep`; true when it
/// rewrote an op.
bool convert_to_channels_last(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                              std::vector<int>& keep);

/// Autocast (passes/autocast.cpp), for CompileOptions::precision bf16/f16 (`low`): conv2d, its
/// backward ops and matmul of float32 operands take `low` operands and give a `low` result, cast
/// nodes around them; a float32 value an elementwise op computes for them is kept only in `low`
/// (its other readers read it rounded). Region bodies too (on copies). Run before CSE and fusion.
/// Remaps `roots`, `root_ops`, `keep`; true when it rewrote anything.
bool autocast(ir::Graph& g, DType low, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
              std::vector<int>& keep);

/// Head-major projections (passes/project_heads.cpp), after fold_constants, before fusion:
/// transpose(reshape(matmul(X [L, K], W) (+ b), [1.., L, H, D]), [.., 1, 0, 2]) with constant W
/// and b (an attention's heads split off a projection at batch 1) becomes reshape(matmul(X, Wh)
/// (+ bh)) with Wh [H, K, D] and bh [H, 1, D] W's and b's values reordered at compile time: one
/// batched GEMM writes the heads where they go and the transpose kernel goes. Then dead-code
/// elimination. Remaps `roots`, `root_ops`, `keep`; true when it rewrote anything.
bool project_heads(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                   std::vector<int>& keep);

/// Folding into matmuls (passes/fold_into_matmul.cpp), after project_heads, before fusion: a
/// scalar constant scale of matmul(X, W) (+ b) through reshapes and transposes, with W (and b)
/// constants read only there, is multiplied into W (and b) at compile time; a transpose of an
/// operand's last two dims (through reshapes that keep them) becomes the matmul's transpose flag.
/// Then dead-code elimination. Remaps `roots`, `root_ops`, `keep`; true when it rewrote anything.
bool fold_into_matmul(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                      std::vector<int>& keep);

/// Projections merged (passes/merge_projections.cpp; TG_MERGE_PROJECTIONS=0 turns it off), after
/// fold_into_matmul and CSE (the projections' inputs one value): matmuls of one 2-D input by
/// constant [H, K, D] weights (project_heads' query, key and value heads) become one matmul by the
/// concatenated weights and a slice of its result per projection (views: ops::slice_view_offset). Then dead-code elimination. Remaps `roots`, `root_ops`, `keep`; true when it
/// merged anything.
bool merge_projections(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                       std::vector<int>& keep);

/// Sibling merging (passes/merge_siblings.cpp), after the fusion passes: elementwise programs
/// (fused_elementwise without row reductions, or one fusible elementwise node) of one static
/// shape that read each other's results through no path become one fused_elementwise with the
/// outputs of both (one kernel instead of two; an attention's query, key and value bias adds),
/// when every reader of the earlier one comes after the later one. Within fuse_elementwise's
/// limits on steps and inputs; no control inputs, no integer division. Then dead-code
/// elimination. Remaps `roots`, `root_ops`, `keep`; true when it merged anything.
bool merge_siblings(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                    std::vector<int>& keep);

/// Elementwise fusion (passes/fuse_elementwise.cpp): replaces chains of elementwise nodes of one
/// static output shape by fused_elementwise nodes and remaps `roots`, `root_ops` and `keep`.
/// Run after infer_types. Returns true when it fused anything.
bool fuse_elementwise(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                      std::vector<int>& keep);

/// Reduction fusion and producer inlining (passes/fuse_reduce.cpp), after fuse_elementwise:
/// program inputs read through broadcast_to/reshape views, producers recomputed in their readers
/// when that reads no more data, reduce_sum of a program value -> fused_reduce, sibling
/// reductions merged; then dead-code elimination. Remaps `roots`, `root_ops` and `keep`.
bool fuse_reductions(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                     std::vector<int>& keep);

/// Row fusion (passes/fuse_rows.cpp), after fuse_reductions: a chain of reductions over the last
/// axis (fused_reduce, reduce_sum, reduce_max) and their readers over the same rows (LayerNorm's
/// mean, variance and normalization; softmax's max, sum of exp and division; a mask's arithmetic)
/// becomes one fused_rows node, when rows have at most ir::kMaxFusedRowLength elements. Then
/// dead-code elimination. Remaps `roots`, `root_ops` and `keep`; true when it fused anything.
bool fuse_rows(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep);

/// Stencil fusion (passes/fuse_stencil.cpp), after fuse_rows: a stencil node with an elementwise
/// producer of its source (recomputed per source element), constant floating weights (folded into
/// the attributes), or an elementwise program as the only reader of its result becomes one
/// fused_stencil node (ir::FusedStencilAttrs). Then dead-code elimination. Remaps `roots`,
/// `root_ops` and `keep`; true when it fused anything.
bool fuse_stencils(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                   std::vector<int>& keep);

/// Activation storage (passes/demote_storage.cpp), for CompileOptions::precision bf16 (`low`;
/// nothing for other dtypes), after the fusion passes: a float32 activation or activation
/// gradient that one fused_elementwise writes and only fused programs read is stored in bf16 (the
/// writer rounds it once, the readers widen it), as torch.autocast stores it. Results, kept values,
/// values a result is computed from through elementwise programs and reductions, and values that
/// reach a variable assignment through elementwise programs keep float32. Fusion groups and the
/// schedule are unchanged. True when it demoted anything.
bool demote_activation_storage(ir::Graph& g, DType low, std::vector<ir::ValueRef>& roots,
                               std::vector<int>& root_ops, std::vector<int>& keep);

/// The nodes fuse_elementwise can fuse: one elementwise op (unary, binary, ternary, cast
/// families) with one output of static shape and no regions.
bool is_fusible_elementwise(const ir::Node& n);


}  // namespace tg::passes
