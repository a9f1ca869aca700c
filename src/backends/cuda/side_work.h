// Work a kernel queued on a stream of its own (NCCL's collectives: backends/cuda/collective.cpp)
// that the run's stream has not waited for yet. The collective forks from the run's stream (an
// event the side stream waits for), queues its work on the side stream and records a "done"
// event; the run's stream waits for that event (the join) only when a later kernel reads the
// collective's output or writes over its input or output (stream_of in context.h checks every
// kernel's buffers), or when the runtime copies, commits, reads a device value, records a
// conditional node, ends a capture or ends a run (Backend::join_side_streams): every pending
// work is joined then. Fork and join are event record
// and wait, so a CUDA graph capture takes them in as edges: the side stream joins the capture and
// is joined back before it ends. Pending work is per host thread (a run is queued by one thread).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

#include "backends/kernel.h"

namespace tg::cuda {

/// One collective's side-stream work: the buffers it reads and writes until `done` completes.
struct SideWork {
  cudaStream_t run = nullptr;  ///< the stream to join it into
  cudaEvent_t done = nullptr;  ///< recorded on the side stream after the work
  const void* in = nullptr;
  size_t in_bytes = 0;
  const void* out = nullptr;
  size_t out_bytes = 0;
  /// Gives `done` back to its pool once the run's stream waits for it.
  std::function<void(cudaEvent_t)> release;
};

/// Whether collectives may run on a side stream now: TG_NCCL_OVERLAP is not "0", and the calling
/// thread is not capturing a conditional node's body (there they run on the body's stream).
bool side_work_allowed();
/// Adds a collective's pending work.
void add_side_work(SideWork work);
/// The run's stream `s` waits for the pending work whose buffers the kernel's inputs or outputs
/// overlap (called by stream_of for every kernel; nothing to do in the common case).
void join_conflicting_side_work(const backends::KernelContext& ctx, cudaStream_t s);
/// The run's stream `s` waits for every pending work queued from it.
void join_side_work(cudaStream_t s);
/// Every pending work joined into its own run stream.
void join_all_side_work();
/// Forgets the pending work without joining (a capture that failed and was abandoned).
void drop_side_work();
/// Marks the calling thread as capturing a conditional body (no side work there) while alive.
struct ConditionalBodyScope {
  ConditionalBodyScope();
  ~ConditionalBodyScope();
};

}  // namespace tg::cuda
