#include "backends/fused_stepwise.h"

#include "core/error_util.h"
#include "ir/fused_rows.h"

namespace tg::backends {

namespace {

Kernel kernel_of(const KernelTable& table, ir::OpKind kind, const KernelContext& ctx) {
  Kernel k = table.get(kind);
  if (!k) fail(ErrorCode::unsupported, ctx.op_name(), "no {} kernel on {}", ir::op_name(kind), ctx.device.to_string());
  return k;
}

// `in` broadcast to `shape` by `table`'s broadcast_to kernel (itself when it has that shape).
TensorData broadcast(KernelContext& ctx, const KernelTable& table, const TensorData& in, const Shape& shape) {
  if (in.shape() == shape) return in;
  ir::Node b;
  b.id = ctx.node.id;
  b.kind = ir::OpKind::broadcast_to;
  b.attrs = ir::BroadcastAttrs{shape};
  b.outputs = {TensorType{shape, in.dtype()}};
  b.name = ctx.node.name;
  std::vector<TensorData> args{in};
  std::vector<TensorData> outs{TensorData(shape, in.dtype(), ctx.device)};
  KernelContext sub{b, args, outs, ctx.device, ctx.precision, ctx.run};
  kernel_of(table, b.kind, ctx)(sub);
  return std::move(outs[0]);
}

// Step `s` of ctx's program on `args` (of the program's shape) into a new tensor of that shape:
// its elementwise kernel, or for a row reduction (ir/fused_rows.h) the reduction over the last
// axis with keep_dims, broadcast back along it.
TensorData run_step(KernelContext& ctx, const KernelTable& table, const ir::FusedStep& s, std::vector<TensorData> args,
                    const Shape& shape) {
  const bool row = ir::is_row_reduction_step(s.kind);
  Shape out_shape = shape;
  if (row) out_shape.back() = 1;
  ir::Node step;
  step.id = ctx.node.id;
  step.kind = s.kind;
  if (s.kind == ir::OpKind::cast) step.attrs = ir::CastAttrs{s.dtype};
  if (row) step.attrs = ReduceDesc{{static_cast<int64_t>(shape.size()) - 1}, true};
  step.outputs = {TensorType{out_shape, s.dtype}};
  step.name = ctx.node.name;
  std::vector<TensorData> outs{TensorData(out_shape, s.dtype, ctx.device)};
  KernelContext sub{step, args, outs, ctx.device, ctx.precision, ctx.run};
  kernel_of(table, s.kind, ctx)(sub);
  return row ? broadcast(ctx, table, outs[0], shape) : std::move(outs[0]);
}

// Every program value, inputs broadcast to the program's shape first.
std::vector<TensorData> program_values(KernelContext& ctx, const KernelTable& table) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  std::vector<TensorData> values;
  for (const TensorData& in : ctx.inputs) values.push_back(broadcast(ctx, table, in, a.shape));
  for (const ir::FusedStep& s : a.steps) {
    std::vector<TensorData> args;
    for (int v : s.args) args.push_back(values.at(static_cast<size_t>(v)));
    values.push_back(run_step(ctx, table, s, std::move(args), a.shape));
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
