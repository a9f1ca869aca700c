// Generated elementwise kernels: source generation, broadcast planning and launch (see
// elementwise_codegen.h).
#include "backends/cuda/elementwise_codegen.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <numeric>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;  // tg_dev::kMaxRank

/// Mirror of tg_dev::Strided (device/common.cuh), passed by value as a kernel parameter.
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

// ---- source generation ----------------------------------------------------------------------------

/// True for inputs read through strides: 'b' (innermost merged stride 0), 'r' (stride 1) and 'h'
/// (stride 1, every other stride 0: a per-channel vector along the rows, loaded once per thread
/// by the vectorized kernel, whose grid keeps each thread on the same columns).
bool strided_kind(char k) { return k == 'b' || k == 'r' || k == 'h'; }
bool has_strided(std::string_view kinds) { return kinds.find_first_of("brh") != std::string_view::npos; }

/// Pack width of the vectorized kernels: 16 bytes of the widest operand read or written as packs
/// (outputs and the inputs of the kinds in `packed`).
int vec_width(const ElementwiseSpec& s, std::string_view kinds, std::string_view packed) {
  int vec = 16;
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (packed.find(kinds[m]) != std::string_view::npos) vec = std::min(vec, 16 / static_cast<int>(dtype_size(s.inputs[m])));
  }
  for (DType d : s.outputs) vec = std::min(vec, 16 / static_cast<int>(dtype_size(d)));
  return vec;
}

/// Parameter list shared by every entry point: outputs, inputs, Strided per broadcast input, n,
/// flag, guard, p0..: "OUT0* __restrict__ y0, ..."; `args` receives the names.
std::string param_list(const ElementwiseSpec& s, std::string_view kinds, std::string* args) {
  std::string p, a;
  auto add = [&](const std::string& decl, const std::string& name) {
    if (!p.empty()) {
      p += ", ";
      a += ", ";
    }
    p += decl;
    a += name;
  };
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    add(fmt::format("{}* __restrict__ y{}", device_type(s.outputs[j]), j), fmt::format("y{}", j));
  }
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    add(fmt::format("const {}* __restrict__ x{}", device_type(s.inputs[m]), m), fmt::format("x{}", m));
  }
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (strided_kind(kinds[m])) add(fmt::format("const tg_dev::Strided& s{}", m), fmt::format("s{}", m));
  }
  add("long long n_", "n_");
  add("int* flag", "flag");
  add("const unsigned long long* guard", "guard");
  for (int k = 0; k < s.num_params; ++k) add(fmt::format("long long p{}", k), fmt::format("p{}", k));
  *args = a;
  return p;
}

/// The write guard (RunServices::write_guard: outputs that are variables' buffers are not written
/// when a check earlier in the run failed), declarations silencing unused-parameter warnings, and
/// scalar inputs loaded once.
std::string prologue(const ElementwiseSpec& s, std::string_view kinds) {
  std::string out = "  if (guard != nullptr && *guard != 0ULL) return;\n  (void)flag;\n";
  for (int k = 0; k < s.num_params; ++k) out += fmt::format("  (void)p{};\n", k);
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (kinds[m] == 's') out += fmt::format("  const {} v{} = x{}[0];\n", device_type(s.inputs[m]), m, m);
  }
  return out;
}

std::string contiguous_source(const ElementwiseSpec& s, std::string_view kinds) {
  std::string args;
  const std::string params = param_list(s, kinds, &args);
  std::string src = "#include \"elementwise.cuh\"\n\n" + std::string(nvrtc::kGridDependencySource) + s.prelude + "\n";
  src += "template <int VEC>\n__device__ __forceinline__ void tg_body(" + params + ") {\n";
  src += prologue(s, kinds);
  src +=
      "  const long long n = n_;\n"
      "  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;\n"
      "  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
      "  const long long npack = n / VEC;\n"
      "  for (long long pk = tid; pk < npack; pk += stride) {\n";
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (kinds[m] != 'c') continue;
    const char* t = device_type(s.inputs[m]);
    src += fmt::format("    const tg_dev::Pack<{0}, VEC> q{1} = reinterpret_cast<const tg_dev::Pack<{0}, VEC>*>(x{1})[pk];\n",
                       t, m);
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    src += fmt::format("    tg_dev::Pack<{}, VEC> r{};\n", device_type(s.outputs[j]), j);
  }
  src +=
      "#pragma unroll\n"
      "    for (int j = 0; j < VEC; ++j) {\n"
      "      const long long i = pk * VEC + j;\n"
      "      (void)i;\n";
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (kinds[m] == 'c') src += fmt::format("      const {} v{} = q{}.v[j];\n", device_type(s.inputs[m]), m, m);
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) src += fmt::format("      r{}.v[j] = ({});\n", j, s.exprs[j]);
  src += "    }\n";
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    src += fmt::format("    reinterpret_cast<tg_dev::Pack<{0}, VEC>*>(y{1})[pk] = r{1};\n", device_type(s.outputs[j]), j);
  }
  src += "  }\n  for (long long i = npack * VEC + tid; i < n; i += stride) {\n";
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (kinds[m] == 'c') src += fmt::format("    const {} v{} = x{}[i];\n", device_type(s.inputs[m]), m, m);
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) src += fmt::format("    y{}[i] = ({});\n", j, s.exprs[j]);
  src += "  }\n}\n\n";
  // Entry points: kernel parameters by value (Strided is never used here).
  std::string kparams = params;
  const int vec = vec_width(s, kinds, "c");
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) tg_ew_vec({}) {{ tg_grid_dependency(); tg_body<{}>({}); }}\n",
                     kThreads, kparams, vec, args);
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) tg_ew_1({}) {{ tg_grid_dependency(); tg_body<1>({}); }}\n",
                     kThreads, kparams, args);
  return src;
}

/// Code computing the offsets o<m> of the strided inputs for flat output index `index` (type I).
/// Only inputs of the kinds in `which`; empty when there are none.
std::string offsets_code(const ElementwiseSpec& s, std::string_view kinds, std::string_view index,
                         std::string_view which = "brh") {
  size_t first = 0;
  while (first < kinds.size() && which.find(kinds[first]) == std::string_view::npos) ++first;
  if (first == kinds.size()) return "";
  // The multi-index over the merged dims, innermost first; no division for the outermost dim.
  std::string offs, accum, last;
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (which.find(kinds[m]) == std::string_view::npos) continue;
    offs += fmt::format("    I o{} = 0;\n", m);
    accum += fmt::format("          o{0} += c * static_cast<I>(s{0}.strides[d]);\n", m);
    last += fmt::format("      o{0} += rem * static_cast<I>(s{0}.strides[0]);\n", m);
  }
  return offs + fmt::format(
      "    {{\n"
      "      I rem = {3};\n"
      "#pragma unroll\n"
      "      for (int d = tg_dev::kMaxRank - 1; d >= 1; --d) {{\n"
      "        if (d < s{0}.rank) {{\n"
      "          const I dim = static_cast<I>(s{0}.dims[d]);\n"
      "          const I q = rem / dim;\n"
      "          const I c = rem - q * dim;\n"
      "{1}"
      "          rem = q;\n"
      "        }}\n"
      "      }}\n"
      "{2}"
      "    }}\n",
      first, accum, last, index);
}

std::string strided_source(const ElementwiseSpec& s, std::string_view kinds) {
  std::string args;
  const std::string params = param_list(s, kinds, &args);
  std::string src = "#include \"elementwise.cuh\"\n\n" + std::string(nvrtc::kGridDependencySource) + s.prelude + "\n";
  // Element by element, index type I.
  src += "template <class I>\n__device__ __forceinline__ void tg_body(" + params + ") {\n";
  src += prologue(s, kinds);
  src +=
      "  const I n = static_cast<I>(n_);\n"
      "  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);\n"
      "  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < n;\n"
      "       i += stride) {\n";
  src += offsets_code(s, kinds, "i");
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    const char* t = device_type(s.inputs[m]);
    if (kinds[m] == 'c') src += fmt::format("    const {} v{} = x{}[i];\n", t, m, m);
    if (strided_kind(kinds[m])) src += fmt::format("    const {} v{} = x{}[o{}];\n", t, m, m, m);
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) src += fmt::format("    y{}[i] = ({});\n", j, s.exprs[j]);
  src += "  }\n}\n\n";

  // VEC elements of one row a step (the host checks that the innermost merged dim is a multiple
  // of VEC, that n < 2^31 and the alignment): offsets once per pack; 'r' inputs read as packs,
  // 'b' inputs (stride 0 along the row) once per pack.
  src += "template <int VEC>\n__device__ __forceinline__ void tg_body_vec(" + params + ") {\n";
  src += prologue(s, kinds);
  src +=
      "  typedef unsigned int I;\n"
      "  const I npack = static_cast<I>(n_) / VEC;\n"
      "  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);\n"
      "  const I pk0 = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);\n";
  // 'h' inputs: the host makes stride * VEC a multiple of the row, so a thread's columns never change.
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (kinds[m] != 'h') continue;
    src += fmt::format(
        "  const tg_dev::Pack<{0}, VEC> q{1} = *reinterpret_cast<const tg_dev::Pack<{0}, VEC>*>(\n"
        "      x{1} + (pk0 * VEC) % static_cast<I>(s{1}.dims[s{1}.rank - 1]));\n",
        device_type(s.inputs[m]), m);
  }
  src +=
      "  for (I pk = pk0; pk < npack; pk += stride) {\n"
      "    const I i0 = pk * VEC;\n";
  src += offsets_code(s, kinds, "i0", "br");
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    const char* t = device_type(s.inputs[m]);
    if (kinds[m] == 'c') {
      src += fmt::format("    const tg_dev::Pack<{0}, VEC> q{1} = reinterpret_cast<const tg_dev::Pack<{0}, VEC>*>(x{1})[pk];\n", t, m);
    } else if (kinds[m] == 'r') {
      src += fmt::format("    const tg_dev::Pack<{0}, VEC> q{1} = *reinterpret_cast<const tg_dev::Pack<{0}, VEC>*>(x{1} + o{1});\n", t, m);
    } else if (kinds[m] == 'b') {
      src += fmt::format("    const {} v{} = x{}[o{}];\n", t, m, m, m);
    }
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) src += fmt::format("    tg_dev::Pack<{}, VEC> r{};\n", device_type(s.outputs[j]), j);
  src +=
      "#pragma unroll\n"
      "    for (int j = 0; j < VEC; ++j) {\n"
      "      const I i = i0 + j;\n"
      "      (void)i;\n";
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (kinds[m] == 'c' || kinds[m] == 'r' || kinds[m] == 'h') {
      src += fmt::format("      const {} v{} = q{}.v[j];\n", device_type(s.inputs[m]), m, m);
    }
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) src += fmt::format("      r{}.v[j] = ({});\n", j, s.exprs[j]);
  src += "    }\n";
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    src += fmt::format("    reinterpret_cast<tg_dev::Pack<{0}, VEC>*>(y{1})[pk] = r{1};\n", device_type(s.outputs[j]), j);
  }
  src += "  }\n}\n\n";

  // Kernel parameters: Strided by value.
  std::string kparams = params;
  for (size_t m = 0; m < s.inputs.size(); ++m) {
    if (!strided_kind(kinds[m])) continue;
    const std::string ref = fmt::format("const tg_dev::Strided& s{}", m);
    kparams.replace(kparams.find(ref), ref.size(), fmt::format("const tg_dev::Strided s{}", m));
  }
  src += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}) tg_ew_s32({}) {{ tg_grid_dependency(); tg_body<unsigned int>({}); }}\n",
      kThreads, kparams, args);
  src += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}) tg_ew_s64({}) {{ tg_grid_dependency(); tg_body<long long>({}); }}\n",
      kThreads, kparams, args);
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) tg_ew_svec({}) {{ tg_grid_dependency(); tg_body_vec<{}>({}); }}\n",
                     kThreads, kparams, vec_width(s, kinds, "crh"), args);
  return src;
}

// ---- kernel cache -------------------------------------------------------------------------------

struct Entry {
  std::shared_ptr<const nvrtc::Program> program;
  cudaKernel_t vec_kernel = nullptr;  ///< tg_ew_vec or tg_ew_svec: VEC elements a step
  cudaKernel_t fast = nullptr;        ///< tg_ew_1 or tg_ew_s32
  cudaKernel_t slow = nullptr;        ///< tg_ew_1 or tg_ew_s64 (64-bit indices)
  int vec = 1;                        ///< VEC of vec_kernel
};

const Entry& entry_for(const ElementwiseSpec& s, std::string_view kinds, int device, std::string_view op) {
  const DeviceContext& dc = activate(device);
  std::string key = fmt::format("{}{}|{}|{}|", dc.cc_major, dc.cc_minor, kinds, s.num_params);
  for (DType d : s.inputs) key += dtype_name(d), key += ',';
  key += '|';
  for (DType d : s.outputs) key += dtype_name(d), key += ',';
  if (!s.key.empty()) {
    key += "|#", key += s.key;
  } else {
    for (const auto& e : s.exprs) key += '|', key += e;
    key += '|', key += s.prelude;
  }

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
  const std::string src = elementwise_source(s, kinds);
  auto e = std::make_unique<Entry>();
  e->program = nvrtc::compile(src, device, op);
  if (has_strided(kinds)) {
    e->vec_kernel = e->program->kernel("tg_ew_svec", op);
    e->fast = e->program->kernel("tg_ew_s32", op);
    e->slow = e->program->kernel("tg_ew_s64", op);
    e->vec = vec_width(s, kinds, "crh");
  } else {
    e->vec_kernel = e->program->kernel("tg_ew_vec", op);
    e->fast = e->slow = e->program->kernel("tg_ew_1", op);
    e->vec = vec_width(s, kinds, "c");
  }
  std::lock_guard lock(mu);
  auto [it, inserted] = cache->emplace(std::move(key), std::move(e));
  return *it->second;
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

std::vector<int64_t> broadcast_strides(const Shape& out, const Shape& in, std::string_view op) {
  const size_t r = out.size();
  if (in.size() > r) fail(ErrorCode::shape_mismatch, op, "operand shape {} does not broadcast to {}", str(in), str(out));
  std::vector<int64_t> strides(r, 0);
  const size_t lead = r - in.size();
  int64_t stride = 1;
  for (size_t j = in.size(); j-- > 0;) {
    const int64_t dim = in[j], target = out[j + lead];
    if (dim != target && dim != 1) {
      fail(ErrorCode::shape_mismatch, op, "operand shape {} does not broadcast to {}", str(in), str(out));
    }
    strides[j + lead] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

void require_dtype(DTypeGroup group, DType dtype, std::string_view op) {
  bool ok = false;
  switch (group) {
    case DTypeGroup::all: ok = true; break;
    case DTypeGroup::numeric: ok = dtype != DType::bool_; break;
    case DTypeGroup::floating: ok = is_floating(dtype); break;
    case DTypeGroup::integer: ok = is_integer(dtype); break;
    case DTypeGroup::boolean: ok = dtype == DType::bool_; break;
  }
  if (!ok) fail(ErrorCode::dtype_mismatch, op, "dtype {} is not supported", dtype_name(dtype));
}

const char* device_type(DType dtype) {
  switch (dtype) {
    case DType::bool_: return "bool";
    case DType::i8: return "signed char";
    case DType::u8: return "unsigned char";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::f16: return "tg_dev::f16";
    case DType::bf16: return "tg_dev::bf16";
    case DType::f32: return "float";
    case DType::f64: return "double";
  }
  return "void";
}

std::string elementwise_source(const ElementwiseSpec& spec, std::string_view kinds) {
  return has_strided(kinds) ? strided_source(spec, kinds) : contiguous_source(spec, kinds);
}

void run_elementwise(const backends::KernelContext& ctx, const ElementwiseSpec& spec,
                     std::span<const TensorData> inputs, std::span<TensorData> outputs,
                     std::span<const int64_t> params) {
  const std::string_view op = ctx.op_name();
  TG_CHECK_INTERNAL(inputs.size() == spec.inputs.size() && outputs.size() == spec.outputs.size() &&
                        spec.exprs.size() == spec.outputs.size() &&
                        params.size() == static_cast<size_t>(spec.num_params) && !outputs.empty(),
                    "run_elementwise: spec does not match the operands");
  const Shape& out_shape = outputs[0].shape();
  const int64_t n = outputs[0].num_elements();
  for (const TensorData& y : outputs) {
    if (y.shape() != out_shape) {
      fail(ErrorCode::internal, op, "outputs of shapes {} and {} in one elementwise kernel", str(out_shape),
           str(y.shape()));
    }
  }
  // Input kinds and, for broadcast inputs, their strides over the output's dims.
  std::string kinds(inputs.size(), 'c');
  std::vector<std::vector<int64_t>> raw(inputs.size());
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (inputs[m].dtype() != spec.inputs[m]) {
      fail(ErrorCode::dtype_mismatch, op, "operand {} has dtype {}, expected {}", m, dtype_name(inputs[m].dtype()),
           dtype_name(spec.inputs[m]));
    }
    const int64_t ne = inputs[m].num_elements();
    if (inputs[m].shape() != out_shape) raw[m] = broadcast_strides(out_shape, inputs[m].shape(), op);
    if (ne == n) {
      kinds[m] = 'c';
    } else if (ne == 1) {
      kinds[m] = 's';
    } else {
      kinds[m] = 'b';
    }
  }
  if (n == 0) return;
  const bool strided = has_strided(kinds);

  // Merged dims (as the CPU's plan_broadcast): drop size-1 dims, merge a dim into the previous
  // one when every broadcast input's strides allow it.
  std::vector<Strided> shapes(inputs.size());
  int64_t inner = 0;  // innermost merged dim
  if (strided) {
    std::vector<int64_t> dims;
    std::vector<std::vector<int64_t>> st(inputs.size());
    for (size_t d = 0; d < out_shape.size(); ++d) {
      if (out_shape[d] == 1) continue;
      bool merge = !dims.empty();
      for (size_t m = 0; m < inputs.size() && merge; ++m) {
        if (kinds[m] == 'b') merge = st[m].back() == raw[m][d] * out_shape[d];
      }
      if (merge) {
        dims.back() *= out_shape[d];
        for (size_t m = 0; m < inputs.size(); ++m) {
          if (kinds[m] == 'b') st[m].back() = raw[m][d];
        }
      } else {
        dims.push_back(out_shape[d]);
        for (size_t m = 0; m < inputs.size(); ++m) {
          if (kinds[m] == 'b') st[m].push_back(raw[m][d]);
        }
      }
    }
    if (dims.size() > static_cast<size_t>(kMaxRank)) {
      fail(ErrorCode::unsupported, op, "broadcast over {} dims after merging (output {}); at most {} supported",
           dims.size(), str(out_shape), kMaxRank);
    }
    inner = dims.back();
    for (size_t m = 0; m < inputs.size(); ++m) {
      if (kinds[m] != 'b') continue;
      kinds[m] = st[m].back() == 1 ? 'r' : 'b';  // innermost stride: 1 (row read as packs) or 0
      if (kinds[m] == 'r' && std::all_of(st[m].begin(), st[m].end() - 1, [](int64_t v) { return v == 0; })) {
        kinds[m] = 'h';  // the same row for every row: a per-channel vector
      }
      shapes[m].rank = static_cast<int>(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        shapes[m].dims[d] = dims[d];
        shapes[m].strides[d] = st[m][d];
      }
    }
  }

  DeviceContext& dc = context_of(ctx);
  const Entry& e = entry_for(spec, kinds, ctx.device.index, op);

  // Kernel arguments, in param_list's order.
  std::vector<const void*> ptrs;
  ptrs.reserve(outputs.size() + inputs.size());
  for (TensorData& y : outputs) ptrs.push_back(y.storage_ptr());
  for (const TensorData& x : inputs) ptrs.push_back(x.storage_ptr());
  std::vector<void*> args;
  for (const void*& p : ptrs) args.push_back(&p);
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (strided_kind(kinds[m])) args.push_back(&shapes[m]);
  }
  long long n_arg = n;
  args.push_back(&n_arg);
  const cudaStream_t stream = stream_of(ctx);
  int* flag = nullptr;
  if (spec.uses_flag) {
    flag = static_cast<int*>(workspace_of(ctx, sizeof(int)));
    check(cudaMemsetAsync(flag, 0, sizeof(int), stream), op, "cudaMemsetAsync");
  }
  args.push_back(&flag);
  const void* guard = ctx.run != nullptr ? ctx.run->write_guard() : nullptr;
  args.push_back(&guard);
  std::vector<long long> p(params.begin(), params.end());
  for (long long& v : p) args.push_back(&v);

  // Vector packs when every operand read or written as packs is aligned to a pack; for strided
  // kernels also rows that are whole packs and 32-bit indices.
  bool vec_ok = e.vec > 1;
  if (strided) vec_ok = vec_ok && n < (int64_t{1} << 31) && inner % e.vec == 0;
  for (size_t m = 0; m < inputs.size() && vec_ok; ++m) {
    if (kinds[m] == 'c' || kinds[m] == 'r' || kinds[m] == 'h') {
      vec_ok = aligned(inputs[m].storage_ptr(), e.vec * dtype_size(inputs[m].dtype()));
    }
  }
  for (size_t j = 0; j < outputs.size() && vec_ok; ++j) {
    vec_ok = aligned(outputs[j].storage_ptr(), e.vec * dtype_size(outputs[j].dtype()));
  }
  const int64_t units = vec_ok ? std::max<int64_t>(n / e.vec, 1) : n;
  int64_t blocks = grid_for(units, kThreads);
  if (vec_ok && kinds.find('h') != std::string::npos) {
    // 'h' inputs are loaded once per thread: a thread must stay on its columns, so the grid's
    // stride (blocks * kThreads * VEC elements) is a multiple of the row, or one pass covers all.
    // About 8 blocks per SM, each thread then running several rows with the same per-channel values.
    const int64_t per_block = int64_t{kThreads} * e.vec;
    const int64_t q = inner / std::gcd(inner, per_block);  // blocks must be a multiple of q
    const int64_t target = int64_t{8} * (dc.sm_count > 0 ? dc.sm_count : 132);
    const int64_t need = (units + kThreads - 1) / kThreads;
    if (need > target) {
      blocks = (target + q - 1) / q * q;
      if (blocks >= need) blocks = need;
      if (blocks > 65535LL * 32) vec_ok = false;  // the rows are too long for that: element by element
    }
    if (!vec_ok) blocks = grid_for(n, kThreads);
  }
  cudaKernel_t kernel = vec_ok ? e.vec_kernel : n < (int64_t{1} << 31) ? e.fast : e.slow;
  nvrtc::launch(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), args.data(), stream, op, 0, true);

  if (spec.uses_flag) {
    // Integer division by zero raises (the CPU's semantics): the kernel sets the flag, the report
    // kernel writes the run's device error record, and the runtime raises after the run.
    report_flag(flag, false, 0, nullptr, false,
                device_check(ctx, [op = std::string(op)](const backends::DeviceErrorRecord&) {
                  return Error(ErrorCode::invalid_argument, fmt::format("[{}] integer division by zero", op));
                }),
                stream, op);
  }
}

}  // namespace tg::cuda
