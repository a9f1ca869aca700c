// The op builders. Each appends one node (or a few, for composites) to the graph of its tensor
// arguments and checks shapes and dtypes at once: mistakes raise tg::Error naming the op and the
// shapes ("[add] shapes [2,3] and [4] do not broadcast"). Tensors from different graphs raise
// tg::Error(invalid_argument). Semantics of every op: docs/ops.md.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"
#include "tg/ops_conv.h"  // conv2d, pooling (Layout, Padding)

namespace tg {

// ---------------------------------------------------------------------------------------------
// Elementwise unary. Input any shape; output same shape. Float-only ops (exp, log, ..., floor,
// ceil, round, is_nan, is_inf) raise tg::Error(dtype_mismatch) on integers and bool; neg, abs,
// sign, square accept every numeric dtype; logical_not takes bool only. IEEE semantics for
// special values (log(0) = -inf, sqrt(-1) = NaN). is_nan/is_inf/logical_not return bool.
// round is half to even (IEEE roundTiesToEven, as numpy.round). sign(NaN) = NaN, sign(0) = 0.
TG_API Tensor neg(Tensor x);
TG_API Tensor abs(Tensor x);
TG_API Tensor sign(Tensor x);
TG_API Tensor exp(Tensor x);
TG_API Tensor log(Tensor x);
TG_API Tensor log1p(Tensor x);
TG_API Tensor expm1(Tensor x);
TG_API Tensor sqrt(Tensor x);
TG_API Tensor rsqrt(Tensor x);
TG_API Tensor reciprocal(Tensor x);
TG_API Tensor square(Tensor x);
TG_API Tensor sin(Tensor x);
TG_API Tensor cos(Tensor x);
TG_API Tensor tan(Tensor x);
TG_API Tensor tanh(Tensor x);
TG_API Tensor sigmoid(Tensor x);
TG_API Tensor erf(Tensor x);
TG_API Tensor floor(Tensor x);
TG_API Tensor ceil(Tensor x);
TG_API Tensor round(Tensor x);
TG_API Tensor logical_not(Tensor x);
TG_API Tensor is_nan(Tensor x);
TG_API Tensor is_inf(Tensor x);

// ---------------------------------------------------------------------------------------------
// Elementwise binary with NumPy broadcasting (shapes aligned at the right; a dim of 1 stretches;
// a dim of 0 broadcasts against 1 and gives 0). Both operands must have the same dtype (use
// cast); mismatches raise tg::Error(dtype_mismatch), non-broadcastable shapes
// tg::Error(shape_mismatch).
// - add, sub, mul, div: every numeric dtype; integer div truncates toward zero, integer division
//   (div, mod, floor_mod, floor_div) by zero raises tg::Error(invalid_argument) at run time on the
//   CPU. Integer results wrap modulo 2^bits (INT_MIN / -1 gives INT_MIN, INT_MIN mod -1 gives 0).
// - pow, atan2: floating only.
// - maximum, minimum: numeric; NaN-propagating (like numpy.maximum / torch.maximum).
// - mod: C fmod sign rule (result has the dividend's sign); floor_mod: Python/NumPy rule (result
//   has the divisor's sign); floor_div: numeric; integers round toward -inf, floats give
//   floor(a/b).
// - equal ... greater_equal: numeric or bool, result bool. logical_*: bool only.
TG_API Tensor add(Tensor a, Tensor b);
TG_API Tensor sub(Tensor a, Tensor b);
TG_API Tensor mul(Tensor a, Tensor b);
TG_API Tensor div(Tensor a, Tensor b);
TG_API Tensor pow(Tensor a, Tensor b);
TG_API Tensor maximum(Tensor a, Tensor b);
TG_API Tensor minimum(Tensor a, Tensor b);
TG_API Tensor mod(Tensor a, Tensor b);
TG_API Tensor floor_mod(Tensor a, Tensor b);
TG_API Tensor floor_div(Tensor a, Tensor b);
TG_API Tensor atan2(Tensor y, Tensor x);
TG_API Tensor equal(Tensor a, Tensor b);
TG_API Tensor not_equal(Tensor a, Tensor b);
TG_API Tensor less(Tensor a, Tensor b);
TG_API Tensor less_equal(Tensor a, Tensor b);
TG_API Tensor greater(Tensor a, Tensor b);
TG_API Tensor greater_equal(Tensor a, Tensor b);
TG_API Tensor logical_and(Tensor a, Tensor b);
TG_API Tensor logical_or(Tensor a, Tensor b);
TG_API Tensor logical_xor(Tensor a, Tensor b);

// Ternary, broadcasting all three operands.
/// where(condition, a, b): a where condition (bool) is true, else b. a and b share a dtype.
TG_API Tensor select(Tensor condition, Tensor a, Tensor b);
/// min(max(x, low), high), elementwise; all three share a numeric dtype. NaN in x (or in a bound)
/// propagates; low > high gives high (as numpy.clip).
TG_API Tensor clamp(Tensor x, Tensor low, Tensor high);

// Operators: tensor-tensor and tensor-scalar (the scalar becomes a constant of the tensor's dtype;
// for an integer dtype it must be an integer in range, else tg::Error(invalid_argument)).
TG_API Tensor operator+(Tensor a, Tensor b);
TG_API Tensor operator-(Tensor a, Tensor b);
TG_API Tensor operator*(Tensor a, Tensor b);
TG_API Tensor operator/(Tensor a, Tensor b);
TG_API Tensor operator-(Tensor a);
TG_API Tensor operator+(Tensor a, double b);
TG_API Tensor operator-(Tensor a, double b);
TG_API Tensor operator*(Tensor a, double b);
TG_API Tensor operator/(Tensor a, double b);
TG_API Tensor operator+(double a, Tensor b);
TG_API Tensor operator-(double a, Tensor b);
TG_API Tensor operator*(double a, Tensor b);
TG_API Tensor operator/(double a, Tensor b);

/// Converts element type. Float->int truncates toward zero and saturates: out-of-range values
/// (and +-inf) give the target's min/max, NaN gives 0. Int->int wraps modulo 2^bits; x->bool is
/// x != 0 (NaN -> true); bool->x is 0 or 1; to f16/bf16 rounds to nearest even via f32.
TG_API Tensor cast(Tensor x, DType dtype);

// ---------------------------------------------------------------------------------------------
// Sources (no tensor inputs: they take the graph).
/// A tensor of `shape` filled with `value` converted to `dtype`.
TG_API Tensor fill(Graph& g, Shape shape, double value, DType dtype = DType::f32);
/// iota: element index along `axis` (0, 1, 2, ...), broadcast over the other dims. Numeric dtype.
TG_API Tensor iota(Graph& g, Shape shape, int64_t axis = 0, DType dtype = DType::i32);
/// arange(start, limit, delta): [start, start+delta, ...) stopping before limit, as numpy.arange;
/// length ceil((limit-start)/delta). delta == 0 raises tg::Error(invalid_argument).
TG_API Tensor arange(Graph& g, double start, double limit, double delta = 1, DType dtype = DType::i32);

/// Random numbers from the counter-based Philox4x32-10 generator: element i (row-major) of the
/// result depends only on (seed, i), identically on every backend and every run, and equals
/// TensorData::random_uniform/random_normal. Computed in double for f64, in float for f32/f16/bf16.
/// The shape must be static (dims >= 0) and the parameters finite; tg::Error otherwise.
struct RandomDesc {
  uint64_t seed = 0;
  DType dtype = DType::f32;  ///< floating dtypes only
};
/// Uniform on [low, high): low + (high - low) * u, a value rounded up to high steps to the largest
/// value of the dtype below it. low <= high (low == high gives low).
TG_API Tensor random_uniform(Graph& g, Shape shape, double low = 0, double high = 1, RandomDesc desc = {});
/// Normal(mean, stddev) via Box-Muller: mean + stddev * z. stddev >= 0.
TG_API Tensor random_normal(Graph& g, Shape shape, double mean = 0, double stddev = 1, RandomDesc desc = {});
/// Uniform on [low, high) with the shape of `like` (whose values are not read; dynamic dims
/// allowed), element i depending only on (desc.seed, key, i): the Philox counter's upper words
/// hold the i64 scalar `key`, so each key value draws an independent stream (for per-step
/// dropout masks). key == 0 gives the same values as random_uniform with the same seed.
/// Errors "[random_uniform_like]": a key that is not an integer scalar, non-finite bounds or
/// low > high (invalid_argument), a non-floating desc.dtype (dtype_mismatch).
TG_API Tensor random_uniform_like(Tensor like, Tensor key, double low = 0, double high = 1,
                           RandomDesc desc = {});

// ---------------------------------------------------------------------------------------------
// Shape and data movement. Axes may be negative (counted from the end); an axis out of
// [-rank, rank) raises tg::Error(invalid_argument).
/// NumPy broadcast of x to `shape` (x's dims must be 1 or equal, aligned at the right; a dim of
/// 1 may become 0). A -1 in `shape` keeps x's dim there (as torch.expand; not allowed on the new
/// leading dims). Incompatible shapes raise tg::Error(shape_mismatch).
TG_API Tensor broadcast_to(Tensor x, Shape shape);
/// Same elements (row-major order), new shape; at most one -1 is inferred (it stays -1 while x
/// has a dynamic dim). Element counts must agree (tg::Error(shape_mismatch)); two -1s, a dim
/// below -1, or a -1 beside a 0 dim raise tg::Error(invalid_argument).
TG_API Tensor reshape(Tensor x, Shape shape);
/// Permutes dims: output dim i is input dim perm[i] (entries may be negative). Empty perm
/// reverses the dims. A perm that is not a permutation raises tg::Error(invalid_argument).
TG_API Tensor transpose(Tensor x, std::vector<int64_t> perm = {});

/// End marker meaning "to the end of the dim" for SliceDesc::end: past the last element for a
/// positive stride, before the first one (Python's None) for a negative stride.
inline constexpr int64_t kSliceEnd = std::numeric_limits<int64_t>::max();
/// Python-style strided slice. begin/end/strides have one entry per sliced axis (`axes`, or dims
/// 0..n-1 when axes is empty). Negative begin/end count from the end; values are clamped to the
/// dim as Python does; strides may be negative (then begin defaults should be given explicitly:
/// kSliceEnd or -1 starts at the last element); strides empty means all 1; a stride of 0, sizes
/// that differ, or a repeated axis raise tg::Error(invalid_argument).
struct SliceDesc {
  std::vector<int64_t> begin;
  std::vector<int64_t> end;
  std::vector<int64_t> strides = {};
  std::vector<int64_t> axes = {};
};
TG_API Tensor slice(Tensor x, SliceDesc desc);

/// How pad fills the border (numpy.pad's names): constant value; reflect (mirror without the
/// edge element); symmetric (mirror with it); edge (repeat the edge element); periodic (wrap).
/// Pads wider than the dim keep mirroring/wrapping (as numpy.pad does); reflect needs dim >= 2
/// when padding, the other non-constant modes need dim >= 1 (tg::Error(invalid_argument), for a
/// dynamic dim when its size is known). Negative pads, sizes other than the rank, or a value
/// that an integer dtype cannot hold raise tg::Error(invalid_argument).
enum class PadMode { constant, reflect, symmetric, edge, periodic };
struct PadDesc {
  std::vector<int64_t> before;  ///< one entry per dim, >= 0
  std::vector<int64_t> after;   ///< one entry per dim, >= 0
  PadMode mode = PadMode::constant;
  double value = 0;  ///< for PadMode::constant
};
TG_API Tensor pad(Tensor x, PadDesc desc);

/// Joins tensors along `axis`; all other dims (tg::Error(shape_mismatch)) and the dtype
/// (tg::Error(dtype_mismatch)) must agree. At least one tensor, of rank >= 1.
TG_API Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
/// Splits along `axis` into pieces of the given sizes (>= 0, summing to the dim; a dynamic dim is
/// not checked: the pieces are slices [offset, offset + size) clamped to it).
TG_API std::vector<Tensor> split(Tensor x, const std::vector<int64_t>& sizes, int64_t axis);
/// Splits along `axis` into `num` equal pieces (the dim must be static and divisible by num).
TG_API std::vector<Tensor> split(Tensor x, int64_t num, int64_t axis);
/// Reverses the order of elements along each of `axes` (a repeated axis raises
/// tg::Error(invalid_argument)).
TG_API Tensor reverse(Tensor x, std::vector<int64_t> axes);
/// Inserts a dim of size 1 at `axis` (in [-rank-1, rank]). A reshape: x may have at most one
/// dynamic dim (tg::Error(unsupported) otherwise).
TG_API Tensor expand_dims(Tensor x, int64_t axis);
/// Removes dims of size 1: those in `axes` (each must be 1, else tg::Error(invalid_argument)) or
/// all when axes is empty (dynamic dims are then kept). A reshape, like expand_dims.
TG_API Tensor squeeze(Tensor x, std::vector<int64_t> axes = {});
/// Repeats x `multiples[i]` times along dim i (numpy.tile with len(multiples) == rank; each >= 0,
/// else tg::Error(invalid_argument)).
TG_API Tensor tile(Tensor x, std::vector<int64_t> multiples);

// ---------------------------------------------------------------------------------------------
// Reductions. Axes may be negative; empty axes reduce over every dim. An axis out of range or a
// dim named twice raises tg::Error(invalid_argument). keep_dims keeps reduced dims as 1. The
// result has the input's dtype: sum/prod/max/min take numeric dtypes (integers wrap around in
// their own type; f32 accumulates in f64, f16/bf16 in f32). Reducing an empty dim gives the
// identity (0 for sum, 1 for prod, -inf/+inf (or the integer limits) for max/min, true for and,
// false for or).
struct ReduceDesc {
  std::vector<int64_t> axes = {};
  bool keep_dims = false;
};
TG_API Tensor reduce_sum(Tensor x, ReduceDesc desc = {});
TG_API Tensor reduce_prod(Tensor x, ReduceDesc desc = {});
/// max/min propagate NaN.
TG_API Tensor reduce_max(Tensor x, ReduceDesc desc = {});
TG_API Tensor reduce_min(Tensor x, ReduceDesc desc = {});
/// bool inputs only.
TG_API Tensor reduce_and(Tensor x, ReduceDesc desc = {});
TG_API Tensor reduce_or(Tensor x, ReduceDesc desc = {});
/// Arithmetic mean (floating dtypes; f16/bf16 computed in f32). The mean of nothing is NaN.
TG_API Tensor reduce_mean(Tensor x, ReduceDesc desc = {});
inline Tensor mean(Tensor x, ReduceDesc desc = {}) { return reduce_mean(x, desc); }
/// Population variance (divides by N, ddof = 0) over the axes (floating dtypes), computed
/// stably as mean((x - mean(x))^2).
TG_API Tensor reduce_variance(Tensor x, ReduceDesc desc = {});

/// Index of the largest (smallest) element along `axis`, as i64. Ties give the first index; a NaN
/// counts as larger (smaller) than every number, so the first NaN wins, as numpy and PyTorch do.
/// Any dtype (bool: false < true). An empty axis or an axis out of [-rank, rank) raises
/// tg::Error(invalid_argument).
struct ArgReduceDesc {
  int64_t axis = 0;
  bool keep_dims = false;
};
TG_API Tensor argmax(Tensor x, ArgReduceDesc desc = {});
TG_API Tensor argmin(Tensor x, ArgReduceDesc desc = {});

// ---------------------------------------------------------------------------------------------
/// Matrix product with numpy.matmul semantics: a [..., M, K] x b [..., K, N] -> [..., M, N],
/// batch dims broadcast; a rank-1 a is [K] -> treated as [1, K] (and that dim dropped), a rank-1 b
/// as [K, 1]. transpose_a/b swap the last two dims of a rank >= 2 operand first (a rank-1
/// operand ignores them). Same dtype for both (numeric; integers wrap around). K = 0 gives zeros.
/// Errors: K mismatch or batch dims that do not broadcast: tg::Error(shape_mismatch); different
/// or bool dtypes: tg::Error(dtype_mismatch); a rank-0 operand: tg::Error(invalid_argument).
/// f32 runs on oneDNN on the CPU (f16/bf16 through f32).
struct MatmulDesc {
  bool transpose_a = false;
  bool transpose_b = false;
};
TG_API Tensor matmul(Tensor a, Tensor b, MatmulDesc desc = {});

// ---------------------------------------------------------------------------------------------
// Gather and scatter. Index tensors are i32 or i64; negative indices count from the end of their
// dim; an index outside [-dim, dim) raises tg::Error(out_of_range) at run time on the CPU.
/// Gather slices along `axis` (ONNX Gather / tf.gather with batch_dims): the first batch_dims dims
/// of x and indices are batch dims and must match; output shape
/// x.shape[:axis] + indices.shape[batch_dims:] + x.shape[axis+1:] (a rank-0 index removes the
/// axis). batch_dims may be negative (counts from indices' rank); normalized it must be in
/// [0, min(axis, indices.rank)].
struct GatherDesc {
  int64_t axis = 0;
  int64_t batch_dims = 0;
};
TG_API Tensor gather(Tensor x, Tensor indices, GatherDesc desc = {});
/// ONNX GatherND / tf.gather_nd: indices [..., K] index the first K dims after the batch dims;
/// output shape indices.shape[:-1] + x.shape[batch_dims+K:]. K must be static and
/// <= x.rank - batch_dims; batch_dims in [0, indices.rank - 1].
struct GatherNdDesc {
  int64_t batch_dims = 0;
};
TG_API Tensor gather_nd(Tensor x, Tensor indices, GatherNdDesc desc = {});
/// ONNX GatherElements / torch.gather: out[i][j] = x[indices[i][j]][j] for axis 0 (etc.);
/// indices has x's rank and indices.shape[d] <= x.shape[d] for d != axis; the output has
/// indices' shape.
struct GatherElementsDesc {
  int64_t axis = 0;
};
TG_API Tensor gather_elements(Tensor x, Tensor indices, GatherElementsDesc desc = {});

/// How scatter combines an update with the value already there (ONNX ScatterND reduction).
/// With none and repeated indices the last update in row-major order wins; add/mul/min/max
/// accumulate every update (integers wrap around, float min/max propagate NaN, on bool add/max
/// are logical or and mul/min logical and). Scatters apply updates sequentially.
enum class ScatterReduction { none, add, mul, min, max };
/// ONNX ScatterND: a copy of `data` where data[indices[i]] (indices [..., K]) is combined with
/// updates[i]; updates has shape indices.shape[:-1] + data.shape[K:].
struct ScatterNdDesc {
  ScatterReduction reduction = ScatterReduction::none;
};
TG_API Tensor scatter_nd(Tensor data, Tensor indices, Tensor updates, ScatterNdDesc desc = {});
/// ONNX ScatterElements: out[indices[i][j]][j] = updates[i][j] for axis 0 (etc.); indices and
/// updates share a shape and have data's rank, and indices.shape[d] <= data.shape[d] for d != axis.
struct ScatterElementsDesc {
  int64_t axis = 0;
  ScatterReduction reduction = ScatterReduction::none;
};
TG_API Tensor scatter_elements(Tensor data, Tensor indices, Tensor updates, ScatterElementsDesc desc = {});

// ---------------------------------------------------------------------------------------------
/// Stencil (MPSGraph stencilWithSourceTensor semantics). The window has rank k = weights.rank()
/// (1..4) and slides over the last k dims of the source; leading dims are batch dims. For each
/// output position i: y[i] = reduce over window offsets j of x[i*stride + j*dilation - pad_before]
/// * w[j] (sum, product, min, max), or the row-major index j of the min/max (argmin, argmax, first
/// on ties, result i32). Reads outside the source follow the boundary mode. Source and weights
/// share one numeric dtype (integers wrap on overflow); a NaN wins min/max/argmin/argmax. Output
/// dim: floor((in + before + after - (w-1)*dilation - 1)/stride) + 1; a window larger than the
/// padded input raises tg::Error(invalid_argument).
enum class StencilReduction { sum, product, min, max, argmin, argmax };
/// explicit_padding: StencilDesc::explicit_padding; valid: no padding; same: output size
/// ceil(in/stride), the total padding split with the extra element after (TensorFlow SAME).
enum class PaddingStyle { explicit_padding, valid, same };
/// zero: 0; constant: padding_constant; reflect/symmetric/periodic as PadMode; clamp_to_edge as
/// PadMode::edge. Mirroring/wrapping repeats for any distance; reflect on a dim of size 1 repeats it.
enum class BoundaryMode { zero, constant, reflect, symmetric, clamp_to_edge, periodic };
struct StencilDesc {
  StencilReduction reduction = StencilReduction::sum;
  std::vector<int64_t> strides = {};    ///< per window dim; empty means 1
  std::vector<int64_t> dilations = {};  ///< per window dim; empty means 1
  /// 2*k entries {before_0, after_0, before_1, after_1, ...}; used with explicit_padding.
  std::vector<int64_t> explicit_padding = {};
  PaddingStyle padding_style = PaddingStyle::explicit_padding;
  BoundaryMode boundary_mode = BoundaryMode::zero;
  double padding_constant = 0;
};
TG_API Tensor stencil(Tensor source, Tensor weights, StencilDesc desc = {});

}  // namespace tg
