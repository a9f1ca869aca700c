// NCCL loaded at run time and the NCCL communicator group (nccl.h).
#include "backends/cuda/nccl.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "backends/cuda/context.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

template <typename F>
void load_symbol(void* lib, const char* name, F& out) {
  void* sym = dlsym(lib, name);
  if (!sym) {
    fail(ErrorCode::unsupported, "nccl", "the NCCL library has no {} (NCCL >= 2.10 is needed)", name);
  }
  out = reinterpret_cast<F>(sym);
}

}  // namespace

NcclApi load_nccl_library(const char* name) {
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    fail(ErrorCode::unsupported, "nccl", "cannot load {} ({}): install NCCL (e.g. PyTorch's "
         "nvidia-nccl package) and put its lib folder on LD_LIBRARY_PATH", name, why ? why : "not found");
  }
  NcclApi api{};
  load_symbol(lib, "ncclGetVersion", api.get_version);
  load_symbol(lib, "ncclGetUniqueId", api.get_unique_id);
  load_symbol(lib, "ncclCommInitRank", api.comm_init_rank);
  load_symbol(lib, "ncclCommDestroy", api.comm_destroy);
  load_symbol(lib, "ncclAllReduce", api.all_reduce);
  load_symbol(lib, "ncclAllGather", api.all_gather);
  load_symbol(lib, "ncclReduceScatter", api.reduce_scatter);
  load_symbol(lib, "ncclBroadcast", api.broadcast);
  load_symbol(lib, "ncclGetErrorString", api.get_error_string);
  api.get_version(&api.version);
  if (api.version < 21000) {  // ncclAvg and ncclBfloat16 came with 2.10
    fail(ErrorCode::unsupported, "nccl", "libnccl.so.2 is version {}: NCCL >= 2.10 is needed", api.version);
  }
  return api;  // the library stays loaded for the process's life
}

namespace {

// Rank 0 writes the id (to a temporary name, then renamed: readers never see half a file).
void write_id(const NcclUniqueId& id, const std::string& path) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(id.internal, sizeof(id.internal));
    if (!out) fail(ErrorCode::io_error, "Communicator::nccl", "cannot write the NCCL id to '{}'", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(ErrorCode::io_error, "Communicator::nccl", "cannot rename '{}' to '{}': {}", tmp, path, ec.message());
}

NcclUniqueId read_id(const std::string& path, int rank, double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    NcclUniqueId id{};
    if (in && in.read(id.internal, sizeof(id.internal))) return id;
    if (std::chrono::steady_clock::now() > deadline) {
      fail(ErrorCode::io_error, "Communicator::nccl", "rank {}: the NCCL id file '{}' did not appear within {:g} s "
           "(rank 0 writes it; the path must be shared by every rank)", rank, path, timeout_seconds);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

const NcclApi& nccl_api() {
  static std::mutex m;
  static std::unique_ptr<NcclApi> api;
  std::lock_guard lock(m);
  if (!api) api = std::make_unique<NcclApi>(load_nccl_library("libnccl.so.2"));  // a failed load is retried next time
  return *api;
}

void check_nccl(NcclResult r, std::string_view op, std::string_view what) {
  if (r == 0) return;
  const char* s = nccl_api().get_error_string ? nccl_api().get_error_string(r) : "?";
  fail(ErrorCode::io_error, op, "{}: NCCL error {}: {}", what, r, s);
}

NcclGroup::NcclGroup(int rank, int world_size, int device, const std::string& id_file, double timeout_seconds)
    : CommGroup(world_size, CommBackend::nccl), rank_(rank), device_(device) {
  const NcclApi& api = nccl_api();
  activate(device);  // ncclCommInitRank binds the communicator to the current device
  NcclUniqueId id{};
  if (rank == 0) {
    check_nccl(api.get_unique_id(&id), "Communicator::nccl", "ncclGetUniqueId");
    write_id(id, id_file);
  } else {
    id = read_id(id_file, rank, timeout_seconds);
  }
  check_nccl(api.comm_init_rank(&comm_, world_size, id, rank), "Communicator::nccl", "ncclCommInitRank");
}

NcclGroup::~NcclGroup() {
  if (side_) cudaStreamSynchronize(side_);
  if (comm_) nccl_api().comm_destroy(comm_);
  if (side_) cudaStreamDestroy(side_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaStream_t NcclGroup::side_stream() const {
  std::lock_guard lock(side_mu_);
  if (!side_) {
    activate(device_);
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "all_reduce", "cudaDeviceGetStreamPriorityRange");
    check(cudaStreamCreateWithPriority(&side_, cudaStreamNonBlocking, greatest), "all_reduce",
          "cudaStreamCreateWithPriority");
  }
  return side_;
}

cudaEvent_t NcclGroup::take_event() const {
  std::lock_guard lock(side_mu_);
  if (!events_.empty()) {
    cudaEvent_t e = events_.back();
    events_.pop_back();
    return e;
  }
  activate(device_);
  cudaEvent_t e = nullptr;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "all_reduce", "cudaEventCreate");
  return e;
}

void NcclGroup::give_event(cudaEvent_t e) const {
  std::lock_guard lock(side_mu_);
  events_.push_back(e);
}

}  // namespace tg::cuda
