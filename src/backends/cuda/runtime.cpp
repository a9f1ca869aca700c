// Device discovery, per-device contexts, error checks and copies (runtime.h, context.h).
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/cuda/file_upload.h"
#include "backends/cuda/kernels/status.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/parallel.h"
#include "core/phase_times.h"
#include "core/stats.h"

namespace tg::cuda {

void check(cudaError_t e, std::string_view op, std::string_view what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky-free error so the process can go on
  ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::out_of_memory : ErrorCode::internal;
  fail(code, op, "{}: {}: {}", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

void check(cublasStatus_t s, std::string_view op, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  ErrorCode code = s == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::out_of_memory : ErrorCode::internal;
  fail(code, op, "{}: cuBLAS status {}", what, static_cast<int>(s));
}

void check(cudnnStatus_t s, std::string_view op, std::string_view what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  ErrorCode code = s == CUDNN_STATUS_ALLOC_FAILED ? ErrorCode::out_of_memory : ErrorCode::internal;
  fail(code, op, "{}: cuDNN {}", what, cudnnGetErrorString(s));
}

void check_launch(std::string_view op, std::string_view kernel) {
  check(cudaGetLastError(), op, fmt::format("launch of {}", kernel));
}

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

void check_device(int device) {
  int n = device_count();
  if (device < 0 || device >= n) {
    fail(ErrorCode::unsupported, "cuda", "cuda:{} is not available ({} CUDA device{} usable here)", device,
         n, n == 1 ? "" : "s");
  }
}

namespace {

struct Contexts {
  std::mutex mu;
  std::deque<DeviceContext> items;  // stable addresses
  std::vector<DeviceContext*> by_device;
};
Contexts& contexts() {
  static auto* c = new Contexts;  // never destroyed: deleters may run at exit
  return *c;
}

}  // namespace

DeviceContext& activate(int device) {
  check_device(device);
  thread_local int current = -1;
  Contexts& cs = contexts();
  DeviceContext* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(cs.mu);
    if (cs.by_device.empty()) cs.by_device.assign(static_cast<size_t>(device_count()), nullptr);
    ctx = cs.by_device[static_cast<size_t>(device)];
    if (ctx == nullptr) {
      check(cudaSetDevice(device), "cuda", "cudaSetDevice");
      current = device;
      DeviceContext& c = cs.items.emplace_back();
      c.device = device;
      // A blocking stream: TensorGraph's work orders after what the caller queued on CUDA's legacy
      // default stream (cudaMemcpy, launches without a stream), as cuBLAS's and cuDNN's default
      // handles do. A cudaMemcpy from pageable memory may return before its DMA has finished, so
      // a non-blocking stream could read a device input half written (seen on the H200).
      check(cudaStreamCreateWithFlags(&c.stream, cudaStreamDefault), "cuda", "cudaStreamCreate");
      cudaDeviceProp p{};
      check(cudaGetDeviceProperties(&p, device), "cuda", "cudaGetDeviceProperties");
      c.sm_count = p.multiProcessorCount;
      c.cc_major = p.major;
      c.cc_minor = p.minor;
      c.max_shared_per_block = p.sharedMemPerBlock;
      cs.by_device[static_cast<size_t>(device)] = ctx = &c;
    }
  }
  if (current != device) {
    check(cudaSetDevice(device), "cuda", "cudaSetDevice");
    current = device;
  }
  return *ctx;
}

cublasLtHandle_t DeviceContext::cublaslt() {
  std::lock_guard<std::mutex> lock(mu);
  if (!cublaslt_) {
    phases::Scope timed("cublasLtCreate");
    check(cublasLtCreate(&cublaslt_), "cuda", "cublasLtCreate");
  }
  return cublaslt_;
}

CudnnUse DeviceContext::cudnn(cudaStream_t on) {
  CudnnUse use{std::unique_lock<std::mutex>(cudnn_mu), nullptr};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!cudnn_) {
      phases::Scope timed("cudnnCreate");
      check(cudnnCreate(&cudnn_), "cuda", "cudnnCreate");
    }
  }
  if (cudnn_stream_ != on) {
    check(cudnnSetStream(cudnn_, on), "cuda", "cudnnSetStream");
    cudnn_stream_ = on;
  }
  use.handle = cudnn_;
  return use;
}

void* workspace_of(const backends::KernelContext& ctx, size_t bytes) {
  if (ctx.run == nullptr) fail(ErrorCode::internal, ctx.op_name(), "a CUDA kernel ran outside a run");
  return ctx.run->workspace(bytes);
}

backends::DeviceErrorSlot device_check(const backends::KernelContext& ctx, backends::DeviceErrorFormatter describe) {
  if (ctx.run == nullptr) fail(ErrorCode::internal, ctx.op_name(), "a CUDA kernel ran outside a run");
  return ctx.run->device_error(std::move(describe));
}

void report_flag(const void* flag, bool flag64, unsigned long long ok, const void* index, bool index_i64,
                 backends::DeviceErrorSlot slot, cudaStream_t stream, std::string_view op) {
  static_assert(sizeof(kernels::ErrorRecord) == sizeof(backends::DeviceErrorRecord));
  kernels::launch_report_flag(flag, flag64, ok, index, index_i64, reinterpret_cast<kernels::ErrorRecord*>(slot.record),
                              slot.tag, stream);
  check_launch(op, "report_flag");
}

void synchronize(int device) {
  DeviceContext& c = activate(device);
  stats::add(stats::Counter::host_waits);
  check(cudaStreamSynchronize(c.stream), "cuda", "a kernel on the stream failed");
}

// ---------------------------------------------------------------------------------------------
// Copies

namespace {

constexpr size_t kStagingBytes = 8u << 20;  // per buffer; two buffers per device
constexpr size_t kDirectBytes = 64u << 10;  // smaller copies go straight through cudaMemcpyAsync
// Copies up to this size also go straight through cudaMemcpyAsync (the driver stages pageable
// memory itself) while the device has no staging buffers yet: their creation (cudaHostAlloc of
// 16 MiB) took 6-15 ms on the H200's hosts and stalled the other threads' CUDA calls, which a
// loaded executable's first run (a 0.6 MB input, a 0.4 MB output) should not pay
// (docs/design/0011 "Session 23"). Larger copies make the buffers.
constexpr size_t kLazyStagingBytes = 1u << 20;

struct Staging {
  std::mutex mu;
  void* buf[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
};
// The device's staging buffers, made at the first call with `make` (null before that without).
Staging* staging_of(DeviceContext& c, bool make) {
  static auto* all = new std::deque<Staging>;
  static std::mutex mu;
  static auto* index = new std::vector<Staging*>;
  std::lock_guard<std::mutex> lock(mu);
  if (index->size() <= static_cast<size_t>(c.device)) index->resize(static_cast<size_t>(c.device) + 1, nullptr);
  Staging*& s = (*index)[static_cast<size_t>(c.device)];
  if (!s && make) {
    phases::Scope timed("cuda_staging_alloc");
    s = &all->emplace_back();
    for (int i = 0; i < 2; ++i) {
      check(cudaHostAlloc(&s->buf[i], kStagingBytes, cudaHostAllocDefault), "cuda", "cudaHostAlloc (staging)");
      check(cudaEventCreateWithFlags(&s->done[i], cudaEventDisableTiming), "cuda", "cudaEventCreate");
    }
  }
  return s;
}
Staging& staging(DeviceContext& c) { return *staging_of(c, true); }

// A copy that goes straight through cudaMemcpyAsync (see kLazyStagingBytes).
bool direct_copy(DeviceContext& c, size_t bytes) {
  return bytes <= kDirectBytes || (bytes <= kLazyStagingBytes && staging_of(c, false) == nullptr);
}

// memcpy by several threads for large copies (one thread copies pageable memory into pinned
// memory at ~5 GB/s: the weights' upload at a loaded executable's first run was bound by it).
void copy_host(void* dst, const void* src, size_t bytes) {
  constexpr size_t kPiece = size_t{1} << 20;
  const auto pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
  core::parallel_for(pieces, 1, [&](int64_t begin, int64_t end) {
    const size_t lo = static_cast<size_t>(begin) * kPiece;
    const size_t hi = std::min(bytes, static_cast<size_t>(end) * kPiece);
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, hi - lo);
  });
}

void host_to_device(DeviceContext& c, cudaStream_t stream, void* dst, const void* src, size_t bytes) {
  // Neither path waits for the device: a small copy from pageable memory is staged by the driver
  // before cudaMemcpyAsync returns; a large one is copied into our pinned buffers, each reused only
  // after its previous copy finished (its event). Kernels queued later on the stream see the data.
  if (direct_copy(c, bytes)) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "cuda", "host-to-device copy");
    return;
  }
  Staging& s = staging(c);
  std::lock_guard<std::mutex> lock(s.mu);
  size_t done = 0;
  for (int i = 0; done < bytes; i ^= 1) {
    size_t n = std::min(kStagingBytes, bytes - done);
    check(cudaEventSynchronize(s.done[i]), "cuda", "staging buffer");  // its previous copy finished
    copy_host(s.buf[i], static_cast<const char*>(src) + done, n);
    check(cudaMemcpyAsync(static_cast<char*>(dst) + done, s.buf[i], n, cudaMemcpyHostToDevice, stream), "cuda",
          "host-to-device copy");
    check(cudaEventRecord(s.done[i], stream), "cuda", "cudaEventRecord");
    done += n;
  }
}

void device_to_host(DeviceContext& c, cudaStream_t stream, void* dst, const void* src, size_t bytes) {
  stats::add(stats::Counter::host_waits);
  if (direct_copy(c, bytes)) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream), "cuda", "device-to-host copy");
    check(cudaStreamSynchronize(stream), "cuda", "device-to-host copy");
    return;
  }
  Staging& s = staging(c);
  std::lock_guard<std::mutex> lock(s.mu);
  size_t done = 0;
  while (done < bytes) {
    size_t n = std::min(kStagingBytes, bytes - done);
    check(cudaMemcpyAsync(s.buf[0], static_cast<const char*>(src) + done, n, cudaMemcpyDeviceToHost, stream),
          "cuda", "device-to-host copy");
    check(cudaStreamSynchronize(stream), "cuda", "device-to-host copy");
    std::memcpy(static_cast<char*>(dst) + done, s.buf[0], n);
    done += n;
  }
}

}  // namespace

void warm_staging(int device) { staging(activate(device)); }

void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes, void* on) {
  if (bytes == 0) return;
  auto stream_for = [on](DeviceContext& c) { return on != nullptr ? static_cast<cudaStream_t>(on) : c.stream; };
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
  } else if (src_device.is_cpu()) {
    DeviceContext& c = activate(dst_device.index);
    host_to_device(c, stream_for(c), dst, src, bytes);
  } else if (dst_device.is_cpu()) {
    DeviceContext& c = activate(src_device.index);
    device_to_host(c, stream_for(c), dst, src, bytes);
  } else if (src_device.index == dst_device.index) {
    DeviceContext& c = activate(src_device.index);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_for(c)), "cuda", "device-to-device copy");
  } else {
    DeviceContext& s = activate(src_device.index);
    check(cudaStreamSynchronize(s.stream), "cuda", "peer copy");
    DeviceContext& d = activate(dst_device.index);
    check(cudaMemcpyPeerAsync(dst, d.device, src, s.device, bytes, d.stream), "cuda", "peer copy");
    check(cudaStreamSynchronize(d.stream), "cuda", "peer copy");
  }
}

namespace {
class CudaDeviceRuntime final : public core::DeviceRuntime {
 public:
  int device_count() const override { return cuda::device_count(); }
  std::shared_ptr<void> allocate(int index, size_t bytes) const override {
    check_device(index);
    return device_allocate(index, bytes);
  }
  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) const override {
    cuda::copy(dst, dst_device, src, src_device, bytes);
  }
  void* stream(int index) const override {
    check_device(index);
    return activate(index).stream;
  }
  void synchronize(int index) const override {
    check_device(index);
    cuda::synchronize(index);
  }
};
}  // namespace

const core::DeviceRuntime& device_runtime() {
  static const CudaDeviceRuntime rt;
  return rt;
}

}  // namespace tg::cuda

namespace tg::cuda {

namespace {

// Uploads started by prefetch_constants that a run may not have waited for yet: the chunk's
// event (recorded on the upload stream after the chunk's copy), shared by the chunk's constants.
struct PendingChunk {
  cudaEvent_t done = nullptr;
  ~PendingChunk() {
    if (done) cudaEventDestroy(done);
  }
};

struct Entry {
  std::weak_ptr<void> host;
  TensorData copy;
  std::shared_ptr<PendingChunk> pending;  ///< set while the copy may not be complete
  bool enqueued = true;                   ///< false until prefetch_constants queued its copy
};

struct Uploads {
  std::mutex mu;
  std::condition_variable queued;  // an entry's copy was enqueued
  std::map<std::pair<const void*, int>, Entry> entries;
};
Uploads& uploads() {
  static auto* u = new Uploads;  // never freed (used until the process ends)
  return *u;
}

}  // namespace

TensorData upload_cached(const TensorData& host, int device, void* stream) {
  if (!host.device().is_cpu() || host.empty()) return host.to(Device::cuda(device));
  Uploads& u = uploads();
  std::unique_lock lock(u.mu);
  auto key = std::make_pair(host.storage_ptr(), device);
  auto it = u.entries.find(key);
  if (it != u.entries.end() && !it->second.enqueued) {  // prefetch_constants has not queued it yet
    phases::Scope timed("constant_prefetch_wait");
    u.queued.wait(lock, [&] {
      it = u.entries.find(key);  // (erased when the prefetch failed)
      return it == u.entries.end() || it->second.enqueued;
    });
  }
  if (it != u.entries.end() && it->second.host.lock() == host.storage() &&
      it->second.copy.nbytes() >= host.nbytes()) {
    Entry& e = it->second;
    if (e.pending) {  // the work queued after this on `stream` waits for the copy
      DeviceContext& c = activate(device);
      const cudaStream_t s = stream != nullptr ? static_cast<cudaStream_t>(stream) : c.stream;
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      check(cudaStreamIsCapturing(s, &capture), "constant", "cudaStreamIsCapturing");
      if (capture != cudaStreamCaptureStatusNone) {
        check(cudaEventSynchronize(e.pending->done), "constant", "constant upload");
      } else {
        check(cudaStreamWaitEvent(s, e.pending->done, 0), "constant", "cudaStreamWaitEvent");
      }
      e.pending.reset();
    }
    TensorData c = e.copy;
    if (c.dtype() == host.dtype() && c.num_elements() == host.num_elements()) return c.reshaped(host.shape());
  }
  if (u.entries.size() > 256) {
    std::erase_if(u.entries, [](const auto& kv) { return kv.second.enqueued && kv.second.host.expired(); });
  }
  GlobalAllocationScope global;  // shared by later runs: never from a recording's private pool
  phases::Scope timed("constant_upload");
  TensorData copy = host.to(Device::cuda(device));
  u.entries[key] = Entry{host.storage(), copy, nullptr, true};
  return copy;
}

void adopt_uploads(std::span<const TensorData> hosts, std::span<const TensorData> copies, int device) {
  Uploads& u = uploads();
  std::lock_guard lock(u.mu);
  for (size_t i = 0; i < hosts.size() && i < copies.size(); ++i) {
    const TensorData& h = hosts[i];
    if (!h.device().is_cpu() || h.empty()) continue;
    u.entries[{h.storage_ptr(), device}] = Entry{h.storage(), copies[i], nullptr, true};
  }
  u.queued.notify_all();
}

std::shared_ptr<void> prefetch_constants(std::span<const TensorData> hosts, int device) {
  // Opt-in until it has run on a GPU (written in session 21 when no device time was left):
  // TG_PREFETCH_CONSTANTS=1 turns it on.
  if (!env::prefetch_constants()) return nullptr;
  phases::Scope timed("constant_prefetch_start");
  DeviceContext& c = activate(device);
  // One device block for all (each 256-byte aligned), the constants packed in order.
  constexpr size_t kAlign = 256;
  std::vector<TensorData> todo;
  std::vector<size_t> offsets;
  size_t total = 0;
  Uploads& u = uploads();
  {
    std::lock_guard lock(u.mu);
    std::set<const void*> seen;
    for (const TensorData& h : hosts) {
      if (!h.device().is_cpu() || h.empty() || !seen.insert(h.storage_ptr()).second) continue;
      auto it = u.entries.find({h.storage_ptr(), device});
      if (it != u.entries.end() && it->second.host.lock() == h.storage()) continue;  // uploaded before
      todo.push_back(h);
      offsets.push_back(total);
      total += (h.nbytes() + kAlign - 1) / kAlign * kAlign;
    }
  }
  // Small executables (the ONNX node tests load thousands) upload at first use, as before.
  if (todo.empty() || total < (size_t{1} << 20)) {
    std::lock_guard lock(u.mu);
    return nullptr;
  }
  std::shared_ptr<void> block;
  {
    GlobalAllocationScope global;
    block = device_allocate(device, total);
  }
  auto* base = static_cast<char*>(block.get());
  {
    std::lock_guard lock(u.mu);
    for (size_t i = 0; i < todo.size(); ++i) {
      const TensorData& h = todo[i];
      TensorData copy = TensorData::from_external(base + offsets[i], h.shape(), h.dtype(), Device::cuda(device), block);
      u.entries[{h.storage_ptr(), device}] = Entry{h.storage(), copy, nullptr, false};
    }
  }
  // The copies, in chunks of the staging buffers, on a stream of their own (so that they do not
  // wait behind the run's kernels), by a thread of their own (so that the load and the run's host
  // work go on); each constant is marked enqueued with its chunk's event.
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "constant", "cudaStreamCreate");
  auto work = [&c, device, stream, base, total, todo = std::move(todo), offsets = std::move(offsets)] {
    Uploads& u = uploads();
    size_t next = 0;  // the first constant not marked enqueued
    try {
      check(cudaSetDevice(device), "constant", "cudaSetDevice");
      Staging& s = staging(c);
      size_t at = 0;  // bytes of the block queued so far
      for (int b = 0; at < total; b ^= 1) {
        const size_t n = std::min(kStagingBytes, total - at);
        {
          std::lock_guard lock(s.mu);
          check(cudaEventSynchronize(s.done[b]), "constant", "staging buffer");
          // Gather the constants overlapping [at, at + n) into the buffer.
          for (size_t i = next; i < todo.size() && offsets[i] < at + n; ++i) {
            const size_t lo = std::max(at, offsets[i]), hi = std::min(at + n, offsets[i] + todo[i].nbytes());
            if (hi > lo) {
              copy_host(static_cast<char*>(s.buf[b]) + (lo - at), static_cast<const char*>(todo[i].raw_data()) + (lo - offsets[i]),
                        hi - lo);
            }
          }
          check(cudaMemcpyAsync(base + at, s.buf[b], n, cudaMemcpyHostToDevice, stream), "constant", "host-to-device copy");
          check(cudaEventRecord(s.done[b], stream), "constant", "cudaEventRecord");
        }
        auto chunk = std::make_shared<PendingChunk>();
        check(cudaEventCreateWithFlags(&chunk->done, cudaEventDisableTiming), "constant", "cudaEventCreate");
        check(cudaEventRecord(chunk->done, stream), "constant", "cudaEventRecord");
        at += n;
        std::lock_guard lock(u.mu);
        for (; next < todo.size() && offsets[next] + todo[next].nbytes() <= at; ++next) {
          auto it = u.entries.find({todo[next].storage_ptr(), device});
          if (it != u.entries.end() && !it->second.enqueued) {
            it->second.pending = chunk;
            it->second.enqueued = true;
          }
        }
        u.queued.notify_all();
      }
    } catch (const std::exception&) {
      cudaGetLastError();
    }
    // On a failure the constants not queued are uploaded at their first use, as without this.
    std::lock_guard lock(u.mu);
    for (; next < todo.size(); ++next) {
      auto it = u.entries.find({todo[next].storage_ptr(), device});
      if (it != u.entries.end() && !it->second.enqueued) u.entries.erase(it);
    }
    u.queued.notify_all();
    // The block may go back to the allocator (which reuses in the order of the device's own
    // stream) once the constants are released: not while a copy of this stream is in flight.
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  };
  auto thread = std::make_shared<std::thread>(std::move(work));
  return std::shared_ptr<void>(new int(0), [thread](int* h) {
    delete h;
    if (thread->joinable()) thread->join();
  });
}

}  // namespace tg::cuda
