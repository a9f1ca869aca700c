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

namespace {

// A fused_stencil stage (prologue or epilogue) on `args`: the value itself when it has no steps,
// else the program run by run_fused_stepwise.
TensorData run_stage(KernelContext& ctx, const KernelTable& table, const ir::FusedAttrs& program,
                     std::vector<TensorData> args, DType dtype) {
  if (program.steps.empty()) return std::move(args.at(0));
  ir::Node p;
  p.id = ctx.node.id;
  p.kind = ir::OpKind::fused_elementwise;
  p.attrs = program;
  p.outputs = {TensorType{program.shape, dtype}};
  p.name = ctx.node.name;
  std::vector<TensorData> outs{TensorData(program.shape, dtype, ctx.device)};
  KernelContext sub{p, args, outs, ctx.device, ctx.precision, ctx.run};
  run_fused_stepwise(sub, table);
  return std::move(outs[0]);
}

// Output dtype of `program` (one output) on values of `dtypes` (its inputs).
DType stage_dtype(const ir::FusedAttrs& program, std::vector<DType> dtypes) {
  for (const ir::FusedStep& s : program.steps) dtypes.push_back(s.dtype);
  return dtypes.at(static_cast<size_t>(program.outputs.at(0)));
}

}  // namespace

void run_fused_stencil_stepwise(KernelContext& ctx, const KernelTable& table) {
  const auto& a = std::get<ir::FusedStencilAttrs>(ctx.node.attrs);
  const size_t np = static_cast<size_t>(a.num_prologue_inputs), nw = a.weights.empty() ? 1 : 0;
  std::vector<TensorData> pro(ctx.inputs.begin(), ctx.inputs.begin() + static_cast<std::ptrdiff_t>(np));
  std::vector<DType> pro_types;
  for (const TensorData& t : pro) pro_types.push_back(t.dtype());
  const DType source_dtype = stage_dtype(a.prologue, pro_types);
  TensorData source = run_stage(ctx, table, a.prologue, std::move(pro), source_dtype);
  TensorData weights;
  if (nw == 1) {
    weights = ctx.inputs[np];
  } else {
    // Constant weights: exact in float64, cast to the source's (floating) dtype.
    TensorData w64 = TensorData::from_vector<double>(a.weights, a.window).to(ctx.device);
    weights = source_dtype == DType::f64
                  ? w64
                  : run_step(ctx, table, ir::FusedStep{ir::OpKind::cast, {0}, source_dtype}, {w64}, a.window);
  }
  // The stencil, then the epilogue on its result.
  ir::Node st;
  st.id = ctx.node.id;
  st.kind = ir::OpKind::stencil;
  st.attrs = a.stencil;
  const bool arg = a.stencil.reduction == StencilReduction::argmin || a.stencil.reduction == StencilReduction::argmax;
  const DType result_dtype = arg ? DType::i32 : source_dtype;
  st.outputs = {TensorType{a.epilogue.shape, result_dtype}};
  st.name = ctx.node.name;
  std::vector<TensorData> st_args{source, weights};
  std::vector<TensorData> st_outs{TensorData(a.epilogue.shape, result_dtype, ctx.device)};
  KernelContext sub{st, st_args, st_outs, ctx.device, ctx.precision, ctx.run};
  kernel_of(table, st.kind, ctx)(sub);
  std::vector<TensorData> epi{std::move(st_outs[0])};
  std::vector<DType> epi_types{result_dtype};
  for (size_t i = np + nw; i < ctx.inputs.size(); ++i) {
    epi.push_back(ctx.inputs[i]);
    epi_types.push_back(ctx.inputs[i].dtype());
  }
  ctx.outputs[0] = run_stage(ctx, table, a.epilogue, std::move(epi), stage_dtype(a.epilogue, epi_types));
}

}  // namespace tg::backends
