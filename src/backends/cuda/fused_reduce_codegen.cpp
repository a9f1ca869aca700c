// Source generation of the CUDA backend's fused_reduce kernels (see fused_reduce.cpp's top for
// the semantics, the plan's modes and the launch shape the generated code assumes).
#include <fmt/format.h>

#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/fused_reduce_plan.h"
#include "backends/cuda/nvrtc/compiler.h"

namespace tg::cuda::fr {
namespace {

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

}  // namespace

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

}  // namespace tg::cuda::fr
