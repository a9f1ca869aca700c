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
#include "backends/cuda/first_run.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda::algo_choices {
namespace {

std::mutex g_mu;
std::map<std::string, std::string, std::less<>>& store() {
  static auto* s = new std::map<std::string, std::string, std::less<>>;  // never freed
  return *s;
}

// How long the workers wait before their first choice: TG_PREPARE_DELAY_MS, else 150 ms when
// first-run kernels are on (so that the first run's CUDA calls do not wait on the libraries'
// initialization: measured on the H200, ResNet-50's first result 124-139 ms with the workers
// starting at load, 55 ms with them 150 ms late, 54 ms without them), else 0.
int start_delay_ms() {
  if (const char* d = std::getenv("TG_PREPARE_DELAY_MS")) return std::max(0, std::atoi(d));
  return first_run::enabled() ? 150 : 0;
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
  bool released = false;  // claim() was called: no more holding back
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
    // Held back start_delay_ms() (docs/design/0011: cuDNN's and cuBLASLt's initialization on
    // these threads stalls the run thread's CUDA calls, e.g. the weights' upload); released early by
    // claim() (a run that needs a library plan) and at exit.
    if (const int d = start_delay_ms(); d > 0) {
      std::unique_lock lock(mu);
      changed.wait_for(lock, std::chrono::milliseconds(d), [&] { return stopping || released; });
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
  if (!p.released) {  // a run needs the libraries now: the held-back workers start too
    p.released = true;
    p.changed.notify_all();
  }
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
