// tg::Executable::load_from_bytes of untrusted bytes (a .tgx saved executable, docs/design/0008),
// on the CPU. Each input is tried twice: as given (the framing and the checksums answer most
// mutations) and with every section's checksum repaired, so that the section parsers behind the
// checksums (graph, program, variables, kernels) see the mutated bytes. Seeds: executables saved
// by LLVMFuzzerInitialize into $TG_FUZZ_TGX_SEEDS when it is set (scripts/fuzz.sh does).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "fuzz_util.h"
#include "runtime/tgx_format.h"
#include "tg/tg.h"

namespace {

void write_seed(const std::string& dir, const std::string& name, const tg::Executable& exe) {
  std::filesystem::create_directories(dir);
  exe.save(dir + "/" + name);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("TG_FUZZ_TGX_SEEDS");
  if (dir == nullptr || *dir == 0) return 0;
  tg::Graph g;
  tg::Tensor x = g.placeholder({2, 3}, tg::DType::f32, "x");
  tg::Tensor w = g.variable(tg::TensorData::from_vector<float>({1, -1, 2, 0.5f, -3, 1}, {3, 2}), "w");
  tg::Tensor y = tg::reduce_sum(tg::maximum(tg::matmul(x, w), g.constant(0.0, tg::DType::f32)), {.axes = {0}});
  tg::Operation step = tg::assign_variable(w, w * 0.5f);
  write_seed(dir, "mlp.tgx", g.compile(tg::Device::cpu(), {{x, {{2, 3}, tg::DType::f32}}}, {y, x * 2.f}));
  write_seed(dir, "step.tgx", g.compile(tg::Device::cpu(), {{x, {{2, 3}, tg::DType::f32}}}, {y}, {step}));
  tg::Tensor n = g.placeholder({}, tg::DType::i32, "n");
  std::vector<tg::Tensor> loop = tg::for_loop(n, {y}, [&](tg::Tensor i, std::span<const tg::Tensor> a) {
    return std::vector<tg::Tensor>{a[0] * 0.5f + tg::cast(i, tg::DType::f32)};
  });
  write_seed(dir, "loop.tgx", g.compile(tg::Device::cpu(), {{x, {{2, 3}, tg::DType::f32}}, {n, {{}, tg::DType::i32}}},
                                        {loop[0]}));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  tg::fuzz::expect_ok_or_tg_error([&] { (void)tg::Executable::load_from_bytes(bytes, tg::Device::cpu()); });
  tg::fuzz::expect_ok_or_tg_error([&] {
    tg::runtime::tgx::repair_checksums(bytes, "fuzz");
    (void)tg::Executable::load_from_bytes(bytes, tg::Device::cpu());
  });
  return 0;
}
