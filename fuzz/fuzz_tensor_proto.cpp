// The .pb input files of `tg run` (an ONNX TensorProto): tg::onnx::parse_tensor_proto, which
// read_tensor_proto calls on the file's bytes. Seeds: ../shared/onnx/node-tests/*/test_data_set_*/*.pb.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "tg/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tg::fuzz::expect_ok_or_tg_error([&] {
    std::string name;
    (void)tg::onnx::parse_tensor_proto(std::span<const uint8_t>(data, size), &name);
  });
  return 0;
}
