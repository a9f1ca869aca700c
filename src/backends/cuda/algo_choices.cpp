// Stored library algorithm choices (algo_choices.h).
#include "backends/cuda/algo_choices.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "backends/cuda/context.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda::algo_choices {
namespace {

std::mutex g_mu;
std::map<std::string, std::string, std::less<>>& store() {
  static auto* s = new std::map<std::string, std::string, std::less<>>;  // never freed
  return *s;
}

// Background preparation: a queue of choices in their order and the workers that take them,
// joined at exit (before the CUDA runtime tears down: this object is made after the runtime's
// first use).
struct Preparers {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::pair<int, backends::CodeObject>> queue;  // (device, choice), not taken yet
  std::set<std::string, std::less<>> known;                // every key ever queued
  std::set<std::string, std::less<>> building;             // taken by a worker, not built yet
  std::vector<std::thread> threads;
  bool stopping = false;
  ~Preparers() {
    {
      std::lock_guard lock(mu);
      stopping = true;
      queue.clear();
    }
    changed.notify_all();
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }
  void work() {
    std::map<int, cudaStream_t> warm;  // this worker's stream per device for the warm-up runs
    // TG_PREPARE_DELAY_MS: start this late (a measured A/B of docs/design/0011: the libraries'
    // initialization beside a first run that uses first-run kernels); cut short at exit.
    if (const char* d = std::getenv("TG_PREPARE_DELAY_MS"); d && std::atoi(d) > 0) {
      std::unique_lock lock(mu);
      changed.wait_for(lock, std::chrono::milliseconds(std::atoi(d)), [&] { return stopping; });
    }
    std::unique_lock lock(mu);
    while (true) {
      changed.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) break;
      auto [device, c] = std::move(queue.front());
      queue.pop_front();
      building.insert(c.key);
      lock.unlock();
      phases::Scope timed("prepare_choice");
      bool marked = false;
      auto built = [&] {
        if (marked) return;
        marked = true;
        {
          std::lock_guard l(mu);
          building.erase(c.key);
        }
        changed.notify_all();
      };
      try {
        cudaStream_t& stream = warm[device];
        if (stream == nullptr) {
          check(cudaSetDevice(device), "cuda", "cudaSetDevice");
          check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cuda", "cudaStreamCreate");
        }
        if (c.key.starts_with("algo:cublaslt/v1 ")) prepare_matmul_choice(device, c.key, stream, built);
        if (c.key.starts_with("algo:cudnn_conv/v1 ")) prepare_conv_choice(device, c.key, c.image, stream, built);
      } catch (const std::exception&) {
        cudaGetLastError();  // left to the first use, which chooses as without a stored choice
      }
      built();
      timed.stop();
      lock.lock();
    }
    // The streams are left to the process's end (this runs at exit).
  }
};

Preparers& preparers() {
  static Preparers p;
  return p;
}

int worker_count() {
  const char* env = std::getenv("TG_PREPARE_THREADS");
  const int n = env ? std::atoi(env) : 4;
  return std::clamp(n, 1, 16);
}

}  // namespace

void prepare_async(int device, std::vector<backends::CodeObject> choices) {
  const char* env = std::getenv("TG_PREPARE_CHOICES");
  if (env && std::strcmp(env, "0") == 0) return;
  Preparers& p = preparers();
  {
    std::lock_guard lock(p.mu);
    for (auto& c : choices) {
      if (!p.known.insert(c.key).second) continue;  // handed over before (the same file loaded again)
      p.queue.emplace_back(device, std::move(c));
    }
    // Workers for the work queued (they stay, idle, until exit).
    const size_t want = std::min(static_cast<size_t>(worker_count()), p.threads.size() + p.queue.size());
    while (p.threads.size() < want) p.threads.emplace_back([&p] { p.work(); });
  }
  p.changed.notify_all();
}

bool claim(const std::string& key) {
  Preparers& p = preparers();
  std::unique_lock lock(p.mu);
  for (auto it = p.queue.begin(); it != p.queue.end(); ++it) {
    if (it->second.key == key) {
      p.queue.erase(it);  // not started: the caller builds it now
      return true;
    }
  }
  if (!p.building.count(key)) return true;
  phases::Scope timed("prepared_plan_wait");
  p.changed.wait(lock, [&] { return !p.building.count(key); });
  return false;
}

void preload(std::span<const backends::CodeObject> objects) {
  for (size_t i = 0; i < objects.size(); ++i) {
    const std::string& k = objects[i].key;
    if (!k.starts_with("algo:cudnn_conv/v1 ") && !k.starts_with("algo:cublaslt/v1 ")) {
      fail(ErrorCode::io_error, "load", "choice {} of {}: unknown algorithm family in key '{}'", i, objects.size(),
           k.substr(0, 40));
    }
  }
  std::lock_guard lock(g_mu);
  for (const auto& o : objects) store().emplace(o.key, o.image);
}

std::optional<std::string> find(const std::string& key) {
  std::lock_guard lock(g_mu);
  auto it = store().find(key);
  if (it == store().end()) return std::nullopt;
  return it->second;
}

}  // namespace tg::cuda::algo_choices
