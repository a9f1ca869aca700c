// The ranks of `tg train`: alone, threads (CPU), worker processes (CUDA, one per GPU), or the
// processes a launcher started (torchrun, Open MPI, Slurm).
#include "launch.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "options.h"
#include "tg/error.h"

namespace tg::cli {
namespace {

// This process's argv, from /proc/self/cmdline.
std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\0') {
      out.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

void in_threads(int devices, Device device, const std::function<void(const Communicator&, Device)>& train) {
  std::vector<Communicator> comms = Communicator::in_process(devices);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(devices));
  std::vector<std::thread> threads;
  for (int r = 0; r < devices; ++r) {
    threads.emplace_back([&, r] {
      try {
        train(comms[r], device);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void spawn_workers(int devices, const std::string& given_id_file) {
  const std::string id_file =
      !given_id_file.empty() ? given_id_file
                             : (std::filesystem::temp_directory_path() /
                                fmt::format("tg-nccl-{}-{}.id", ::getpid(),
                                            std::chrono::steady_clock::now().time_since_epoch().count()))
                                   .string();
  std::filesystem::remove(id_file);  // a stale id would send the workers to an old rendezvous
  std::vector<std::string> args = own_argv();
  args.push_back("--nccl-id-file");
  args.push_back(id_file);
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < devices; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorCode::io_error, "[train] fork failed");
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(devices).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  std::string failure;
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t done = ::waitpid(-1, &status, 0);
    if (done < 0) break;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && failure.empty()) {
      size_t rank = 0;
      while (rank < pids.size() && pids[rank] != done) ++rank;
      failure = WIFEXITED(status) ? fmt::format("rank {} exited with status {}", rank, WEXITSTATUS(status))
                                  : fmt::format("rank {} was killed by signal {}", rank, WTERMSIG(status));
      for (pid_t p : pids) {
        if (p != done) ::kill(p, SIGTERM);  // the others would wait for it in NCCL forever
      }
    }
  }
  std::filesystem::remove(id_file);
  if (!failure.empty()) throw Error(ErrorCode::internal, "[train] " + failure);
}

}  // namespace

void run_ranks(int devices, Device device, const std::string& id_file,
               const std::function<void(const Communicator&, Device)>& train) {
  const LaunchEnvironment env = launch_environment();
  if (env.world_size > 1) {  // a rank a launcher (or spawn_workers) started
    if (!device.is_cuda()) {
      throw UsageError(fmt::format("{} started {} processes: data parallelism across processes needs "
                                   "--device cuda (NCCL); on the CPU use --devices N (threads)",
                                   env.launcher, env.world_size));
    }
    if (id_file.empty()) {
      throw UsageError("--nccl-id-file: needed when a launcher starts the ranks (a path every rank can read, "
                       "new for each launch)");
    }
    const Device mine = Device::cuda(env.local_rank);
    train(Communicator::nccl(env.rank, env.world_size, mine.index, id_file), mine);
    return;
  }
  if (devices <= 1) {
    train(Communicator(), device);
    return;
  }
  if (device.is_cpu()) {
    in_threads(devices, device, train);
    return;
  }
  const int available = Device::cuda_device_count();
  if (devices > available) {
    throw UsageError(fmt::format("--devices {}: this machine has {} CUDA GPU{}", devices, available,
                                 available == 1 ? "" : "s"));
  }
  spawn_workers(devices, id_file);
}

}  // namespace tg::cli
