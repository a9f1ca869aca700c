// IDX files and the MNIST loader (tg::data::read_idx, load_mnist), through files as users give
// them (plain or gzip). The first byte picks read_idx of the rest, or load_mnist with the rest
// split in two (images, labels) at the offset in the next two bytes. Seeds: tg_fuzz_seeds.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "tg/data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t mode = data[0];
  if (mode % 2 == 0) {
    const std::string path = tg::fuzz::scratch_file("file.idx", {data + 1, size - 1});
    tg::fuzz::expect_ok_or_tg_error([&] { (void)tg::data::read_idx(path); });
    return 0;
  }
  const size_t split = std::min<size_t>(size - 3, size_t{data[1]} | size_t{data[2]} << 8);
  const std::string images = tg::fuzz::scratch_file("images.idx", {data + 3, split});
  const std::string labels = tg::fuzz::scratch_file("labels.idx", {data + 3 + split, size - 3 - split});
  tg::data::LoadOptions options;
  options.layout = (mode & 2) ? tg::Layout::nchw : tg::Layout::nhwc;
  options.limit = (mode & 4) ? 1 : -1;
  tg::fuzz::expect_ok_or_tg_error([&] { (void)tg::data::load_mnist(images, labels, options); });
  return 0;
}
