// First-run kernels: programs, compilation and launches (first_run.h, device/gemm.cuh).
#include "backends/cuda/first_run.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "backends/cuda/context.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda::first_run {
namespace {

static_assert(sizeof(GemmArgs) == 24 * sizeof(long long), "GemmArgs mirrors tg_dev::GemmArgs");
static_assert(sizeof(ConvArgs) == 32 * sizeof(long long), "ConvArgs mirrors tg_dev::ConvArgs");

const char* storage_type(DType dt) {
  switch (dt) {
    case DType::f16: return "tg_dev::f16";
    case DType::bf16: return "tg_dev::bf16";
    default: return "float";
  }
}

// The program of one family: `kernel` instantiates tg_dev::`body`<T, R>, `kernel`_reduce
// tg_dev::`body`_reduce<T> (the split-K reduction; `extra` its parameters after the arguments).
std::string source(const char* kernel, const char* body, const char* args, const char* extra, const char* extra_names,
                   DType dt, Round r) {
  const char* t = storage_type(dt);
  return fmt::format(
      "#include \"gemm.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__(256) {0}(const {1} * __restrict__ p0, const {1} * __restrict__ p1, "
      "{1} * __restrict__ p2, float * __restrict__ ws, tg_dev::{2} g) {{\n"
      "  tg_dev::{3}<{1}, {4}>(p0, p1, p2, ws, g);\n"
      "}}\n"
      "extern \"C\" __global__ void __launch_bounds__(256) {0}_reduce(const float * __restrict__ ws, "
      "{1} * __restrict__ p2, tg_dev::{2} g{5}) {{\n"
      "  tg_dev::{3}_reduce<{1}>(ws, p2, g{6});\n"
      "}}\n",
      kernel, t, args, body, static_cast<int>(r), extra, extra_names);
}

enum class Family { matmul, conv2d };

// The loaded program of (family, device, dt, r), compiled once per process (and reported to the
// code sink on every call, as the other families' caches do).
std::shared_ptr<const nvrtc::Program> program_of(Family f, int device, DType dt, Round r, const char* op) {
  static std::mutex mu;
  static auto* cache = new std::map<std::tuple<int, int, int, int>, std::shared_ptr<const nvrtc::Program>>();
  const auto key = std::make_tuple(static_cast<int>(f), device, static_cast<int>(dt), static_cast<int>(r));
  std::shared_ptr<const nvrtc::Program> program;
  {
    std::lock_guard lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) program = it->second;
  }
  if (program) {
    nvrtc::note_use(*program);  // saved executables store the kernels they use
    return program;
  }
  phases::Scope timed("first_run_program");
  program = nvrtc::compile(f == Family::matmul ? matmul_source(dt, r) : conv2d_source(dt, r), device, op);
  std::lock_guard lock(mu);
  cache->emplace(key, program);
  return program;
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

bool enabled(bool asked) {
  return env::first_run_kernels_override().value_or(asked);
}

bool rounding_of(DType dt, ComputePrecision precision, Round* r) {
  switch (dt) {
    case DType::f16:
    case DType::bf16: *r = Round::none; return true;
    case DType::f32:
      *r = precision == ComputePrecision::bf16  ? Round::bf16
           : precision == ComputePrecision::f16 ? Round::f16
                                                : Round::none;  // f32 and tf32: f32 products
      return true;
    default: return false;
  }
}

std::string matmul_source(DType dt, Round r) {
  return source("tg_first_run_matmul", "gemm_matmul", "GemmArgs", ", long long batches", ", batches", dt, r);
}
std::string conv2d_source(DType dt, Round r) {
  return source("tg_first_run_conv2d", "gemm_conv2d", "ConvArgs", "", "", dt, r);
}

namespace {

// Tiles and split of an M x N x K problem with `count` batches or groups; the workspace bytes.
size_t plan_split(long long m, long long n, long long k, long long count, long long* tiles_m, long long* tiles_n,
                  long long* splits, long long* k_chunk) {
  *tiles_m = ceil_div(m, 64);
  *tiles_n = ceil_div(n, 64);
  const long long tiles = count * *tiles_m * *tiles_n;
  long long s = 1;
  if (tiles < 256 && k >= 256) s = std::min<long long>({16, ceil_div(256, tiles), k / 128});
  *k_chunk = s > 1 ? ceil_div(ceil_div(k, s), 16) * 16 : k;
  *splits = s > 1 ? ceil_div(k, *k_chunk) : 1;
  return *splits > 1 ? static_cast<size_t>(count * *splits * m * n) * sizeof(float) : 0;
}

}  // namespace

size_t plan(GemmArgs& g, long long batches) {
  return plan_split(g.m, g.n, g.k, batches, &g.tiles_m, &g.tiles_n, &g.splits, &g.k_chunk);
}

size_t plan(ConvArgs& g) {
  return plan_split(g.n * g.oh * g.ow, g.o / g.groups, g.kh * g.kw * (g.c / g.groups), g.groups, &g.tiles_m,
                    &g.tiles_n, &g.splits, &g.k_chunk);
}

long long blocks(const GemmArgs& g, long long batches) { return batches * g.splits * g.tiles_m * g.tiles_n; }
long long blocks(const ConvArgs& g) { return g.groups * g.splits * g.tiles_m * g.tiles_n; }
long long reduce_blocks(const GemmArgs& g, long long batches) { return ceil_div(batches * g.m * g.n, 256); }
long long reduce_blocks(const ConvArgs& g) { return ceil_div(g.n * g.oh * g.ow * g.o, 256); }

ConvArgs conv_args(const ops::ConvGeometry& g, Layout data, Layout weights) {
  ConvArgs a{};
  a.n = g.x.n, a.c = g.x.c, a.h = g.x.h, a.w = g.x.w;
  a.o = g.w.o, a.kh = g.w.kh, a.kw = g.w.kw, a.oh = g.y.h, a.ow = g.y.w, a.groups = g.groups;
  a.stride_h = g.stride_h, a.stride_w = g.stride_w, a.pad_top = g.pad_top, a.pad_left = g.pad_left;
  a.dil_h = g.dilation_h, a.dil_w = g.dilation_w;
  const std::array<int64_t, 4> xs = ops::data_strides(g.x, data), ys = ops::data_strides(g.y, data),
                               ws = ops::weight_strides(g.w, weights);
  for (int i = 0; i < 4; ++i) a.xs[i] = xs[i], a.ys[i] = ys[i], a.ws[i] = ws[i];
  return a;
}

void prepare_matmul(int device, DType dt, Round r, const char* op) { program_of(Family::matmul, device, dt, r, op); }
void prepare_conv2d(int device, DType dt, Round r, const char* op) { program_of(Family::conv2d, device, dt, r, op); }

namespace {

void launch(const nvrtc::Program& program, const char* name, long long nblocks, void** params, cudaStream_t stream,
            const char* op) {
  if (nblocks <= 0) return;
  if (nblocks > INT32_MAX) fail(ErrorCode::unsupported, op, "first-run kernel: {} blocks exceed the grid", nblocks);
  nvrtc::launch(program.kernel(name, op), dim3(static_cast<unsigned>(nblocks)), dim3(256), params, stream, op);
}

}  // namespace

void launch_matmul(int device, DType dt, Round r, const void* a, const void* b, void* c, const GemmArgs& g,
                   long long batches, void* workspace, cudaStream_t stream, const char* op) {
  const std::shared_ptr<const nvrtc::Program> p = program_of(Family::matmul, device, dt, r, op);
  GemmArgs args = g;
  auto* ws = static_cast<float*>(workspace);
  void* main_params[] = {&a, &b, &c, &ws, &args};
  launch(*p, "tg_first_run_matmul", blocks(g, batches), main_params, stream, op);
  if (g.splits <= 1) return;
  void* reduce_params[] = {&ws, &c, &args, &batches};
  launch(*p, "tg_first_run_matmul_reduce", reduce_blocks(g, batches), reduce_params, stream, op);
}

void launch_conv2d(int device, DType dt, Round r, const void* x, const void* w, void* y, const ConvArgs& g,
                   void* workspace, cudaStream_t stream, const char* op) {
  const std::shared_ptr<const nvrtc::Program> p = program_of(Family::conv2d, device, dt, r, op);
  ConvArgs args = g;
  auto* ws = static_cast<float*>(workspace);
  void* main_params[] = {&x, &w, &y, &ws, &args};
  launch(*p, "tg_first_run_conv2d", blocks(g), main_params, stream, op);
  if (g.splits <= 1) return;
  void* reduce_params[] = {&ws, &y, &args};
  launch(*p, "tg_first_run_conv2d_reduce", reduce_blocks(g), reduce_params, stream, op);
}

}  // namespace tg::cuda::first_run
