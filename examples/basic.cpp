// A small end-to-end example: build a graph with a dynamic batch dim, compile it, run it twice,
// and print the results. Run with `make demo`.
#include <cstdio>

#include <tg/tg.h>

int main() {
  tg::Graph g;
  tg::Tensor x = g.placeholder({-1, 3}, tg::DType::f32, "x");
  tg::Tensor w = g.constant(tg::TensorData::from_vector<float>({1, 0, -1, 2, 0.5f, 0}, {3, 2}), "w");
  tg::Tensor y = tg::tanh(tg::matmul(x, w) + 0.5f);
  tg::Tensor loss = tg::mean(tg::square(y));

  auto batch = tg::TensorData::from_vector<float>({1, 2, 3, -1, 0, 1}, {2, 3});
  std::vector<tg::TensorData> out = g.run({{x, batch}}, {y, loss});
  std::printf("y    = %s\nloss = %s\n", out[0].to_string().c_str(), out[1].to_string().c_str());

  tg::Executable exe = g.compile(tg::Device::cpu(), {{x, tg::TensorType{{4, 3}, tg::DType::f32}}}, {loss});
  auto big = tg::TensorData::random_normal({4, 3}, 0.f, 1.f, /*seed=*/7);
  std::printf("loss on 4 random rows = %s\n", exe.run({big})[0].to_string().c_str());
  std::printf("graph:\n%s", g.to_string().c_str());
  return 0;
}
