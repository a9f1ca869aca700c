// CUDA kernels of the fused family. fused_elementwise: one generated kernel for the whole chain.
// The program becomes a device function computing every step in registers, in the steps' storage
// types (so values round exactly as the single-op kernels do; fused_program_source below, shared
// with fused_reduce, see fused_program.h), called by the elementwise kernel template of
// elementwise_codegen.h (broadcast inputs, vectorized contiguous paths, NVRTC with caches).
// fused_reduce: fused_reduce.cpp. Row programs (fused_elementwise with row reductions): fused_rows.cpp.
#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/elementwise_ops.h"
#include "backends/cuda/fused_program.h"
#include "core/error_util.h"
#include "ir/fused_rows.h"

namespace tg::cuda {

FusedProgramSource fused_program_source(const ir::FusedAttrs& a, std::span<const DType> inputs, std::string_view op) {
  const size_t n_in = inputs.size();
  FusedProgramSource out;
  std::vector<DType> dtype(inputs.begin(), inputs.end());  // per program value
  std::vector<std::string> name;
  std::string params;
  for (size_t m = 0; m < n_in; ++m) {
    name.push_back(fmt::format("v{}", m));
    params += fmt::format("{}{} v{}", m ? ", " : "", device_type(dtype[m]), m);
  }
  std::string body;
  for (const ir::FusedStep& s : a.steps) {
    std::vector<DType> in;
    std::vector<std::string> args;
    for (int v : s.args) {
      in.push_back(dtype.at(static_cast<size_t>(v)));
      args.push_back(name.at(static_cast<size_t>(v)));
    }
    bool flag = false;
    std::string e = elementwise_expression(s.kind, in, s.dtype, args, ir::op_name(s.kind), &flag);
    if (e.empty()) fail(ErrorCode::internal, op, "step {} is not elementwise", ir::op_name(s.kind));
    if (flag && !out.uses_flag) out.flag_op = s.kind;
    out.uses_flag = out.uses_flag || flag;
    const size_t v = dtype.size();
    dtype.push_back(s.dtype);
    name.push_back(fmt::format("t{}", v));
    body += fmt::format("  const {} t{} = {};\n", device_type(s.dtype), v, e);
  }
  std::string out_struct = "struct tg_fused_out {\n";
  std::string ret = "  tg_fused_out r;\n";
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    const auto v = static_cast<size_t>(a.outputs[k]);  // a step or an input
    out.outputs.push_back(dtype.at(v));
    out_struct += fmt::format("  {} o{};\n", device_type(dtype.at(v)), k);
    ret += fmt::format("  r.o{} = {};\n", k, name.at(v));
  }
  out.prelude = out_struct + "};\n" + "TG_DEVICE_INLINE tg_fused_out tg_fused(" + params + (n_in ? ", " : "") +
                "int* flag) {\n  (void)flag;\n" + body + ret + "  return r;\n}\n";
  return out;
}

namespace {

/// Compact fingerprint of (program, input dtypes): the bytes of every dtype, step and output.
std::string fingerprint(const ir::FusedAttrs& a, std::span<const DType> inputs) {
  std::string f;
  f.reserve(8 + inputs.size() + a.steps.size() * 8 + a.outputs.size() * 2);
  auto put = [&](int v) {
    f.push_back(static_cast<char>(v & 0xff));
    f.push_back(static_cast<char>((v >> 8) & 0xff));
  };
  put(static_cast<int>(inputs.size()));
  for (DType d : inputs) f.push_back(static_cast<char>(d));
  put(static_cast<int>(a.steps.size()));
  for (const ir::FusedStep& s : a.steps) {
    put(static_cast<int>(s.kind));
    f.push_back(static_cast<char>(s.dtype));
    f.push_back(static_cast<char>(s.args.size()));
    for (int v : s.args) put(v);
  }
  for (int v : a.outputs) put(v);
  return f;
}

struct FusedCache {
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<FusedProgramSource>> programs;
  std::unordered_map<std::string, std::unique_ptr<ElementwiseSpec>> specs;  // fused_elementwise's
};

FusedCache& fused_cache() {
  static auto* c = new FusedCache();
  return *c;
}

/// The elementwise spec of a fused_elementwise program (memoized like cached_fused_program).
const ElementwiseSpec& cached_spec(const ir::FusedAttrs& a, std::span<const DType> inputs) {
  FusedCache& c = fused_cache();
  const std::string f = fingerprint(a, inputs);
  {
    std::lock_guard lock(c.mu);
    if (auto it = c.specs.find(f); it != c.specs.end()) return *it->second;
  }
  const FusedProgramSource& prog = cached_fused_program(a, inputs, "fused_elementwise");
  auto spec = std::make_unique<ElementwiseSpec>();
  spec->inputs.assign(inputs.begin(), inputs.end());
  const size_t n_in = inputs.size();
  std::string call_args;
  for (size_t m = 0; m < n_in; ++m) call_args += fmt::format("{}v{}", m ? ", " : "", m);
  spec->outputs = prog.outputs;
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    spec->exprs.push_back(fmt::format("tg_fused({}{}flag).o{}", call_args, n_in ? ", " : "", k));
  }
  spec->uses_flag = prog.uses_flag;
  spec->prelude = prog.prelude;
  spec->key = prog.key;
  std::lock_guard lock(c.mu);
  return *c.specs.emplace(f, std::move(spec)).first->second;
}

void fused_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  if (ir::has_row_reductions(a)) {
    fused_rows_kernel(ctx);
    return;
  }
  DType in[64];
  const size_t n_in = ctx.inputs.size();
  if (n_in > 64) fail(ErrorCode::unsupported, "fused_elementwise", "{} inputs; at most 64", n_in);
  for (size_t m = 0; m < n_in; ++m) in[m] = ctx.inputs[m].dtype();
  const ElementwiseSpec& spec = cached_spec(a, std::span<const DType>(in, n_in));
  if (spec.uses_flag) {
    const FusedProgramSource& prog = cached_fused_program(a, std::span<const DType>(in, n_in), "fused_elementwise");
    // Errors of an integer division name that step's op, as the unfused kernels do.
    ir::Node named = ctx.node;
    named.kind = prog.flag_op;
    KernelContext sub{named, ctx.inputs, ctx.outputs, ctx.device, ctx.precision, ctx.run};
    run_elementwise(sub, spec, ctx.inputs, ctx.outputs);
    return;
  }
  run_elementwise(ctx, spec, ctx.inputs, ctx.outputs);
}

}  // namespace

const FusedProgramSource& cached_fused_program(const ir::FusedAttrs& a, std::span<const DType> inputs,
                                               std::string_view op) {
  FusedCache& c = fused_cache();
  const std::string f = fingerprint(a, inputs);
  {
    std::lock_guard lock(c.mu);
    if (auto it = c.programs.find(f); it != c.programs.end()) return *it->second;
  }
  auto prog = std::make_unique<FusedProgramSource>(fused_program_source(a, inputs, op));
  std::lock_guard lock(c.mu);
  auto [it, added] = c.programs.emplace(f, nullptr);
  if (added) {
    prog->key = fmt::format("P{}", c.programs.size());
    it->second = std::move(prog);
  }
  return *it->second;
}

void register_fused_kernels(KernelTable& t) {
  t.set(ir::OpKind::fused_elementwise, fused_kernel);
  t.set(ir::OpKind::fused_reduce, fused_reduce_kernel);
  t.set(ir::OpKind::fused_stencil, fused_stencil_kernel);
}

}  // namespace tg::cuda
