// Communicators: the public tg::Communicator, the registry of live groups, the in-process group
// (threads as ranks) and the launchers' environment variables.
#include "core/communicator.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "core/error_util.h"

namespace tg {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
// Live groups by id: a Communicator registers its group; the group's destructor removes it.
std::map<uint64_t, std::weak_ptr<detail::CommGroup>>& owners() {
  static std::map<uint64_t, std::weak_ptr<detail::CommGroup>> r;
  return r;
}

uint64_t next_group_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

}  // namespace

const char* comm_backend_name(CommBackend backend) {
  switch (backend) {
    case CommBackend::single: return "single";
    case CommBackend::in_process: return "in_process";
    case CommBackend::nccl: return "nccl";
  }
  return "?";
}

const char* collective_reduction_name(CollectiveReduction r) {
  switch (r) {
    case CollectiveReduction::sum: return "sum";
    case CollectiveReduction::mean: return "mean";
    case CollectiveReduction::max: return "max";
    case CollectiveReduction::min: return "min";
  }
  return "?";
}

namespace detail {

CommGroup::CommGroup(int world_size, CommBackend backend)
    : id_(next_group_id()), world_size_(world_size), backend_(backend) {}

CommGroup::~CommGroup() {
  std::lock_guard lock(registry_mutex());
  owners().erase(id_);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------

Communicator::Communicator() = default;

Communicator::Communicator(std::shared_ptr<detail::CommGroup> group, int rank, int world_size,
                           CommBackend backend)
    : group_(std::move(group)), rank_(rank), world_size_(world_size), backend_(backend),
      group_id_(group_ ? group_->id() : 0) {
  if (group_) {
    std::lock_guard lock(registry_mutex());
    owners()[group_id_] = group_;
  }
}

Communicator Communicator::single() { return Communicator(); }

std::vector<Communicator> Communicator::in_process(int world_size, InProcessOptions options) {
  if (world_size < 1) {
    fail(ErrorCode::invalid_argument, "Communicator::in_process", "world_size = {} must be >= 1", world_size);
  }
  if (!(options.timeout_seconds > 0)) {
    fail(ErrorCode::invalid_argument, "Communicator::in_process", "timeout_seconds = {} must be > 0",
         options.timeout_seconds);
  }
  auto group = std::make_shared<core::InProcessGroup>(world_size, options.timeout_seconds);
  std::vector<Communicator> out;
  for (int r = 0; r < world_size; ++r) out.emplace_back(group, r, world_size, CommBackend::in_process);
  return out;
}

Communicator Communicator::nccl(int rank, int world_size, int device, const std::string& id_file,
                                InProcessOptions options) {
  constexpr std::string_view op = "Communicator::nccl";
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    fail(ErrorCode::invalid_argument, op, "rank {} is not a rank of a world of {}", rank, world_size);
  }
  if (device < 0) fail(ErrorCode::invalid_argument, op, "device {} must be >= 0", device);
  if (id_file.empty()) fail(ErrorCode::invalid_argument, op, "id_file is empty");
  if (!(options.timeout_seconds > 0)) {
    fail(ErrorCode::invalid_argument, op, "timeout_seconds = {} must be > 0", options.timeout_seconds);
  }
  auto group = core::make_nccl_group(rank, world_size, device, id_file, options.timeout_seconds);
  return Communicator(std::move(group), rank, world_size, CommBackend::nccl);
}

std::string Communicator::to_string() const {
  return fmt::format("{} rank {} of {}", comm_backend_name(backend_), rank_, world_size_);
}

// ---------------------------------------------------------------------------------------------

namespace {

// The value of variable `name` as an int >= 0, or -1 when unset.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return -1;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno != 0 || x < 0 || x > (1 << 30)) {
    fail(ErrorCode::invalid_argument, "launch_environment", "{}='{}' is not a non-negative integer", name, v);
  }
  return static_cast<int>(x);
}

}  // namespace

LaunchEnvironment launch_environment() {
  struct Scheme {
    const char* launcher;
    const char* rank;
    const char* size;
    const char* local;
  };
  static constexpr Scheme kSchemes[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
  };
  for (const Scheme& s : kSchemes) {
    const int rank = env_int(s.rank), size = env_int(s.size);
    if (rank < 0 && size < 0) continue;
    if (rank < 0 || size < 0) {
      fail(ErrorCode::invalid_argument, "launch_environment", "{} is set but {} is not ({})",
           rank < 0 ? s.size : s.rank, rank < 0 ? s.rank : s.size, s.launcher);
    }
    if (size < 1 || rank >= size) {
      fail(ErrorCode::invalid_argument, "launch_environment", "{}={} is not a rank of {}={}", s.rank, rank,
           s.size, size);
    }
    const int local = env_int(s.local);
    return LaunchEnvironment{rank, size, local < 0 ? 0 : local, s.launcher};
  }
  return LaunchEnvironment{0, 1, 0, "none"};
}

// ---------------------------------------------------------------------------------------------

namespace core {

std::shared_ptr<detail::CommGroup> find_comm_group(uint64_t id, std::string_view op) {
  std::lock_guard lock(registry_mutex());
  auto it = owners().find(id);
  std::shared_ptr<detail::CommGroup> g = it == owners().end() ? nullptr : it->second.lock();
  if (!g) {
    fail(ErrorCode::not_found, op, "communicator group {} does not exist in this process (its "
         "communicators were destroyed, or the graph was built in another process)", id);
  }
  return g;
}

InProcessGroup::InProcessGroup(int world_size, double timeout_seconds)
    : CommGroup(world_size, CommBackend::in_process),
      timeout_(timeout_seconds),
      signatures_(static_cast<size_t>(world_size)),
      inputs_(static_cast<size_t>(world_size)) {}

void InProcessGroup::fail_broken(std::string_view op) const {
  fail(ErrorCode::io_error, op, "the in_process communicator (group {}) is broken: {}", id(), broken_why_);
}

void InProcessGroup::arrive(std::unique_lock<std::mutex>& lock, std::string_view op, int rank,
                            const char* where) {
  const uint64_t generation = generation_;
  if (++arrived_ == world_size()) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  const bool met = cv_.wait_for(lock, timeout_, [&] { return generation_ != generation || broken_; });
  if (broken_) fail_broken(op);
  if (!met) {
    broken_ = true;
    broken_why_ = fmt::format("rank {} timed out after {:g} s {} ({} of {} ranks arrived)", rank,
                              timeout_.count(), where, arrived_, world_size());
    cv_.notify_all();
    fail(ErrorCode::io_error, op, "{}", broken_why_);
  }
}

void InProcessGroup::exchange(int rank, std::string_view op, const std::string& signature, const void* input,
                              const std::function<void(std::span<const void* const> inputs)>& compute) {
  if (rank < 0 || rank >= world_size()) {
    fail(ErrorCode::invalid_argument, op, "rank {} is not a rank of a world of {}", rank, world_size());
  }
  std::unique_lock lock(mutex_);
  if (broken_) fail_broken(op);
  signatures_[static_cast<size_t>(rank)] = signature;
  inputs_[static_cast<size_t>(rank)] = input;
  arrive(lock, op, rank, "waiting for the other ranks to reach the collective");
  // Every rank sees the same slots: all find the same mismatch (the first rank that differs
  // from rank 0) and raise together after barrier 2.
  std::string mismatch;
  for (int r = 1; r < world_size() && mismatch.empty(); ++r) {
    if (signatures_[static_cast<size_t>(r)] != signatures_[0]) {
      mismatch = fmt::format("ranks disagree: rank 0 runs {}, rank {} runs {}", signatures_[0], r,
                             signatures_[static_cast<size_t>(r)]);
    }
  }
  const std::vector<const void*> inputs = inputs_;
  lock.unlock();
  std::exception_ptr error;
  if (mismatch.empty()) {
    try {
      compute(inputs);
    } catch (...) {
      error = std::current_exception();
    }
  }
  lock.lock();
  arrive(lock, op, rank, "waiting for the other ranks to finish the collective");
  lock.unlock();
  if (!mismatch.empty()) fail(ErrorCode::shape_mismatch, op, "{}", mismatch);
  if (error) std::rethrow_exception(error);
}

}  // namespace core
}  // namespace tg
