// The .npy input files of `tg run` (tools/tg/npy.cpp), through the file reader. Seeds: files
// written by write_npy (tg_fuzz_seeds).
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tg::fuzz::scratch_file("input.npy", {data, size});
  tg::fuzz::expect_ok_or_tg_error([&] { (void)tg::cli::read_npy(path); });
  return 0;
}
