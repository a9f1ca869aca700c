// Collective communication as graph ops (data-parallel training, docs/distributed.md).
//
// A Communicator names a group of `world_size` ranks (processes or threads) and this caller's
// rank in it. The collective ops (all_reduce, all_gather, reduce_scatter, broadcast) are graph
// ops carrying their communicator: every rank builds the same graph (the same collectives in the
// same order, with the same shapes and dtypes) and runs it; the k-th collective a rank runs on a
// communicator meets the k-th collective of every other rank. Their semantics are NCCL's
// (ncclAllReduce, ncclAllGather, ncclReduceScatter, ncclBroadcast) and MPI's (MPI_Allreduce,
// MPI_Allgather, MPI_Reduce_scatter_block, MPI_Bcast), rank order being concatenation order.
//
// Backends of a communicator:
// - single: world size 1. Every collective is the identity (all_reduce mean included).
// - in_process: N threads of one process act as N ranks (Communicator::in_process): each
//   collective is a rendezvous of the N threads (a barrier), the result computed on the host in
//   rank order (identical bits on every rank). For tests and CPU simulation of data parallelism.
// - nccl: one process per GPU, NCCL loaded at run time (libnccl.so.2; docs/distributed.md).
//
// Errors: a rank that waits longer than the communicator's timeout for the others (a rank that
// failed or built another graph) raises tg::Error(io_error) "[all_reduce] ... timed out", and the
// communicator is then broken: every later collective on it raises at once (never a hang); ranks
// that meet with different shapes, dtypes or ops raise tg::Error(shape_mismatch) on every rank,
// naming both ranks' types.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

/// How a communicator's ranks talk.
enum class CommBackend { single, in_process, nccl };
/// "single", "in_process", "nccl".
TG_API const char* comm_backend_name(CommBackend backend);

/// The reduction of all_reduce and reduce_scatter (NCCL's ncclSum, ncclAvg, ncclMax, ncclMin).
/// mean is the sum divided by the world size (floating dtypes only).
enum class CollectiveReduction { sum, mean, max, min };
/// "sum", "mean", "max", "min".
TG_API const char* collective_reduction_name(CollectiveReduction r);

namespace detail {
class CommGroup;
}

struct InProcessOptions {
  /// Seconds a rank waits at a rendezvous for the other ranks before it raises (and breaks the
  /// communicator). > 0.
  double timeout_seconds = 300;
};

/// Rank, world size and local rank of this process, as a launcher set them.
struct LaunchEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;     ///< the GPU this process uses on its host
  std::string launcher;   ///< "torchrun", "openmpi", "slurm", or "none"
};
/// Reads the launchers' variables, first found wins: torchrun/torch.distributed (RANK,
/// WORLD_SIZE, LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
/// OMPI_COMM_WORLD_LOCAL_RANK), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID); none set:
/// rank 0 of 1, launcher "none". A variable that is not a non-negative integer, a rank outside
/// [0, world size) or a world size < 1 raises tg::Error(invalid_argument) naming the variable.
TG_API LaunchEnvironment launch_environment();

/// A group of ranks and this caller's place in it. Cheap to copy (copies share the group). The
/// default communicator is the single one (rank 0 of 1).
class TG_API Communicator {
 public:
  Communicator();
  /// Rank 0 of 1: every collective is the identity.
  static Communicator single();
  /// `world_size` communicators of one new group, element r being rank r's, for world_size
  /// threads of this process (each thread builds and runs its own graph with its own element).
  /// world_size >= 1 and options.timeout_seconds > 0, else tg::Error(invalid_argument).
  static std::vector<Communicator> in_process(int world_size, InProcessOptions options = {});
  /// Rank `rank` of `world_size` processes, one per GPU, over NCCL (libnccl.so.2 loaded at run
  /// time; cuda device `device` is this rank's). Rank 0 writes the NCCL unique id to `id_file`
  /// (a path every rank can read: a shared file system across hosts) and the others wait for it
  /// (up to options.timeout_seconds), then every rank calls ncclCommInitRank. NCCL's own
  /// environment settings (NCCL_*) are left as the machine sets them. Errors:
  /// tg::Error(unsupported) when this build has no CUDA backend or libnccl.so.2 cannot be loaded
  /// (naming the library and dlerror); tg::Error(io_error) when the id file cannot be written or
  /// does not appear in time, or NCCL fails (ncclGetErrorString); bad rank/world_size/device:
  /// tg::Error(invalid_argument).
  static Communicator nccl(int rank, int world_size, int device, const std::string& id_file,
                           InProcessOptions options = {});

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  CommBackend backend() const { return backend_; }
  /// Process-wide id of the group (graphs' collective nodes refer to the group by it).
  uint64_t group_id() const { return group_id_; }
  /// "in_process rank 1 of 2".
  std::string to_string() const;

  /// The group (implementation detail; null for the single communicator).
  const std::shared_ptr<detail::CommGroup>& group() const { return group_; }
  Communicator(std::shared_ptr<detail::CommGroup> group, int rank, int world_size, CommBackend backend);

 private:
  std::shared_ptr<detail::CommGroup> group_;
  int rank_ = 0;
  int world_size_ = 1;
  CommBackend backend_ = CommBackend::single;
  uint64_t group_id_ = 0;
};

struct AllReduceDesc {
  CollectiveReduction reduction = CollectiveReduction::sum;
};
/// Every rank gets the elementwise reduction over the ranks of x (ncclAllReduce). x: any shape,
/// numeric dtype (mean: floating only), the same type on every rank; output: x's type. Sums are
/// accumulated in rank order (0, 1, ...) in the dtype's compute type (f64 for f32 on the CPU).
/// Gradient: sum and mean are their own transposes (dx = all_reduce(dy) with the same
/// reduction); max and min pass all_reduce_sum(dy) to the ranks whose x equals the result.
/// Errors: bool x or integer x with mean: tg::Error(dtype_mismatch) "[all_reduce] ...".
TG_API Tensor all_reduce(Tensor x, const Communicator& comm, AllReduceDesc desc = {});

struct AllGatherDesc {
  int64_t axis = 0;  ///< negative counts from the end
};
/// Concatenation along `axis` of every rank's x, in rank order (ncclAllGather for axis 0).
/// x: [d0, ..., dk, ...] of rank >= 1, any dtype, the same type on every rank; output: dim `axis`
/// times world_size. Gradient: reduce_scatter(dy, sum, axis). Errors: a scalar x or an axis out
/// of range: tg::Error(invalid_argument) "[all_gather] ...".
TG_API Tensor all_gather(Tensor x, const Communicator& comm, AllGatherDesc desc = {});

struct ReduceScatterDesc {
  CollectiveReduction reduction = CollectiveReduction::sum;
  int64_t axis = 0;  ///< negative counts from the end
};
/// The reduction over ranks of x (as all_reduce), split along `axis` into world_size equal
/// blocks, rank r getting block r (ncclReduceScatter for axis 0, MPI_Reduce_scatter_block).
/// x: rank >= 1, numeric dtype (mean: floating); output: dim `axis` divided by world_size.
/// Gradient: all_gather(dy, axis) (divided by world_size for mean; masked where x equals the
/// result for max and min). Errors: dim `axis` not divisible by the world size:
/// tg::Error(shape_mismatch) "[reduce_scatter] dim 0 of x [6,4] (6) is not divisible by the
/// world size 4"; a scalar x, a bad axis or dtype as all_gather and all_reduce.
TG_API Tensor reduce_scatter(Tensor x, const Communicator& comm, ReduceScatterDesc desc = {});

struct BroadcastDesc {
  int root = 0;  ///< the rank whose x every rank gets
};
/// Every rank gets rank `root`'s x (ncclBroadcast, MPI_Bcast); the other ranks' x only give the
/// type (same on every rank). Any shape and dtype. Gradient: on root the sum over ranks of dy
/// (all_reduce sum), elsewhere zero. Errors: root outside [0, world_size):
/// tg::Error(invalid_argument) "[broadcast] root 2 is not a rank of a world of 2".
TG_API Tensor broadcast(Tensor x, const Communicator& comm, BroadcastDesc desc = {});

}  // namespace tg
