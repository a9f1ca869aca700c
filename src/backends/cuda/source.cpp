// CUDA kernels of the source family: constant (the host value uploaded once and cached while it
// lives, runtime.h upload_cached), fill (every dtype: the value converted on the host exactly as
// the CPU does, TensorData::full, then written by cudaMemsetAsync when its bytes are all equal or
// by a generated kernel storing the raw bits), iota (numeric dtypes: element i is
// (i / inner) % dim converted like a cast from i64, as the CPU). Any rank; zero-size outputs
// launch nothing.
#include <cstring>

#include <fmt/format.h>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

void constant_kernel(KernelContext& ctx) {
  const TensorData& value = std::get<ir::ConstantAttrs>(ctx.node.attrs).value;
  ctx.outputs[0] = value.device().is_cpu() ? upload_cached(value, ctx.device.index, stream_of(ctx)) : value.to(ctx.device);
}

void fill_kernel(KernelContext& ctx) {
  const double value = std::get<ir::FillAttrs>(ctx.node.attrs).value;
  TensorData& out = ctx.outputs[0];
  if (out.num_elements() == 0) return;
  const TensorData one = TensorData::full({}, out.dtype(), value);
  const size_t size = dtype_size(out.dtype());
  unsigned char bytes[8] = {};
  std::memcpy(bytes, one.raw_data(), size);
  bool uniform = true;
  for (size_t k = 1; k < size; ++k) uniform = uniform && bytes[k] == bytes[0];
  if (uniform) {
    check(cudaMemsetAsync(out.storage_ptr(), bytes[0], out.nbytes(), stream_of(ctx)), ctx.op_name(), "cudaMemsetAsync");
    return;
  }
  int64_t bits = 0;
  std::memcpy(&bits, bytes, sizeof(bits));
  ElementwiseSpec spec;
  spec.outputs = {out.dtype()};
  spec.exprs = {fmt::format("tg_dev::from_bits<{}>(p0)", device_type(out.dtype()))};
  spec.num_params = 1;
  const int64_t params[] = {bits};
  run_elementwise(ctx, spec, {}, ctx.outputs, params);
}

void iota_kernel(KernelContext& ctx) {
  TensorData& out = ctx.outputs[0];
  require_dtype(DTypeGroup::numeric, out.dtype(), ctx.op_name());
  const int64_t axis = std::get<ir::IotaAttrs>(ctx.node.attrs).axis;
  const Shape& s = out.shape();
  if (out.num_elements() == 0) return;
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) {
    fail(ErrorCode::invalid_argument, ctx.op_name(), "axis {} out of range for shape {}", axis, str(s));
  }
  int64_t inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  ElementwiseSpec spec;
  spec.outputs = {out.dtype()};
  spec.exprs = {fmt::format("tg_dev::convert<{}, long long>(static_cast<long long>((i / p0) % p1))",
                            device_type(out.dtype()))};
  spec.num_params = 2;
  const int64_t params[] = {inner, s[static_cast<size_t>(axis)]};
  run_elementwise(ctx, spec, {}, ctx.outputs, params);
}

}  // namespace

void register_source_kernels(KernelTable& t) {
  t.set(ir::OpKind::constant, constant_kernel);
  t.set(ir::OpKind::fill, fill_kernel);
  t.set(ir::OpKind::iota, iota_kernel);
}

}  // namespace tg::cuda
