// CUDA kernel of fused_reduce: the sums over FusedAttrs::reduce_axes of an elementwise program's
// values, in one generated kernel (NVRTC) that never writes the program's values.
//
// Semantics: inputs broadcast (NumPy, right-aligned) to FusedAttrs::shape; every element of the
// shape evaluates the program once (tg_fused of fused_program.h, in the steps' storage types, as
// fused_elementwise does) and adds each output value o<k> to its sum, so sibling sums (a batch
// norm's sum(x) and sum(x*x)) share the loads. Sums accumulate as reduce_sum's (f32 and f64 in
// double, f16/bf16 in float) and are rounded once to the output dtype (floating dtypes only). The
// combination order is fixed by the shapes and the device's SM count: deterministic (the one
// atomic only elects the block that finishes).
//
// Host planning: per input, element strides over the shape (0 on broadcast dims); size-1 dims
// dropped, adjacent dims merged when both are reduced or both kept and every input's strides allow
// it. Result: nk <= 4 kept and nr <= 4 reduced merged dims (O outputs, R elements a sum). Inputs
// are 's' (one element: loaded once a thread), 'k' (reduced strides all 0, e.g. a per-channel
// scale: loaded once per output, outside the reduction loop) or 'g' (loaded per element).
// Threads iterate the reduced index r with a stride; its digits over the reduced dims are advanced
// with carries (no division in the loop). Two mappings of a block's 256 threads:
//   - row ('r', innermost merged dim reduced and R >= 32; NCHW batch norm, softmax rows): rlane =
//     threadIdx.x over 32..256 consecutive r (coalesced; ~R/16 lanes), threadIdx.y over the block's
//     outputs; warp shuffles, then one shared-memory slot per warp summed in order.
//   - column ('c', otherwise; NHWC batch norm: reduced [N*H*W], kept [C]): threadIdx.x over 32
//     consecutive output groups (coalesced; fewer when there are fewer groups, more when R < 8),
//     threadIdx.y over power-of-two r-lanes; shared-memory tree over y. A group is one output, or
//     2-4 consecutive outputs read with one 8-byte vector load per input and element of r when the
//     layout allows (vector_width: 16-bit data of 64 channels would otherwise load 64 bytes a warp).
//   - stream ('s', one output group: every reduced dim merged into one, contiguous in every
//     per-element input, >= kStreamedSum elements; a loop condition's mean(y)): each thread reads
//     16-byte vectors (Plan::vec elements of the widest input) with a grid stride, kUnroll vectors
//     in flight; one resident wave of 256-thread blocks (at most kStreamBlocksPerSm an SM, each
//     thread ~kUnroll vectors), warp shuffles, then the last block sums the blocks' partials (one a
//     lane). The blocks are gridDim.y (the splits), so partials, counter and finish are the row
//     and column modes'. The full sum of 2^20 floats: 256 blocks, 4 float4 loads a thread (the
//     row mode used 1024 blocks of scalar loads in two waves, then a serial pass over 1024 partials).
// A thread loads kUnroll elements before using them (memory-level parallelism), same order.
// blockIdx.x strides over output groups; gridDim.y splits r so that the grid has ~8 blocks per SM
// while each thread still runs >= ~16 iterations (>= kUnroll for long sums of few outputs, whose
// splits the last block finishes). With one split the block stores the outputs;
// otherwise it writes partials [split][O] (accumulator type) to scratch, and for few outputs
// (O <= 8: full reductions, a loop's mean(y) > t) the last block to finish sums them (a counter:
// atomicAdd after a fence, set back to zero by that block; a recorded launch owns a counter for
// good, an unrecorded one zeroes one in its workspace; up to 256 lanes an output), else
// tg_fr_finish does, both in a fixed order: tg_fr_finish with 32 outputs a block times up to 32
// split lanes, kUnroll loads in flight a lane, a tree over the lanes (a thread per output walking
// every split was latency-bound: ~95 us a call at 1056 splits by the profile's times at two
// sizes, more than the main kernel's time at 64 channels). 32-bit index math when the shape has < 2^31 elements, else 64-bit.
// Zero-size: O == 0 launches nothing, R == 0 stores zeros.
// Limits: 4 kept and 4 reduced merged dims; outputs' shared memory <= 48 KiB (24 f32/f64 sums);
// no integer-division steps (the fusion pass never makes them): tg::Error(unsupported).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/elementwise_codegen.h"
#include "backends/cuda/fused_program.h"
#include "backends/cuda/fused_reduce_plan.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "core/error_util.h"

namespace tg::cuda {
namespace {

using namespace fr;


// ---- kernel cache -------------------------------------------------------------------------------

struct Entry {
  std::shared_ptr<const nvrtc::Program> program;
  cudaKernel_t main32 = nullptr, main64 = nullptr, finish = nullptr;
};

const Entry& entry_for(const FusedProgramSource& p, std::span<const DType> in, const Plan& pl, int device,
                       std::string_view op) {
  const DeviceContext& dc = activate(device);
  std::string key = fmt::format("{}{}|{}{}|{}|{}|{}|", dc.cc_major, dc.cc_minor, pl.mode, pl.vec, pl.nk, pl.nr, pl.kinds);
  for (DType d : in) key += dtype_name(d), key += ',';
  key += '|';
  for (DType d : p.outputs) key += dtype_name(d), key += ',';
  key += '|', key += p.key.empty() ? p.prelude : p.key;

  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::unique_ptr<Entry>>();
  {
    std::lock_guard lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) {
      nvrtc::note_use(*it->second->program);  // saved executables store the kernels they use
      return *it->second;
    }
  }
  auto e = std::make_unique<Entry>();
  e->program = nvrtc::compile(reduce_source(p, in, pl), device, op);
  e->main32 = e->program->kernel("tg_fr_32", op);
  e->main64 = e->program->kernel("tg_fr_64", op);
  e->finish = e->program->kernel("tg_fr_finish", op);
  std::lock_guard lock(mu);
  auto [it, inserted] = cache->emplace(std::move(key), std::move(e));
  return *it->second;
}

// ---- planning and launch ------------------------------------------------------------------------

/// Merged kept and reduced dims, per-input strides and kinds (see the top); O and R set.
Plan plan_reduce(const ir::FusedAttrs& a, std::span<const TensorData> inputs, std::string_view op) {
  const Shape& shape = a.shape;
  const size_t n = inputs.size();
  std::vector<std::vector<int64_t>> raw(n);
  for (size_t m = 0; m < n; ++m) raw[m] = broadcast_strides(shape, inputs[m].shape(), op);
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t ax : a.reduce_axes) reduced[static_cast<size_t>(ax)] = true;
  struct Dim {
    int64_t size;
    bool reduced;
    std::vector<int64_t> st;  ///< per input
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !dims.empty() && dims.back().reduced == reduced[d];
    for (size_t m = 0; m < n && merge; ++m) merge = dims.back().st[m] == raw[m][d] * shape[d];
    if (merge) {
      dims.back().size *= shape[d];
      for (size_t m = 0; m < n; ++m) dims.back().st[m] = raw[m][d];
      continue;
    }
    Dim x{shape[d], reduced[d], std::vector<int64_t>(n)};
    for (size_t m = 0; m < n; ++m) x.st[m] = raw[m][d];
    dims.push_back(std::move(x));
  }
  Plan pl;
  pl.strides.resize(n);
  pl.dims.O = pl.dims.R = 1;
  for (const Dim& x : dims) {
    int& count = x.reduced ? pl.nr : pl.nk;
    if (count == kMaxDims) {
      fail(ErrorCode::unsupported, op, "more than {} {} dims after merging (shape {}, reduce axes {})", kMaxDims,
           x.reduced ? "reduced" : "kept", str(shape), a.reduce_axes);
    }
    (x.reduced ? pl.dims.r : pl.dims.k)[count] = x.size;
    (x.reduced ? pl.dims.R : pl.dims.O) *= x.size;
    for (size_t m = 0; m < n; ++m) (x.reduced ? pl.strides[m].r : pl.strides[m].k)[count] = x.st[m];
    ++count;
  }
  pl.kinds.assign(n, 'g');
  for (size_t m = 0; m < n; ++m) {
    const InStrides& s = pl.strides[m];
    if (inputs[m].num_elements() == 1) {
      pl.kinds[m] = 's';
    } else if (std::all_of(s.r, s.r + kMaxDims, [](long long v) { return v == 0; })) {
      pl.kinds[m] = 'k';
    }
  }
  pl.mode = !dims.empty() && dims.back().reduced && pl.dims.R >= 32 ? 'r' : 'c';
  return pl;
}

/// Column mode: how many consecutive outputs a thread sums, so that each per-element input is read
/// with 8-byte vector loads (4 bf16/f16, 2 f32): the innermost kept dim is contiguous in every such
/// input, its size and every other stride are multiples of the width, and the buffers are aligned.
/// 1 otherwise (and in row mode).
int vector_width(const Plan& pl, std::span<const TensorData> inputs) {
  if (pl.mode != 'c' || pl.nk == 0) return 1;
  size_t widest = 0;
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (pl.kinds[m] == 'g') widest = std::max(widest, dtype_size(inputs[m].dtype()));
  }
  if (widest == 0 || widest > 4) return 1;
  const int inner = pl.nk - 1;
  for (int v = static_cast<int>(8 / widest); v > 1; v /= 2) {
    bool ok = pl.dims.k[inner] % v == 0;
    for (size_t m = 0; m < inputs.size() && ok; ++m) {
      const InStrides& st = pl.strides[m];
      if (pl.kinds[m] == 'k') ok = st.k[inner] == 0 || st.k[inner] == 1;
      if (pl.kinds[m] != 'g') continue;
      ok = st.k[inner] == 1 &&
           reinterpret_cast<uintptr_t>(inputs[m].storage_ptr()) % (v * dtype_size(inputs[m].dtype())) == 0;
      for (int j = 0; j < inner; ++j) ok = ok && st.k[j] % v == 0;
      for (int j = 0; j < pl.nr; ++j) ok = ok && st.r[j] % v == 0;
    }
    if (ok) return v;
  }
  return 1;
}

/// Stream mode (see the top) when the sum has one output group, one merged reduced dim of at
/// least kStreamedSum elements, contiguous (stride 1) in every per-element input, and every such
/// input aligned to its vector: then Plan::vec = elements of the widest per-element input in
/// kStreamBytes (at most 8). Returns whether it chose it.
bool stream_layout(Plan& pl, std::span<const TensorData> inputs) {
  if (pl.nk != 0 || pl.nr != 1 || pl.dims.R < kStreamedSum) return false;
  size_t widest = 0;
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (pl.kinds[m] == 'k') return false;
    if (pl.kinds[m] == 'g') {
      if (pl.strides[m].r[0] != 1) return false;
      widest = std::max(widest, dtype_size(inputs[m].dtype()));
    }
  }
  if (widest == 0) return false;
  const int v = static_cast<int>(std::min<size_t>(8, kStreamBytes / widest));
  for (size_t m = 0; m < inputs.size(); ++m) {
    if (pl.kinds[m] == 'g' &&
        reinterpret_cast<uintptr_t>(inputs[m].storage_ptr()) % (v * dtype_size(inputs[m].dtype())) != 0) {
      return false;
    }
  }
  pl.mode = 's';
  pl.vec = v;
  return true;
}

/// Sets Plan::mode and Plan::vec for the inputs: stream mode where it applies, else the row or
/// column mode plan_reduce chose with vector_width's vectors.
void choose_layout(Plan& pl, std::span<const TensorData> inputs) {
  if (!stream_layout(pl, inputs)) pl.vec = vector_width(pl, inputs);
}

/// Smallest power of two >= n, at most cap (a power of two).
int pow2_ceil(int64_t n, int cap) {
  int p = 1;
  while (p < n && p < cap) p *= 2;
  return p;
}

struct Launch {
  dim3 block;
  int64_t blocks = 1;  ///< gridDim.x
  int64_t splits = 1;  ///< gridDim.y
};

/// Whether the main kernel's last block finishes split sums (few outputs: O * 32 <= kThreads, so
/// an output gets 32 or more lanes there), else tg_fr_finish does.
bool finishes_in_last_block(int64_t O, int64_t splits) { return splits > 1 && O * 32 <= kThreads; }

/// Block shape (see the top): row mode 32..256 r-lanes (>= ~16 elements each) times outputs;
/// column mode up to 32 outputs times power-of-two r-lanes. Splits of r for ~kBlocksPerSm blocks
/// per SM, a thread summing >= 16 elements, or >= kUnroll when the outputs are few enough for the
/// last block to finish them and a sum has >= kStreamedSum elements (a full sum of 2^20 floats:
/// 1024 blocks instead of 256, so enough loads are in flight to stream the input; the last
/// block's lanes then read ~4 partials each). Stream mode: 256-thread blocks along gridDim.y,
/// enough for ~kUnroll vectors a thread, at most kStreamBlocksPerSm an SM (one resident wave).
Launch launch_shape(const Plan& pl, int64_t sms) {
  Launch l;
  if (pl.mode == 's') {  // one wave of blocks (gridDim.y), a thread ~kUnroll vectors
    const int64_t vectors = pl.dims.R / pl.vec;
    l.block = dim3(kThreads, 1);
    l.splits = std::clamp<int64_t>((vectors + int64_t{kThreads} * kUnroll - 1) / (int64_t{kThreads} * kUnroll), 1,
                                   std::min<int64_t>(kStreamBlocksPerSm * sms, 65535));
    return l;
  }
  const int64_t O = pl.dims.O / pl.vec, R = pl.dims.R;  // column mode: output groups
  int rc, oc;
  if (pl.mode == 'r') {
    rc = 32;
    while (rc < kThreads && int64_t{rc} * 2 * 16 <= R) rc *= 2;
    oc = pow2_ceil(O, kThreads / rc);
    l.block = dim3(rc, oc);
  } else {
    oc = pow2_ceil(O, 32);
    rc = pow2_ceil(R, kThreads / oc);
    oc = pow2_ceil(O, kThreads / rc);
    l.block = dim3(oc, rc);
  }
  l.blocks = std::min<int64_t>((O + oc - 1) / oc, 65535LL * 32);
  if (l.blocks < kBlocksPerSm * sms) {
    const int64_t per_thread = pl.dims.O * 32 <= kThreads && R >= kStreamedSum ? kUnroll : 16;
    l.splits = std::clamp<int64_t>(std::min((kBlocksPerSm * sms + l.blocks - 1) / l.blocks, R / (rc * per_thread)), 1, 65535);
  }
  return l;
}

/// A counter of a recorded launch's last block: zero, and set back to zero by every execution,
/// so each recorded kernel node owns one for good (replays of one graph never overlap). From a
/// per-device slab of kCounters; null when the slab is used up (the launch then zeroes one in
/// its workspace, one memset node more).
constexpr size_t kCounters = 1 << 18;
unsigned int* recorded_counter(DeviceContext& dc, std::string_view op) {
  struct Slab {
    unsigned int* base = nullptr;
    size_t used = 0;
  };
  static std::mutex mu;
  static auto* slabs = new std::unordered_map<int, Slab>();
  std::lock_guard lock(mu);
  Slab& s = (*slabs)[dc.device];
  if (s.base == nullptr) {
    // A recording captures in relaxed mode, which allows the allocation; the memset runs on the
    // legacy stream, which the (non-blocking) capturing streams do not wait for.
    check(cudaMalloc(&s.base, kCounters * sizeof(unsigned int)), op, "cudaMalloc");
    check(cudaMemset(s.base, 0, kCounters * sizeof(unsigned int)), op, "cudaMemset");
    check(cudaStreamSynchronize(cudaStreamLegacy), op, "cudaStreamSynchronize");
  }
  return s.used < kCounters ? s.base + s.used++ : nullptr;
}

}  // namespace

void fused_reduce_kernel(KernelContext& ctx) {
  const auto& a = std::get<ir::FusedAttrs>(ctx.node.attrs);
  const std::string_view op = ctx.op_name();
  std::vector<DType> in;
  for (const TensorData& x : ctx.inputs) in.push_back(x.dtype());
  const FusedProgramSource& prog = cached_fused_program(a, in, op);
  if (prog.uses_flag) {
    fail(ErrorCode::unsupported, op, "integer division ({}) in a fused reduction", ir::op_name(prog.flag_op));
  }
  const size_t nout = prog.outputs.size();
  for (size_t j = 0; j < a.reduce_axes.size(); ++j) {
    const int64_t ax = a.reduce_axes[j];
    if (ax < 0 || ax >= static_cast<int64_t>(a.shape.size()) || (j > 0 && ax <= a.reduce_axes[j - 1])) {
      fail(ErrorCode::internal, op, "reduce axes {} of shape {}", a.reduce_axes, str(a.shape));
    }
  }
  int64_t O = 1, R = 1;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    (std::find(a.reduce_axes.begin(), a.reduce_axes.end(), static_cast<int64_t>(d)) != a.reduce_axes.end() ? R : O) *=
        a.shape[d];
  }
  if (ctx.outputs.size() != nout) fail(ErrorCode::internal, op, "{} outputs, program has {}", ctx.outputs.size(), nout);
  size_t shared = 0;
  for (size_t k = 0; k < nout; ++k) {
    require_dtype(DTypeGroup::floating, prog.outputs[k], op);
    const TensorData& y = ctx.outputs[k];
    if (y.dtype() != prog.outputs[k] || y.num_elements() != O) {
      fail(ErrorCode::internal, op, "output {} is {}, expected {} elements of {}", k, y.type().to_string(), O,
           dtype_name(prog.outputs[k]));
    }
    shared += kThreads * acc_size(prog.outputs[k]);
  }
  if (shared > kMaxShared) fail(ErrorCode::unsupported, op, "{} sums in one fused reduction", nout);
  DeviceContext& dc = context_of(ctx);
  if (O == 0 || R == 0) {
    for (const TensorData& x : ctx.inputs) broadcast_strides(a.shape, x.shape(), op);  // raises when it does not
    if (O == 0) return;
    // Empty sums: zeros (all-zero bits in every floating dtype).
    for (TensorData& y : ctx.outputs) {
      check(cudaMemsetAsync(y.storage_ptr(), 0, y.nbytes(), stream_of(ctx)), op, "cudaMemsetAsync");
    }
    return;
  }
  Plan pl = plan_reduce(a, ctx.inputs, op);  // checks broadcasting
  choose_layout(pl, ctx.inputs);
  const Entry& e = entry_for(prog, in, pl, ctx.device.index, op);

  const Launch l = launch_shape(pl, dc.sm_count > 0 ? dc.sm_count : 132);
  const int64_t splits = l.splits;

  // Split sums of few outputs are finished by the main kernel's last block (one kernel), others by
  // tg_fr_finish.
  const bool last_block = finishes_in_last_block(O, splits);
  // Partials [splits][O] per output, 256-byte aligned, in the run's workspace (and the last
  // block's counter, unless a recorded launch gets its own).
  std::vector<void*> q(nout, nullptr);
  unsigned int* counter = nullptr;
  if (last_block) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream_of(ctx), &capturing), op, "cudaStreamIsCapturing");
    if (capturing == cudaStreamCaptureStatusActive) counter = recorded_counter(dc, op);
  }
  if (splits > 1) {
    std::vector<size_t> offset(nout);
    size_t bytes = 0;
    for (size_t k = 0; k < nout; ++k) {
      offset[k] = bytes;
      bytes += (static_cast<size_t>(splits * O) * acc_size(prog.outputs[k]) + 255) / 256 * 256;
    }
    const bool own_counter = last_block && counter == nullptr;
    char* scratch = static_cast<char*>(workspace_of(ctx, bytes + (own_counter ? 256 : 0)));
    for (size_t k = 0; k < nout; ++k) q[k] = scratch + offset[k];
    if (own_counter) {
      counter = reinterpret_cast<unsigned int*>(scratch + bytes);
      check(cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream_of(ctx)), op, "cudaMemsetAsync");
    }
  }

  // Arguments in param_list's order.
  std::vector<void*> ptrs;
  for (TensorData& y : ctx.outputs) ptrs.push_back(y.storage_ptr());
  for (void* p : q) ptrs.push_back(p);
  for (const TensorData& x : ctx.inputs) ptrs.push_back(const_cast<void*>(x.storage_ptr()));
  std::vector<void*> args;
  for (void*& p : ptrs) args.push_back(&p);
  for (size_t m = 0; m < in.size(); ++m) {
    if (pl.kinds[m] != 's') args.push_back(&pl.strides[m]);
  }
  args.push_back(&pl.dims);
  args.push_back(&counter);
  const bool small = O * R < (int64_t{1} << 31);
  nvrtc::launch(small ? e.main32 : e.main64, dim3(static_cast<unsigned>(l.blocks), static_cast<unsigned>(splits)),
                l.block, args.data(), stream_of(ctx), op, 0, true);
  if (splits > 1 && !last_block) {
    std::vector<void*> fargs;
    for (size_t k = 0; k < nout; ++k) fargs.push_back(&ptrs[k]);
    for (size_t k = 0; k < nout; ++k) fargs.push_back(&ptrs[nout + k]);
    long long o_arg = O, s_arg = splits;
    fargs.push_back(&o_arg);
    fargs.push_back(&s_arg);
    const int lanes = pow2_ceil(splits, kFinishThreads / 32);
    nvrtc::launch(e.finish, dim3(static_cast<unsigned>((O + 31) / 32)), dim3(32, lanes), fargs.data(), stream_of(ctx), op);
  }
}

}  // namespace tg::cuda
