// The report and commit kernels of kernels/status.h.
//
// commit: each entry is split into chunks of kChunk bytes, one block a chunk; a block finds its
// entry by binary search over the entries' first chunks (kernel parameters) and copies 16 bytes
// a thread per step when source, destination and size allow, else bytes. Every block first reads
// the error record: a failed check earlier in the run (stream order) skips the whole commit.
#include <algorithm>

#include "backends/cuda/kernels/status.h"
#include "backends/cuda/kernels/module_anchors.h"

namespace tg::cuda::kernels {
namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kChunk = 64 * 1024;

__global__ void report_flag_kernel(const void* flag, int flag64, unsigned long long ok, const void* index,
                                   int index_i64, ErrorRecord* rec, unsigned long long tag) {
  const unsigned long long v = flag64 ? *static_cast<const unsigned long long*>(flag)
                                      : static_cast<unsigned long long>(*static_cast<const int*>(flag));
  if (v == ok) return;
  if (atomicCAS(&rec->tag, 0ULL, tag) != 0ULL) return;
  rec->detail[0] = static_cast<long long>(v);
  if (index != nullptr) {
    rec->detail[1] = index_i64 ? static_cast<const long long*>(index)[v] : static_cast<const int*>(index)[v];
  }
}

struct CommitArgs {
  CommitEntry e[kMaxCommitEntries];
  unsigned first_block[kMaxCommitEntries + 1];  // entry i's chunks are blocks [first_block[i], first_block[i+1])
  int n;
};

__global__ void commit_kernel(const __grid_constant__ CommitArgs a, const ErrorRecord* rec) {
  if (rec != nullptr && rec->tag != 0) return;
  const unsigned b = blockIdx.x;
  int lo = 0, hi = a.n - 1;  // the last entry whose first block <= b
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (a.first_block[mid] <= b) lo = mid; else hi = mid - 1;
  }
  const CommitEntry& e = a.e[lo];
  const unsigned long long begin = static_cast<unsigned long long>(b - a.first_block[lo]) * kChunk;
  const unsigned long long end = begin + kChunk < e.bytes ? begin + kChunk : e.bytes;
  auto* dst = static_cast<unsigned char*>(e.dst);
  const auto* src = static_cast<const unsigned char*>(e.src);
  const bool wide = (reinterpret_cast<unsigned long long>(dst) | reinterpret_cast<unsigned long long>(src) | begin) % 16 == 0;
  unsigned long long i = begin + static_cast<unsigned long long>(threadIdx.x) * (wide ? 16 : 1);
  if (wide) {
    for (; i + 16 <= end; i += kThreads * 16ULL) {
      *reinterpret_cast<uint4*>(dst + i) = *reinterpret_cast<const uint4*>(src + i);
    }
    // The tail (end not a multiple of 16): bytes, by the first threads.
    const unsigned long long tail = begin + (end - begin) / 16 * 16;
    for (unsigned long long j = tail + threadIdx.x; j < end; j += kThreads) dst[j] = src[j];
  } else {
    for (; i < end; i += kThreads) dst[i] = src[i];
  }
}

}  // namespace

const void* status_module_anchor() { return reinterpret_cast<const void*>(&report_flag_kernel); }

void launch_report_flag(const void* flag, bool flag64, unsigned long long ok, const void* index, bool index_i64,
                        ErrorRecord* rec, unsigned long long tag, cudaStream_t stream) {
  report_flag_kernel<<<1, 1, 0, stream>>>(flag, flag64 ? 1 : 0, ok, index, index_i64 ? 1 : 0, rec, tag);
}

void launch_commit(const CommitEntry* entries, int n, const ErrorRecord* rec, cudaStream_t stream) {
  int i = 0;
  while (i < n) {
    CommitArgs a{};
    a.n = 0;
    unsigned blocks = 0;
    for (; i < n && a.n < kMaxCommitEntries; ++i) {
      if (entries[i].bytes == 0) continue;
      a.e[a.n] = entries[i];
      a.first_block[a.n] = blocks;
      blocks += static_cast<unsigned>((entries[i].bytes + kChunk - 1) / kChunk);
      a.n++;
    }
    a.first_block[a.n] = blocks;
    if (a.n == 0) continue;
    commit_kernel<<<blocks, kThreads, 0, stream>>>(a, rec);
  }
}

}  // namespace tg::cuda::kernels
