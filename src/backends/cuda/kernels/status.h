// Device-side pieces of the runtime contract (backends/backend.h): the report of a kernel's
// failed check into the run's device error record, and the predicated commit of variables.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace tg::cuda::kernels {

/// Layout of backends::DeviceErrorRecord.
struct ErrorRecord {
  unsigned long long tag;
  long long detail[3];
};

/// When the flag at `flag` (an unsigned long long when `flag64`, else an int) differs from `ok`:
/// sets rec->tag to `tag` unless a check earlier in the run set it, detail[0] to the flag and,
/// when `index` is given, detail[1] to index[flag] (int64 when `index_i64`, else int32).
void launch_report_flag(const void* flag, bool flag64, unsigned long long ok, const void* index, bool index_i64,
                        ErrorRecord* rec, unsigned long long tag, cudaStream_t stream);

/// One copy of the commit (a staged variable value into the variable's buffer).
struct CommitEntry {
  void* dst;
  const void* src;
  unsigned long long bytes;
};

/// Copies every entry unless `rec` (may be null) has a tag: one launch per kMaxCommitEntries
/// entries, the entries passed as kernel parameters (so a captured graph holds them).
constexpr int kMaxCommitEntries = 512;
void launch_commit(const CommitEntry* entries, int n, const ErrorRecord* rec, cudaStream_t stream);

}  // namespace tg::cuda::kernels
