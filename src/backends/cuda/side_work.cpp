// Pending side-stream work of the collectives and its joins (side_work.h).
#include "backends/cuda/side_work.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "backends/cuda/context.h"
#include "core/env.h"

namespace tg::cuda {
namespace {

thread_local std::vector<SideWork> t_pending;
thread_local int t_body_depth = 0;

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  const auto* pa = static_cast<const char*>(a);
  const auto* pb = static_cast<const char*>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

bool touches(const SideWork& w, const TensorData& t) {
  const void* p = t.storage_ptr();
  const size_t n = t.nbytes();
  return overlaps(p, n, w.in, w.in_bytes) || overlaps(p, n, w.out, w.out_bytes);
}

void join(SideWork& w) {
  check(cudaStreamWaitEvent(w.run, w.done, 0), "all_reduce", "cudaStreamWaitEvent (join of NCCL's stream)");
  if (w.release) w.release(w.done);
}

}  // namespace

bool side_work_allowed() {
  return env::nccl_overlap() && t_body_depth == 0;
}

void add_side_work(SideWork work) { t_pending.push_back(std::move(work)); }

void join_conflicting_side_work(const backends::KernelContext& ctx, cudaStream_t s) {
  if (t_pending.empty()) return;
  for (size_t k = 0; k < t_pending.size();) {
    SideWork& w = t_pending[k];
    bool conflict = false;
    if (w.run == s) {
      for (const TensorData& t : ctx.inputs) conflict = conflict || touches(w, t);
      for (const TensorData& t : ctx.outputs) conflict = conflict || touches(w, t);
    }
    if (!conflict) {
      ++k;
      continue;
    }
    join(w);
    t_pending.erase(t_pending.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

void join_side_work(cudaStream_t s) {
  if (t_pending.empty()) return;
  std::vector<SideWork> keep;
  for (SideWork& w : t_pending) {
    if (w.run == s) {
      join(w);
    } else {
      keep.push_back(std::move(w));
    }
  }
  t_pending = std::move(keep);
}

void join_all_side_work() {
  for (SideWork& w : t_pending) join(w);
  t_pending.clear();
}

void drop_side_work() {
  for (SideWork& w : t_pending) {
    if (w.release) w.release(w.done);
  }
  t_pending.clear();
}

ConditionalBodyScope::ConditionalBodyScope() { ++t_body_depth; }
ConditionalBodyScope::~ConditionalBodyScope() { --t_body_depth; }

}  // namespace tg::cuda
