// NCCL, loaded at run time (dlopen("libnccl.so.2")): the few entry points the collective kernels
// call, declared here with NCCL's ABI (nccl.h of NCCL 2.x), so that the build needs no NCCL, and
// the NCCL communicator group (one rank per process and GPU).
#pragma once
#include <cuda_runtime.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/communicator.h"

namespace tg::cuda {

/// NCCL's types (nccl.h, ABI-stable across NCCL 2.x).
struct NcclUniqueId {
  char internal[128];
};
using NcclComm = struct ncclComm*;
using NcclResult = int;  ///< ncclSuccess = 0
enum NcclDataType : int {
  nccl_int8 = 0, nccl_uint8 = 1, nccl_int32 = 2, nccl_uint32 = 3, nccl_int64 = 4, nccl_uint64 = 5,
  nccl_float16 = 6, nccl_float32 = 7, nccl_float64 = 8, nccl_bfloat16 = 9
};
enum NcclRedOp : int { nccl_sum = 0, nccl_prod = 1, nccl_max = 2, nccl_min = 3, nccl_avg = 4 };

/// The entry points of libnccl.so.2.
struct NcclApi {
  NcclResult (*get_version)(int*);
  NcclResult (*get_unique_id)(NcclUniqueId*);
  NcclResult (*comm_init_rank)(NcclComm*, int, NcclUniqueId, int);
  NcclResult (*comm_destroy)(NcclComm);
  NcclResult (*all_reduce)(const void*, void*, size_t, NcclDataType, NcclRedOp, NcclComm, cudaStream_t);
  NcclResult (*all_gather)(const void*, void*, size_t, NcclDataType, NcclComm, cudaStream_t);
  NcclResult (*reduce_scatter)(const void*, void*, size_t, NcclDataType, NcclRedOp, NcclComm, cudaStream_t);
  NcclResult (*broadcast)(const void*, void*, size_t, NcclDataType, int, NcclComm, cudaStream_t);
  const char* (*get_error_string)(NcclResult);
  int version = 0;  ///< e.g. 22703 for 2.27.3
};

/// libnccl.so.2's entry points, loaded on first use (the library found as dlopen finds it:
/// LD_LIBRARY_PATH, the system's paths). Raises tg::Error(unsupported) "[nccl] cannot load
/// libnccl.so.2 (<dlerror>) ..." when it is missing or lacks an entry point (NCCL < 2.10).
const NcclApi& nccl_api();
/// Loads the NCCL library `name` (dlopen) and its entry points; what nccl_api() does with
/// "libnccl.so.2". Raises as nccl_api() does, naming `name`.
NcclApi load_nccl_library(const char* name);
/// Raises tg::Error(io_error) "[op] what: <ncclGetErrorString>" unless r is ncclSuccess.
void check_nccl(NcclResult r, std::string_view op, std::string_view what);

/// NCCL ranks: one per process, on cuda:`device`. The unique id travels through `id_file`.
class NcclGroup : public detail::CommGroup {
 public:
  NcclGroup(int rank, int world_size, int device, const std::string& id_file, double timeout_seconds);
  ~NcclGroup() override;
  NcclComm comm() const { return comm_; }
  int device() const { return device_; }
  int rank() const { return rank_; }
  /// The stream the collectives run on when they overlap the run's kernels (side_work.h):
  /// non-blocking, of the device's highest priority (as PyTorch's NCCL streams), made on first
  /// use. One per group, so the group's collectives keep their order.
  cudaStream_t side_stream() const;
  /// An event of the group's device (disable-timing), from a pool; give it back when done.
  cudaEvent_t take_event() const;
  void give_event(cudaEvent_t e) const;

 private:
  mutable std::mutex side_mu_;
  mutable cudaStream_t side_ = nullptr;
  mutable std::vector<cudaEvent_t> events_;
  NcclComm comm_ = nullptr;
  int rank_ = 0;
  int device_ = 0;
};

}  // namespace tg::cuda
