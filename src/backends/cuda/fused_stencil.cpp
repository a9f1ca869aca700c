// CUDA kernel of fused_stencil (ir::FusedStencilAttrs; made by passes/fuse_stencil.cpp): the
// generated tiled stencil kernel (stencil_codegen.h) with the prologue program computed on each
// source element as the kernel loads it and the epilogue program on each result as it stores it
// (fused_program.h's device functions, renamed tg_pro / tg_epi), and constant weights folded into
// the code. One kernel; nothing in between goes through memory. The values equal the CPU's stage
// by stage evaluation (backends/fused_stepwise.cpp) bit for bit: each stage rounds to its own
// dtype as the unfused kernels do.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/fused_program.h"
#include "backends/cuda/stencil_codegen.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

/// `prelude` with its tg_fused names renamed to `name` (two programs in one kernel source).
std::string renamed(const std::string& prelude, const std::string& name) {
  std::string out = prelude;
  const std::string from = "tg_fused";
  for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + name.size())) {
    out.replace(at, from.size(), name);
  }
  return out;
}

/// A call of stage program `name` on its inputs: argument 0 is `first`, argument m > 0 is read
/// from P.p[slot + m - 1] at index `index` (or 0 for a one-element input).
std::string stage_call(const std::string& name, const std::string& first, std::span<const TensorType> inputs,
                       const Shape& shape, int slot, const char* index) {
  std::string call = name + "(" + first;
  for (size_t m = 1; m < inputs.size(); ++m) {
    call += fmt::format(", static_cast<const {}*>(P.p[{}])[{}]", device_type(inputs[m].dtype),
                        slot + static_cast<int>(m) - 1, inputs[m].shape == shape ? index : "0");
  }
  return call + ", nullptr).o0";
}

}  // namespace

bool plan_fused_stencil(const ir::FusedStencilAttrs& a, std::span<const TensorType> inputs, const TensorType& output,
                        const char* op, TiledStencilSpec& spec, TiledStencilSizes& sizes, bool& empty) {
  const size_t np = static_cast<size_t>(a.num_prologue_inputs), nw = a.weights.empty() ? 1 : 0;
  // Value types of the stages.
  std::vector<DType> pro_types;
  for (size_t m = 0; m < np; ++m) pro_types.push_back(inputs[m].dtype);
  DType source = inputs[0].dtype;
  std::string prelude, load, store, key;
  if (!a.prologue.steps.empty()) {
    const FusedProgramSource& p = cached_fused_program(a.prologue, pro_types, op);
    source = p.outputs.at(0);
    prelude += renamed(p.prelude, "tg_pro");
    const std::string first = fmt::format("x[{}]", inputs[0].shape == a.prologue.shape ? "i" : "0");
    load = "    return " + stage_call("tg_pro", first, inputs.subspan(0, np), a.prologue.shape, 0, "i") + ";\n";
    key += p.key;
  }
  const bool arg = a.stencil.reduction == StencilReduction::argmin || a.stencil.reduction == StencilReduction::argmax;
  if (!a.epilogue.steps.empty()) {
    std::vector<TensorType> epi{TensorType{a.epilogue.shape, arg ? DType::i32 : source}};
    for (size_t m = np + nw; m < inputs.size(); ++m) epi.push_back(inputs[m]);
    std::vector<DType> types;
    for (const TensorType& t : epi) types.push_back(t.dtype);
    const FusedProgramSource& p = cached_fused_program(a.epilogue, types, op);
    prelude += renamed(p.prelude, "tg_epi");
    store = "    y[o] = " + stage_call("tg_epi", "v", epi, a.epilogue.shape, static_cast<int>(np) - 1, "o") + ";\n";
    key += "|" + p.key;
  }
  spec.weights = a.weights;  // before planning: the planner counts the taps that are not skipped
  const bool tiled = plan_stencil_op(a.stencil, a.prologue.shape, a.window, a.epilogue.shape, source, op, spec, sizes,
                                     empty);
  // The prologue runs on loads: no cp.async (ring or column march).
  if (!load.empty()) spec.stages = 1, spec.vector = false, spec.column = false;
  spec.prelude = std::move(prelude);
  spec.load = std::move(load);
  spec.store = std::move(store);
  // Which inputs are read per element and which once (the programs' keys do not say).
  key += "|";
  for (size_t m = 0; m < inputs.size(); ++m) {
    const bool pro = m < np;
    key += (inputs[m].shape == (pro ? a.prologue.shape : a.epilogue.shape)) ? 'f' : 's';
  }
  spec.fusion_key = std::move(key);
  spec.x_dtype = inputs[0].dtype;
  spec.out_dtype = output.dtype;
  return tiled;
}

void fused_stencil_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::FusedStencilAttrs>(ctx.node.attrs);
  std::vector<TensorType> types;
  for (const TensorData& t : ctx.inputs) types.push_back(t.type());
  TiledStencilSpec spec;
  TiledStencilSizes sizes;
  bool empty = false;
  const bool tiled = plan_fused_stencil(a, types, ctx.outputs[0].type(), ctx.op_name(), spec, sizes, empty);
  if (empty) return;
  if (!tiled) {
    // passes/fuse_stencil.cpp fuses only windows the tiled kernel takes.
    fail(ErrorCode::internal, ctx.op_name(), "window [{}] is not tiled by the generated kernel",
         fmt::join(a.window, ","));
  }
  const size_t np = static_cast<size_t>(a.num_prologue_inputs), nw = a.weights.empty() ? 1 : 0;
  std::vector<const void*> extra;
  for (size_t m = 1; m < ctx.inputs.size(); ++m) {
    if (m < np || m >= np + nw) extra.push_back(ptr(ctx.inputs[m]));
  }
  run_tiled_stencil(ctx, spec, sizes, ptr(ctx.inputs[0]), nw ? ptr(ctx.inputs[np]) : nullptr, ptr(ctx.outputs[0]),
                    extra);
}

}  // namespace tg::cuda
