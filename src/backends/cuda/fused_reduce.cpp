// CUDA kernel of fused_reduce: the sums over FusedAttrs::reduce_axes of an elementwise program's
// values, in one generated kernel (NVRTC) that never writes the program's values.
//
// Semantics: inputs broadcast (NumPy, right-aligned) to FusedAttrs::shape; every element of the
// shape evaluates the program once (tg_fused of fused_program.h, in the steps' storage types, as
// fused_elementwise does) and adds each output value o<k> to its sum, so sibling sums (a batch
// norm's sum(x) and sum(x*x)) share the loads. Sums accumulate as reduce_sum's (f32 and f64 in
// double, f16/bf16 in float) and are rounded once to the output dtype (floating dtypes only). The
// combination order is fixed by the shapes and the device's SM count: deterministic (the one
// atomic only elects the block that finishes).
//
// Host planning: per input, element strides over the shape (0 on broadcast dims); size-1 dims
// dropped, adjacent dims merged when both are reduced or both kept and every input's strides allow
// it. Result: nk <= 4 kept and nr <= 4 reduced merged dims (O outputs, R elements a sum). Inputs
// are 's' (one element: loaded once a thread), 'k' (reduced strides all 0, e.g. a per-channel
// scale: loaded once per output, outside the reduction loop) or 'g' (loaded per element).
// Threads iterate the reduced index r with a stride; its digits over the reduced dims are advanced
// with carries (no division in the loop). Two mappings of a block's 256 threads:
//   - row ('r', innermost merged dim reduced and R >= 32; NCHW batch norm, softmax rows): rlane =
//     threadIdx.x over 32..256 consecutive r (coalesced; ~R/16 lanes), threadIdx.y over the block's
//     outputs; warp shuffles, then one shared-memory slot per warp summed in order.
//   - column ('c', otherwise; NHWC batch norm: reduced [N*H*W], kept [C]): threadIdx.x over 32
//     consecutive output groups (coalesced; fewer when there are fewer groups, more when R < 8),
//     threadIdx.y over power-of-two r-lanes; shared-memory tree over y. A group is one output, or
//     2-4 consecutive outputs read with one 8-byte vector load per input and element of r when the
//     layout allows (vector_width: 16-bit data of 64 channels would otherwise load 64 bytes a warp).
//   - stream ('s', one output group: every reduced dim merged into one, contiguous in every
//     per-element input, >= kStreamedSum elements; a loop condition's mean(y)): each thread reads
//     16-byte vectors (Plan::vec elements of the widest input) with a grid stride, kUnroll vectors
//     in flight; one resident wave of 256-thread blocks (at most kStreamBlocksPerSm an SM, each
//     thread ~kUnroll vectors), warp shuffles, then the last block sums the blocks' partials (one a
//     lane). The blocks are gridDim.y (the splits), so partials, counter and finish are the row
//     and column modes'. The full sum of 2^20 floats: 256 blocks, 4 float4 loads a thread (the
//     row mode used 1024 blocks of scalar loads in two waves, then a serial pass over 1024 partials).
// A thread loads kUnroll elements before using them (memory-level parallelism), same order.
// blockIdx.x strides over output groups; gridDim.y splits r so that the grid has ~8 blocks per SM
// while each thread still runs >= ~16 iterations (>= kUnroll for long sums of few outputs, whose
// splits the last block finishes). With one split the block stores the outputs;
// otherwise it writes partials [split][O] (accumulator type) to scratch, and for few outputs
// (O <= 8: full reductions, a loop's mean(y) > t) the last block to finish sums them (a counter:
// atomicAdd after a fence, set back to zero by that block; a recorded launch owns a counter for
// good, an unrecorded one zeroes one in its workspace; up to 256 lanes an output), else
// tg_fr_finish does, both in a fixed order: tg_fr_finish with 32 outputs a block times up to 32
// split lanes, kUnroll loads in flight a lane, a tree over the lanes (a thread per output walking
// every split was latency-bound: ~95 us a call at 1056 splits by the profile's times at two
// sizes, more than the main kernel's time at 64 channels). 32-bit index math when the shape has < 2^31 elements, else 64-bit.
// Zero-size: O == 0 launches nothing, R == 0 stores zeros.
// Limits: 4 kept and 4 reduced merged dims; outputs' shared memory <= 48 KiB (24 f32/f64 sums);
// no integer-division steps (the fusion pass never makes them): tg::Error(unsupported).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/fused_program.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxDims = 4;
constexpr int kUnroll = 4;      // elements a thread loads before using them (4: see the finish kernel)
constexpr int kFinishThreads = 1024;  // tg_fr_finish: 32 outputs times up to 32 split lanes
constexpr int kBlocksPerSm = 8;  // target resident blocks (256 threads each) per SM
constexpr size_t kMaxShared = 48 * 1024;
constexpr int64_t kStreamedSum = 1 << 16;  // elements a sum from which few outputs split finer
constexpr int kStreamBlocksPerSm = 4;      // stream mode: resident 256-thread blocks an SM (one wave)
constexpr int kStreamBytes = 16;           // stream mode: bytes of the widest input a thread loads at once

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

bool half(DType d) { return d == DType::f16 || d == DType::bf16; }
const char* acc_type(DType d) { return half(d) ? "float" : "double"; }
size_t acc_size(DType d) { return half(d) ? sizeof(float) : sizeof(double); }
const char* compute_type(DType d) { return d == DType::f64 ? "double" : "float"; }

// ---- source generation ----------------------------------------------------------------------

/// Parameters of the main kernels (by_ref: the inlined body takes the structs by reference).
std::string param_list(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl, bool by_ref,
                       std::string* args) {
  std::string s, a;
  auto add = [&](const std::string& decl, const std::string& name) {
    s += (s.empty() ? "" : ", ") + decl;
    a += (a.empty() ? "" : ", ") + name;
  };
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    add(fmt::format("{}* __restrict__ y{}", device_type(p.outputs[k]), k), fmt::format("y{}", k));
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    add(fmt::format("{}* __restrict__ q{}", acc_type(p.outputs[k]), k), fmt::format("q{}", k));
  }
  for (size_t m = 0; m < in.size(); ++m) {
    add(fmt::format("const {}* __restrict__ x{}", device_type(in[m]), m), fmt::format("x{}", m));
  }
  const char* ref = by_ref ? "&" : "";
  for (size_t m = 0; m < in.size(); ++m) {
    if (pl.kinds[m] != 's') add(fmt::format("const tg_fr_st{} s{}", ref, m), fmt::format("s{}", m));
  }
  add(fmt::format("const tg_fr_dims{} d", ref), "d");
  add("unsigned int* __restrict__ tg_cnt", "tg_cnt");
  *args = a;
  return s;
}

/// Name of output k's accumulator for the thread's output j (of Plan::vec).
std::string acc_name(const Plan& pl, size_t k, int j) {
  return pl.vec == 1 ? fmt::format("a{}", k) : fmt::format("a{}_{}", k, j);
}

/// The reduction over a block's r-lanes of output k's accumulators and their stores by rlane 0.
std::string block_reduce(const Plan& pl, size_t k, DType out) {
  const std::string sh = fmt::format("tg_sh{}", k);
  std::string s;
  for (int j = 0; j < pl.vec; ++j) {
    const std::string acc = acc_name(pl, k, j);
    const std::string oj = pl.vec == 1 ? "o" : fmt::format("(o + {})", j);
    const std::string store = fmt::format(
        "        if (gridDim.y == 1) y{0}[{3}] = tg_dev::st<{1}>(static_cast<{2}>(w));\n"
        "        else q{0}[static_cast<I>(blockIdx.y) * O + {3}] = w;\n",
        k, device_type(out), compute_type(out), oj);
    if (pl.mode == 'r') {
      // Warp shuffles (a warp lies within one output's r-lanes), then the warps' sums in order.
      s += "#pragma unroll\n    for (int off = 16; off > 0; off >>= 1) " + acc + " += __shfl_down_sync(0xffffffffu, " +
           acc + ", off);\n";
      s += "    if ((rlane & 31) == 0) " + sh + "[(rlane >> 5) * ocount + olane] = " + acc + ";\n";
      s += "    __syncthreads();\n    if (rlane == 0 && og < OG) {\n";
      s += fmt::format("      {} w = {}[olane];\n", acc_type(out), sh);
      s += "      for (I j = 1; j < (rcount >> 5); ++j) w += " + sh + "[j * ocount + olane];\n";
    } else {
      // Tree over the (power of two) r-lanes.
      s += "    " + sh + "[rlane * ocount + olane] = " + acc + ";\n    __syncthreads();\n";
      s += "    for (I h = rcount >> 1; h > 0; h >>= 1) {\n";
      s += "      if (rlane < h) " + sh + "[rlane * ocount + olane] += " + sh + "[(rlane + h) * ocount + olane];\n";
      s += "      __syncthreads();\n    }\n    if (rlane == 0 && og < OG) {\n";
      s += fmt::format("      const {} w = {}[olane];\n", acc_type(out), sh);
    }
    s += "      {\n" + store + "      }\n    }\n";
    if (j + 1 < pl.vec) s += "    __syncthreads();\n";  // before the slot is written again
  }
  return s;
}

/// With a counter (tg_cnt, zero before the launch), the block that finishes last sums the
/// partials into the outputs as tg_fr_finish does (kUnroll loads in flight a lane, then a tree over
/// the lanes, a fixed order), with as many power-of-two lanes an output as its outputs' shared
/// arrays hold (O * lanes <= kThreads; up to 256 lanes for one output, so a lane reads a few
/// partials), and sets the counter back to zero (a graph replays the launch with the same
/// counter). Every block's partial stores are fenced before it counts itself; the last block
/// reads them from L2.
std::string last_block_finish(const FusedProgramSource& p) {
  const size_t nout = p.outputs.size();
  std::string s =
      "  if (tg_cnt != nullptr) {  // the last block to finish sums the partials\n"
      "    __shared__ unsigned int tg_last;\n"
      "    __threadfence();\n    __syncthreads();\n"
      "    if (threadIdx.x == 0 && threadIdx.y == 0) tg_last = atomicAdd(tg_cnt, 1u) + 1u == gridDim.x * gridDim.y;\n"
      "    __syncthreads();\n"
      "    if (tg_last) {\n      __threadfence();\n"
      "      const long long splits = gridDim.y, nslot = static_cast<long long>(O);\n"
      "      long long lanes = 1;\n";
  s += fmt::format("      while (lanes < splits && 2 * lanes * nslot <= {}) lanes *= 2;\n", kThreads);
  s += "      const unsigned T = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;\n"
       "      for (long long slot = tid; slot < nslot * lanes; slot += T) {\n"
       "        const long long o = slot % nslot, lane = slot / nslot;\n";
  for (size_t k = 0; k < nout; ++k) {
    const char* acc = acc_type(p.outputs[k]);
    s += "        {\n";
    for (int u = 0; u < kUnroll; ++u) s += fmt::format("          {} w{} = 0;\n", acc, u);
    s += "          long long j = lane;\n";
    s += fmt::format("          for (; j + {} * lanes < splits; j += {} * lanes) {{\n", kUnroll - 1, kUnroll);
    for (int u = 0; u < kUnroll; ++u) s += fmt::format("            w{0} += __ldcg(&q{1}[(j + {0} * lanes) * nslot + o]);\n", u, k);
    s += fmt::format("          }}\n          for (; j < splits; j += lanes) w0 += __ldcg(&q{}[j * nslot + o]);\n", k);
    s += fmt::format("          tg_sh{}[slot] = (w0 + w1) + (w2 + w3);\n        }}\n", k);
  }
  s += "      }\n      __syncthreads();\n"
       "      for (long long h = lanes >> 1; h > 0; h >>= 1) {\n"
       "        for (long long slot = tid; slot < nslot * h; slot += T) {\n";
  for (size_t k = 0; k < nout; ++k) s += fmt::format("          tg_sh{0}[slot] += tg_sh{0}[slot + h * nslot];\n", k);
  s += "        }\n        __syncthreads();\n      }\n"
       "      for (long long o = tid; o < nslot; o += T) {\n";
  for (size_t k = 0; k < nout; ++k) {
    s += fmt::format("        y{0}[o] = tg_dev::st<{1}>(static_cast<{2}>(tg_sh{0}[o]));\n", k, device_type(p.outputs[k]),
                     compute_type(p.outputs[k]));
  }
  s += "      }\n      if (tid == 0) *tg_cnt = 0u;\n    }\n  }\n";
  return s;
}

/// Stream mode's kernel body (see the top): the same parameters as the row and column modes' body,
/// blocks along gridDim.y (splits), one output group. Elements [0, NV * vec) are read as vectors
/// of vec elements, a thread taking vectors i, i + T, ... (T threads in all, kUnroll vectors loaded
/// before any is used); the tail of fewer than vec elements by the first threads. Each output's
/// thread sums are reduced by warp shuffles and then the 8 warps' sums in order; one block stores
/// the outputs, several store partials q<k>[block] (and the last block or tg_fr_finish sums them).
std::string stream_body(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl) {
  const size_t n = in.size(), nout = p.outputs.size();
  const int W = pl.vec;
  std::string s;
  for (size_t k = 0; k < nout; ++k) s += fmt::format("  __shared__ {} tg_ws{}[{}];\n", acc_type(p.outputs[k]), k, kThreads / 32);
  s += "  const I R = static_cast<I>(d.R);\n";
  s += fmt::format("  const I NV = R / {};  // whole vectors\n", W);
  s += "  const I T = blockDim.x * gridDim.y;\n"
       "  const I tid = threadIdx.x + blockDim.x * static_cast<I>(blockIdx.y);\n";
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] == 's') s += fmt::format("  const {} v{} = x{}[0];\n", device_type(in[m]), m, m);
  }
  for (size_t k = 0; k < nout; ++k) s += fmt::format("  {} a{} = 0;\n", acc_type(p.outputs[k]), k);
  auto load = [&](const std::string& suffix, const std::string& at) {
    std::string out;
    for (size_t m = 0; m < n; ++m) {
      if (pl.kinds[m] != 'g') continue;
      out += fmt::format("    const tg_dev::Pack<{0}, {1}> v{2}{3} = reinterpret_cast<const tg_dev::Pack<{0}, {1}>*>(x{2})[{4}];\n",
                         device_type(in[m]), W, m, suffix, at);
    }
    return out;
  };
  auto accumulate = [&](const std::string& suffix, int lanes, bool vector) {
    std::string out;
    for (int j = 0; j < lanes; ++j) {
      out += "    {\n      const tg_fused_out f = tg_fused(";
      for (size_t m = 0; m < n; ++m) {
        if (pl.kinds[m] == 's') out += fmt::format("v{}, ", m);
        else out += vector ? fmt::format("v{}{}.v[{}], ", m, suffix, j) : fmt::format("v{}{}, ", m, suffix);
      }
      out += "nullptr);\n";
      for (size_t k = 0; k < nout; ++k) {
        out += fmt::format("      a{} += static_cast<{}>(tg_dev::cv(f.o{}));\n", k, acc_type(p.outputs[k]), k);
      }
      out += "    }\n";
    }
    return out;
  };
  s += "  I i = tid;\n";
  s += fmt::format("  for (; i + {} * T < NV; i += {} * T) {{\n", kUnroll - 1, kUnroll);
  for (int u = 0; u < kUnroll; ++u) s += load(fmt::format("_{}", u), u == 0 ? "i" : fmt::format("i + {} * T", u));
  for (int u = 0; u < kUnroll; ++u) s += accumulate(fmt::format("_{}", u), W, true);
  s += "  }\n  for (; i < NV; i += T) {\n" + load("_0", "i") + accumulate("_0", W, true) + "  }\n";
  // The tail: R - NV * vec (< vec) elements, one a thread.
  s += fmt::format("  if (tid < R - NV * {}) {{\n    const I e = NV * {} + tid;\n", W, W);
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] == 'g') s += fmt::format("    const {} v{}_t = x{}[e];\n", device_type(in[m]), m, m);
  }
  s += accumulate("_t", 1, false) + "  }\n";
  // Block sums: warp shuffles, then the warps' sums in order.
  s += "  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;\n";
  for (size_t k = 0; k < nout; ++k) {
    s += fmt::format("#pragma unroll\n  for (int off = 16; off > 0; off >>= 1) a{0} += __shfl_down_sync(0xffffffffu, a{0}, off);\n", k);
    s += fmt::format("  if (lane == 0) tg_ws{0}[warp] = a{0};\n", k);
  }
  s += "  __syncthreads();\n  if (threadIdx.x == 0) {\n";
  for (size_t k = 0; k < nout; ++k) {
    const DType t = p.outputs[k];
    s += fmt::format("    {{\n      {} w = tg_ws{}[0];\n", acc_type(t), k);
    s += fmt::format("      for (unsigned j = 1; j < (blockDim.x >> 5); ++j) w += tg_ws{}[j];\n", k);
    s += fmt::format("      if (gridDim.y == 1) y{0}[0] = tg_dev::st<{1}>(static_cast<{2}>(w));\n"
                     "      else q{0}[blockIdx.y] = w;\n    }}\n",
                     k, device_type(t), compute_type(t));
  }
  s += "  }\n";
  // The last block: a partial a lane (strided), warp shuffles, the warps' sums in order.
  s += "  if (tg_cnt != nullptr && gridDim.y > 1) {  // the last block to finish sums the partials\n"
       "    __shared__ unsigned int tg_last;\n"
       "    __threadfence();\n    __syncthreads();\n"
       "    if (threadIdx.x == 0) tg_last = atomicAdd(tg_cnt, 1u) + 1u == gridDim.y;\n"
       "    __syncthreads();\n"
       "    if (tg_last) {\n      __threadfence();\n";
  for (size_t k = 0; k < nout; ++k) {
    s += fmt::format("      {} w{} = 0;\n", acc_type(p.outputs[k]), k);
    s += fmt::format("      for (unsigned j = threadIdx.x; j < gridDim.y; j += blockDim.x) w{0} += __ldcg(&q{0}[j]);\n", k);
    s += fmt::format("#pragma unroll\n      for (int off = 16; off > 0; off >>= 1) w{0} += __shfl_down_sync(0xffffffffu, w{0}, off);\n", k);
    s += fmt::format("      if (lane == 0) tg_ws{0}[warp] = w{0};\n", k);
  }
  s += "      __syncthreads();\n      if (threadIdx.x == 0) {\n";
  for (size_t k = 0; k < nout; ++k) {
    const DType t = p.outputs[k];
    s += fmt::format("        {{\n          {} w = tg_ws{}[0];\n", acc_type(t), k);
    s += fmt::format("          for (unsigned j = 1; j < (blockDim.x >> 5); ++j) w += tg_ws{}[j];\n", k);
    s += fmt::format("          y{0}[0] = tg_dev::st<{1}>(static_cast<{2}>(w));\n        }}\n", k, device_type(t), compute_type(t));
  }
  s += "        *tg_cnt = 0u;\n      }\n    }\n  }\n";
  return s;
}

/// Row and column modes' kernel body (see the top).
std::string tiled_body(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl) {
  const size_t n = in.size(), nout = p.outputs.size();
  std::string src;
  for (size_t k = 0; k < nout; ++k) {
    src += fmt::format("  __shared__ {} tg_sh{}[{}];\n", acc_type(p.outputs[k]), k, kThreads);
  }
  src += "  const I O = static_cast<I>(d.O), R = static_cast<I>(d.R);\n";
  src += fmt::format("  const I OG = O / {};  // output groups of {} consecutive outputs\n", pl.vec, pl.vec);
  src += pl.mode == 'r'
             ? "  const I rlane = threadIdx.x, rcount = blockDim.x, olane = threadIdx.y, ocount = blockDim.y;\n"
             : "  const I olane = threadIdx.x, ocount = blockDim.x, rlane = threadIdx.y, rcount = blockDim.y;\n";
  src +=
      "  const I r0 = rlane + rcount * static_cast<I>(blockIdx.y);\n"
      "  const I step = rcount * static_cast<I>(gridDim.y);\n";
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] == 's') src += fmt::format("  const {} v{} = x{}[0];\n", device_type(in[m]), m, m);
  }
  // Digits of r0 (rs<j>) and of the step (sd<j>) over the reduced dims, outermost (unbounded) first.
  for (int j = 1; j < pl.nr; ++j) src += fmt::format("  const I dr{0} = static_cast<I>(d.r[{0}]);\n", j);
  for (const char* v : {"rs", "sd"}) {
    if (pl.nr == 0) break;
    src += fmt::format("  I {}0", v);
    for (int j = 1; j < pl.nr; ++j) src += fmt::format(", {}{}", v, j);
    src += fmt::format(";\n  {{\n    I t = {};\n", v[0] == 'r' ? "r0" : "step");
    for (int j = pl.nr - 1; j >= 1; --j) src += fmt::format("    {0}{1} = t % dr{1};\n    t /= dr{1};\n", v, j);
    src += fmt::format("    {}0 = t;\n  }}\n", v);
  }
  for (int j = 1; j < pl.nk; ++j) src += fmt::format("  const I dk{0} = static_cast<I>(d.k[{0}]);\n", j);
  src += "  for (I ob = static_cast<I>(blockIdx.x) * ocount; ob < OG; ob += static_cast<I>(gridDim.x) * ocount) {\n";
  src += fmt::format("    const I og = ob + olane, o = og * {};\n", pl.vec);
  for (size_t k = 0; k < nout; ++k) {
    for (int j = 0; j < pl.vec; ++j) src += fmt::format("    {} {} = 0;\n", acc_type(p.outputs[k]), acc_name(pl, k, j));
  }
  src += "    if (og < OG) {\n";
  // Kept part of the offsets (b<m>), once per output.
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] != 's') src += fmt::format("      I b{} = 0;\n", m);
  }
  if (pl.nk > 0) {
    src += "      {\n        I t = o, c;\n";
    for (int j = pl.nk - 1; j >= 0; --j) {
      src += j > 0 ? fmt::format("        c = t % dk{0};\n        t /= dk{0};\n", j) : "        c = t;\n";
      for (size_t m = 0; m < n; ++m) {
        if (pl.kinds[m] != 's') src += fmt::format("        b{0} += c * static_cast<I>(s{0}.k[{1}]);\n", m, j);
      }
    }
    src += "      }\n";
  }
  for (size_t m = 0; m < n; ++m) {
    if (pl.kinds[m] != 'k') continue;
    if (pl.vec == 1) {
      src += fmt::format("      const {} v{} = x{}[b{}];\n", device_type(in[m]), m, m, m);
      continue;
    }
    for (int j = 0; j < pl.vec; ++j) {  // stride 1 or 0 over the outputs of a group
      src += fmt::format("      const {0} v{1}_{2} = x{1}[b{1} + {2} * static_cast<I>(s{1}.k[{3}])];\n",
                         device_type(in[m]), m, j, pl.nk - 1);
    }
  }
  for (int j = 0; j < pl.nr; ++j) src += fmt::format("      I ri{0} = rs{0};\n", j);
  // Loads of the per-element inputs at the current digits (names v<m><suffix>).
  auto loads = [&](const std::string& suffix) {
    std::string out;
    for (size_t m = 0; m < n; ++m) {
      if (pl.kinds[m] != 'g') continue;
      std::string at = fmt::format("b{}", m);
      for (int j = 0; j < pl.nr; ++j) at += fmt::format(" + ri{0} * static_cast<I>(s{1}.r[{0}])", j, m);
      if (pl.vec == 1) {
        out += fmt::format("        const {} v{}{} = x{}[{}];\n", device_type(in[m]), m, suffix, m, at);
      } else {  // the group's outputs are consecutive elements: one aligned vector load
        out += fmt::format("        const tg_dev::Pack<{0}, {1}> v{2}{3} = *reinterpret_cast<const tg_dev::Pack<{0}, {1}>*>(x{2} + ({4}));\n",
                           device_type(in[m]), pl.vec, m, suffix, at);
      }
    }
    return out;
  };
  // Evaluation of the program on those loads and accumulation.
  auto accumulate = [&](const std::string& suffix) {
    std::string out;
    for (int j = 0; j < pl.vec; ++j) {
      out += "        {\n          const tg_fused_out f = tg_fused(";
      for (size_t m = 0; m < n; ++m) {
        if (pl.vec == 1 || pl.kinds[m] == 's') {
          out += fmt::format("v{}{}, ", m, pl.kinds[m] == 'g' ? suffix : "");
        } else if (pl.kinds[m] == 'g') {
          out += fmt::format("v{}{}.v[{}], ", m, suffix, j);
        } else {
          out += fmt::format("v{}_{}, ", m, j);
        }
      }
      out += "nullptr);\n";
      for (size_t k = 0; k < nout; ++k) {
        out += fmt::format("          {} += static_cast<{}>(tg_dev::cv(f.o{}));\n", acc_name(pl, k, j),
                           acc_type(p.outputs[k]), k);
      }
      out += "        }\n";
    }
    return out;
  };
  // Advance the digits by the step (each digit + step digit + carry < 2 * dim: one subtraction).
  std::string advance;
  for (int j = pl.nr - 1; j >= 1; --j) {
    advance += fmt::format("        ri{0} += sd{0};\n        if (ri{0} >= dr{0}) {{\n          ri{0} -= dr{0};\n"
                           "          ++ri{1};\n        }}\n", j, j - 1);
  }
  if (pl.nr > 0) advance += "        ri0 += sd0;\n";
  // kUnroll elements a thread per iteration, their loads issued before any is used (memory-level
  // parallelism); the sums see the same elements in the same order as the one-at-a-time tail.
  src += "      I r = r0;\n";
  src += fmt::format("      for (; r + {0} * step < R; r += {1} * step) {{\n", kUnroll - 1, kUnroll);
  for (int u = 0; u < kUnroll; ++u) src += loads(fmt::format("_{}", u)) + advance;
  for (int u = 0; u < kUnroll; ++u) src += accumulate(fmt::format("_{}", u));
  src += "      }\n";
  src += "      for (; r < R; r += step) {\n" + loads("") + accumulate("") + advance;
  src += "      }\n    }\n";
  for (size_t k = 0; k < nout; ++k) src += block_reduce(pl, k, p.outputs[k]);
  src += "    __syncthreads();\n  }\n";
  src += last_block_finish(p);
  return src;
}

std::string reduce_source(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl) {
  const size_t nout = p.outputs.size();
  std::string args;
  const std::string params = param_list(p, in, pl, true, &args);
  const std::string kparams = param_list(p, in, pl, false, &args);
  std::string src = "#include \"elementwise.cuh\"\n\n" + std::string(nvrtc::kGridDependencySource) + p.prelude + "\n";
  src +=
      "struct tg_fr_dims { long long k[4]; long long r[4]; long long O; long long R; };\n"
      "struct tg_fr_st { long long k[4]; long long r[4]; };\n\n"
      "template <class I>\n__device__ __forceinline__ void tg_fr_body(" + params + ") {\n";
  src += (pl.mode == 's' ? stream_body(p, in, pl) : tiled_body(p, in, pl)) + "}\n\n";
  // Entry points by index type: 32-bit when the shape has < 2^31 elements.
  const std::pair<const char*, const char*> entries[] = {{"tg_fr_32", "unsigned int"}, {"tg_fr_64", "long long"}};
  // Stream mode keeps a wave of kStreamBlocksPerSm blocks resident (<= 64 registers a thread).
  const std::string bounds = pl.mode == 's' ? fmt::format("{}, {}", kThreads, kStreamBlocksPerSm) : std::to_string(kThreads);
  for (const auto& [name, index] : entries) {
    src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{ tg_grid_dependency(); tg_fr_body<{}>({}); }}\n",
                       bounds, name, kparams, index, args);
  }
  src += "\n";
  // The partials [split][O] of every output summed: blockDim (32 outputs, power-of-two split
  // lanes); a lane sums splits lane, lane + lanes, ... with kUnroll loads in flight (one
  // accumulator each), then a shared-memory tree over the lanes. Fixed order: deterministic.
  std::string fparams;
  for (size_t k = 0; k < nout; ++k) fparams += fmt::format("{}* __restrict__ y{}, ", device_type(p.outputs[k]), k);
  for (size_t k = 0; k < nout; ++k) {
    fparams += fmt::format("const {}* __restrict__ q{}, ", acc_type(p.outputs[k]), k);
  }
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) tg_fr_finish({}long long O, "
                     "long long splits) {{\n",
                     kFinishThreads, fparams);
  src += fmt::format("  __shared__ double tg_fsh[{}];\n", kFinishThreads);
  src +=
      "  const long long o = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
      "  const long long lane = threadIdx.y, lanes = blockDim.y;\n"
      "  const unsigned slot = threadIdx.y * blockDim.x + threadIdx.x;\n";
  for (size_t k = 0; k < nout; ++k) {
    const DType t = p.outputs[k];
    const char* acc = acc_type(t);
    src += fmt::format("  {{\n    {0}* sh = reinterpret_cast<{0}*>(tg_fsh);\n", acc);
    for (int u = 0; u < kUnroll; ++u) src += fmt::format("    {} w{} = 0;\n", acc, u);
    src += "    if (o < O) {\n      long long j = lane;\n";
    src += fmt::format("      for (; j + {} * lanes < splits; j += {} * lanes) {{\n", kUnroll - 1, kUnroll);
    for (int u = 0; u < kUnroll; ++u) src += fmt::format("        w{0} += q{1}[(j + {0} * lanes) * O + o];\n", u, k);
    src += fmt::format("      }}\n      for (; j < splits; j += lanes) w0 += q{}[j * O + o];\n    }}\n", k);
    static_assert(kUnroll == 4, "the combination below names four accumulators");
    src += "    sh[slot] = (w0 + w1) + (w2 + w3);\n    __syncthreads();\n";
    src +=
        "    for (unsigned h = blockDim.y >> 1; h > 0; h >>= 1) {\n"
        "      if (threadIdx.y < h) sh[slot] += sh[slot + h * blockDim.x];\n"
        "      __syncthreads();\n    }\n";
    src += fmt::format("    if (threadIdx.y == 0 && o < O) y{}[o] = tg_dev::st<{}>(static_cast<{}>(sh[threadIdx.x]));\n",
                       k, device_type(t), compute_type(t));
    src += "    __syncthreads();\n  }\n";
  }
  src += "}\n";
  return src;
}

// ---- kernel cache -------------------------------------------------------------------------------

struct Entry {
  std::shared_ptr<const nvrtc::Program> program;
  cudaKernel_t main32 = nullptr, main64 = nullptr, finish = nullptr;
};

const Entry& entry_for(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl, int device,
                       std::string_view op) {
  const DeviceContext& dc = activate(device);
  std::string key = fmt::format("{}{}|{}{}|{}|{}|{}|", dc.cc_major, dc.cc_minor, pl.mode, pl.vec, pl.nk, pl.nr, pl.kinds);
  for (DType d : in) key += dtype_name(d), key += ',';
  key += '|';
  for (DType d : p.outputs) key += dtype_name(d), key += ',';
  key += '|', key += p.key.empty() ? p.prelude : p.key;

  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::unique_ptr<Entry>>();
  {
    std::lock_guard lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) {
      nvrtc::note_use(*it->second->program);  // saved executables store the kernels they use
      return *it->second;
    }
  }
  auto e = std::make_unique<Entry>();
  e->program = nvrtc::compile(reduce_source(p, in, pl), device, op);
  e->main32 = e->program->kernel("tg_fr_32", op);
  e->main64 = e->program->kernel("tg_fr_64", op);
  e->finish = e->program->kernel("tg_fr_finish", op);
  std::lock_guard lock(mu);
  auto [it, inserted] = cache->emplace(std::move(key), std::move(e));
  return *it->second;
}

// ---- planning and launch ------------------------------------------------------------------------

/// Merged kept and reduced dims, per-input strides and kinds (see the top); O and R set.
Plan plan_reduce(const ir::FusedAttrs& a, std::span<const TensorData> inputs, std::string_view op) {
  const Shape& shape = a.shape;
  const size_t n = inputs.size();
  std::vector<std::vector<int64_t>> raw(n);
  for (size_t m = 0; m < n; ++m) raw[m] = broadcast_strides(shape, inputs[m].shape(), op);
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t ax : a.reduce_axes) reduced[static_cast<size_t>(ax)] = true;
  struct Dim {
    int64_t size;
    bool reduced;
    std::vector<int64_t> st;  ///< per input
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !dims.empty() && dims.back().reduced == reduced[d];
    for (size_t m = 0; m < n && merge; ++m) merge = dims.back().st[m] == raw[m][d] * shape[d];
    if (merge) {
      dims.back().size *= shape[d];
      for (size_t m = 0; m < n; ++m) dims.back().st[m] = raw[m][d];
      continue;
    }
    Dim x{shape[d], reduced[d], std::vector<int64_t>(n)};
    for (size_t m = 0; m < n; ++m) x.st[m] = raw[m][d];
    dims.push_back(std::move(x));
  }
  Plan pl;
  pl.strides.resize(n);
  pl.dims.O = pl.dims.R = 1;
  for (const Dim& x : dims) {
    int& count = x.reduced ? pl.nr : pl.nk;
    if (count == kMaxDims) {
      fail(ErrorCode::unsupported, op, "more than {} {} dims after merging (shape {}, reduce axes {})", kMaxDims,
           x.reduced ? "reduced" : "kept", str(shape), a.reduce_axes);
    }
    (x.reduced ? pl.dims.r : pl.dims.k)[count] = x.size;
    (x.reduced ? pl.dims.R : pl.dims.O) *= x.size;
    for (size_t m = 0; m < n; ++m) (x.reduced ? pl.strides[m].r : pl.strides[m].k)[count] = x.st[m];
    ++count;
  }
  pl.kinds.assign(n, 'g');
  for (size_t m = 0; m < n; ++m) {
    const InStrides& s = pl.strides[m];
    if (inputs[m].num_elements() == 1) {
      pl.kinds[m] = 's';
    } else if (std::all_of(s.r, s.r + kMaxDims, [](long long v) { return v == 0; })) {
      pl.kinds[m] = 'k';
    }
  }
  pl.mode = !dims.empty() && dims.back().reduced && pl.dims.R >= 32 ? 'r' : 'c';
  return pl;
}

/// Column mode: how many consecutive outputs a thread sums, so that each per-element input is read
/// with 8-byte vector loads (4 bf16/f16, 2 f32): the innermost kept dim is contiguous in every such
/// input, its size and every other stride are multiples of the width, and the buffers are aligned.
/// 1 otherwise (and in row mode).
int vector_width(const Plan& pl, std::span<const TensorData> inputs) {
  if (pl.mode != 'c' || pl.nk == 0) return 1;
  size_t widest = 0;
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (pl.kinds[m] == 'g') widest = std::max(widest, dtype_size(inputs[m].dtype()));
  }
  if (widest == 0 || widest > 4) return 1;
  const int inner = pl.nk - 1;
  for (int v = static_cast<int>(8 / widest); v > 1; v /= 2) {
    bool ok = pl.dims.k[inner] % v == 0;
    for (size_t m = 0; m < inputs.size() && ok; ++m) {
      const InStrides& st = pl.strides[m];
      if (pl.kinds[m] == 'k') ok = st.k[inner] == 0 || st.k[inner] == 1;
      if (pl.kinds[m] != 'g') continue;
      ok = st.k[inner] == 1 &&
           reinterpret_cast<uintptr_t>(inputs[m].storage_ptr()) % (v * dtype_size(inputs[m].dtype())) == 0;
      for (int j = 0; j < inner; ++j) ok = ok && st.k[j] % v == 0;
      for (int j = 0; j < pl.nr; ++j) ok = ok && st.r[j] % v == 0;
    }
    if (ok) return v;
  }
  return 1;
}

/// Stream mode (see the top) when the sum has one output group, one merged reduced dim of at
/// least kStreamedSum elements, contiguous (stride 1) in every per-element input, and every such
/// input aligned to its vector: then Plan::vec = elements of the widest per-element input in
/// kStreamBytes (at most 8). Returns whether it chose it.
bool stream_layout(Plan& pl, std::span<const TensorData> inputs) {
  if (pl.nk != 0 || pl.nr != 1 || pl.dims.R < kStreamedSum) return false;
  size_t widest = 0;
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (pl.kinds[m] == 'k') return false;
    if (pl.kinds[m] == 'g') {
      if (pl.strides[m].r[0] != 1) return false;
      widest = std::max(widest, dtype_size(inputs[m].dtype()));
    }
  }
  if (widest == 0) return false;
  const int v = static_cast<int>(std::min<size_t>(8, kStreamBytes / widest));
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (pl.kinds[m] == 'g' &&
        reinterpret_cast<uintptr_t>(inputs[m].storage_ptr()) % (v * dtype_size(inputs[m].dtype())) != 0) {
      return false;
    }
  }
  pl.mode = 's';
  pl.vec = v;
  return true;
}

/// Sets Plan::mode and Plan::vec for the inputs: stream mode where it applies, else the row or
/// column mode plan_reduce chose with vector_width's vectors.
void choose_layout(Plan& pl, std::span<const TensorData> inputs) {
  if (!stream_layout(pl, inputs)) pl.vec = vector_width(pl, inputs);
}

/// Smallest power of two >= n, at most cap (a power of two).
int pow2_ceil(int64_t n, int cap) {
  int p = 1;
  while (p < n && p < cap) p *= 2;
  return p;
}

struct Launch {
  dim3 block;
  int64_t blocks = 1;  ///< gridDim.x
  int64_t splits = 1;  ///< gridDim.y
};

/// Whether the main kernel's last block finishes split sums (few outputs: O * 32 <= kThreads, so
/// an output gets 32 or more lanes there), else tg_fr_finish does.
bool finishes_in_last_block(int64_t O, int64_t splits) { return splits > 1 && O * 32 <= kThreads; }

/// Block shape (see the top): row mode 32..256 r-lanes (>= ~16 elements each) times outputs;
/// column mode up to 32 outputs times power-of-two r-lanes. Splits of r for ~kBlocksPerSm blocks
/// per SM, a thread summing >= 16 elements, or >= kUnroll when the outputs are few enough for the
/// last block to finish them and a sum has >= kStreamedSum elements (a full sum of 2^20 floats:
/// 1024 blocks instead of 256, so enough loads are in flight to stream the input; the last
/// block's lanes then read ~4 partials each). Stream mode: 256-thread blocks along gridDim.y,
/// enough for ~kUnroll vectors a thread, at most kStreamBlocksPerSm an SM (one resident wave).
Launch launch_shape(const Plan& pl, int64_t sms) {
  Launch l;
  if (pl.mode == 's') {  // one wave of blocks (gridDim.y), a thread ~kUnroll vectors
    const int64_t vectors = pl.dims.R / pl.vec;
    l.block = dim3(kThreads, 1);
    l.splits = std::clamp<int64_t>((vectors + int64_t{kThreads} * kUnroll - 1) / (int64_t{kThreads} * kUnroll), 1,
                                   std::min<int64_t>(kStreamBlocksPerSm * sms, 65535));
    return l;
  }
  const int64_t O = pl.dims.O / pl.vec, R = pl.dims.R;  // column mode: output groups
  int rc, oc;
  if (pl.mode == 'r') {
    rc = 32;
    while (rc < kThreads && int64_t{rc} * 2 * 16 <= R) rc *= 2;
    oc = pow2_ceil(O, kThreads / rc);
    l.block = dim3(rc, oc);
  } else {
    oc = pow2_ceil(O, 32);
    rc = pow2_ceil(R, kThreads / oc);
    oc = pow2_ceil(O, kThreads / rc);
    l.block = dim3(oc, rc);
  }
  l.blocks = std::min<int64_t>((O + oc - 1) / oc, 65535LL * 32);
  if (l.blocks < kBlocksPerSm * sms) {
    const int64_t per_thread = pl.dims.O * 32 <= kThreads && R >= kStreamedSum ? kUnroll : 16;
    l.splits = std::clamp<int64_t>(std::min((kBlocksPerSm * sms + l.blocks - 1) / l.blocks, R / (rc * per_thread)), 1, 65535);
  }
  return l;
}

/// A counter of a recorded launch's last block: zero, and set back to zero by every execution,
/// so each recorded kernel node owns one for good (replays of one graph never overlap). From a
/// per-device slab of kCounters; null when the slab is used up (the launch then zeroes one in
/// its workspace, one memset node more).
constexpr size_t kCounters = 1 << 18;
unsigned int* recorded_counter(DeviceContext& dc, std::string_view op) {
  struct Slab {
    unsigned int* base = nullptr;
    size_t used = 0;
  };
  static std::mutex mu;
  static auto* slabs = new std::unordered_map<int, Slab>();
  std::lock_guard lock(mu);
  Slab& s = (*slabs)[dc.device];
  if (s.base == nullptr) {
    // A recording captures in relaxed mode, which allows the allocation; the memset runs on the
    // legacy stream, which the (non-blocking) capturing streams do not wait for.
    check(cudaMalloc(&s.base, kCounters * sizeof(unsigned int)), op, "cudaMalloc");
    check(cudaMemset(s.base, 0, kCounters * sizeof(unsigned int)), op, "cudaMemset");
    check(cudaStreamSynchronize(cudaStreamLegacy), op, "cudaStreamSynchronize");
  }
  return s.used < kCounters ? s.base + s.used++ : nullptr;
}

}  // namespace

void fused_reduce_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  const std::string_view op = ctx.op_name();
  std::vector<DType> in;
  for (const TensorData& x : ctx.inputs) in.push_back(x.dtype());
  const FusedProgramSource& prog = cached_fused_program(a, in, op);
  if (prog.uses_flag) {
    fail(ErrorCode::unsupported, op, "integer division ({}) in a fused reduction", ir::op_name(prog.flag_op));
  }
  const size_t nout = prog.outputs.size();
  for (size_t j = 0; j < a.reduce_axes.size(); ++j) {
    const int64_t ax = a.reduce_axes[j];
    if (ax < 0 || ax >= static_cast<int64_t>(a.shape.size()) || (j > 0 && ax <= a.reduce_axes[j - 1])) {
      fail(ErrorCode::internal, op, "reduce axes {} of shape {}", a.reduce_axes, str(a.shape));
    }
  }
  int64_t O = 1, R = 1;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    (std::find(a.reduce_axes.begin(), a.reduce_axes.end(), static_cast<int64_t>(d)) != a.reduce_axes.end() ? R : O) *=
        a.shape[d];
  }
  if (ctx.outputs.size() != nout) fail(ErrorCode::internal, op, "{} outputs, program has {}", ctx.outputs.size(), nout);
  size_t shared = 0;
  for (size_t k = 0; k < nout; ++k) {
    require_dtype(DTypeGroup::floating, prog.outputs[k], op);
    const TensorData& y = ctx.outputs[k];
    if (y.dtype() != prog.outputs[k] || y.num_elements() != O) {
      fail(ErrorCode::internal, op, "output {} is {}, expected {} elements of {}", k, y.type().to_string(), O,
           dtype_name(prog.outputs[k]));
    }
    shared += kThreads * acc_size(prog.outputs[k]);
  }
  if (shared > kMaxShared) fail(ErrorCode::unsupported, op, "{} sums in one fused reduction", nout);
  DeviceContext& dc = context_of(ctx);
  if (O == 0 || R == 0) {
    for (const TensorData& x : ctx.inputs) broadcast_strides(a.shape, x.shape(), op);  // raises when it does not
    if (O == 0) return;
    // Empty sums: zeros (all-zero bits in every floating dtype).
    for (TensorData& y : ctx.outputs) {
      check(cudaMemsetAsync(y.storage_ptr(), 0, y.nbytes(), stream_of(ctx)), op, "cudaMemsetAsync");
    }
    return;
  }
  Plan pl = plan_reduce(a, ctx.inputs, op);  // checks broadcasting
  choose_layout(pl, ctx.inputs);
  const Entry& e = entry_for(prog, in, pl, ctx.device.index, op);

  const Launch l = launch_shape(pl, dc.sm_count > 0 ? dc.sm_count : 132);
  const int64_t splits = l.splits;

  // Split sums of few outputs are finished by the main kernel's last block (one kernel), others by
  // tg_fr_finish.
  const bool last_block = finishes_in_last_block(O, splits);
  // Partials [splits][O] per output, 256-byte aligned, in the run's workspace (and the last
  // block's counter, unless a recorded launch gets its own).
  std::vector<void*> q(nout, nullptr);
  unsigned int* counter = nullptr;
  if (last_block) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream_of(ctx), &capturing), op, "cudaStreamIsCapturing");
    if (capturing == cudaStreamCaptureStatusActive) counter = recorded_counter(dc, op);
  }
  if (splits > 1) {
    std::vector<size_t> offset(nout);
    size_t bytes = 0;
    for (size_t k = 0; k < nout; ++k) {
      offset[k] = bytes;
      bytes += (static_cast<size_t>(splits * O) * acc_size(prog.outputs[k]) + 255) / 256 * 256;
    }
    const bool own_counter = last_block && counter == nullptr;
    char* scratch = static_cast<char*>(workspace_of(ctx, bytes + (own_counter ? 256 : 0)));
    for (size_t k = 0; k < nout; ++k) q[k] = scratch + offset[k];
    if (own_counter) {
      counter = reinterpret_cast<unsigned int*>(scratch + bytes);
      check(cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream_of(ctx)), op, "cudaMemsetAsync");
    }
  }

  // Arguments in param_list's order.
  std::vector<void*> ptrs;
  for (TensorData& y : ctx.outputs) ptrs.push_back(y.storage_ptr());
  for (void* p : q) ptrs.push_back(p);
  for (const TensorData& x : ctx.inputs) ptrs.push_back(const_cast<void*>(x.storage_ptr()));
  std::vector<void*> args;
  for (void*& p : ptrs) args.push_back(&p);
  for (size_t m = 0; m < in.size(); ++m) {
    if (pl.kinds[m] != 's') args.push_back(&pl.strides[m]);
  }
  args.push_back(&pl.dims);
  args.push_back(&counter);
  const bool small = O * R < (int64_t{1} << 31);
  nvrtc::launch(small ? e.main32 : e.main64, dim3(static_cast<unsigned>(l.blocks), static_cast<unsigned>(splits)),
                l.block, args.data(), stream_of(ctx), op, 0, true);
  if (splits > 1 && !last_block) {
    std::vector<void*> fargs;
    for (size_t k = 0; k < nout; ++k) fargs.push_back(&ptrs[k]);
    for (size_t k = 0; k < nout; ++k) fargs.push_back(&ptrs[nout + k]);
    long long o_arg = O, s_arg = splits;
    fargs.push_back(&o_arg);
    fargs.push_back(&s_arg);
    const int lanes = pow2_ceil(splits, kFinishThreads / 32);
    nvrtc::launch(e.finish, dim3(static_cast<unsigned>((O + 31) / 32)), dim3(32, lanes), fargs.data(), stream_of(ctx), op);
  }
}

}  // namespace tg::cuda
