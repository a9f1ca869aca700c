// Uploading a file's bytes while it is read (file_upload.h, backends/file_upload.h).
#include "backends/cuda/file_upload.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/cuda/context.h"
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

class CudaFileUpload {
 public:
  CudaFileUpload(int device, size_t bytes, bool pinned) : device_(device), bytes_(bytes), pinned_(pinned) {}

  // Throws on a CUDA failure (start_file_upload then returns null).
  void start() {
    phases::Scope timed("file_upload_start");
    activate(device_);
    {
      GlobalAllocationScope global;
      mirror_ = device_allocate(device_, bytes_);
    }
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "load", "cudaStreamCreate");
    helper_ = std::thread([this] { helper(); });
  }

  ~CudaFileUpload() {
    {
      std::lock_guard lock(mu_);
      abandon_ = true;  // pieces not uploaded yet stay so (the upload is not used)
    }
    cv_.notify_all();
    if (helper_.joinable()) helper_.join();
    if (release_.joinable()) release_.join();
    if (stream_) {
      cudaStreamSynchronize(stream_);  // no copy may still read or write the blocks below
      cudaStreamDestroy(stream_);
    }
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
      // From the reader's pageable memory: the driver stages it before this returns.
      if (cudaSetDevice(device_) != cudaSuccess || cudaMemcpyAsync(dst, host, n, cudaMemcpyHostToDevice, stream_) != cudaSuccess) {
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

  // Every piece went through piece(): the helper finishes the backlog, then makes the staging
  // buffers.
  void pieces_done() noexcept {
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

  // The load's thread. From pageable memory (the default): makes the staging buffers while the
  // file is read. Through pinned slots: makes the slots (cudaHostAlloc takes ~1 ms per 2 MiB
  // here; pieces read meanwhile wait in the backlog, not on the driver), uploads the backlog,
  // then, once the read is over, makes the staging buffers.
  void helper() noexcept {
    Slots& s = slots_of(device_);
    try {
      check(cudaSetDevice(device_), "load", "cudaSetDevice");
      if (!pinned_) warm();  // nothing else to do: made while the file is read
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
            if (pinned_) warm();
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

  int device_;
  size_t bytes_;
  bool pinned_;
  std::shared_ptr<void> mirror_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> backlog_;
  bool uploading_ = false, read_done_ = false, abandon_ = false, helper_exited_ = false;
  std::thread helper_, release_;
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
  const char* env = std::getenv("TG_STREAM_UPLOAD");
  const std::string_view mode = env ? env : "1";
  if (mode == "0") return nullptr;
  try {
    auto u = std::make_shared<CudaFileUpload>(device, bytes, mode == "pinned");
    u->start();
    return std::make_unique<Handle>(std::move(u));
  } catch (const std::exception&) {
    cudaGetLastError();
    return nullptr;  // e.g. no device memory for the mirror: constants upload as before
  }
}

}  // namespace tg::cuda
