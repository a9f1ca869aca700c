// The safetensors reader behind Graph::load_variables and nn::Model::load_weights
// (tg::safetensors::read), through a file as users give it. load_variables then only compares
// names, dtypes and shapes with the graph's (tests/runtime/variables_test.cpp). Seeds: files
// written by Graph::save_variables (tg_fuzz_seeds). A tensor read must have exactly the bytes
// its shape declares.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tg::fuzz::scratch_file("vars.safetensors", {data, size});
  tg::fuzz::expect_ok_or_tg_error([&] {
    for (const auto& [name, t] : tg::safetensors::read(path)) {
      if (t.nbytes() > size) std::abort();  // more bytes than the file holds
    }
  });
  return 0;
}
