// CUDA kernel of row programs (ir/fused_rows.h: fused_elementwise programs with reduce_sum /
// reduce_max steps over the last axis, made by passes/fuse_rows.cpp) in one generated kernel
// (NVRTC); fused.cpp sends such programs here.
//
// Mapping: TPR threads a row (a power of two, 32..1024: the smallest with TPR * 4 >= N, capped),
// RPB = max(1, 128 / TPR) rows a block; lane l holds the row's elements j = k * TPR + l for
// k < ceil(N / TPR) in registers, so a full value is an array of E registers and a row value one
// register. E is a bucket, not ceil(N / TPR): 4, or 8 for rows over 4096 elements; N is a kernel
// argument. So one kernel serves every row length of its TPR (all rows of 1..128 elements share
// one): a program whose row length is a symbol (compile once, runtime/specialize.cpp) compiles
// nothing when a new length comes. Which lane holds which element depends on TPR only, so the
// results do not depend on E. Loads are coalesced (consecutive lanes, consecutive
// elements); lanes past N load the row's first element (never used). A reduction step: each lane
// combines its elements in k order, a warp xor-butterfly (every lane gets the same bits), then,
// when TPR > 32, the warps' partials through shared memory (one array per reduction step, so one
// __syncthreads each) combined in warp order by every thread: deterministic. Sums accumulate as
// reduce_sum (f32/f64 in double, f16/bf16 in float) and round once to the step's dtype; max is
// exact in the compute type and propagates NaN (the CPU's combine). Every thread of a block runs
// every step (rows past the end compute on row 0's data and store nothing), so the barriers are
// uniform. Elementwise steps use the single-op expressions (elementwise_ops.h): values round as
// the unfused ops'.
//
// Host planning: per input, element strides over the leading dims (size-1 dims dropped, adjacent
// dims merged when every input allows; at most 4 merged dims), and a kind: 's' one element, 'r' a
// row value (last dim 1: loaded once a row), 'f' full (last dim N: contiguous along the row).
// Outputs are contiguous [rows, N] (a row value is stored along its row). Zero rows launch
// nothing. As the elementwise kernels, nothing is written when the run's write guard is set
// (RunServices::write_guard; the whole grid returns at once, so barriers stay uniform). Each
// element of an input of the output's shape is read by the thread that writes it, before it
// writes: an output may take an input's buffer (in place).
// Limits (tg::Error(unsupported)): N <= ir::kMaxFusedRowLength, 4 merged leading dims, no integer
// division steps (the pass never makes them).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/elementwise_ops.h"
#include "backends/cuda/fused_program.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/error_util.h"
#include "ir/fused_rows.h"

namespace tg::cuda {
namespace {

constexpr int kRowDims = 4;
constexpr int kRowBlock = 128;  // threads a block when rows are short (several rows a block)

/// Mirrors of tg_rw_dims and tg_rw_st of the generated source, passed by value.
struct RowDims {
  long long k[kRowDims] = {};  ///< merged leading dims, outermost first
  long long rows = 0;
  long long n = 0;  ///< row length
};
struct RowStrides {
  long long k[kRowDims] = {};
};

struct RowPlan {
  std::string kinds;  ///< per input: 's' scalar, 'r' row value, 'f' full
  int nk = 0;
  RowDims dims;
  std::vector<RowStrides> strides;  ///< per input
  int64_t n = 0;                    ///< row length
  int tpr = 32, e = 4, rpb = 1;     ///< threads a row, elements a thread (bucket), rows a block
};

bool is_reduction(ir::OpKind k) { return k == ir::OpKind::reduce_sum || k == ir::OpKind::reduce_max; }
bool half_type(DType d) { return d == DType::f16 || d == DType::bf16; }
const char* sum_type(DType d) { return half_type(d) ? "float" : "double"; }
const char* compute_name(DType d) { return d == DType::f64 ? "double" : "float"; }

/// Threads a row, elements a thread (the bucket, see the top) and rows a block for rows of n
/// elements.
void choose_mapping(RowPlan& pl) {
  pl.tpr = 32;
  while (pl.tpr < 1024 && int64_t{pl.tpr} * 4 < pl.n) pl.tpr *= 2;
  pl.e = pl.n <= int64_t{pl.tpr} * 4 ? 4 : 8;
  pl.rpb = std::max(1, kRowBlock / pl.tpr);
  pl.dims.n = pl.n;
}

/// Merged leading dims, per-input strides and kinds (see the top).
RowPlan plan_rows(const ir::FusedAttrs& a, std::span<const TensorData> inputs, std::string_view op) {
  const Shape& shape = a.shape;
  if (shape.empty()) fail(ErrorCode::internal, op, "a row program needs rank >= 1");
  const size_t n = inputs.size();
  std::vector<std::vector<int64_t>> raw(n);
  for (size_t m = 0; m < n; ++m) raw[m] = broadcast_strides(shape, inputs[m].shape(), op);
  RowPlan pl;
  pl.n = shape.back();
  pl.strides.resize(n);
  pl.dims.rows = 1;
  struct Dim {
    int64_t size;
    std::vector<int64_t> st;
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t m = 0; m < n && merge; ++m) merge = dims.back().st[m] == raw[m][d] * shape[d];
    if (merge) {
      dims.back().size *= shape[d];
      for (size_t m = 0; m < n; ++m) dims.back().st[m] = raw[m][d];
      continue;
    }
    Dim x{shape[d], std::vector<int64_t>(n)};
    for (size_t m = 0; m < n; ++m) x.st[m] = raw[m][d];
    dims.push_back(std::move(x));
  }
  if (dims.size() > kRowDims) {
    fail(ErrorCode::unsupported, op, "more than {} leading dims after merging (shape {})", kRowDims, str(shape));
  }
  for (const Dim& x : dims) {
    pl.dims.k[pl.nk] = x.size;
    pl.dims.rows *= x.size;
    for (size_t m = 0; m < n; ++m) pl.strides[m].k[pl.nk] = x.st[m];
    ++pl.nk;
  }
  pl.kinds.assign(n, 'f');
  for (size_t m = 0; m < n; ++m) {
    if (inputs[m].num_elements() == 1) pl.kinds[m] = 's';
    else if (raw[m].back() == 0 || pl.n == 1) pl.kinds[m] = 'r';
  }
  choose_mapping(pl);
  return pl;
}

/// The kernel source: one entry point tg_rows (see the top). `full` from ir::row_value_varies.
std::string rows_source(const ir::FusedAttrs& a, std::span<const DType> in, const std::vector<DType>& outs,
                        const std::vector<bool>& full, const RowPlan& pl, std::string_view op) {
  const size_t n_in = in.size();
  const int block = pl.tpr * pl.rpb, warps = pl.tpr / 32;
  std::string params;
  auto param = [&](const std::string& p) { params += (params.empty() ? "" : ", ") + p; };
  for (size_t k = 0; k < outs.size(); ++k) param(fmt::format("{}* __restrict__ y{}", device_type(outs[k]), k));
  for (size_t m = 0; m < n_in; ++m) param(fmt::format("const {}* __restrict__ x{}", device_type(in[m]), m));
  for (size_t m = 0; m < n_in; ++m) {
    if (pl.kinds[m] != 's') param(fmt::format("const tg_rw_st s{}", m));
  }
  param("const tg_rw_dims d");
  param("const unsigned long long* guard");
  std::string src = "#include \"elementwise.cuh\"\n\n";
  src += "struct tg_rw_dims { long long k[4]; long long rows; long long n; };\nstruct tg_rw_st { long long k[4]; };\n\n";
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) tg_rows({}) {{\n", block, params);
  src += "  if (guard != nullptr && *guard != 0ULL) return;\n";
  src += fmt::format("  constexpr int TPR = {}, E = {};\n  const long long N = d.n;\n", pl.tpr, pl.e);
  src += fmt::format("  const int lane = threadIdx.x % TPR, sub = threadIdx.x / TPR;\n");
  src += fmt::format("  const long long row = static_cast<long long>(blockIdx.x) * {} + sub;\n", pl.rpb);
  src += "  const bool live = row < d.rows;\n";
  // Row offsets of the inputs (row 0's for rows past the end).
  for (size_t m = 0; m < n_in; ++m) {
    if (pl.kinds[m] != 's') src += fmt::format("  long long b{} = 0;\n", m);
  }
  if (pl.nk > 0) {
    src += "  {\n    long long t = live ? row : 0, c;\n";
    for (int j = pl.nk - 1; j >= 0; --j) {
      src += j > 0 ? fmt::format("    c = t % d.k[{0}];\n    t /= d.k[{0}];\n", j) : "    c = t;\n";
      for (size_t m = 0; m < n_in; ++m) {
        if (pl.kinds[m] != 's') src += fmt::format("    b{0} += c * s{0}.k[{1}];\n", m, j);
      }
    }
    src += "  }\n";
  }
  std::vector<std::string> name;  // per value: "v3" or "t7" (arrays indexed [k] when full)
  std::vector<DType> dtype(in.begin(), in.end());
  auto at = [&](size_t v) { return full[v] ? name[v] + "[k]" : name[v]; };
  for (size_t m = 0; m < n_in; ++m) {
    name.push_back(fmt::format("v{}", m));
    const char* t = device_type(in[m]);
    if (pl.kinds[m] == 's') {
      src += fmt::format("  const {} v{} = x{}[0];\n", t, m, m);
    } else if (!full[m]) {
      src += fmt::format("  const {} v{} = x{}[b{}];\n", t, m, m, m);
    } else {
      src += fmt::format("  {0} v{1}[E];\n#pragma unroll\n  for (int k = 0; k < E; ++k) {{\n"
                         "    const long long j = static_cast<long long>(k) * TPR + lane;\n"
                         "    v{1}[k] = x{1}[b{1} + (j < N ? j : 0)];\n  }}\n",
                         t, m);
    }
  }
  const std::string valid = "static_cast<long long>(k) * TPR + lane < N";
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const ir::FusedStep& st = a.steps[s];
    const size_t v = n_in + s;
    const std::string tv = fmt::format("t{}", v);
    const char* t = device_type(st.dtype);
    name.push_back(tv);
    dtype.push_back(st.dtype);
    if (is_reduction(st.kind)) {
      const size_t x = static_cast<size_t>(st.args.at(0));
      const bool sum = st.kind == ir::OpKind::reduce_sum;
      const std::string acc = sum ? sum_type(st.dtype) : compute_name(st.dtype);
      const std::string combine =
          sum ? "a{0} += b;" : "a{0} = (b > a{0} || b != b) ? b : a{0};";  // NaN wins, as the CPU's max
      auto comb = [&](const std::string& b) {
        return fmt::format("{{ const {} b = {}; {} }}", acc, b, fmt::format(fmt::runtime(combine), v));
      };
      src += fmt::format("  {} a{} = {};\n", acc, v, sum ? "0" : fmt::format("static_cast<{}>(-__uint_as_float(0x7f800000u))", acc));
      src += "#pragma unroll\n  for (int k = 0; k < E; ++k) {\n";
      src += fmt::format("    if ({}) {}\n  }}\n", valid,
                         comb(fmt::format("static_cast<{}>(tg_dev::cv({}))", acc, at(x))));
      src += "#pragma unroll\n  for (int o = 16; o > 0; o >>= 1) " +
             comb(fmt::format("__shfl_xor_sync(0xffffffffu, a{}, o)", v)) + "\n";
      if (warps > 1) {
        src += fmt::format("  __shared__ {} sh{}[{}];\n", acc, v, warps * pl.rpb);
        src += fmt::format("  if ((lane & 31) == 0) sh{0}[sub * {1} + (lane >> 5)] = a{0};\n  __syncthreads();\n", v, warps);
        src += fmt::format("  a{0} = sh{0}[sub * {1}];\n  for (int w = 1; w < {1}; ++w) {2}\n", v, warps,
                           comb(fmt::format("sh{}[sub * {} + w]", v, warps)));
      } else if (!sum) {
        src += fmt::format("  a{0} = __shfl_sync(0xffffffffu, a{0}, 0);  // one sign of zero a row\n", v);
      }
      src += fmt::format("  const {} {} = tg_dev::st<{}>(static_cast<{}>(a{}));\n", t, tv, t, compute_name(st.dtype), v);
      continue;
    }
    std::vector<DType> arg_types;
    std::vector<std::string> args;
    for (int x : st.args) {
      arg_types.push_back(dtype.at(static_cast<size_t>(x)));
      args.push_back(at(static_cast<size_t>(x)));
    }
    bool flag = false;
    const std::string e = elementwise_expression(st.kind, arg_types, st.dtype, args, ir::op_name(st.kind), &flag);
    if (e.empty()) fail(ErrorCode::internal, op, "step {} is not elementwise or a row reduction", ir::op_name(st.kind));
    if (flag) fail(ErrorCode::unsupported, op, "integer division ({}) in a row program", ir::op_name(st.kind));
    if (full[v]) {
      src += fmt::format("  {} {}[E];\n#pragma unroll\n  for (int k = 0; k < E; ++k) {}[k] = {};\n", t, tv, tv, e);
    } else {
      src += fmt::format("  const {} {} = {};\n", t, tv, e);
    }
  }
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    src += fmt::format("  if (live) {{\n#pragma unroll\n    for (int k = 0; k < E; ++k) {{\n"
                       "      if ({}) y{}[row * N + static_cast<long long>(k) * TPR + lane] = {};\n    }}\n  }}\n",
                       valid, k, at(static_cast<size_t>(a.outputs[k])));
  }
  src += "}\n";
  return src;
}

struct RowEntry {
  std::shared_ptr<const nvrtc::Program> program;
  cudaKernel_t kernel = nullptr;
};

const RowEntry& row_entry(const ir::FusedAttrs& a, std::span<const DType> in, const std::vector<DType>& outs,
                          const std::vector<bool>& full, const RowPlan& pl, int device, std::string_view op) {
  const DeviceContext& dc = activate(device);
  ir::FusedAttrs program = a;
  program.shape.clear();  // the source does not depend on the sizes (N is an argument)
  std::string key = fmt::format("{}{}|{}|{}|{}|{}|{}|{}|", dc.cc_major, dc.cc_minor, pl.kinds, pl.nk, pl.e, pl.tpr,
                                pl.rpb, ir::attrs_to_string(program));
  for (DType d : in) key += dtype_name(d), key += ',';
  for (bool f : full) key += f ? 'f' : 'r';
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::unique_ptr<RowEntry>>();
  {
    std::lock_guard lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) {
      nvrtc::note_use(*it->second->program);  // saved executables store the kernels they use
      return *it->second;
    }
  }
  auto e = std::make_unique<RowEntry>();
  e->program = nvrtc::compile(rows_source(a, in, outs, full, pl, op), device, op);
  e->kernel = e->program->kernel("tg_rows", op);
  std::lock_guard lock(mu);
  auto [it, inserted] = cache->emplace(std::move(key), std::move(e));
  return *it->second;
}

}  // namespace

void fused_rows_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  const std::string_view op = ctx.op_name();
  if (a.shape.empty() || a.shape.back() > ir::kMaxFusedRowLength) {
    fail(ErrorCode::unsupported, op, "row program of shape {}: rows of at most {} elements", str(a.shape),
         ir::kMaxFusedRowLength);
  }
  std::vector<DType> in;
  std::vector<Shape> shapes;
  for (const TensorData& x : ctx.inputs) {
    in.push_back(x.dtype());
    shapes.push_back(x.shape());
  }
  const std::vector<bool> full = ir::row_value_varies(a, shapes);
  std::vector<DType> outs;
  for (int v : a.outputs) {
    const auto i = static_cast<size_t>(v);
    outs.push_back(i < in.size() ? in[i] : a.steps.at(i - in.size()).dtype);
  }
  if (ctx.outputs.size() != outs.size()) {
    fail(ErrorCode::internal, op, "{} outputs, program has {}", ctx.outputs.size(), outs.size());
  }
  const int64_t total = num_elements(a.shape);
  for (size_t k = 0; k < outs.size(); ++k) {
    if (ctx.outputs[k].dtype() != outs[k] || ctx.outputs[k].num_elements() != total) {
      fail(ErrorCode::internal, op, "output {} is {}, expected {} elements of {}", k, ctx.outputs[k].type().to_string(),
           total, dtype_name(outs[k]));
    }
  }
  RowPlan pl = plan_rows(a, ctx.inputs, op);  // checks broadcasting
  if (total == 0) return;
  const RowEntry& e = row_entry(a, in, outs, full, pl, ctx.device.index, op);
  std::vector<void*> ptrs;
  for (TensorData& y : ctx.outputs) ptrs.push_back(y.storage_ptr());
  for (const TensorData& x : ctx.inputs) ptrs.push_back(const_cast<void*>(x.storage_ptr()));
  std::vector<void*> args;
  for (void*& p : ptrs) args.push_back(&p);
  for (size_t m = 0; m < in.size(); ++m) {
    if (pl.kinds[m] != 's') args.push_back(&pl.strides[m]);
  }
  args.push_back(&pl.dims);
  const void* guard = ctx.run != nullptr ? ctx.run->write_guard() : nullptr;
  args.push_back(&guard);
  const int64_t blocks = (pl.dims.rows + pl.rpb - 1) / pl.rpb;
  if (blocks > 0x7fffffff) fail(ErrorCode::unsupported, op, "{} rows", pl.dims.rows);
  nvrtc::launch(e.kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(pl.tpr * pl.rpb)), args.data(),
                stream_of(ctx), op);
}

}  // namespace tg::cuda
