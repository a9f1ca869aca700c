// CIFAR-10 binary batches (tg::data::load_cifar10), through a file as users give it (plain or
// gzip). The first byte picks the layout and a limit. Seeds: tg_fuzz_seeds.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "tg/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string path = tg::fuzz::scratch_file("batch.bin", {data + 1, size - 1});
  tg::data::LoadOptions options;
  options.layout = (data[0] & 1) ? tg::Layout::nchw : tg::Layout::nhwc;
  options.limit = (data[0] & 2) ? 1 : -1;
  tg::fuzz::expect_ok_or_tg_error([&] { (void)tg::data::load_cifar10({path}, options); });
  return 0;
}
