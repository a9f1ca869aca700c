// Conformance cases of the fused family: graphs whose sums of elementwise chains the compile-time
// passes turn into fused_reduce / fused_elementwise nodes on backends that fuse (CUDA), so the
// generated reduction kernels are checked against the float64 CPU reference in both mappings
// (kept channel innermost as in NHWC batch norm; reduced dims around a kept one as in NCHW),
// with sibling sums, per-channel broadcasts, divisions and rsqrt repeated per element, and a
// softmax over short rows. Row programs (ir/fused_rows.h: LayerNorm, masked softmax in one kernel
// a call on CUDA) over rows of 37..5000 elements: a warp a row (several rows a block) and blocks
// of 256 and 1024 threads with shared-memory partials, rows that are not a multiple of 32.
#include "conformance/harness.h"

namespace {

using tg::DType;
using tg::Tensor;
using tg::conformance::InputSpec;
using tg::conformance::OpCase;

// Batch-norm-like statistics and normalization of x over `axes` (keep_dims), with a per-channel
// scale broadcast like gamma: the mean, the biased variance and y = (x - mean) * rsqrt(var + eps) * s.
std::vector<Tensor> normalize(const Tensor& x, const Tensor& s, std::vector<int64_t> axes) {
  Tensor mean = tg::reduce_mean(x, {.axes = axes, .keep_dims = true});
  Tensor centered = x - mean;
  Tensor var = tg::reduce_mean(tg::square(centered), {.axes = axes, .keep_dims = true});
  Tensor y = centered * (s * tg::rsqrt(var + 1e-3));
  // Backward-like sums reading x and y again (sibling sums: one pass). Both are well conditioned
  // (sum(y) would be a cancellation to 0).
  Tensor sy = tg::reduce_sum(tg::square(y), {.axes = axes, .keep_dims = true});
  Tensor syx = tg::reduce_sum(y * x, {.axes = axes, .keep_dims = true});
  return {mean, var, y, sy, syx};
}

// Wider tolerances: sums of rounded values, and the variance's cancellation in f16/bf16.
const std::map<DType, tg::conformance::Tolerance> kSumTolerance = {
    {DType::f32, {1e-4, 1e-5}}, {DType::f16, {3e-2, 3e-2}}, {DType::bf16, {1e-1, 1e-1}}};

// A case of normalize(x, s) over `axes`: x in [-1, 2), the per-channel scale in [0.5, 1.5).
OpCase normalize_case(std::string name, tg::Shape x_shape, tg::Shape scale_shape, std::vector<int64_t> axes) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = {InputSpec{std::move(x_shape), DType::f32, -1, 2}, InputSpec{std::move(scale_shape), DType::f32, 0.5, 1.5}};
  c.build = [axes](tg::Graph&, const std::vector<Tensor>& in) { return normalize(in[0], in[1], axes); };
  c.tolerance = kSumTolerance;
  return c;
}

}  // namespace

TG_CONFORMANCE_CASES(fused) {
  cases.push_back(normalize_case("fused_normalize_nhwc", {6, 5, 7, 40}, {40}, {0, 1, 2}));
  // Many rows a channel: the CUDA kernel splits the rows over blocks (128-256 splits) and sums the
  // partials in its finish kernel (split lanes, unrolled loads, a tree); 40 channels leave a
  // partial block of outputs.
  cases.push_back(normalize_case("fused_normalize_nhwc_many_rows", {32, 32, 32, 40}, {40}, {0, 1, 2}));
  cases.push_back(normalize_case("fused_normalize_nchw", {6, 12, 9, 11}, {12, 1, 1}, {0, 2, 3}));
  // Whole-tensor statistics of >= 2^16 contiguous elements: the CUDA kernel's stream mode (16-byte
  // loads, one wave of blocks, the last block sums their partials), with a tail of 3 elements
  // after the vectors, and over two merged dims.
  cases.push_back(normalize_case("fused_normalize_full_stream", {131075}, {1}, {0}));
  cases.push_back(normalize_case("fused_normalize_full_stream_2d", {3, 40000}, {1}, {0, 1}));

  // Softmax over rows of 10 and the sum of its cross-entropy-like log term.
  OpCase softmax;
  softmax.name = "fused_softmax_rows";
  softmax.inputs = {InputSpec{{37, 10}, DType::f32, -3, 3}};
  softmax.build = [](tg::Graph&, const std::vector<Tensor>& in) {
    Tensor z = in[0] - tg::reduce_max(in[0], {.axes = {1}, .keep_dims = true});
    Tensor e = tg::exp(z);
    Tensor p = e / tg::reduce_sum(e, {.axes = {1}, .keep_dims = true});
    return std::vector<Tensor>{p, tg::reduce_sum(p * z, {.axes = {0, 1}})};
  };
  softmax.tolerance = kSumTolerance;
  cases.push_back(softmax);

  // LayerNorm of a residual sum (BERT's add + LayerNorm): x + r, normalized over the last axis.
  auto layer_norm = [](std::string name, tg::Shape shape) {
    OpCase c;
    c.name = std::move(name);
    const int64_t n = shape.back();
    c.inputs = {InputSpec{shape, DType::f32, -1, 2}, InputSpec{shape, DType::f32, -1, 1},
                InputSpec{{n}, DType::f32, 0.5, 1.5}, InputSpec{{n}, DType::f32, -0.5, 0.5}};
    c.build = [](tg::Graph&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{tg::layer_norm(in[0] + in[1], in[2], in[3], {.begin_axis = -1, .epsilon = 1e-5})};
    };
    c.tolerance = kSumTolerance;
    return c;
  };
  cases.push_back(layer_norm("fused_rows_layer_norm_100", {3, 5, 100}));
  cases.push_back(layer_norm("fused_rows_layer_norm_1000", {7, 1000}));
  cases.push_back(layer_norm("fused_rows_layer_norm_5000", {3, 5000}));

  // BERT's masked attention softmax: scores * scale + (1 - mask) * -10000 with an i64 key mask
  // [batch, 1, 1, keys] broadcast over heads and queries, softmax over the keys.
  auto masked_softmax = [](std::string name, int64_t keys) {
    OpCase c;
    c.name = std::move(name);
    std::vector<double> mask;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t k = 0; k < keys; ++k) mask.push_back(k < keys - 3 - 5 * b ? 1 : 0);
    }
    c.inputs = {InputSpec{{2, 3, 5, keys}, DType::f32, -4, 4}, InputSpec{{2, 1, 1, keys}, DType::i64, 0, 1, mask}};
    c.build = [](tg::Graph&, const std::vector<Tensor>& in) {
      const DType t = in[0].dtype();
      Tensor bias = (1.0 - tg::cast(in[1], t)) * -10000.0;
      return std::vector<Tensor>{tg::softmax(in[0] * 0.125 + bias, -1)};
    };
    c.tolerance = kSumTolerance;
    return c;
  };
  cases.push_back(masked_softmax("fused_rows_masked_softmax_37", 37));
  cases.push_back(masked_softmax("fused_rows_masked_softmax_128", 128));
}
