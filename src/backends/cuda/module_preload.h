// Loading the CUDA modules of precompiled kernels ahead of their first launch (issue 23, the cold
// start of a loaded executable; docs/design/0011 "Session 23"). CUDA loads a module lazily, at the
// first launch of one of its kernels, inside the launching call: in a loaded executable's first
// run on the H200 that took up to 5.8 ms for gather.cu's (BERT-base's first gather_elements) and
// 0.3-1.6 ms for others, on the run's thread. No CUDA types here.
#pragma once

namespace tg::cuda {

/// Loads, on the calling thread, the modules of the precompiled kernel files a loaded model's
/// first run commonly launches (kernels/module_anchors.h: gather, status, shape, lowp_cast) on
/// cuda:`device` (the first kernel of each through cuFuncLoad, CUDA 12.4+, else
/// cudaFuncGetAttributes). Failures are ignored: the module then loads at its first launch, as
/// without this. Never throws.
void preload_modules(int device) noexcept;

/// When to call preload_modules from a .tgx load (Executable::load; file_upload.cpp), from
/// TG_PRELOAD_MODULES: 0 never (the default until measured), 1 on a thread of the load once the file
/// is read (beside the rest of the load), `early` on that thread from the start of the read.
enum class PreloadModules { off, after_read, early };
PreloadModules preload_modules_mode() noexcept;

}  // namespace tg::cuda
