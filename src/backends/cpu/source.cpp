// CPU kernels of the source family: constant, fill, iota (placeholders are fed by the executor).
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "core/convert.h"

namespace tg::cpu {
namespace {

void constant_kernel(KernelContext& ctx) {
  ctx.outputs[0] = std::get<ir::ConstantAttrs>(ctx.node.attrs).value;
}

void fill_kernel(KernelContext& ctx) {
  double value = std::get<ir::FillAttrs>(ctx.node.attrs).value;
  TensorData& out = ctx.outputs[0];
  dispatch<DTypeGroup::all>(out.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    TensorData one = TensorData::full({}, out.dtype(), value);
    T v = *static_cast<const T*>(one.raw_data());
    T* p = static_cast<T*>(out.raw_data());
    parallel_for(out.num_elements(), kGrain, [&](int64_t b, int64_t e) { std::fill(p + b, p + e, v); });
  });
}

void iota_kernel(KernelContext& ctx) {
  TensorData& out = ctx.outputs[0];
  int64_t axis = std::get<ir::IotaAttrs>(ctx.node.attrs).axis;
  const Shape& s = out.shape();
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  int64_t dim = s[axis];
  dispatch<DTypeGroup::numeric>(out.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(out.raw_data());
    parallel_for(out.num_elements(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>((i / inner) % dim));
    });
  });
}

}  // namespace

void register_source_kernels(KernelTable& t) {
  t.set(ir::OpKind::constant, constant_kernel);
  t.set(ir::OpKind::fill, fill_kernel);
  t.set(ir::OpKind::iota, iota_kernel);
}

}  // namespace tg::cpu
