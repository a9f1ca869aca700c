// One __global__ function of each of some precompiled kernel files, by its host-side address:
// module_preload.cpp loads the file's CUDA module through it ahead of the module's first launch
// (CUDA loads a module lazily, at the first launch of one of its kernels). Only files whose
// kernels a loaded model's first run commonly launches (module_preload.h). No CUDA types here.
#pragma once

namespace tg::cuda::kernels {

const void* gather_module_anchor();     ///< gather.cu (gather, gather_elements, scatters, index checks)
const void* status_module_anchor();     ///< status.cu (device error reports, commits)
const void* shape_module_anchor();      ///< shape.cu (copies, transposes, pads)
const void* lowp_cast_module_anchor();  ///< lowp_cast.cu (f32 <-> f16 / bf16)

}  // namespace tg::cuda::kernels
