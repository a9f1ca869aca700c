// Loading the CUDA modules of precompiled kernels ahead of their first launch (module_preload.h).
#include "backends/cuda/module_preload.h"

#include <cuda.h>  // CUfunction, CUresult (types only: cuFuncLoad is looked up at run time)
#include <cuda_runtime.h>

#include <cstdlib>
#include <string_view>

#include "backends/cuda/kernels/module_anchors.h"
#include "core/env.h"
#include "core/phase_times.h"

namespace tg::cuda {

void preload_modules(int device) noexcept {
  phases::Scope timed("preload_modules");
  using FuncLoad = CUresult (*)(CUfunction);
  static const FuncLoad load = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuFuncLoad", &p, 12040, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return FuncLoad{nullptr};
    }
    return reinterpret_cast<FuncLoad>(p);
  }();
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  for (const void* kernel : {kernels::gather_module_anchor(), kernels::status_module_anchor(),
                             kernels::shape_module_anchor(), kernels::lowp_cast_module_anchor()}) {
    cudaFunction_t f = nullptr;
    if (load != nullptr && cudaGetFuncBySymbol(&f, kernel) == cudaSuccess && f != nullptr) {
      load(reinterpret_cast<CUfunction>(f));
    } else {
      cudaFuncAttributes attributes{};
      cudaFuncGetAttributes(&attributes, kernel);
    }
    cudaGetLastError();
  }
}

PreloadModules preload_modules_mode() noexcept {
  const std::string mode = env::preload_modules();
  return mode == "1" ? PreloadModules::after_read : mode == "early" ? PreloadModules::early : PreloadModules::off;
}

}  // namespace tg::cuda
