// Typed attributes: one struct per op family (never untyped int arrays).
#pragma once
#include <string>
#include <variant>

#include "ir/op_info.h"
#include "tg/collective.h"
#include "tg/ops.h"
#include "tg/tensor_data.h"

namespace tg::ir {

struct NoAttrs {};
struct ConstantAttrs {
  TensorData value;
};
struct FillAttrs {
  double value = 0;
};
struct IotaAttrs {
  int64_t axis = 0;
};
struct RandomAttrs {
  double a = 0;  ///< uniform: low; normal: mean
  double b = 1;  ///< uniform: high; normal: stddev
  uint64_t seed = 0;
};
struct VariableAttrs {
  int index = -1;  ///< slot in the graph's VariableStore
};
struct CastAttrs {
  DType dtype = DType::f32;
};
struct BroadcastAttrs {
  Shape shape;
};
struct ReshapeAttrs {
  Shape shape;  ///< as requested by the user: may hold one -1 to infer
};
struct TransposeAttrs {
  std::vector<int64_t> perm;  ///< normalized: a permutation of 0..rank-1
};
struct ConcatAttrs {
  int64_t axis = 0;  ///< normalized to [0, rank)
};
struct ReverseAttrs {
  std::vector<int64_t> axes;  ///< normalized, sorted, unique
};
struct TileAttrs {
  std::vector<int64_t> multiples;
};
/// conv2d_backward_data (shape = the forward input's shape) and conv2d_backward_weights
/// (shape = the forward weights' shape).
struct ConvBackwardAttrs {
  Conv2dDesc conv;
  Shape shape;
};
/// random_uniform_like: values depend on (seed, the key input's value, element index).
struct RandomLikeAttrs {
  double low = 0;
  double high = 1;
  uint64_t seed = 0;
};
/// for_loop and while_loop: the `num_carried` inputs after the operands are the initial loop
/// values, the others captured values. max_iterations (while_loop; -1: unbounded) bounds how
/// many times the `after` region runs.
struct LoopAttrs {
  int64_t num_carried = 0;
  int64_t max_iterations = -1;
};

/// One step of a fused elementwise program: the elementwise op `kind` (unary, binary, ternary,
/// cast, stop_gradient) applied to program values `args` and giving a value of `dtype` (for cast
/// the target dtype). Values are numbered: the node's inputs first, then each step's result.
struct FusedStep {
  OpKind kind = OpKind::add;
  std::vector<int> args;
  DType dtype = DType::f32;
};
/// Attributes of fused_elementwise and fused_reduce: every step's result has `shape` (inputs
/// broadcast to it, NumPy style). fused_elementwise: node output k is program value outputs[k]
/// (a step). fused_reduce: node output k is the sum of program value outputs[k] (a step or an
/// input of `shape`'s element count) over `reduce_axes` of `shape` (sorted, unique, non-empty),
/// size-1 dims kept when keep_dims, as reduce_sum computes it (floating dtypes; f32 accumulates in
/// f64, f16/bf16 in f32).
struct FusedAttrs {
  Shape shape;
  std::vector<FusedStep> steps;
  std::vector<int> outputs;
  std::vector<int64_t> reduce_axes;  ///< fused_reduce only
  bool keep_dims = false;            ///< fused_reduce only
};

/// Attributes of fused_stencil (passes/fuse_stencil.cpp): y = epilogue(stencil(prologue(...), w)),
/// each stage with its own op's semantics (the stencil's source rounded to its dtype, the
/// stencil's result rounded to its dtype before the epilogue reads it).
/// Node inputs: the prologue's `num_prologue_inputs` inputs, then the weights (of shape `window`
/// and the source's dtype) unless `weights` holds them, then the epilogue's other inputs.
/// - prologue: a fused_elementwise program of shape prologue.shape (the stencil's source shape)
///   with exactly one output, the stencil's source (no steps and outputs {0}: input 0 itself).
///   Its inputs have that shape or one element.
/// - stencil, window: the stencil's descriptor and window shape (the weights' shape).
/// - weights: constant weights, row-major over `window`, as float64 (floating dtypes only, whose
///   values float64 holds exactly); folded into the kernel, taps of weight +0 are skipped where
///   that keeps the results (finite sources). Empty: the weights are a node input.
/// - epilogue: a program of shape epilogue.shape (the stencil's result shape) with one output;
///   program value 0 is the stencil's result, values 1.. the node's inputs after the weights (of
///   that shape or one element), then the steps. No steps and outputs {0}: the result itself.
struct FusedStencilAttrs {
  StencilDesc stencil;
  Shape window;
  std::vector<double> weights;
  int num_prologue_inputs = 1;
  FusedAttrs prologue;
  FusedAttrs epilogue;
};

/// all_reduce, all_gather, reduce_scatter, broadcast: the op's parameters and its communicator
/// (this rank's place; the group is found at run time by group id, core/communicator.h).
struct CollectiveAttrs {
  CollectiveReduction reduction = CollectiveReduction::sum;  ///< all_reduce, reduce_scatter
  int64_t axis = 0;  ///< all_gather, reduce_scatter: normalized to [0, rank)
  int root = 0;      ///< broadcast
  int rank = 0;
  int world_size = 1;
  CommBackend backend = CommBackend::single;
  uint64_t group = 0;  ///< Communicator::group_id (0: single)
};

/// Every attribute type a node can carry. Reduce/Gather/... reuse the public descriptor structs
/// with axes normalized to non-negative values by the builder.
using Attrs = std::variant<NoAttrs, ConstantAttrs, FillAttrs, IotaAttrs, RandomAttrs, VariableAttrs, CastAttrs,
                           BroadcastAttrs, ReshapeAttrs, TransposeAttrs, SliceDesc, PadDesc,
                           ConcatAttrs, ReverseAttrs, TileAttrs, ReduceDesc, ArgReduceDesc,
                           MatmulDesc, GatherDesc, GatherNdDesc, GatherElementsDesc, ScatterNdDesc,
                           ScatterElementsDesc, StencilDesc, Conv2dDesc, ConvBackwardAttrs,
                           Pool2dDesc, RandomLikeAttrs, LoopAttrs, FusedAttrs,
                           FusedStencilAttrs, CollectiveAttrs>;

/// "axes=[0,1], keep_dims=true" (empty for NoAttrs). Used by the printer and DOT export.
std::string attrs_to_string(const Attrs& attrs);

}  // namespace tg::ir
