// Slices of one contiguous block run as views of their input (backends::slice_view_offset), on
// any device: the parts of a chunk as results and read by later kernels, a part of a variable
// read in the run that assigns the variable (the part keeps the value from the run's start), and
// a part at an offset that is not a multiple of 256 bytes (copied). Included by the CPU and the
// CUDA tests; `runs` runs with new inputs (CUDA: a recording, then replays).
#pragma once
#include "test_util.h"

namespace tg::testing {

inline void check_slice_views(Device device, int runs) {
  constexpr int64_t kCols = 64;  // rows of 256 bytes (f32)
  Graph g;
  Tensor x = g.placeholder({3, kCols}, DType::f32, "x");
  Tensor v = g.variable(TensorData::full({2, kCols}, DType::f32, 1.0), "v");
  Tensor a = x * 2.0f;
  auto row = [](Tensor t, int64_t r) { return slice(t, {.begin = {r}, .end = {r + 1}, .axes = {0}}); };
  Tensor q = row(a, 0), k = row(a, 1), w = row(a, 2);
  Tensor qkw = q * k + w;                                           // read by a kernel
  Tensor head = row(v, 1) * 3.0f;                                   // v's second row before the assignment
  Tensor odd = slice(a, {.begin = {0, 1}, .end = {1, 2}, .axes = {0, 1}});  // 4 bytes in: copied
  Operation step = assign_variable(v, v + 1.0f);
  Executable exe = g.compile(device, {{x, {{3, kCols}, DType::f32}}}, {k, w, qkw, head, odd, q}, {step});
  for (int r = 0; r < runs; ++r) {
    std::vector<float> xs(3 * kCols);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.01f * static_cast<float>(i) - 0.5f * static_cast<float>(r);
    const std::vector<TensorData> out = exe.run({TensorData::from_vector<float>(xs, {3, kCols})});
    std::vector<double> want_k, want_w, want_qkw, want_q, want_head(kCols, 3.0 * (1 + r));
    for (int64_t j = 0; j < kCols; ++j) {
      const double qj = 2.0 * xs[j], kj = 2.0 * xs[kCols + j], wj = 2.0 * xs[2 * kCols + j];
      want_q.push_back(qj);
      want_k.push_back(kj);
      want_w.push_back(wj);
      want_qkw.push_back(qj * kj + wj);
    }
    expect_close(out[0], want_k, {1, kCols}, 1e-6);
    expect_close(out[1], want_w, {1, kCols}, 1e-6);
    expect_close(out[2], want_qkw, {1, kCols}, 1e-5);
    expect_close(out[3], want_head, {1, kCols}, 0);
    expect_close(out[4], {2.0 * xs[1]}, {1, 1}, 1e-6);
    expect_close(out[5], want_q, {1, kCols}, 1e-6);
  }
  expect_close(g.variable_value(v).to(Device::cpu()), std::vector<double>(2 * kCols, 1.0 + runs), {2, kCols}, 0);
}

}  // namespace tg::testing
