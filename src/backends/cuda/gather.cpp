// CUDA kernels of the gather family: gather (axis, batch_dims), gather_nd (batch_dims),
// gather_elements, scatter_nd and scatter_elements (reductions none/add/mul/min/max), with the
// semantics and error messages of backends/cpu/gather.cpp. Gathers move elements by size (any
// dtype); scatters with a reduction take every dtype (bool add/max = or, mul/min = and).
// gather and gather_nd validate the raw indices (i32 or i64) in the copy kernel itself; the other
// ops first validate and normalize them on the device into an int64 buffer (check_indices). An
// out-of-range index raises tg::Error(out_of_range) after the run, naming the first bad position
// in row-major order, like the CPU (the run's device error record; no host sync in the kernel).
// Algorithms: kernels/gather.cu.
#include "backends/gather_util.h"
#include "backends/cuda/kernels/gather.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/dispatch.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/scalar_type.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda {
namespace {

using backends::check_element_shapes;
using backends::position;
using backends::product;

using kernels::ScalarType;




/// Scratch of one kernel call, from the run's workspace (declared scratch: no allocation in
/// steady state; valid for the work the kernel queues).
struct Scratch {
  KernelContext& ctx;
  void* get(size_t bytes) { return workspace_of(ctx, std::max<size_t>(bytes, 1)); }
  kernels::ScratchFn fn() {
    return [this](size_t bytes) { return get(bytes); };
  }
};

/// The error of an index out of range at a position the device found (the CPU's message).
backends::DeviceErrorFormatter index_error(const char* op, const char* operand, const std::vector<int64_t>& sizes,
                                           int64_t first_dim, const Shape& shape) {
  return [op = std::string(op), operand = std::string(operand), sizes, first_dim,
          shape](const backends::DeviceErrorRecord& r) {
    const int64_t b = r.detail[0], k = b % static_cast<int64_t>(sizes.size()), size = sizes[static_cast<size_t>(k)];
    return Error(ErrorCode::out_of_range,
                 fmt::format("[{}] index {} at indices position {} is out of range for dim {} of {} (size {}, "
                             "valid [{}, {}))",
                             op, r.detail[1], position(shape, b), first_dim + k, operand, size, -size, size));
  };
}

/// Validates the dtype of `idx` and the sizes its elements address (element i: dim
/// first_dim + i % sizes.size() of `operand`); raises on the host what is known without reading
/// the indices (a wrong dtype; a dim of size 0, where no index is valid).
void check_index_sizes(KernelContext& ctx, const TensorData& idx, const char* operand,
                       const std::vector<int64_t>& sizes, int64_t first_dim) {
  const char* op = ctx.op_name();
  if (idx.dtype() != DType::i32 && idx.dtype() != DType::i64) {
    fail(ErrorCode::dtype_mismatch, op, "indices must be i32 or i64, got {}",
         idx.type().to_string());
  }
  const int64_t n = idx.num_elements();
  if (n == 0) return;
  TG_CHECK_INTERNAL(!sizes.empty() &&
                        sizes.size() <= static_cast<size_t>(kernels::kMaxGatherDims) &&
                        n % static_cast<int64_t>(sizes.size()) == 0,
                    "index period does not divide the indices");
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0) {  // no index is valid: known without reading them
      backends::DeviceErrorRecord r;
      r.detail[0] = static_cast<long long>(k);
      TensorData host = idx.to(Device::cpu());
      r.detail[1] = static_cast<long long>(host.element_as_double(static_cast<int64_t>(k)));
      throw index_error(op, operand, sizes, first_dim, idx.shape())(r);
    }
  }
}

/// The indices of `idx` normalized to int64 on the device (see the CPU's load_indices): element i
/// addresses dim first_dim + i % sizes.size() of `operand`. An index out of range is found on the
/// device: it reads as 0 (so the op's kernel stays in bounds) and the run's device error record
/// names the first bad position and its value; the runtime raises the error after the run
/// (tg::Executable::run), with the message the CPU gives.
const int64_t* check_indices(KernelContext& ctx, Scratch& scratch, const TensorData& idx,
                             const char* operand, const std::vector<int64_t>& sizes,
                             int64_t first_dim) {
  const char* op = ctx.op_name();
  check_index_sizes(ctx, idx, operand, sizes, first_dim);
  const int64_t n = idx.num_elements();
  if (n == 0) return nullptr;
  kernels::IndexSizes is;
  is.period = static_cast<int>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) is.sizes[i] = sizes[i];
  auto* out = static_cast<int64_t*>(scratch.get(static_cast<size_t>(n) * sizeof(int64_t)));
  auto* flag = static_cast<unsigned long long*>(scratch.get(sizeof(unsigned long long)));
  kernels::normalize_indices(ptr(idx), idx.dtype() == DType::i64, n, is, out, flag, stream_of(ctx));
  check_launch(op, "normalize_indices");
  report_flag(flag, true, static_cast<unsigned long long>(n), ptr(idx), idx.dtype() == DType::i64,
              device_check(ctx, index_error(op, operand, sizes, first_dim, idx.shape())), stream_of(ctx), op);
  return out;
}

/// For the checked gathers (indices validated where the copy reads them): the flag the kernel
/// lowers, initialized to n on the stream. After the kernel, report_checked writes the run's
/// device error record from it.
unsigned long long* begin_checked(KernelContext& ctx, Scratch& scratch, const TensorData& idx) {
  auto* flag = static_cast<unsigned long long*>(scratch.get(sizeof(unsigned long long)));
  kernels::init_index_flag(flag, idx.num_elements(), stream_of(ctx));
  check_launch(ctx.op_name(), "init_index_flag");
  return flag;
}
void report_checked(KernelContext& ctx, unsigned long long* flag, const TensorData& idx, const char* operand,
                    const std::vector<int64_t>& sizes, int64_t first_dim) {
  const char* op = ctx.op_name();
  report_flag(flag, true, static_cast<unsigned long long>(idx.num_elements()), ptr(idx), idx.dtype() == DType::i64,
              device_check(ctx, index_error(op, operand, sizes, first_dim, idx.shape())), stream_of(ctx), op);
}

void check_rank(KernelContext& ctx, size_t rank) {
  if (rank > static_cast<size_t>(kernels::kMaxGatherDims)) {
    fail(ErrorCode::unsupported, ctx.op_name(), "rank {} is not supported on CUDA (at most {})",
         rank, kernels::kMaxGatherDims);
  }
}

kernels::ElementsParams elements_params(const Shape& xs, const Shape& is, int64_t axis) {
  kernels::ElementsParams p;
  p.rank = static_cast<int>(is.size());
  p.axis = static_cast<int>(axis);
  const std::vector<int64_t> xstr = row_major_strides(xs);
  for (size_t d = 0; d < is.size(); ++d) {
    p.idx_dims[d] = is[d];
    p.x_strides[d] = xstr[d];
  }
  return p;
}

void gather_kernel(KernelContext& ctx) {
  const auto& a = std::get<GatherDesc>(ctx.node.attrs);
  const TensorData &x = ctx.inputs[0], &idx = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  const Shape& xs = x.shape();
  auto axis = static_cast<size_t>(a.axis), bd = static_cast<size_t>(a.batch_dims);
  const int64_t dim = xs[axis];
  Scratch scratch{ctx};
  check_index_sizes(ctx, idx, "x", {dim}, a.axis);
  const int64_t batch = product(xs, 0, bd), pre = product(xs, bd, axis),
                slice = product(xs, axis + 1, xs.size());
  const int64_t per_batch = product(idx.shape(), bd, idx.shape().size());
  const int64_t rows = batch * pre * per_batch;
  TG_CHECK_INTERNAL(rows * slice == y.num_elements(), "gather output size");
  if (idx.num_elements() == 0) return;
  // Indices checked where the copy reads them (no normalization pass); when nothing is copied
  // (empty slices) they are still checked, by the normalization kernel.
  if (rows * slice == 0) {
    check_indices(ctx, scratch, idx, "x", {dim}, a.axis);
    return;
  }
  unsigned long long* flag = begin_checked(ctx, scratch, idx);
  kernels::gather_checked(ptr(x), ptr(y), static_cast<int>(dtype_size(x.dtype())), ptr(idx),
                          idx.dtype() == DType::i64, rows, slice, per_batch, pre, dim, flag, stream_of(ctx));
  check_launch(ctx.op_name(), "gather");
  report_checked(ctx, flag, idx, "x", {dim}, a.axis);
}

void gather_nd_kernel(KernelContext& ctx) {
  const auto& a = std::get<GatherNdDesc>(ctx.node.attrs);
  const TensorData &x = ctx.inputs[0], &idx = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  const Shape &xs = x.shape(), &is = idx.shape();
  auto bd = static_cast<size_t>(a.batch_dims), k = static_cast<size_t>(is.back());
  check_rank(ctx, k);
  std::vector<int64_t> sizes(xs.begin() + static_cast<std::ptrdiff_t>(bd),
                             xs.begin() + static_cast<std::ptrdiff_t>(bd + k));
  Scratch scratch{ctx};
  const int64_t batch = product(xs, 0, bd), tuples = product(is, bd, is.size() - 1);
  const int64_t slice = product(xs, bd + k, xs.size()), batch_stride = product(xs, bd, xs.size());
  const std::vector<int64_t> tuple_strides = row_major_strides(sizes);
  TG_CHECK_INTERNAL(batch * tuples * slice == y.num_elements(), "gather_nd output size");
  if (sizes.empty() || y.num_elements() == 0 || idx.num_elements() == 0) {
    // No index to read in the copy: the indices (if any) are checked by the normalization kernel.
    const int64_t* ind =
        sizes.empty() ? nullptr : check_indices(ctx, scratch, idx, "x", sizes, a.batch_dims);
    if (y.num_elements() == 0) return;
    kernels::gather_nd(ptr(x), ptr(y), static_cast<int>(dtype_size(x.dtype())), ind, batch * tuples,
                       tuples, static_cast<int>(k), tuple_strides.data(), slice, batch_stride,
                       stream_of(ctx));
    check_launch(ctx.op_name(), "gather_nd");
    return;
  }
  check_index_sizes(ctx, idx, "x", sizes, a.batch_dims);
  unsigned long long* flag = begin_checked(ctx, scratch, idx);
  kernels::gather_nd_checked(ptr(x), ptr(y), static_cast<int>(dtype_size(x.dtype())), ptr(idx),
                             idx.dtype() == DType::i64, batch * tuples, tuples, static_cast<int>(k),
                             tuple_strides.data(), sizes.data(), slice, batch_stride, flag, stream_of(ctx));
  check_launch(ctx.op_name(), "gather_nd");
  report_checked(ctx, flag, idx, "x", sizes, a.batch_dims);
}

void gather_elements_kernel(KernelContext& ctx) {
  const auto& a = std::get<GatherElementsDesc>(ctx.node.attrs);
  const TensorData &x = ctx.inputs[0], &idx = ctx.inputs[1];
  TensorData& y = ctx.outputs[0];
  const Shape &xs = x.shape(), &is = idx.shape();
  check_element_shapes(xs, is, a.axis, ctx.op_name());
  check_rank(ctx, is.size());
  TG_CHECK_INTERNAL(y.shape() == is, "gather_elements output shape");
  Scratch scratch{ctx};
  phases::Scope check_time("gather_check_indices");  // (a first run's 4-5 ms: where? docs/design/0011)
  const int64_t* ind =
      check_indices(ctx, scratch, idx, "x", {xs[static_cast<size_t>(a.axis)]}, a.axis);
  check_time.stop();
  if (y.num_elements() == 0) return;
  kernels::gather_elements(ptr(x), ptr(y), static_cast<int>(dtype_size(x.dtype())), ind,
                           y.num_elements(), elements_params(xs, is, a.axis), stream_of(ctx));
  check_launch(ctx.op_name(), "gather_elements");
}

int reduction_code(ScatterReduction r, const char* op) {
  switch (r) {
    case ScatterReduction::none:
      return 0;
    case ScatterReduction::add:
      return 1;
    case ScatterReduction::mul:
      return 2;
    case ScatterReduction::min:
      return 3;
    case ScatterReduction::max:
      return 4;
  }
  fail(ErrorCode::invalid_argument, op, "unknown reduction {}", static_cast<int>(r));
}

void copy_data(KernelContext& ctx, const TensorData& in, TensorData& out) {
  TG_CHECK_INTERNAL(in.nbytes() == out.nbytes(), "scatter output size differs from data");
  if (in.nbytes() == 0) return;
  check(cudaMemcpyAsync(ptr(out), ptr(in), in.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ctx)),
        ctx.op_name(), "cudaMemcpyAsync");
}

void scatter_nd_kernel(KernelContext& ctx) {
  const auto& a = std::get<ScatterNdDesc>(ctx.node.attrs);
  const TensorData &data = ctx.inputs[0], &idx = ctx.inputs[1], &upd = ctx.inputs[2];
  TensorData& y = ctx.outputs[0];
  const Shape &ds = data.shape(), &is = idx.shape();
  auto k = static_cast<size_t>(is.back());
  TG_CHECK_INTERNAL(k <= ds.size(), "scatter_nd index depth");
  check_rank(ctx, k);
  std::vector<int64_t> sizes(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(k));
  Scratch scratch{ctx};
  const int64_t* ind = sizes.empty() ? nullptr : check_indices(ctx, scratch, idx, "data", sizes, 0);
  const int64_t tuples = product(is, 0, is.size() - 1), slice = product(ds, k, ds.size());
  TG_CHECK_INTERNAL(tuples * slice == upd.num_elements(), "scatter_nd updates size");
  const int red = reduction_code(a.reduction, ctx.op_name());
  if (red != 0) cpu::dispatch<cpu::DTypeGroup::all>(data.dtype(), ctx.op_name(), [](auto) {});
  copy_data(ctx, data, y);
  kernels::ScatterParams p;
  p.units = tuples;
  p.slice = slice;
  p.num_targets = product(ds, 0, k);
  p.reduction = red;
  p.elements = false;
  p.k = static_cast<int>(k);
  const std::vector<int64_t> ts = row_major_strides(sizes);
  for (size_t j = 0; j < k; ++j) p.tuple_strides[j] = ts[j];
  kernels::scatter(kernels::ScalarType(scalar_type(data.dtype())), ptr(upd), ptr(y), ind, p,
                   scratch.fn(), stream_of(ctx));
  check_launch(ctx.op_name(), "scatter");
}

void scatter_elements_kernel(KernelContext& ctx) {
  const auto& a = std::get<ScatterElementsDesc>(ctx.node.attrs);
  const TensorData &data = ctx.inputs[0], &idx = ctx.inputs[1], &upd = ctx.inputs[2];
  TensorData& y = ctx.outputs[0];
  const Shape &ds = data.shape(), &is = idx.shape();
  check_element_shapes(ds, is, a.axis, ctx.op_name());
  check_rank(ctx, is.size());
  TG_CHECK_INTERNAL(upd.shape() == is, "scatter_elements updates shape");
  Scratch scratch{ctx};
  const int64_t* ind =
      check_indices(ctx, scratch, idx, "data", {ds[static_cast<size_t>(a.axis)]}, a.axis);
  const int red = reduction_code(a.reduction, ctx.op_name());
  if (red != 0) cpu::dispatch<cpu::DTypeGroup::all>(data.dtype(), ctx.op_name(), [](auto) {});
  copy_data(ctx, data, y);
  kernels::ScatterParams p;
  p.units = idx.num_elements();
  p.slice = 1;
  p.num_targets = data.num_elements();
  p.reduction = red;
  p.elements = true;
  p.ep = elements_params(ds, is, a.axis);
  kernels::scatter(scalar_type(data.dtype()), ptr(upd), ptr(y), ind, p, scratch.fn(),
                   stream_of(ctx));
  check_launch(ctx.op_name(), "scatter");
}

}  // namespace

void register_gather_kernels(KernelTable& t) {
  t.set(ir::OpKind::gather, gather_kernel);
  t.set(ir::OpKind::gather_nd, gather_nd_kernel);
  t.set(ir::OpKind::gather_elements, gather_elements_kernel);
  t.set(ir::OpKind::scatter_nd, scatter_nd_kernel);
  t.set(ir::OpKind::scatter_elements, scatter_elements_kernel);
}

}  // namespace tg::cuda
