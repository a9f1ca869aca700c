// tg::onnx without the frontend: this build found no protobuf or ONNX schema (see
// cmake/onnx.cmake), so every entry point raises tg::Error(unsupported).
#include "tg/onnx.h"

namespace tg::onnx {
namespace {

[[noreturn]] void unavailable() {
  throw Error(ErrorCode::unsupported,
              "[onnx] this build has no ONNX importer (libprotobuf-dev and libonnx-dev were not "
              "found when it was configured)");
}

}  // namespace

bool available() { return false; }
ImportResult import(const std::filesystem::path&, const ImportOptions&) { unavailable(); }
ImportResult import(std::span<const uint8_t>, const ImportOptions&) { unavailable(); }
std::vector<InputInfo> model_inputs(const std::filesystem::path&, bool) { unavailable(); }
TensorData read_tensor_proto(const std::filesystem::path&, std::string*) { unavailable(); }
TensorData parse_tensor_proto(std::span<const uint8_t>, std::string*) { unavailable(); }
std::vector<OpSupport> supported_ops() { return {}; }
std::string supported_ops_markdown() { return "(this build has no ONNX importer)\n"; }

std::vector<Tensor> ImportResult::targets() const {
  std::vector<Tensor> t;
  for (const NamedTensor& o : outputs) t.push_back(o.tensor);
  return t;
}

Feeds ImportResult::feeds(const std::vector<TensorData>&) const { unavailable(); }

}  // namespace tg::onnx
