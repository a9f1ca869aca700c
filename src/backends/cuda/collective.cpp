// CUDA kernels of the collective family: the single communicator is a copy; NCCL groups call NCCL in
// the run's stream order (so the calls are captured into the executable's CUDA graph: NCCL >= 2.9
// supports capture). all_reduce and broadcast run on the group's own stream, forked from the run's
// stream and joined back when a later kernel needs their buffers (side_work.h): a data-parallel
// step's gradient buckets are reduced while the backward of the earlier layers computes (PyTorch
// DDP's overlap; TG_NCCL_OVERLAP=0 keeps them on the run's stream). all_gather and reduce_scatter
// stay on the run's stream (they may use the run's scratch). Along an axis with dims before it,
// they go through a scratch buffer whose rank blocks are moved into place with cudaMemcpy2DAsync.
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl.h"
#include "backends/cuda/side_work.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

NcclDataType nccl_type(DType t) {
  switch (t) {
    case DType::bool_:
    case DType::u8: return nccl_uint8;
    case DType::i8: return nccl_int8;
    case DType::i32: return nccl_int32;
    case DType::i64: return nccl_int64;
    case DType::f16: return nccl_float16;
    case DType::bf16: return nccl_bfloat16;
    case DType::f32: return nccl_float32;
    case DType::f64: return nccl_float64;
  }
  return nccl_uint8;
}

NcclRedOp nccl_op(CollectiveReduction r) {
  switch (r) {
    case CollectiveReduction::sum: return nccl_sum;
    case CollectiveReduction::mean: return nccl_avg;
    case CollectiveReduction::max: return nccl_max;
    case CollectiveReduction::min: return nccl_min;
  }
  return nccl_sum;
}

// Dims before `axis` (product) and the bytes of one row from `axis` on.
std::pair<int64_t, size_t> outer_and_row(const TensorData& t, int64_t axis) {
  int64_t outer = 1, rest = 1;
  for (int64_t d = 0; d < t.rank(); ++d) (d < axis ? outer : rest) *= t.shape()[d];
  return {outer, static_cast<size_t>(rest) * dtype_size(t.dtype())};
}

// all_reduce and broadcast on the group's side stream: fork (the side stream waits for the work
// queued on `run` so far), `call` on the side stream, then the pending join (side_work.h) that
// the run's stream waits for before a kernel touches x's or y's buffer.
template <typename Call>
void on_side_stream(KernelContext& ctx, const std::shared_ptr<detail::CommGroup>& group, const NcclGroup& g,
                    cudaStream_t run, Call&& call) {
  const char* op = ctx.op_name();
  cudaStream_t side = g.side_stream();
  cudaEvent_t fork = g.take_event();
  check(cudaEventRecord(fork, run), op, "cudaEventRecord (fork to NCCL's stream)");
  check(cudaStreamWaitEvent(side, fork, 0), op, "cudaStreamWaitEvent (fork to NCCL's stream)");
  g.give_event(fork);  // a later record does not change what the wait above waits for
  call(side);
  cudaEvent_t done = g.take_event();
  check(cudaEventRecord(done, side), op, "cudaEventRecord (NCCL's work done)");
  const TensorData& x = ctx.inputs[0];
  const TensorData& y = ctx.outputs[0];
  add_side_work({run, done, x.storage_ptr(), x.nbytes(), y.storage_ptr(), y.nbytes(),
                 [group](cudaEvent_t e) { static_cast<const NcclGroup&>(*group).give_event(e); }});
}

void nccl_collective(KernelContext& ctx, const ir::CollectiveAttrs& a, const std::shared_ptr<detail::CommGroup>& group,
                     const NcclGroup& g) {
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  const char* op = ctx.op_name();
  const NcclApi& api = nccl_api();
  cudaStream_t s = stream_of(ctx);
  const void* in = x.storage_ptr();
  void* out = y.storage_ptr();
  const bool side = side_work_allowed();
  switch (ctx.node.kind) {
    case ir::OpKind::all_reduce: {
      auto call = [&](cudaStream_t cs) {
        check_nccl(api.all_reduce(in, out, static_cast<size_t>(x.num_elements()), nccl_type(x.dtype()),
                                  nccl_op(a.reduction), g.comm(), cs), op, "ncclAllReduce");
      };
      if (side) {
        on_side_stream(ctx, group, g, s, call);
      } else {
        call(s);
      }
      return;
    }
    case ir::OpKind::broadcast: {
      auto call = [&](cudaStream_t cs) {
        check_nccl(api.broadcast(in, out, x.nbytes(), nccl_uint8, a.root, g.comm(), cs), op, "ncclBroadcast");
      };
      if (side) {
        on_side_stream(ctx, group, g, s, call);
      } else {
        call(s);
      }
      return;
    }
    case ir::OpKind::all_gather: {
      auto [outer, row] = outer_and_row(x, a.axis);
      if (outer == 1) {
        check_nccl(api.all_gather(in, out, x.nbytes(), nccl_uint8, g.comm(), s), op, "ncclAllGather");
        return;
      }
      // scratch [rank][outer][row] -> y [outer][rank][row]
      auto* tmp = static_cast<char*>(workspace_of(ctx, y.nbytes()));
      check_nccl(api.all_gather(in, tmp, x.nbytes(), nccl_uint8, g.comm(), s), op, "ncclAllGather");
      for (int r = 0; r < a.world_size; ++r) {
        check(cudaMemcpy2DAsync(static_cast<char*>(out) + r * row, row * a.world_size, tmp + r * x.nbytes(), row, row,
                                static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, s), op, "cudaMemcpy2DAsync");
      }
      return;
    }
    case ir::OpKind::reduce_scatter: {
      auto [outer, row] = outer_and_row(y, a.axis);  // row: one rank's block of an x row
      const size_t count = static_cast<size_t>(y.num_elements());
      if (outer == 1) {
        check_nccl(api.reduce_scatter(in, out, count, nccl_type(x.dtype()), nccl_op(a.reduction), g.comm(), s), op,
                   "ncclReduceScatter");
        return;
      }
      // x [outer][rank][row] -> scratch [rank][outer][row], then reduce-scatter the rank blocks
      auto* tmp = static_cast<char*>(workspace_of(ctx, x.nbytes()));
      for (int r = 0; r < a.world_size; ++r) {
        check(cudaMemcpy2DAsync(tmp + r * y.nbytes(), row, static_cast<const char*>(in) + r * row, row * a.world_size,
                                row, static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, s), op, "cudaMemcpy2DAsync");
      }
      check_nccl(api.reduce_scatter(tmp, out, count, nccl_type(x.dtype()), nccl_op(a.reduction), g.comm(), s), op,
                 "ncclReduceScatter");
      return;
    }
    default:
      TG_CHECK_INTERNAL(false, "not a collective");
  }
}

void collective_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::CollectiveAttrs>(ctx.node.attrs);
  const TensorData& x = ctx.inputs[0];
  TensorData& y = ctx.outputs[0];
  if (a.group == 0) {  // the single communicator: the identity (an NCCL rank of 1 still calls NCCL)
    if (x.nbytes() > 0) {
      check(cudaMemcpyAsync(ptr(y), ptr(x), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ctx)), ctx.op_name(),
            "cudaMemcpyAsync");
    }
    return;
  }
  std::shared_ptr<detail::CommGroup> group = core::find_comm_group(a.group, ctx.op_name());
  const auto* nccl = dynamic_cast<const NcclGroup*>(group.get());
  if (!nccl) {
    fail(ErrorCode::unsupported, ctx.op_name(), "a CUDA device runs NCCL communicators, not {} ones (x {})",
         comm_backend_name(a.backend), x.type().to_string());
  }
  if (nccl->device() != ctx.device.index) {
    fail(ErrorCode::invalid_argument, ctx.op_name(), "rank {}'s NCCL communicator is on cuda:{}, the executable on {}",
         a.rank, nccl->device(), ctx.device.to_string());
  }
  nccl_collective(ctx, a, group, *nccl);
}

}  // namespace

void register_collective_kernels(KernelTable& t) {
  t.set(ir::OpKind::all_reduce, collective_kernel);
  t.set(ir::OpKind::all_gather, collective_kernel);
  t.set(ir::OpKind::reduce_scatter, collective_kernel);
  t.set(ir::OpKind::broadcast, collective_kernel);
}

std::shared_ptr<detail::CommGroup> make_nccl_group(int rank, int world_size, int device, const std::string& id_file,
                                                   double timeout_seconds) {
  return std::make_shared<NcclGroup>(rank, world_size, device, id_file, timeout_seconds);
}

}  // namespace tg::cuda
