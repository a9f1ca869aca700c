#include "backends/fused_stepwise.h"

#include "core/error_util.h"

namespace tg::backends {

namespace {

Kernel kernel_of(const KernelTable& table, ir::OpKind kind, const KernelContext& ctx) {
  Kernel k = table.get(kind);
  if (!k) fail(ErrorCode::unsupported, ctx.op_name(), "no {} kernel on {}", ir::op_name(kind), ctx.device.to_string());
  return k;
}

// Every program value, inputs broadcast to the program's shape first.
std::vector<TensorData> program_values(KernelContext& ctx, const KernelTable& table) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  std::vector<TensorData> values;
  for (const TensorData& in : ctx.inputs) {
    if (in.shape() == a.shape) {
      values.push_back(in);
      continue;
    }
    ir::Node b;
    b.id = ctx.node.id;
    b.kind = ir::OpKind::broadcast_to;
    b.attrs = ir::BroadcastAttrs{a.shape};
    b.outputs = {TensorType{a.shape, in.dtype()}};
    b.name = ctx.node.name;
    std::vector<TensorData> args{in};
    std::vector<TensorData> outs{TensorData(a.shape, in.dtype(), ctx.device)};
    KernelContext sub{b, args, outs, ctx.device, ctx.precision, ctx.run};
    kernel_of(table, b.kind, ctx)(sub);
    values.push_back(std::move(outs[0]));
  }
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
    KernelContext sub{step, args, outs, ctx.device, ctx.precision, ctx.run};
    kernel_of(table, s.kind, ctx)(sub);
    values.push_back(std::move(outs[0]));
  }
  return values;
}

}  // namespace

void run_fused_stepwise(KernelContext& ctx, const KernelTable& table) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  std::vector<TensorData> values = program_values(ctx, table);
  for (size_t k = 0; k < a.outputs.size(); ++k) ctx.outputs[k] = values.at(static_cast<size_t>(a.outputs[k]));
}

void run_fused_reduce_stepwise(KernelContext& ctx, const KernelTable& table) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  std::vector<TensorData> values = program_values(ctx, table);
  for (size_t k = 0; k < a.outputs.size(); ++k) {
    ir::Node r;
    r.id = ctx.node.id;
    r.kind = ir::OpKind::reduce_sum;
    r.attrs = ReduceDesc{a.reduce_axes, a.keep_dims};
    r.outputs = {ctx.node.outputs[k]};
    r.name = ctx.node.name;
    std::vector<TensorData> args{values.at(static_cast<size_t>(a.outputs[k]))};
    std::vector<TensorData> outs{TensorData(ctx.node.outputs[k].shape, ctx.node.outputs[k].dtype, ctx.device)};
    KernelContext sub{r, args, outs, ctx.device, ctx.precision, ctx.run};
    kernel_of(table, r.kind, ctx)(sub);
    ctx.outputs[k] = std::move(outs[0]);
  }
}

}  // namespace tg::backends
