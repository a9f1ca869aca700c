// CPU kernels of the control family: they interpret the node's regions through the executor's
// RegionRunner, running a region only when it is taken.
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"

namespace tg::cpu {
namespace {

// A scalar predicate: bool, or a number where non-zero (and NaN) means true.
// Device-agnostic: the CUDA backend registers these kernels too (a GPU scalar is read back).
bool truthy(const TensorData& t_any, const char* op) {
  TensorData t = t_any.to(Device::cpu());
  bool value = false;
  dispatch<DTypeGroup::all>(t.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    auto v = static_cast<compute_t<T>>(*static_cast<const T*>(t.raw_data()));
    value = v != compute_t<T>(0);
  });
  return value;
}

int64_t trip_count(const TensorData& t_any, const char* op) {
  TensorData t = t_any.to(Device::cpu());
  int64_t n = 0;
  dispatch<DTypeGroup::integer>(t.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    n = static_cast<int64_t>(*static_cast<const T*>(t.raw_data()));
  });
  if (n > std::numeric_limits<int32_t>::max()) {
    fail(ErrorCode::out_of_range, op, "trip count {} does not fit the i32 index", n);
  }
  return n;
}

const RegionRunner& runner(const KernelContext& ctx) {
  if (ctx.regions == nullptr)
    fail(ErrorCode::internal, ctx.op_name(), "kernel run without a region runner");
  return *ctx.regions;
}

size_t num_carried(const KernelContext& ctx) {
  return static_cast<size_t>(std::get<ir::LoopAttrs>(ctx.node.attrs).num_carried);
}

// The predicate's host copy when the interpreter has one (no wait for the device), else its value.
const TensorData& predicate(const KernelContext& ctx) {
  return !ctx.host_inputs.empty() && !ctx.host_inputs[0].empty() ? ctx.host_inputs[0] : ctx.inputs[0];
}

void if_else_kernel(KernelContext& ctx) {
  bool taken = truthy(predicate(ctx), ctx.op_name());
  ctx.outputs =
      runner(ctx).run_region(ctx.node.regions[taken ? 0 : 1], ctx.inputs.subspan(1), ctx.variables);
}

// Arguments of a loop region: `own` values, then the captured values (inputs from `captures_at`).
std::vector<TensorData> with_captures(std::vector<TensorData> own, const KernelContext& ctx,
                                      size_t captures_at) {
  own.insert(own.end(), ctx.inputs.begin() + static_cast<ptrdiff_t>(captures_at), ctx.inputs.end());
  return own;
}

void for_loop_kernel(KernelContext& ctx) {
  size_t k = num_carried(ctx);
  int64_t n = trip_count(predicate(ctx), ctx.op_name());
  std::vector<TensorData> values(ctx.inputs.begin() + 1,
                                 ctx.inputs.begin() + 1 + static_cast<ptrdiff_t>(k));
  const ir::Region& body = ctx.node.regions[0];
  std::vector<TensorData> args = with_captures(std::vector<TensorData>(1 + k), ctx, 1 + k);
  for (int64_t i = 0; i < n; ++i) {
    args[0] = TensorData::scalar<int32_t>(static_cast<int32_t>(i)).to(ctx.device);
    for (size_t j = 0; j < k; ++j) args[1 + j] = std::move(values[j]);
    values = runner(ctx).run_region(body, args, ctx.variables);
  }
  ctx.outputs = std::move(values);
}

void while_loop_kernel(KernelContext& ctx) {
  size_t k = num_carried(ctx);
  int64_t max_iterations = std::get<ir::LoopAttrs>(ctx.node.attrs).max_iterations;
  const ir::Region& before = ctx.node.regions[0];
  const ir::Region& after = ctx.node.regions[1];
  std::vector<TensorData> before_args = with_captures(
      std::vector<TensorData>(ctx.inputs.begin(), ctx.inputs.begin() + static_cast<ptrdiff_t>(k)),
      ctx, k);
  for (int64_t iteration = 0;; ++iteration) {
    std::vector<TensorData> b = runner(ctx).run_region(before, before_args, ctx.variables);
    bool go_on = truthy(b[0], ctx.op_name()) && (max_iterations < 0 || iteration < max_iterations);
    b.erase(b.begin());
    if (!go_on) {
      ctx.outputs = std::move(b);
      return;
    }
    std::vector<TensorData> next =
        runner(ctx).run_region(after, with_captures(std::move(b), ctx, k), ctx.variables);
    for (size_t j = 0; j < k; ++j) before_args[j] = std::move(next[j]);
  }
}

}  // namespace

void register_control_kernels(KernelTable& t) {
  t.set(ir::OpKind::if_else, if_else_kernel);
  t.set(ir::OpKind::for_loop, for_loop_kernel);
  t.set(ir::OpKind::while_loop, while_loop_kernel);
}

}  // namespace tg::cpu
