// tg::onnx::import of untrusted bytes (a ModelProto). Seeds: ../shared/onnx/node-tests/*/model.onnx.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "tg/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tg::fuzz::expect_ok_or_tg_error([&] { (void)tg::onnx::import(std::span<const uint8_t>(data, size)); });
  return 0;
}
