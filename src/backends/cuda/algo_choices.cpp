// Stored library algorithm choices (algo_choices.h).
#include "backends/cuda/algo_choices.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda::algo_choices {
namespace {

std::mutex g_mu;
std::map<std::string, std::string, std::less<>>& store() {
  static auto* s = new std::map<std::string, std::string, std::less<>>;  // never freed
  return *s;
}

// Background preparation threads, joined at exit (before the CUDA runtime tears down: this
// object is made after the runtime's first use).
struct Preparer {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};
struct Preparers {
  std::mutex mu;
  std::vector<Preparer> threads;
  /// Joins the finished ones (all with `all`). Called with `mu` held.
  void join(bool all) {
    std::erase_if(threads, [all](Preparer& p) {
      if (!all && !p.done->load()) return false;
      if (p.thread.joinable()) p.thread.join();
      return true;
    });
  }
  ~Preparers() {
    std::lock_guard lock(mu);
    join(true);
  }
};

Preparers& preparers() {
  static Preparers p;
  return p;
}

}  // namespace

void prepare_async(int device, std::vector<backends::CodeObject> choices) {
  const char* env = std::getenv("TG_PREPARE_CHOICES");
  if (env && std::strcmp(env, "0") == 0) return;
  Preparers& p = preparers();
  std::lock_guard lock(p.mu);
  p.join(false);
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread t([device, done, choices = std::move(choices)] {
    struct Done {
      std::atomic<bool>& d;
      ~Done() { d = true; }
    } mark{*done};
    phases::Scope timed("prepare_choices_thread");
    // cuBLASLt first (one handle, quick), then the convolutions (cuDNN's libraries load with the
    // first plan).
    for (const auto& c : choices) {
      try {
        if (c.key.starts_with("algo:cublaslt/v1 ")) prepare_matmul_choice(device, c.key);
      } catch (const std::exception&) {
        // left to the first use
      }
    }
    for (const auto& c : choices) {
      try {
        if (c.key.starts_with("algo:cudnn_conv/v1 ")) prepare_conv_choice(device, c.key, c.image);
      } catch (const std::exception&) {
      }
    }
  });
  p.threads.push_back({std::move(t), std::move(done)});
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
