// Cold start of a saved executable on the GPU (issue 23), in a fresh process: the time from a
// loaded CUDA context to the first result of a .tgx file (Executable::load, one run on a random
// input of the feed types, the results read back to the host; the making of the random input
// between the two is timed apart, input_ms, and not counted), with the runtime statistics that
// show what the load avoided (pass-pipeline runs, NVRTC compiles). scripts/gpu-cold-start runs it
// in fresh processes against `tg run model.onnx` with an empty kernel cache and torch.compile.
//
// Usage: tg_bench_cold_start_cuda FILE.tgx    prints one JSON line
//        tg_bench_cold_start_cuda --init-only only initializes CUDA (a process to compare with)
//        tg_bench_cold_start_cuda --libs      after CUDA, the floor of the libraries a first run
//                                             needs: cuDNN's handle, its precompiled-engines
//                                             library, a cuBLASLt handle (dlopen'ed, timed apart)
// With TG_PHASES=1 the library prints where load and the first run spent their time (stderr).
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tg/tg.h"

namespace {

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tg_bench_cold_start_cuda FILE.tgx | --init-only | --libs\n");
    return 2;
  }
  const auto t0 = clock_type::now();
  if (tg::Device::cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  // A loaded CUDA context: a small tensor on the device and back.
  (void)tg::TensorData::zeros({1}, tg::DType::f32).to(tg::Device::cuda(0)).to(tg::Device::cpu());
  const double init_ms = ms_since(t0);
  if (std::strcmp(argv[1], "--init-only") == 0) {
    std::printf("{\"init_ms\": %.2f}\n", init_ms);
    return 0;
  }
  if (std::strcmp(argv[1], "--libs") == 0) {
    // Each step timed apart: what any process running cuDNN convolutions / cuBLASLt GEMMs pays.
    auto timed = [](const std::function<bool()>& f) {
      const auto t = clock_type::now();
      const bool ok = f();
      return ok ? ms_since(t) : -1.0;
    };
    void* handle = nullptr;
    const double cudnn_ms = timed([&] {
      void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
      auto create = lib ? reinterpret_cast<int (*)(void**)>(dlsym(lib, "cudnnCreate")) : nullptr;
      return create && create(&handle) == 0;
    });
    const double engines_ms = timed([] { return dlopen("libcudnn_engines_precompiled.so.9", RTLD_NOW | RTLD_GLOBAL) != nullptr; });
    const double heuristic_ms = timed([] { return dlopen("libcudnn_heuristic.so.9", RTLD_NOW | RTLD_GLOBAL) != nullptr; });
    const double cublaslt_ms = timed([&] {
      void* lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_GLOBAL);
      if (!lib) lib = dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_GLOBAL);
      auto create = lib ? reinterpret_cast<int (*)(void**)>(dlsym(lib, "cublasLtCreate")) : nullptr;
      void* h = nullptr;
      return create && create(&h) == 0;
    });
    std::printf("{\"init_ms\": %.2f, \"cudnnCreate_ms\": %.2f, \"dlopen_cudnn_engines_precompiled_ms\": %.2f, "
                "\"dlopen_cudnn_heuristic_ms\": %.2f, \"cublasLtCreate_ms\": %.2f}\n",
                init_ms, cudnn_ms, engines_ms, heuristic_ms, cublaslt_ms);
    return 0;
  }
  const tg::RuntimeStats s0 = tg::runtime_stats();
  const auto t1 = clock_type::now();
  tg::Executable exe = tg::Executable::load(argv[1], tg::Device::cuda(0));
  const double load_ms = ms_since(t1);
  // The input: the benchmark's own work (an application has its input), timed apart (input_ms)
  // and not counted in to_first_result_ms (it was before session 22: ~4 ms for ResNet-50's).
  const auto t_in = clock_type::now();
  std::vector<tg::TensorData> in;
  uint64_t seed = 1;
  for (const tg::TensorType& t : exe.input_types()) {
    in.push_back(tg::is_floating(t.dtype) ? tg::TensorData::random_uniform(t.shape, -1.f, 1.f, seed++, t.dtype)
                                          : tg::TensorData::zeros(t.shape, t.dtype));
  }
  const double input_ms = ms_since(t_in);
  const auto t2 = clock_type::now();
  std::vector<tg::TensorData> out = exe.run(in);
  double checksum = 0;
  for (tg::TensorData& o : out) {
    o = o.to(tg::Device::cpu());
    checksum += o.element_as_double(0);
  }
  const double run_ms = ms_since(t2);
  const double first_ms = ms_since(t1) - input_ms;
  // The second and third runs (the second records the CUDA graph, the third replays it).
  const auto t3 = clock_type::now();
  for (int i = 0; i < 2; ++i) exe.run(in)[0].to(tg::Device::cpu());
  const double next_two_ms = ms_since(t3);
  const tg::RuntimeStats s1 = tg::runtime_stats();
  std::printf(
      "{\"file\": \"%s\", \"init_ms\": %.2f, \"load_ms\": %.2f, \"input_ms\": %.2f, \"first_run_ms\": %.2f, \"to_first_result_ms\": %.2f, "
      "\"next_two_runs_ms\": %.2f, \"compiles\": %lld, \"kernel_compiles\": %lld, \"kernel_preloads\": %lld, "
      "\"load_recompiles\": %lld, \"autotune_runs\": %lld, \"out0\": %.6g}\n",
      argv[1], init_ms, load_ms, input_ms, run_ms, first_ms, next_two_ms, static_cast<long long>(s1.compiles - s0.compiles),
      static_cast<long long>(s1.kernel_compiles - s0.kernel_compiles),
      static_cast<long long>(s1.kernel_preloads - s0.kernel_preloads),
      static_cast<long long>(s1.executable_load_recompiles - s0.executable_load_recompiles),
      static_cast<long long>(s1.autotune_runs - s0.autotune_runs), checksum);
  return 0;
}
