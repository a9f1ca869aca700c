// tg_fuzz_seeds OUT: writes the seed corpora of the fuzz targets that have no files in
// ../shared/onnx, with TensorGraph's own writers where it has one (write_npy,
// safetensors::write, what Graph::save_variables calls) and by the formats' definitions otherwise (IDX, CIFAR-10), plain and
// gzip: OUT/<target>/<name>. Each seed is laid out as its target reads it (fuzz_mnist and
// fuzz_cifar10 start with their mode bytes).
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "npy.h"
#include "tg/tg.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

void put(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Bytes get(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Bytes gzip(const Bytes& b, const fs::path& scratch) {
  gzFile f = gzopen(scratch.c_str(), "wb9");
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
  return get(scratch);
}

// An IDX file: 0, 0, type code, rank, big-endian u32 dims, then the values.
Bytes idx(uint8_t code, const std::vector<uint32_t>& dims, const Bytes& values) {
  Bytes b = {0, 0, code, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  }
  b.insert(b.end(), values.begin(), values.end());
  return b;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tg_fuzz_seeds OUT\n";
    return 2;
  }
  const fs::path out = argv[1], tmp = out / "tmp";
  fs::create_directories(tmp);
  for (const char* t : {"fuzz_npy", "fuzz_safetensors", "fuzz_mnist", "fuzz_cifar10"}) fs::create_directories(out / t);
  // fuzz_npy
  using tg::DType;
  using tg::TensorData;
  int k = 0;
  for (const TensorData& t : {TensorData::random_uniform({2, 3}, -1.f, 1.f, 1), TensorData::full({4}, DType::i64, 3),
                              TensorData::full({}, DType::u8, 9), TensorData::full({0}, DType::bool_, 0),
                              TensorData::full({1, 1, 2}, DType::f16, 0.5), TensorData::full({2}, DType::f64, -1),
                              TensorData::full({3}, DType::i32, 5), TensorData::full({2}, DType::i8, -2)}) {
    tg::cli::write_npy(out / "fuzz_npy" / ("seed" + std::to_string(k++) + ".npy"), t);
  }
  // fuzz_safetensors: the files Graph::save_variables writes (tg::safetensors::write).
  tg::safetensors::write((out / "fuzz_safetensors" / "three.safetensors").string(),
                         {{"w", TensorData::random_uniform({2, 3}, -1.f, 1.f, 2)},
                          {"b", TensorData::full({3}, DType::i64, 1)},
                          {"h", TensorData::full({4}, DType::f16, 2)}});
  tg::safetensors::write((out / "fuzz_safetensors" / "other.safetensors").string(),
                         {{"w", TensorData::full({5}, DType::bf16, 1)},
                          {"extra", TensorData::full({1, 1}, DType::u8, 1)},
                          {"empty", TensorData::full({0, 3}, DType::f64, 1)}});
  // fuzz_mnist: mode 0 read_idx of each IDX type; mode 1/3 load_mnist of images and labels.
  {
    const Bytes images = idx(0x08, {2, 3, 3}, Bytes(18, 200)), labels = idx(0x08, {2}, {3, 7});
    put(out / "fuzz_mnist" / "idx_u8", cat({{0}, images}));
    put(out / "fuzz_mnist" / "idx_i16", cat({{0}, idx(0x0B, {2}, {0x80, 1, 0, 2})}));
    put(out / "fuzz_mnist" / "idx_i32", cat({{0}, idx(0x0C, {1}, {0, 0, 1, 0})}));
    put(out / "fuzz_mnist" / "idx_f32", cat({{0}, idx(0x0D, {1, 1}, {0x3f, 0x80, 0, 0})}));
    put(out / "fuzz_mnist" / "idx_f64", cat({{0}, idx(0x0E, {1}, {0x3f, 0xf0, 0, 0, 0, 0, 0, 0})}));
    put(out / "fuzz_mnist" / "idx_gz", cat({{0}, gzip(images, tmp / "a.gz")}));
    const uint16_t n = static_cast<uint16_t>(images.size());
    put(out / "fuzz_mnist" / "mnist_nhwc", cat({{1, static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8)}, images, labels}));
    const Bytes gz = gzip(images, tmp / "b.gz");
    const uint16_t m = static_cast<uint16_t>(gz.size());
    put(out / "fuzz_mnist" / "mnist_nchw_gz", cat({{3, static_cast<uint8_t>(m), static_cast<uint8_t>(m >> 8)}, gz, labels}));
  }
  // fuzz_cifar10: two records (label, 3072 pixel bytes), plain and gzip.
  {
    Bytes batch;
    for (uint8_t label : {uint8_t{4}, uint8_t{9}}) {
      batch.push_back(label);
      for (int i = 0; i < 3072; ++i) batch.push_back(static_cast<uint8_t>(i * label));
    }
    put(out / "fuzz_cifar10" / "nhwc", cat({{0}, batch}));
    put(out / "fuzz_cifar10" / "nchw_gz", cat({{1}, gzip(batch, tmp / "c.gz")}));
  }
  fs::remove_all(tmp);
  return 0;
}
