// CompileOptions::precision on the GPU (issue 6, "precision policy"): convolutions (forward and
// both gradients, NHWC and NCHW, strided and padded) and matmuls of float32 tensors computed in
// TF32, bf16 or f16 stay within that arithmetic's error of the CPU's float32 result, and the
// results are float32. bf16/f16 go through passes::autocast and cuDNN's graph API; TF32 through the
// graph API with float32 tensors. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "test_util.h"
#include "tg/autodiff.h"
#include "tg/tg.h"

namespace tg {
namespace {

std::vector<double> values_of(const TensorData& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.element_as_double(static_cast<int64_t>(i));
  return v;
}

// Largest |a - b| relative to the largest |b|; infinite when a value is not finite (NaN would
// otherwise compare as no error).
double relative_error(const TensorData& a, const TensorData& b) {
  const std::vector<double> x = values_of(a), y = values_of(b);
  double err = 0, scale = 1e-30;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) return std::numeric_limits<double>::infinity();
    err = std::max(err, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return err / scale;
}

// y = conv(relu(x), w) (then a matmul of its flattened rows), loss = sum(y^2); targets: y, the
// matmul, dloss/dx, dloss/dw. `rgb`: a 3-channel input and a 7x7 stride-2 kernel, like ResNet's
// stem (the CUDA backend runs it as an 8-channel convolution with zero channels), else 16
// channels and 3x3.
std::vector<TensorData> run(Device device, ComputePrecision precision, Layout layout, bool rgb = false) {
  Graph g;
  const bool nhwc = layout == Layout::nhwc;
  const int64_t c = rgb ? 3 : 16, k = rgb ? 7 : 3, pad = rgb ? 3 : 1, side = rgb ? 10 : 9;
  const Shape xs = nhwc ? Shape{4, side, side, c} : Shape{4, c, side, side};
  const Shape ws = nhwc ? Shape{k, k, c, 32} : Shape{32, c, k, k};
  Tensor x = g.placeholder(xs, DType::f32, "x");
  Tensor w = g.variable(TensorData::random_normal(ws, 0.f, 0.2f, 4), "w");
  Tensor m = g.variable(TensorData::random_normal({32, 8}, 0.f, 0.3f, 6), "m");
  Conv2dDesc d{.strides = {2, 2}, .padding = Padding::explicit_padding, .explicit_padding = {pad, pad, pad, pad},
               .data_layout = layout, .weights_layout = nhwc ? Layout::hwio : Layout::oihw};
  Tensor y = conv2d(relu(x), w, d);                         // [4, 5, 5, 32] or [4, 32, 5, 5]
  Tensor rows = reshape(nhwc ? y : transpose(y, {0, 2, 3, 1}), {100, 32});
  Tensor z = matmul(rows, m);
  Tensor loss = reduce_sum(square(y)) + reduce_sum(square(z));
  std::vector<Tensor> gr = gradients(loss, {x, w});
  TensorData xv = TensorData::random_normal(xs, 0.1f, 1.f, 9);
  Executable exe = g.compile(device, {{x, xv.type()}}, {y, z, gr[0], gr[1]}, {}, {.precision = precision});
  std::vector<TensorData> out = exe.run({xv});
  for (TensorData& t : out) t = t.to(Device::cpu());
  return out;
}

// must_differ: the precision rounds the operands (bf16, f16), so a result equal to float32's
// means it was not applied. TF32 only permits tensor cores (like torch.backends.cudnn.allow_tf32):
// cuDNN may still pick an exact float32 kernel, whose sums can equal the CPU's bit for bit.
void check(ComputePrecision p, double tol, bool must_differ) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)";
  for (bool rgb : {false, true}) {
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      std::vector<TensorData> ref = run(Device::cpu(), ComputePrecision::f32, layout, rgb);
      std::vector<TensorData> got = run(Device::cuda(0), p, layout, rgb);
      const char* names[] = {"conv2d", "matmul", "d/dx", "d/dw"};
      for (size_t k = 0; k < ref.size(); ++k) {
        ASSERT_EQ(got[k].type(), ref[k].type()) << names[k];
        const double e = relative_error(got[k], ref[k]);
        EXPECT_LE(e, tol) << names[k] << (layout == Layout::nhwc ? " nhwc" : " nchw") << (rgb ? " rgb" : "");
        if (must_differ) EXPECT_GT(e, 0.0) << names[k] << ": bit-identical to float32, so the precision was not applied";
      }
    }
  }
}

// TF32 keeps 10 mantissa bits (2^-11 relative per operand); bf16 8 bits (2^-9), rounded results;
// f16 11 bits. Sums of 144-288 products of both signs: errors relative to the largest value.
TEST(CudaPrecision, Tf32) { check(ComputePrecision::tf32, 4e-3, false); }
TEST(CudaPrecision, Bf16) { check(ComputePrecision::bf16, 3e-2, true); }
TEST(CudaPrecision, F16) { check(ComputePrecision::f16, 4e-3, true); }

TEST(CudaPrecision, F32IsExactFloat32Arithmetic) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU usable here (or a build without CUDA)";
  std::vector<TensorData> ref = run(Device::cpu(), ComputePrecision::f32, Layout::nhwc);
  std::vector<TensorData> got = run(Device::cuda(0), ComputePrecision::f32, Layout::nhwc);
  for (size_t k = 0; k < ref.size(); ++k) EXPECT_LE(relative_error(got[k], ref[k]), 2e-5) << k;
}

}  // namespace
}  // namespace tg
