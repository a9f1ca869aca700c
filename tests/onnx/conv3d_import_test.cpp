// 3-d Conv and ConvTranspose imported from hand-built models (auto_pad SAME_UPPER / SAME_LOWER,
// output_shape: what PyTorch's exporter never writes) against a direct float64 evaluation of the
// ONNX operator definitions. torch-exported Conv3d / ConvTranspose3d with explicit pads, strides,
// dilations and groups are checked against PyTorch in python/tests/test_onnx.py.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "onnx/model_builder.h"
#include "test_util.h"
#include "tg/onnx.h"

namespace tg::onnx {
namespace {

using namespace tg::onnx::testing;
using tg::testing::expect_close;

struct Dims3 {
  int64_t d, h, w;
};

// Deterministic, non-trivial values in [-1, 1).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.f;
  }
  return v;
}

// ONNX Conv, one group: x [N, C, D, H, W], w [O, C, kD, kH, kW], stride s, pads before p0.
std::vector<double> conv3d_ref(const std::vector<float>& x, const std::vector<float>& w, int64_t n,
                               int64_t c, Dims3 in, int64_t o, Dims3 k, Dims3 s, Dims3 p0, Dims3 out) {
  std::vector<double> y(static_cast<size_t>(n * o * out.d * out.h * out.w), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t z = 0; z < out.d; ++z)
        for (int64_t r = 0; r < out.h; ++r)
          for (int64_t q = 0; q < out.w; ++q) {
            double acc = 0;
            for (int64_t ic = 0; ic < c; ++ic)
              for (int64_t kz = 0; kz < k.d; ++kz)
                for (int64_t kr = 0; kr < k.h; ++kr)
                  for (int64_t kq = 0; kq < k.w; ++kq) {
                    int64_t iz = z * s.d - p0.d + kz, ir = r * s.h - p0.h + kr, iq = q * s.w - p0.w + kq;
                    if (iz < 0 || iz >= in.d || ir < 0 || ir >= in.h || iq < 0 || iq >= in.w) continue;
                    acc += static_cast<double>(x[static_cast<size_t>((((b * c + ic) * in.d + iz) * in.h + ir) * in.w + iq)]) *
                           w[static_cast<size_t>((((oc * c + ic) * k.d + kz) * k.h + kr) * k.w + kq)];
                  }
            y[static_cast<size_t>((((b * o + oc) * out.d + z) * out.h + r) * out.w + q)] = acc;
          }
  return y;
}

// ONNX ConvTranspose, one group: x [N, C, D, H, W], w [C, O, kD, kH, kW]; input position i
// with tap t lands at i*s + t - p0 of the output.
std::vector<double> conv_transpose3d_ref(const std::vector<float>& x, const std::vector<float>& w, int64_t n,
                                         int64_t c, Dims3 in, int64_t o, Dims3 k, Dims3 s, Dims3 p0,
                                         Dims3 out) {
  std::vector<double> y(static_cast<size_t>(n * o * out.d * out.h * out.w), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t z = 0; z < in.d; ++z)
        for (int64_t r = 0; r < in.h; ++r)
          for (int64_t q = 0; q < in.w; ++q)
            for (int64_t oc = 0; oc < o; ++oc)
              for (int64_t kz = 0; kz < k.d; ++kz)
                for (int64_t kr = 0; kr < k.h; ++kr)
                  for (int64_t kq = 0; kq < k.w; ++kq) {
                    int64_t oz = z * s.d + kz - p0.d, orr = r * s.h + kr - p0.h, oq = q * s.w + kq - p0.w;
                    if (oz < 0 || oz >= out.d || orr < 0 || orr >= out.h || oq < 0 || oq >= out.w) continue;
                    y[static_cast<size_t>((((b * o + oc) * out.d + oz) * out.h + orr) * out.w + oq)] +=
                        static_cast<double>(x[static_cast<size_t>((((b * c + ic) * in.d + z) * in.h + r) * in.w + q)]) *
                        w[static_cast<size_t>((((ic * o + oc) * k.d + kz) * k.h + kr) * k.w + kq)];
                  }
  return y;
}

std::vector<TensorData> run_model(const std::string& op, std::vector<Msg> attrs, const std::vector<float>& x,
                                  Shape xs, const std::vector<float>& w, Shape ws) {
  Model m;
  m.inputs = {value_info("x", kFloat, xs)};
  m.outputs = {Msg().bytes(1, "y")};
  m.initializers = {float_tensor("w", ws, w)};
  m.nodes = {node(op, {"x", "w"}, {"y"}, "conv3d", attrs)};
  ImportResult r = import(as_bytes(m.bytes()));
  return r.graph.run(r.feeds({TensorData::from_vector<float>(x, xs)}), r.targets(), {}, Device::cpu());
}

// auto_pad SAME_UPPER / SAME_LOWER with stride 2: out = ceil(in / 2) per dim, the odd total
// padding's extra element after (UPPER) or before (LOWER) the data, in the depth dim too.
TEST(OnnxConv3d, AutoPadSameUpperAndLower) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  const int64_t n = 2, c = 3, o = 4;
  const Dims3 in{7, 6, 5}, k{2, 3, 2}, s{2, 2, 2}, out{4, 3, 3};
  std::vector<float> x = values(static_cast<size_t>(n * c * in.d * in.h * in.w), 1);
  std::vector<float> w = values(static_cast<size_t>(o * c * k.d * k.h * k.w), 2);
  // totals per dim: d (4-1)*2+2-7 = 1, h (3-1)*2+3-6 = 1, w (3-1)*2+2-5 = 1.
  for (auto [mode, p0] : {std::pair<const char*, Dims3>{"SAME_UPPER", {0, 0, 0}}, {"SAME_LOWER", {1, 1, 1}}}) {
    SCOPED_TRACE(mode);
    Msg pad = Msg().bytes(1, "auto_pad").bytes(4, mode).varint(20, 3);  // STRING attribute
    std::vector<TensorData> y = run_model("Conv", {pad, attr_ints("strides", {2, 2, 2})}, x,
                                          {n, c, in.d, in.h, in.w}, w, {o, c, k.d, k.h, k.w});
    expect_close(y[0], conv3d_ref(x, w, n, c, in, o, k, s, p0, out), {n, o, out.d, out.h, out.w});
  }
}

// ConvTranspose with output_shape: the pads follow ONNX's formula (total = stride*(in-1) +
// output_padding + k - out; pads before = total/2 with auto_pad SAME_UPPER, total - total/2
// otherwise); here total 1 in every dim and auto_pad NOTSET, so one row is cropped at the start.
TEST(OnnxConv3d, ConvTransposeWithOutputShape) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  const int64_t n = 1, c = 2, o = 3;
  const Dims3 in{3, 4, 2}, k{3, 2, 3}, s{2, 1, 2}, out{6, 4, 4};
  std::vector<float> x = values(static_cast<size_t>(n * c * in.d * in.h * in.w), 3);
  std::vector<float> w = values(static_cast<size_t>(c * o * k.d * k.h * k.w), 4);
  std::vector<TensorData> y = run_model(
      "ConvTranspose", {attr_ints("strides", {2, 1, 2}), attr_ints("output_shape", {6, 4, 4})}, x,
      {n, c, in.d, in.h, in.w}, w, {c, o, k.d, k.h, k.w});
  // full sizes: d 2*2+3 = 7, h 3+2 = 5, w 1*2+3 = 5; pads (1 before, 0 after) in each dim.
  expect_close(y[0], conv_transpose3d_ref(x, w, n, c, in, o, k, s, {1, 1, 1}, out), {n, o, out.d, out.h, out.w});
  // The same with auto_pad SAME_UPPER: the row is cropped at the end.
  Msg upper = Msg().bytes(1, "auto_pad").bytes(4, "SAME_UPPER").varint(20, 3);
  y = run_model("ConvTranspose", {attr_ints("strides", {2, 1, 2}), attr_ints("output_shape", {6, 4, 4}), upper},
                x, {n, c, in.d, in.h, in.w}, w, {c, o, k.d, k.h, k.w});
  expect_close(y[0], conv_transpose3d_ref(x, w, n, c, in, o, k, s, {0, 0, 0}, out), {n, o, out.d, out.h, out.w});
}

TEST(OnnxConv3d, FourSpatialDimsAreRefusedNamingTheNode) {
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  try {
    run_model("Conv", {}, std::vector<float>(2 * 2 * 2 * 2 * 2 * 2, 1.f), {1, 2, 2, 2, 2, 2},
              std::vector<float>(2 * 2 * 2 * 2 * 2 * 2, 1.f), {2, 2, 2, 2, 2, 2});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("conv3d"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 spatial dims"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tg::onnx
