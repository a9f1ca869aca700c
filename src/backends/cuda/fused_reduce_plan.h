// Internal to the CUDA backend's fused_reduce kernel (fused_reduce.cpp: planning and launch;
// fused_reduce_codegen.cpp: the generated source). The plan's modes, merged dims and the launch
// constants the generated code is written for are described at the top of fused_reduce.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/fused_program.h"
#include "tg/dtype.h"

namespace tg::cuda::fr {
inline constexpr int kThreads = 256;
inline constexpr int kMaxDims = 4;
inline constexpr int kUnroll = 4;      // elements a thread loads before using them (4: see the finish kernel)
inline constexpr int kFinishThreads = 1024;  // tg_fr_finish: 32 outputs times up to 32 split lanes
inline constexpr int kBlocksPerSm = 8;  // target resident blocks (256 threads each) per SM
inline constexpr size_t kMaxShared = 48 * 1024;
inline constexpr int64_t kStreamedSum = 1 << 16;  // elements a sum from which few outputs split finer
inline constexpr int kStreamBlocksPerSm = 4;      // stream mode: resident 256-thread blocks an SM (one wave)
inline constexpr int kStreamBytes = 16;           // stream mode: bytes of the widest input a thread loads at once

/// Mirrors of tg_fr_dims and tg_fr_st of the generated source, passed by value.
struct Dims {
  long long k[kMaxDims] = {};  ///< kept merged dims, outermost first
  long long r[kMaxDims] = {};  ///< reduced merged dims, outermost first
  long long O = 0, R = 0;
};
struct InStrides {
  long long k[kMaxDims] = {};
  long long r[kMaxDims] = {};
};

struct Plan {
  std::string kinds;  ///< per input: 's' scalar, 'k' constant over r, 'g' general
  char mode = 'c';    ///< 'r' row, 'c' column, 's' stream (see the top)
  int vec = 1;        ///< column mode: consecutive outputs a thread sums (vector loads); stream
                      ///< mode: consecutive elements a thread loads at once; else 1
  int nk = 0, nr = 0;
  Dims dims;
  std::vector<InStrides> strides;  ///< per input
};

inline bool half(DType d) { return d == DType::f16 || d == DType::bf16; }
inline const char* acc_type(DType d) { return half(d) ? "float" : "double"; }
inline size_t acc_size(DType d) { return half(d) ? sizeof(float) : sizeof(double); }
inline const char* compute_type(DType d) { return d == DType::f64 ? "double" : "float"; }

/// The CUDA source of one plan's kernels: tg_fr_32 and tg_fr_64 (32- and 64-bit index math) and
/// tg_fr_finish (sums the splits' partials), for program p over inputs of dtypes `in`.
std::string reduce_source(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl);

}  // namespace tg::cuda::fr
