// Conformance cases of the fused family: graphs whose sums of elementwise chains the compile-time
// passes turn into fused_reduce / fused_elementwise nodes on backends that fuse (CUDA), so the
// generated reduction kernels are checked against the float64 CPU reference in both mappings
// (kept channel innermost as in NHWC batch norm; reduced dims around a kept one as in NCHW),
// with sibling sums, per-channel broadcasts, divisions and rsqrt repeated per element, and a
// softmax over short rows.
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
}
