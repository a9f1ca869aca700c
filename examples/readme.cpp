// The README's example, kept compiling and running (make demo does not run it; ctest does and
// checks what it prints). The same code but for the checkpoint path.
#include <tg/tg.h>

#include <cstdio>

int main() {
  tg::Graph g;
  tg::Tensor x = g.placeholder({-1, 3}, tg::DType::f32, "x");          // -1: dynamic batch
  tg::Tensor t = g.placeholder({-1, 2}, tg::DType::f32, "t");
  tg::Tensor w = g.variable(tg::TensorData::random_normal({3, 2}, 0.f, 1.f, /*seed=*/1), "w");
  tg::Tensor y = tg::tanh(tg::matmul(x, w) + 0.5);                      // scalars broadcast
  tg::Tensor loss = tg::mean(tg::square(y - t));
  std::vector<tg::Tensor> grads = tg::gradients(loss, {w});            // appended to the graph
  tg::Operation step = tg::assign_variable(w, w - 0.1 * grads[0]);

  // Compile once for a fixed feed type, then run many times; w persists between runs.
  tg::Executable exe = g.compile(tg::Device::cpu(),
                                 {{x, tg::TensorType{{64, 3}, tg::DType::f32}},
                                  {t, tg::TensorType{{64, 2}, tg::DType::f32}}}, {loss}, {step});
  auto xs = tg::TensorData::random_uniform({64, 3}, -1.f, 1.f, /*seed=*/2);
  auto ts = tg::TensorData::random_uniform({64, 2}, -0.5f, 0.5f, /*seed=*/3);
  float first = exe.run({xs, ts})[0].to_vector<float>()[0];          // inputs in feed order
  for (int i = 0; i < 100; ++i) exe.run({xs, ts});
  g.save_variables("/tmp/tg_readme_w.safetensors");
  std::vector<tg::TensorData> out = g.run({{x, xs}, {t, ts}}, {loss}); // compiles, caches, runs
  std::printf("loss %.4f -> %.4f after 101 steps; w =\n%s\n", first, out[0].to_vector<float>()[0],
              g.variable_value(w).to_string().c_str());
}
