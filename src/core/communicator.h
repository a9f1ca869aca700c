// Communicator groups (include/tg/collective.h): the process-wide registry that collective
// kernels find a group in by id, and the in-process group, where N threads act as N ranks and
// every collective is a rendezvous (two barriers) with a timeout.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tg/collective.h"

namespace tg::detail {

/// A group of ranks. Registered in the process-wide registry while it lives.
class CommGroup {
 public:
  CommGroup(int world_size, CommBackend backend);
  virtual ~CommGroup();
  CommGroup(const CommGroup&) = delete;
  CommGroup& operator=(const CommGroup&) = delete;
  uint64_t id() const { return id_; }
  int world_size() const { return world_size_; }
  CommBackend backend() const { return backend_; }

 private:
  uint64_t id_;
  int world_size_;
  CommBackend backend_;
};

}  // namespace tg::detail

namespace tg::core {

/// The live group of `id`; tg::Error(not_found) "[op] ..." when there is none (the last
/// Communicator of the group was destroyed, or the id comes from another process).
std::shared_ptr<detail::CommGroup> find_comm_group(uint64_t id, std::string_view op);

/// Ranks that are threads of this process. Each collective call is a rendezvous: every rank
/// publishes its input and a signature (op, parameters, type), waits for the others (barrier 1),
/// computes its own output reading every rank's input (`compute`, outside the lock), and waits
/// again (barrier 2) so that no input is released while another rank reads it.
class InProcessGroup : public detail::CommGroup {
 public:
  InProcessGroup(int world_size, double timeout_seconds);

  /// One collective of rank `rank`. `signature` ("all_reduce(sum) f32[4,3]") must be the same
  /// on every rank, else every rank raises tg::Error(shape_mismatch) naming both. compute
  /// receives every rank's input pointer, in rank order. A wait longer than the timeout raises
  /// tg::Error(io_error) and breaks the group (every later call raises at once).
  void exchange(int rank, std::string_view op, const std::string& signature, const void* input,
                const std::function<void(std::span<const void* const> inputs)>& compute);

 private:
  void arrive(std::unique_lock<std::mutex>& lock, std::string_view op, int rank, const char* where);
  [[noreturn]] void fail_broken(std::string_view op) const;

  std::chrono::duration<double> timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  bool broken_ = false;
  std::string broken_why_;
  std::vector<std::string> signatures_;
  std::vector<const void*> inputs_;
};

/// A group of NCCL ranks (one per process and GPU): defined above core (src/backends/registry.cpp,
/// the CUDA backend's NcclGroup). Raises tg::Error(unsupported) in a build without CUDA.
std::shared_ptr<detail::CommGroup> make_nccl_group(int rank, int world_size, int device,
                                                   const std::string& id_file, double timeout_seconds);

}  // namespace tg::core
