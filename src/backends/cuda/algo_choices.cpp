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
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda::algo_choices {
namespace {

std::mutex g_mu;
std::map<std::string, std::string, std::less<>>& store() {
  static auto* s = new std::map<std::string, std::string, std::less<>>;  // never freed
  return *s;
}

// How long the workers wait before their first choice when the load asks for first-run kernels:
// TG_PREPARE_DELAY_MS (core/env.h), else 150 ms (so that the first run's CUDA calls do not wait on
// the libraries' initialization: measured on the H200, ResNet-50's first result 124-139 ms with
// the workers starting at load, 55 ms with them 150 ms late, 54 ms without them); without
// first-run kernels TG_PREPARE_DELAY_MS, else 0.
int start_delay_ms(bool first_run_kernels) {
  return env::prepare_delay_ms().value_or(first_run_kernels ? 150 : 0);
}

using Clock = std::chrono::steady_clock;

// Background preparation: a queue of choices in their order and the workers that take them.
// Never destroyed (handles may be released during static destruction); the workers are stopped
// and joined at exit by Joiner below, and whenever the last handle goes (release()).
struct Preparers {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::pair<int, backends::CodeObject>> queue;  // (device, choice), not taken yet
  std::set<std::string, std::less<>> known;                // every key queued and not dropped
  std::set<std::string, std::less<>> building;             // taken by a worker, not built yet
  // Workers inside a choice: its plan built (no longer in `building`) may still be warming up on
  // the worker's stream, inside the library; release() waits for these too, so that a process
  // exiting right after an executable's end never tears the libraries down under a worker (a
  // child exiting right after its load crashed at exit on the H200, session 22).
  int busy = 0;
  std::vector<std::thread> threads;
  int holders = 0;          // handles prepare_async returned that live
  Clock::time_point hold_until{};  // no choice is taken before (docs/design/0011)
  bool stopping = false;
  bool released = false;  // claim() was called: no more holding back

  void stop_and_join() {
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
  // The last handle went: what has not started is dropped (its key may be queued again by a
  // later load; a run needing it builds it itself), what is under way is waited for (its warm-up
  // included).
  void release() {
    std::unique_lock lock(mu);
    if (--holders > 0) return;
    for (const auto& [device, c] : queue) known.erase(c.key);
    queue.clear();
    phases::Scope timed("prepare_cancel_wait");
    changed.wait(lock, [&] { return building.empty() && busy == 0; });
  }
  void work() {
    std::map<int, cudaStream_t> warm;  // this worker's stream per device for the warm-up runs
    std::unique_lock lock(mu);
    while (true) {
      // Held back until hold_until (cuDNN's and cuBLASLt's initialization on these threads stalls
      // the run thread's CUDA calls, e.g. the weights' upload); released early by claim() (a run
      // that needs a library plan).
      changed.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) break;
      if (!released && Clock::now() < hold_until) {
        changed.wait_until(lock, hold_until, [&] { return stopping || released; });
        continue;
      }
      auto [device, c] = std::move(queue.front());
      queue.pop_front();
      building.insert(c.key);
      ++busy;
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
      --busy;
      changed.notify_all();
    }
    // The streams are left to the process's end (this runs at exit).
  }
};

Preparers& preparers() {
  static auto* p = new Preparers;  // never freed: see above
  // Made after the CUDA runtime's first use, so destroyed before its teardown: stops the workers.
  static struct Joiner {
    ~Joiner() { preparers().stop_and_join(); }
  } joiner;
  return *p;
}

// TG_PREPARE_THREADS (core/env.h).
int worker_count() { return env::prepare_threads(); }

}  // namespace

std::shared_ptr<void> prepare_async(int device, std::vector<backends::CodeObject> choices, bool first_run_kernels) {
  if (!env::prepare_choices()) return nullptr;
  Preparers& p = preparers();
  {
    std::lock_guard lock(p.mu);
    if (p.stopping) return nullptr;  // at exit
    for (auto& c : choices) {
      if (!p.known.insert(c.key).second) continue;  // handed over before (the same file loaded again)
      p.queue.emplace_back(device, std::move(c));
    }
    if (const int d = start_delay_ms(first_run_kernels); d > 0 && !p.released) {
      p.hold_until = std::max(p.hold_until, Clock::now() + std::chrono::milliseconds(d));
    }
    ++p.holders;
    // Workers for the work queued (they stay, idle, until exit).
    const size_t want = std::min(static_cast<size_t>(worker_count()), p.threads.size() + p.queue.size());
    while (p.threads.size() < want) p.threads.emplace_back([&p] { p.work(); });
  }
  p.changed.notify_all();
  return std::shared_ptr<void>(new int(0), [](int* h) {
    delete h;
    preparers().release();
  });
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
