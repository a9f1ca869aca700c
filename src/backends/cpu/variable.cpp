// CPU kernels of the variable family: they read and write the run's VariableTransaction.
#include "backends/cpu/cpu_backend.h"

namespace tg::cpu {
namespace {

// variable, read_variable and assign_variable nodes all carry the variable's slot.
int slot_of(const KernelContext& ctx) { return std::get<ir::VariableAttrs>(ctx.node.attrs).index; }

void variable_kernel(KernelContext& ctx) { ctx.outputs[0] = ctx.variables.start(slot_of(ctx)); }
void read_kernel(KernelContext& ctx) { ctx.outputs[0] = ctx.variables.current(slot_of(ctx)); }
void assign_kernel(KernelContext& ctx) {
  ctx.variables.assign(slot_of(ctx), ctx.inputs[1]);
  ctx.outputs[0] = ctx.inputs[1];
}

}  // namespace

void register_variable_kernels(KernelTable& t) {
  t.set(ir::OpKind::variable, variable_kernel);
  t.set(ir::OpKind::read_variable, read_kernel);
  t.set(ir::OpKind::assign_variable, assign_kernel);
}

}  // namespace tg::cpu
