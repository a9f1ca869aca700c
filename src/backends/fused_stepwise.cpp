#include "backends/fused_stepwise.h"

#include "core/error_util.h"

namespace tg::backends {

void run_fused_stepwise(KernelContext& ctx, const KernelTable& table) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  std::vector<TensorData> values(ctx.inputs.begin(), ctx.inputs.end());
  for (const ir::FusedStep& s : a.steps) {
    ir::Node step;
    step.id = ctx.node.id;
    step.kind = s.kind;
    if (s.kind == ir::OpKind::cast) step.attrs = ir::CastAttrs{s.dtype};
    step.outputs = {TensorType{a.shape, s.dtype}};
    step.name = ctx.node.name;
    std::vector<TensorData> args;
    for (int v : s.args) args.push_back(values.at(static_cast<size_t>(v)));
    std::vector<TensorData> outs{TensorData(a.shape, s.dtype, ctx.device)};
    Kernel k = table.get(s.kind);
    if (!k) fail(ErrorCode::unsupported, "fused_elementwise", "no {} kernel on {}", ir::op_name(s.kind), ctx.device.to_string());
    KernelContext sub{step, args, outs, ctx.variables, ctx.regions, ctx.device, ctx.precision};
    k(sub);
    values.push_back(std::move(outs[0]));
  }
  for (size_t k = 0; k < a.outputs.size(); ++k) ctx.outputs[k] = values.at(static_cast<size_t>(a.outputs[k]));
}

}  // namespace tg::backends
