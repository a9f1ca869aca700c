// oneDNN (v2.x pooling_v2, dilated pooling) primitives of the CPU pool kernels, float32, in the
// tensor's own plain layout (nhwc or nchw). Primitives are created once per geometry and
// algorithm and kept in a mutex-guarded map; they run with a user-provided scratchpad so that
// concurrent executions of one primitive share no state.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/cpu/parallel.h"
#include "backends/cpu/pool.h"
#include "core/error_util.h"

namespace tg::cpu {
namespace {

using dnnl::memory;
using Key = std::array<int64_t, 19>;

// Primitives of one geometry; `backward` entries also hold the forward_training primitive that
// computes max pooling's workspace.
struct Entry {
  dnnl::pooling_v2_forward::primitive_desc fwd_pd;
  dnnl::pooling_v2_forward fwd;
  dnnl::pooling_v2_backward::primitive_desc bwd_pd;
  dnnl::pooling_v2_backward bwd;
  bool reference = false;  // oneDNN has only its slow reference implementation for this case
};

bool is_reference(const dnnl::primitive_desc_base& pd) {
  return std::string_view(pd.impl_info_str()).starts_with("ref");
}

constexpr size_t kMaxEntries = 512;  // the cache is cleared when it grows past this

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::algorithm to_dnnl(PoolAlgo a) {
  switch (a) {
    case PoolAlgo::max:
      return dnnl::algorithm::pooling_max;
    case PoolAlgo::avg_include_pad:
      return dnnl::algorithm::pooling_avg_include_padding;
    case PoolAlgo::avg_exclude_pad:
      return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  return dnnl::algorithm::pooling_max;
}

// oneDNN wants the right/bottom padding that makes (in + before + after - extent) / stride + 1
// equal the output size: a ceil_mode window reaching past the declared padding extends it (those
// elements count as padding, which is what the callers rely on for max and avg_exclude_pad).
int64_t dnnl_pad_after(const ops::PoolDim& d) {
  const int64_t extent = d.dilation * (d.k - 1) + 1;
  return std::max(d.pad_after, (d.out - 1) * d.stride + extent - d.in - d.pad_before);
}

Key key_of(const ops::PoolGeometry& g, PoolAlgo algo, bool backward) {
  return {backward,
          static_cast<int64_t>(algo),
          g.nhwc,
          g.n,
          g.c,
          g.h.in,
          g.w.in,
          g.h.out,
          g.w.out,
          g.h.k,
          g.w.k,
          g.h.stride,
          g.w.stride,
          g.h.dilation,
          g.w.dilation,
          g.h.pad_before,
          g.w.pad_before,
          dnnl_pad_after(g.h),
          dnnl_pad_after(g.w)};
}

std::shared_ptr<const Entry> make_entry(const ops::PoolGeometry& g, PoolAlgo algo, bool backward) {
  const auto tag = g.nhwc ? memory::format_tag::nhwc : memory::format_tag::nchw;
  const memory::desc src({g.n, g.c, g.h.in, g.w.in}, memory::data_type::f32, tag);
  const memory::desc dst({g.n, g.c, g.h.out, g.w.out}, memory::data_type::f32, tag);
  const memory::dims strides{g.h.stride, g.w.stride}, kernel{g.h.k, g.w.k};
  const memory::dims dilation{g.h.dilation - 1, g.w.dilation - 1};  // oneDNN: 0 = dense
  const memory::dims pad_l{g.h.pad_before, g.w.pad_before};
  const memory::dims pad_r{dnnl_pad_after(g.h), dnnl_pad_after(g.w)};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto e = std::make_shared<Entry>();
  const auto prop =
      backward ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::pooling_v2_forward::desc fd(prop, to_dnnl(algo), src, dst, strides, kernel, dilation, pad_l,
                                    pad_r);
  e->fwd_pd = dnnl::pooling_v2_forward::primitive_desc(fd, attr, cpu_engine());
  e->fwd = dnnl::pooling_v2_forward(e->fwd_pd);
  if (backward) {
    dnnl::pooling_v2_backward::desc bd(to_dnnl(algo), src, dst, strides, kernel, dilation, pad_l,
                                       pad_r);
    e->bwd_pd = dnnl::pooling_v2_backward::primitive_desc(bd, attr, cpu_engine(), e->fwd_pd);
    e->bwd = dnnl::pooling_v2_backward(e->bwd_pd);
    e->reference = is_reference(e->bwd_pd);
  }
  e->reference = e->reference || is_reference(e->fwd_pd);
  return e;
}

// The cached primitives of a geometry, or null when oneDNN cannot create them (the caller then
// uses its own loops).
std::shared_ptr<const Entry> entry(const ops::PoolGeometry& g, PoolAlgo algo, bool backward) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Entry>> cache;
  const Key key = key_of(g, algo, backward);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const Entry> e;
  try {
    e = make_entry(g, algo, backward);  // outside the lock: creation may take a while
  } catch (const dnnl::error&) {
    e = nullptr;  // remembered: no second attempt for this geometry
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= kMaxEntries) cache.clear();
  return cache.emplace(key, e).first->second;  // another thread's entry if it came first
}

// Limits this thread's OpenMP team (which oneDNN uses) to one thread while alive, for work too
// small to pay for a parallel region, as parallel_for does.
class SingleThreadIfSmall {
 public:
#ifdef _OPENMP
  explicit SingleThreadIfSmall(int64_t work) : saved_(work < kGrain ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SingleThreadIfSmall() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
#else
  explicit SingleThreadIfSmall(int64_t) : saved_(0) {}
  ~SingleThreadIfSmall() = default;
#endif
  SingleThreadIfSmall(const SingleThreadIfSmall&) = delete;
  SingleThreadIfSmall& operator=(const SingleThreadIfSmall&) = delete;

 private:
  int saved_;
};

// Elementary steps of one pass: every output reads its window.
int64_t work_of(const ops::PoolGeometry& g) {
  return g.n * g.c * g.h.out * g.w.out * g.h.k * g.w.k;
}

// Runs `p` with `args` plus a scratchpad of the size `pd` asks for.
void execute(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd,
             std::unordered_map<int, memory> args) {
  const memory::desc sd = pd.scratchpad_desc();
  std::unique_ptr<uint8_t[]> scratch;
  if (sd.get_size() > 0) {
    scratch = std::make_unique_for_overwrite<uint8_t[]>(sd.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(sd, cpu_engine(), scratch.get()));
  }
  try {
    dnnl::stream stream(cpu_engine());
    p.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& err) {
    fail(ErrorCode::internal, "pool", "oneDNN pooling failed: {}", err.what());
  }
}

}  // namespace

bool onednn_pool_forward(const ops::PoolGeometry& g, PoolAlgo algo, const float* x, float* y) {
  SingleThreadIfSmall threads(work_of(g));  // also at creation: some primitives fix it there
  auto e = entry(g, algo, false);
  if (!e || e->reference) return false;
  auto& eng = cpu_engine();
  execute(e->fwd, e->fwd_pd,
          {{DNNL_ARG_SRC, memory(e->fwd_pd.src_desc(), eng, const_cast<float*>(x))},
           {DNNL_ARG_DST, memory(e->fwd_pd.dst_desc(), eng, y)}});
  return true;
}

bool onednn_pool_backward(const ops::PoolGeometry& g, PoolAlgo algo, const float* dy,
                          const float* x, float* dx) {
  SingleThreadIfSmall threads(work_of(g));
  auto e = entry(g, algo, true);
  if (!e || e->reference) return false;
  auto& eng = cpu_engine();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_DIFF_DST, memory(e->bwd_pd.diff_dst_desc(), eng, const_cast<float*>(dy))},
      {DNNL_ARG_DIFF_SRC, memory(e->bwd_pd.diff_src_desc(), eng, dx)}};
  std::unique_ptr<uint8_t[]> y, workspace;
  if (algo == PoolAlgo::max) {  // the forward pass records each window's argmax
    y = std::make_unique_for_overwrite<uint8_t[]>(e->fwd_pd.dst_desc().get_size());
    workspace = std::make_unique_for_overwrite<uint8_t[]>(e->fwd_pd.workspace_desc().get_size());
    memory ws(e->fwd_pd.workspace_desc(), eng, workspace.get());
    execute(e->fwd, e->fwd_pd,
            {{DNNL_ARG_SRC, memory(e->fwd_pd.src_desc(), eng, const_cast<float*>(x))},
             {DNNL_ARG_DST, memory(e->fwd_pd.dst_desc(), eng, y.get())},
             {DNNL_ARG_WORKSPACE, ws}});
    args.emplace(DNNL_ARG_WORKSPACE, ws);
  }
  execute(e->bwd, e->bwd_pd, std::move(args));
  return true;
}

}  // namespace tg::cpu
