// Trains a 2-layer MLP (tanh hidden layer) to fit y = sin(x) on [-pi, pi] with Adam, a learning
// rate fed each step from a cosine schedule with warm-up, and gradients from tg::gradients.
// Prints the loss every 250 steps; runs in about a second.
#include <tg/tg.h>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

namespace {

constexpr int kSamples = 128;
constexpr int kHidden = 32;
constexpr int kSteps = 2000;
constexpr double kBaseLr = 0.02;

// The training set: kSamples points evenly spaced on [-pi, pi] and their sines.
std::pair<tg::TensorData, tg::TensorData> make_data() {
  std::vector<float> xs(kSamples), ys(kSamples);
  for (int i = 0; i < kSamples; ++i) {
    double x = -std::numbers::pi + 2 * std::numbers::pi * i / (kSamples - 1);
    xs[i] = static_cast<float>(x);
    ys[i] = static_cast<float>(std::sin(x));
  }
  return {tg::TensorData::from_vector<float>(xs, {kSamples, 1}),
          tg::TensorData::from_vector<float>(ys, {kSamples, 1})};
}

}  // namespace

int main() {
  tg::Graph g;
  auto [x_data, y_data] = make_data();
  tg::Tensor x = g.placeholder({-1, 1}, tg::DType::f32, "x");
  tg::Tensor y = g.placeholder({-1, 1}, tg::DType::f32, "y");
  tg::Tensor lr = g.placeholder({}, tg::DType::f32, "lr");

  // Parameters: variables initialized from seeded normals (Xavier-like scales).
  tg::Tensor w1 =
      g.variable(tg::TensorData::random_normal({1, kHidden}, 0.f, 1.f, /*seed=*/1), "w1");
  tg::Tensor b1 = g.variable(tg::TensorData::zeros({kHidden}), "b1");
  tg::Tensor w2 = g.variable(
      tg::TensorData::random_normal({kHidden, 1}, 0.f, 1.f / std::sqrt(float(kHidden)), /*seed=*/2),
      "w2");
  tg::Tensor b2 = g.variable(tg::TensorData::zeros({1}), "b2");
  std::vector<tg::Tensor> params = {w1, b1, w2, b2};

  tg::Tensor hidden = tg::tanh(tg::matmul(x, w1) + b1);
  tg::Tensor prediction = tg::matmul(hidden, w2) + b2;
  tg::Tensor loss = tg::mean_squared_error(prediction, y);

  std::vector<tg::Operation> step = tg::adam_step(g, params, tg::gradients(loss, params), lr);
  tg::Executable exe =
      g.compile(tg::Device::cpu(),
                {{x, x_data.type()}, {y, y_data.type()}, {lr, {{}, tg::DType::f32}}}, {loss}, step);

  double first = 0, last = 0;
  for (int i = 0; i < kSteps; ++i) {
    float rate =
        static_cast<float>(tg::cosine_warmup_lr(kBaseLr, i, /*warmup_steps=*/100, kSteps, 1e-4));
    // The loss is computed with the parameters before this step's update.
    last = exe.run({x_data, y_data, tg::TensorData::scalar(rate)})[0].element_as_double(0);
    if (i == 0) first = last;
    if (i % 250 == 0) std::printf("step %4d  lr %.5f  loss %.6f\n", i, rate, last);
  }
  double final_loss = g.run({{x, x_data}, {y, y_data}}, {loss})[0].element_as_double(0);
  std::printf("final loss %.6f (initial %.6f, %.0fx lower)\n", final_loss, first,
              first / final_loss);
  return final_loss < first / 10 ? 0 : 1;
}
