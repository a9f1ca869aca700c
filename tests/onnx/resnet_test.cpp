// A ResNet-18 exported by PyTorch (scripts/export-resnet18-onnx.py: torchvision's resnet18 with
// seeded random weights, torch.onnx.export at opset 13) imports and matches PyTorch's output on
// the same input to 1e-4 relative. The files are made by the build (cmake/onnx.cmake, target
// tg_onnx_resnet18) into <build>/onnx-resnet18 when python3-torch is installed; the directory
// can also be given with TG_ONNX_RESNET18_DIR. Skipped with a message when they are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "tg/onnx.h"

namespace tg::onnx {
namespace {

namespace fs = std::filesystem;

fs::path resnet_dir() {
  if (const char* d = std::getenv("TG_ONNX_RESNET18_DIR")) return d;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);  // <build>/tests/tg_tests
  return ec ? fs::path() : exe.parent_path().parent_path() / "onnx-resnet18";
}

TEST(OnnxResNet18, MatchesPyTorch) {
  fs::path dir = resnet_dir();
  if (!fs::exists(dir / "model.onnx")) {
    GTEST_SKIP() << "no exported ResNet-18 at " << dir.string()
                 << " (built by target tg_onnx_resnet18 when python3-torch is installed)";
  }
  if (!available()) GTEST_SKIP() << "no ONNX importer in this build";
  ImportResult m = import(dir / "model.onnx");
  ASSERT_EQ(m.inputs.size(), 1u);
  ASSERT_EQ(m.outputs.size(), 1u);
  TensorData x = read_tensor_proto(dir / "input.pb");
  TensorData expected = read_tensor_proto(dir / "output.pb");
  TensorData y = m.graph.run(m.feeds({x}), m.targets(), {}, Device::cpu()).at(0);
  ASSERT_EQ(y.shape(), expected.shape());
  double max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    max_ref = std::max(max_ref, std::fabs(expected.element_as_double(i)));
    max_err = std::max(max_err, std::fabs(y.element_as_double(i) - expected.element_as_double(i)));
  }
  // Relative to the output's scale: max |y - y_torch| <= 1e-4 * max |y_torch|.
  EXPECT_LE(max_err, 1e-4 * max_ref) << "max error " << max_err << ", max |output| " << max_ref;
}

}  // namespace
}  // namespace tg::onnx
