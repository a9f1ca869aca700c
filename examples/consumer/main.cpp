// The consumer example (examples/consumer/CMakeLists.txt): a program outside TensorGraph's tree
// that builds a graph, runs it, trains two parameters by gradient descent and prints what it
// computed. check.cmake compares its output with the values below.
#include <tg/tg.h>

#include <cstdio>
#include <vector>

int main() {
  // A fixed product: [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]].
  tg::Graph g;
  tg::Tensor a = g.constant(tg::TensorData::from_vector<float>({1, 2, 3, 4}, {2, 2}), "a");
  tg::Tensor b = g.placeholder({2, 2}, tg::DType::f32, "b");
  tg::Tensor ab = tg::matmul(a, b);
  std::vector<float> p = g.run({{b, tg::TensorData::from_vector<float>({5, 6, 7, 8}, {2, 2})}},
                               {ab})[0].to_vector<float>();
  std::printf("matmul: [[%g, %g], [%g, %g]]\n", p[0], p[1], p[2], p[3]);

  // Least squares fit of y = w x + c to 16 points of y = 2x - 1, by 300 gradient-descent steps.
  std::vector<float> xs, ys;
  for (int i = 0; i < 16; ++i) {
    xs.push_back(static_cast<float>(i) / 8.f - 1.f);
    ys.push_back(2.f * xs.back() - 1.f);
  }
  tg::Tensor x = g.placeholder({16, 1}, tg::DType::f32, "x");
  tg::Tensor y = g.placeholder({16, 1}, tg::DType::f32, "y");
  tg::Tensor w = g.variable(tg::TensorData::zeros({1, 1}), "w");
  tg::Tensor c = g.variable(tg::TensorData::zeros({1}), "c");
  tg::Tensor loss = tg::mean(tg::square(tg::matmul(x, w) + c - y));
  std::vector<tg::Tensor> grads = tg::gradients(loss, {w, c});
  tg::Operation step_w = tg::assign_variable(w, w - 0.5 * grads[0]);
  tg::Operation step_c = tg::assign_variable(c, c - 0.5 * grads[1]);
  tg::Executable exe = g.compile(tg::Device::cpu(),
                                 {{x, tg::TensorType{{16, 1}, tg::DType::f32}},
                                  {y, tg::TensorType{{16, 1}, tg::DType::f32}}},
                                 {loss}, {step_w, step_c});
  const tg::TensorData xd = tg::TensorData::from_vector<float>(xs, {16, 1});
  const tg::TensorData yd = tg::TensorData::from_vector<float>(ys, {16, 1});
  float first = 0, last = 0;
  for (int i = 0; i < 300; ++i) {
    last = exe.run({xd, yd})[0].to_vector<float>()[0];  // the loss before this step
    if (i == 0) first = last;
  }
  std::printf("fit: w = %.3f, c = %.3f (loss %.4f -> %.6f)\n",
              g.variable_value(w).to_vector<float>()[0], g.variable_value(c).to_vector<float>()[0],
              first, last);
  return 0;
}
