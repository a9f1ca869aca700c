// Uploading a file's bytes while it is read (file_upload.h, backends/file_upload.h).
#include "backends/cuda/file_upload.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

#include "backends/cuda/context.h"
#include "backends/cuda/module_preload.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda {
namespace {

constexpr size_t kSlotBytes = size_t{2} << 20;  // the file reader's pieces are at most 2 MiB
constexpr int kSlots = 6;                        // per device, made once per process and reused
constexpr size_t kAlign = 256;

// Pinned slots of one device: a piece is copied into a free one (its last copy done) and uploaded
// from it, so that the DMA reads pinned memory and the reader need not wait for it.
struct Slot {
  void* buf = nullptr;
  cudaEvent_t done = nullptr;  // recorded after the slot's last copy
};
struct Slots {
  std::mutex mu;
  std::deque<Slot> free;  // oldest use first
  int made = 0;           // slots allocated (or being allocated) so far
};
Slots& slots_of(int device) {
  static std::mutex mu;
  static auto* all = new std::map<int, Slots>;  // never freed (pinned memory reused by later loads)
  std::lock_guard lock(mu);
  return (*all)[device];
}

// A free slot whose last copy has finished, or false (none yet, or all still copying).
bool take_slot(Slots& s, Slot* out) {
  std::lock_guard lock(s.mu);
  for (auto it = s.free.begin(); it != s.free.end(); ++it) {
    if (cudaEventQuery(it->done) == cudaSuccess) {
      *out = *it;
      s.free.erase(it);
      return true;
    }
  }
  cudaGetLastError();  // cudaErrorNotReady is no error
  return false;
}

void give_slot(Slots& s, const Slot& slot) {
  std::lock_guard lock(s.mu);
  s.free.push_back(slot);
}

// Waits for a free slot (the oldest one) and for its last copy.
Slot wait_slot(Slots& s) {
  for (;;) {
    Slot slot;
    bool got = false;
    {
      std::lock_guard lock(s.mu);
      if (!s.free.empty()) {
        slot = s.free.front();
        s.free.pop_front();
        got = true;
      }
    }
    if (got) {
      if (const cudaError_t e = cudaEventSynchronize(slot.done); e != cudaSuccess) {
        give_slot(s, slot);
        check(e, "load", "upload slot");
      }
      return slot;
    }
    {
      std::lock_guard lock(s.mu);
      if (s.made == 0) fail(ErrorCode::internal, "load", "no pinned upload slot");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));  // all taken by readers: a copy each
  }
}

// How the pieces reach the device (TG_STREAM_UPLOAD): from the reader's pageable memory (the
// driver stages it), through pinned slots, or from the reader's memory registered as pinned for
// the upload (cudaHostRegister of the piece's whole pages; no staging copy).
enum class Mode { pageable, pinned, registered };

class CudaFileUpload {
 public:
  CudaFileUpload(int device, size_t bytes, Mode mode)
      : device_(device), bytes_(bytes), mode_(mode), pinned_(mode == Mode::pinned) {}

  // Throws on a CUDA failure (start_file_upload then returns null).
  void start() {
    phases::Scope timed("file_upload_start");
    activate(device_);
    {
      GlobalAllocationScope global;
      mirror_ = device_allocate(device_, bytes_);
    }
    // TG_UPLOAD_STREAMS: the reading threads' copies spread over this many streams (default 1).
    streams_.resize(static_cast<size_t>(pinned_ ? 1 : env::upload_streams()));
    for (cudaStream_t& st : streams_) {
      check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "load", "cudaStreamCreate");
    }
    stream_ = streams_[0];
    // TG_STAGING_EARLY=1: the upload's thread also makes the staging buffers during the read (the
    // default of session 22; they are made at the first copy that needs them now).
    staging_early_ = env::staging_early();
    if (pinned_ || staging_early_) helper_ = std::thread([this] { helper(); });
    // TG_PRELOAD_MODULES (module_preload.h): the precompiled kernels' modules loaded by a thread
    // of the load, from now on (`early`) or once the file is read (1; pieces_done).
    preload_mode_ = preload_modules_mode();
    if (preload_mode_ == PreloadModules::early) start_preload();
  }

  ~CudaFileUpload() {
    if (preload_.joinable()) preload_.join();
    {
      std::lock_guard lock(mu_);
      abandon_ = true;  // pieces not uploaded yet stay so (the upload is not used)
    }
    cv_.notify_all();
    if (helper_.joinable()) helper_.join();
    if (release_.joinable()) release_.join();
    for (cudaStream_t st : streams_) {
      if (!st) continue;
      cudaStreamSynchronize(st);  // no copy may still read or write the blocks below
      cudaStreamDestroy(st);
    }
    unregister();
    if (done_) cudaEventDestroy(done_);
    mirror_.reset();
  }

  void piece(size_t offset, const void* host, size_t n) noexcept {
    if (failed_.load(std::memory_order_relaxed) || n == 0) return;
    if (offset > bytes_ || n > bytes_ - offset || (pinned_ && n > kSlotBytes)) {
      failed_ = true;
      return;
    }
    char* dst = static_cast<char*>(mirror_.get()) + offset;
    if (!pinned_) {
      // From the reader's pageable memory: the driver stages it before this returns. Registered:
      // the piece's whole pages are pinned first and copied from in place (the ends outside them
      // go as pageable copies); they stay registered until the upload is done.
      static std::atomic<size_t> readers{0};
      thread_local const size_t reader = readers.fetch_add(1);  // this thread's stream: reader % streams
      cudaStream_t st = streams_[reader % streams_.size()];
      if (cudaSetDevice(device_) != cudaSuccess) {
        cudaGetLastError();
        failed_ = true;
        return;
      }
      size_t lo = 0, hi = 0;  // the registered part of [0, n)
      if (mode_ == Mode::registered) {
        static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const auto at = reinterpret_cast<uintptr_t>(host);
        lo = (at + page - 1) / page * page - at;
        hi = std::max(lo, (at + n) / page * page - at);
        if (hi - lo >= (size_t{64} << 10)) {
          phases::Scope reg_time("file_upload_register");
          void* p = const_cast<char*>(static_cast<const char*>(host) + lo);
          if (cudaHostRegister(p, hi - lo, cudaHostRegisterDefault) == cudaSuccess) {
            std::lock_guard lock(mu_);
            registered_.push_back(p);
          } else {
            cudaGetLastError();
            lo = hi = 0;
          }
        } else {
          lo = hi = 0;
        }
      }
      const auto* src = static_cast<const char*>(host);
      auto put = [&](size_t a, size_t b) {
        return b <= a || cudaMemcpyAsync(dst + a, src + a, b - a, cudaMemcpyHostToDevice, st) == cudaSuccess;
      };
      if (!(hi > lo ? put(0, lo) && put(lo, hi) && put(hi, n) : put(0, n))) {
        cudaGetLastError();
        failed_ = true;
      }
      return;
    }
    Slots& s = slots_of(device_);
    Slot slot;
    if (!take_slot(s, &slot)) {
      // No slot free (or none made yet): the helper thread uploads it when one is.
      {
        std::lock_guard lock(mu_);
        backlog_.push_back({offset, host, n});
      }
      cv_.notify_all();
      return;
    }
    try {
      upload(slot, dst, host, n);
    } catch (const std::exception&) {
      failed_ = true;
    }
    give_slot(s, slot);
  }

  // Every piece went through piece(): the helper (if any) finishes the backlog, then makes the
  // staging buffers with TG_STAGING_EARLY=1; with TG_PRELOAD_MODULES=1 the modules' preload starts.
  void pieces_done() noexcept {
    if (preload_mode_ == PreloadModules::after_read) start_preload();
    {
      std::lock_guard lock(mu_);
      read_done_ = true;
    }
    cv_.notify_all();
  }

  // FileUpload::finish; false: nothing adopted.
  bool finish(std::span<const TensorData> constants, std::span<const size_t> offsets) {
    if (constants.size() != offsets.size()) return false;
    phases::Scope timed("file_upload_finish");
    {
      std::unique_lock lock(mu_);
      read_done_ = true;
      cv_.notify_all();
      phases::Scope wait_time("file_upload_backlog_wait");
      cv_.wait(lock, [&] { return (backlog_.empty() && !uploading_) || helper_exited_; });
      if (!backlog_.empty()) failed_ = true;  // the helper failed
    }
    if (failed_) return false;
    try {
      DeviceContext& c = activate(device_);
      std::vector<size_t> at;
      size_t total = 0;
      for (size_t i = 0; i < constants.size(); ++i) {
        const size_t n = constants[i].nbytes();
        if (offsets[i] > bytes_ || n > bytes_ - offsets[i]) return false;
        at.push_back(total);
        total += (n + kAlign - 1) / kAlign * kAlign;
      }
      if (total == 0) return false;
      // The copies out of the mirror follow every reading stream's uploads.
      for (size_t i = 1; i < streams_.size(); ++i) {
        cudaEvent_t e = nullptr;
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "load", "cudaEventCreate");
        const cudaError_t r = cudaEventRecord(e, streams_[i]);
        const cudaError_t w = r == cudaSuccess ? cudaStreamWaitEvent(stream_, e, 0) : r;
        cudaEventDestroy(e);
        check(w, "load", "cudaStreamWaitEvent");
      }
      std::shared_ptr<void> block;
      {
        GlobalAllocationScope global;
        block = device_allocate(device_, total);
      }
      auto* base = static_cast<char*>(block.get());
      const auto* mirror = static_cast<const char*>(mirror_.get());
      std::vector<TensorData> copies;
      for (size_t i = 0; i < constants.size(); ++i) {
        const TensorData& h = constants[i];
        check(cudaMemcpyAsync(base + at[i], mirror + offsets[i], h.nbytes(), cudaMemcpyDeviceToDevice, stream_), "load",
              "device-to-device copy");
        copies.push_back(TensorData::from_external(base + at[i], h.shape(), h.dtype(), Device::cuda(device_), block));
      }
      check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "load", "cudaEventCreate");
      check(cudaEventRecord(done_, stream_), "load", "cudaEventRecord");
      // Everything queued later on the device's stream (the runs) sees the constants.
      check(cudaStreamWaitEvent(c.stream, done_, 0), "load", "cudaStreamWaitEvent");
      adopt_uploads(constants, copies, device_);
    } catch (const std::exception&) {
      cudaGetLastError();
      return false;  // nothing adopted: the constants upload as without this
    }
    // The mirror goes back to the allocator once the copies out of it are done (not before: the
    // allocator reuses blocks in the order of the device's stream, not of this one).
    release_ = std::thread([this] {
      cudaEventSynchronize(done_);
      mirror_.reset();
      unregister();
    });
    return true;
  }

 private:
  struct Pending {
    size_t offset;
    const void* host;
    size_t n;
  };

  // Copies `n` bytes at `host` into the slot and queues their upload to `dst` (slot.done recorded
  // after it).
  void upload(const Slot& slot, char* dst, const void* host, size_t n) {
    std::memcpy(slot.buf, host, n);
    check(cudaSetDevice(device_), "load", "cudaSetDevice");
    check(cudaMemcpyAsync(dst, slot.buf, n, cudaMemcpyHostToDevice, stream_), "load", "host-to-device copy");
    check(cudaEventRecord(slot.done, stream_), "load", "cudaEventRecord");
  }

  // The upload's thread (started only for pinned slots or TG_STAGING_EARLY=1). With
  // TG_STAGING_EARLY=1 and no slots: makes the staging buffers while the file is read. Through
  // pinned slots: makes the slots (cudaHostAlloc takes ~1 ms per 2 MiB here; pieces read
  // meanwhile wait in the backlog, not on the driver), uploads the backlog, then, once the read is
  // over and with TG_STAGING_EARLY=1, makes the staging buffers.
  void helper() noexcept {
    Slots& s = slots_of(device_);
    try {
      check(cudaSetDevice(device_), "load", "cudaSetDevice");
      if (!pinned_) warm();  // TG_STAGING_EARLY=1: nothing else to do; made while the file is read
      while (pinned_) {
        {
          std::lock_guard lock(s.mu);
          if (s.made >= kSlots) break;
          ++s.made;
        }
        phases::Scope slot_time("file_upload_slot_alloc");
        Slot slot;
        cudaError_t e = cudaHostAlloc(&slot.buf, kSlotBytes, cudaHostAllocDefault);
        if (e == cudaSuccess) {
          e = cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming);
          if (e != cudaSuccess) cudaFreeHost(slot.buf);
        }
        if (e != cudaSuccess) {
          {
            std::lock_guard lock(s.mu);
            --s.made;  // counts only the slots that exist (or are being made)
          }
          check(e, "load", "cudaHostAlloc (upload slot)");
        }
        give_slot(s, slot);
      }
      for (;;) {
        Pending p{};
        {
          std::unique_lock lock(mu_);
          uploading_ = false;
          cv_.notify_all();
          cv_.wait(lock, [&] { return abandon_ || !backlog_.empty() || read_done_; });
          if (abandon_) break;
          if (backlog_.empty()) {
            lock.unlock();
            if (staging_early_) warm();
            break;
          }
          p = backlog_.front();
          backlog_.pop_front();
          uploading_ = true;
        }
        phases::Scope piece_time("file_upload_backlog_piece");
        Slot slot = wait_slot(s);
        try {
          upload(slot, static_cast<char*>(mirror_.get()) + p.offset, p.host, p.n);
        } catch (...) {
          give_slot(s, slot);
          throw;
        }
        give_slot(s, slot);
      }
    } catch (const std::exception&) {
      cudaGetLastError();
      failed_ = true;
    }
    std::lock_guard lock(mu_);
    uploading_ = false;
    helper_exited_ = true;
    cv_.notify_all();
  }

  // The staging buffers of the first run's input copy (on the run's thread they took 6-8 ms).
  void warm() noexcept {
    phases::Scope staging_time("file_upload_staging");
    try {
      warm_staging(device_);
    } catch (const std::exception&) {
      cudaGetLastError();  // made at the first large copy instead
    }
  }

  void start_preload() noexcept {
    if (preload_.joinable()) return;  // started already
    try {
      preload_ = std::thread([d = device_] { preload_modules(d); });
    } catch (const std::exception&) {
      // no thread: the modules load at their first launch
    }
  }

  // The registered pieces back to pageable (each after its copy: the caller has waited for them).
  void unregister() noexcept {
    std::vector<void*> regs;
    {
      std::lock_guard lock(mu_);
      regs.swap(registered_);
    }
    if (regs.empty()) return;
    phases::Scope timed("file_upload_unregister");
    cudaSetDevice(device_);
    for (void* p : regs) cudaHostUnregister(p);
    cudaGetLastError();
  }

  int device_;
  size_t bytes_;
  Mode mode_;
  bool pinned_;
  bool staging_early_ = false;
  std::shared_ptr<void> mirror_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> registered_;  // pieces registered with cudaHostRegister (mu_)
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> backlog_;
  bool uploading_ = false, read_done_ = false, abandon_ = false, helper_exited_ = false;
  PreloadModules preload_mode_ = PreloadModules::off;
  std::thread helper_, release_, preload_;
};

// The object the loader holds: the upload lives until both the loader's FileBytes and the
// executable's handle from finish() are gone.
class Handle final : public backends::FileUpload {
 public:
  explicit Handle(std::shared_ptr<CudaFileUpload> u) : u_(std::move(u)) {}
  void piece(size_t offset, const void* host, size_t n) noexcept override { u_->piece(offset, host, n); }
  void pieces_done() noexcept override { u_->pieces_done(); }
  std::shared_ptr<void> finish(std::span<const TensorData> constants, std::span<const size_t> offsets) override {
    return u_->finish(constants, offsets) ? std::shared_ptr<void>(u_) : nullptr;
  }

 private:
  std::shared_ptr<CudaFileUpload> u_;
};

}  // namespace

std::unique_ptr<backends::FileUpload> start_file_upload(int device, size_t bytes) {
  if (bytes < (size_t{1} << 20)) return nullptr;
  const std::string mode = env::stream_upload();
  if (mode == "0") return nullptr;
  try {
    auto u = std::make_shared<CudaFileUpload>(device, bytes, mode == "pinned"       ? Mode::pinned
                                                             : mode == "register" ? Mode::registered
                                                                                  : Mode::pageable);
    u->start();
    return std::make_unique<Handle>(std::move(u));
  } catch (const std::exception&) {
    cudaGetLastError();
    return nullptr;  // e.g. no device memory for the mirror: constants upload as before
  }
}

}  // namespace tg::cuda
