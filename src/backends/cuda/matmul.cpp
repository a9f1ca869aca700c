// CUDA kernels of the matmul family: numpy.matmul semantics (rank-1 promotion, transpose_a/b on
// the last two dims, broadcast batch dims), exactly the CPU backend's (backends/cpu/matmul.cpp).
//
// Floating dtypes run on cuBLASLt. Row-major C[M,N] = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T, i.e. cuBLASLt's "A" is our B and its "B" our A, with no
// copies. Batch dims are coalesced (adjacent dims whose strides chain merge; size-1 dims drop);
// what remains is run as:
//   - one plain GEMM when B has no batch and A's batches are contiguous and not transposed
//     (the batch folds into M: [batch*M, K] x [K, N]);
//   - one strided-batched GEMM over the innermost batch dim (a broadcast operand gets stride 0),
//     looped on the host over the outer dims when there are several (each call is a launch).
// dtypes: f32 (CUBLAS_COMPUTE_32F; COMPUTE_32F_FAST_TF32 when the executable's precision is
// tf32; with precision bf16/f16 both operands are first rounded to bf16/f16 by a cast kernel and
// multiplied with f32 accumulation into the f32 result), f64 (COMPUTE_64F), f16/bf16 (f32
// accumulation, one rounding to the output; split-K reductions in the 16-bit output type are
// excluded so that the result is rounded once, like the CPU). Integers (i8, u8, i32, i64) use an
// own tiled kernel with two's-complement wrap-around (kernels/matmul.cu). bool is rejected.
// K = 0 gives zeros; empty outputs launch nothing.
//
// cuBLASLt descriptors, layouts and the heuristic's algorithm are created once per (device, mode,
// dims, strides, pointer alignment) and cached in a mutex-protected map (never freed). The
// workspace is the device context's (at most 32 MiB asked for). Nothing syncs with the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/algo_choices.h"
#include "backends/cuda/autotune.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/first_run.h"
#include "backends/cuda/kernels/lowp_cast.h"
#include "backends/cuda/nvrtc/compiler.h"
#include "backends/cuda/kernels/matmul.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/phase_times.h"

namespace tg::cuda {
namespace {

constexpr size_t kMaxWorkspace = size_t{32} << 20;

// One operand as a stack of row-major [rows, cols] matrices.
struct Operand {
  int64_t rows = 0, cols = 0;
  bool transposed = false;
};

Operand operand(const Shape& s, bool transpose, bool is_b) {
  const size_t r = s.size();
  if (r == 1) return is_b ? Operand{s[0], 1, false} : Operand{1, s[0], false};
  return {s[r - 2], s[r - 1], transpose};
}

Shape batch_of(const Shape& s) { return s.size() <= 2 ? Shape{} : Shape(s.begin(), s.end() - 2); }

// One coalesced batch dim: its size and the element strides of A and B along it (C is contiguous).
struct BatchDim {
  int64_t size = 1, sa = 0, sb = 0;
};

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  Operand a, b;
  std::vector<BatchDim> batch;  // coalesced, outermost first; empty = one matrix
  int64_t batches() const {
    int64_t t = 1;
    for (const BatchDim& d : batch) t *= d.size;
    return t;
  }
};

Problem make_problem(const Shape& as, const Shape& bs, const MatmulDesc& desc, const char* op) {
  Problem p;
  p.a = operand(as, desc.transpose_a, false);
  p.b = operand(bs, desc.transpose_b, true);
  p.m = p.a.transposed ? p.a.cols : p.a.rows;
  p.k = p.a.transposed ? p.a.rows : p.a.cols;
  const int64_t kb = p.b.transposed ? p.b.cols : p.b.rows;
  p.n = p.b.transposed ? p.b.rows : p.b.cols;
  if (kb != p.k) fail(ErrorCode::shape_mismatch, op, "contraction dims differ: {} and {}", p.k, kb);
  const Shape ba = batch_of(as), bb = batch_of(bs);
  const size_t rank = std::max(ba.size(), bb.size());
  // Per output batch dim (outermost first): size and strides, computed from the innermost out.
  std::vector<BatchDim> dims(rank);
  int64_t stride_a = p.a.rows * p.a.cols, stride_b = p.b.rows * p.b.cols;
  for (size_t j = 0; j < rank; ++j) {  // j counts from the right
    const int64_t da = j < ba.size() ? ba[ba.size() - 1 - j] : 1;
    const int64_t db = j < bb.size() ? bb[bb.size() - 1 - j] : 1;
    if (da != db && da != 1 && db != 1) {
      fail(ErrorCode::shape_mismatch, op, "batch dims {} and {} do not broadcast", str(ba), str(bb));
    }
    BatchDim& d = dims[rank - 1 - j];
    d.size = da == 1 ? db : da;
    d.sa = da == 1 ? 0 : stride_a;
    d.sb = db == 1 ? 0 : stride_b;
    stride_a *= da;
    stride_b *= db;
  }
  // Coalesce: drop size-1 dims, merge an outer dim into the next inner one when strides chain.
  for (const BatchDim& d : dims) {
    if (d.size == 1) continue;
    if (!p.batch.empty()) {
      BatchDim& in = p.batch.back();  // the previous (outer) dim; d is inner to it
      if (in.sa == d.sa * d.size && in.sb == d.sb * d.size) {
        in = BatchDim{in.size * d.size, d.sa, d.sb};
        continue;
      }
    }
    p.batch.push_back(d);
  }
  return p;
}

// ---- cuBLASLt -------------------------------------------------------------------------------

// How the operands are stored and computed.
enum class Mode : int { f32, tf32, f32_via_bf16, f32_via_f16, f16, bf16, f64 };

struct LtTypes {
  cudaDataType_t in, out, scale;
  cublasComputeType_t compute;
};

LtTypes lt_types(Mode m) {
  switch (m) {
    case Mode::f32: return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Mode::tf32: return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case Mode::f32_via_bf16: return {CUDA_R_16BF, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Mode::f32_via_f16: return {CUDA_R_16F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Mode::f16: return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Mode::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Mode::f64: return {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
  }
  return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
}

size_t type_size(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_64F: return 8;
    default: return 4;
  }
}

// One GEMM (possibly strided-batched) in cuBLASLt's column-major terms, as cached.
struct LtKey {
  int device;
  Mode mode;
  int64_t m, n, k;  // row-major problem dims
  int64_t a_rows, a_cols, b_rows, b_cols;
  bool ta, tb;
  int64_t count, sa, sb;  // batch count and element strides (0 = broadcast)
  uint32_t align_a, align_b, align_c;
  bool deterministic;  // no split-K reductions (CompileOptions::deterministic)
  auto tie() const {
    return std::tie(device, mode, m, n, k, a_rows, a_cols, b_rows, b_cols, ta, tb, count, sa, sb,
                    align_a, align_b, align_c, deterministic);
  }
  bool operator<(const LtKey& o) const { return tie() < o.tie(); }
};

struct LtPlan {
  std::string choice_key, choice;  // as saved executables store it (algo_choices.h)
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;  // cuBLASLt's A (our B), B, C=D
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

std::mutex g_plans_mu;
std::map<LtKey, std::unique_ptr<LtPlan>> g_plans;  // never freed (handles live as long)

// Largest power of two <= 256 dividing every value OR-ed into `bits` (0 divides by anything).
uint32_t alignment_of(uint64_t bits) {
  if (bits == 0) return 256;
  const uint64_t low = bits & (~bits + 1);
  return static_cast<uint32_t>(std::min<uint64_t>(low, 256));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld,
                                   int64_t count, int64_t stride, const char* op) {
  cublasLtMatrixLayout_t l = nullptr;
  check(cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld), op, "cublasLtMatrixLayoutCreate");
  if (count > 1) {
    const int32_t c32 = static_cast<int32_t>(count);
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c32, sizeof(c32)),
          op, "cublasLtMatrixLayoutSetAttribute(batch count)");
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                           sizeof(stride)),
          op, "cublasLtMatrixLayoutSetAttribute(batch stride)");
  }
  return l;
}

// ---- stored choices (saved executables, algo_choices.h) ---------------------------------------

// The plan cache key without the device, as algo_choices stores it.
std::string choice_key(const LtKey& k) {
  return fmt::format("algo:cublaslt/v1 mode={} m={} n={} k={} a={}x{} b={}x{} ta={} tb={} count={} sa={} sb={} "
                     "align={},{},{} det={}",
                     static_cast<int>(k.mode), k.m, k.n, k.k, k.a_rows, k.a_cols, k.b_rows, k.b_cols, k.ta ? 1 : 0,
                     k.tb ? 1 : 0, k.count, k.sa, k.sb, k.align_a, k.align_b, k.align_c, k.deterministic ? 1 : 0);
}

// cuBLASLt documents cublasLtMatmulAlgo_t as trivially serializable for the same library
// version. A choice is its words in hex, then "ws=<workspace bytes> lt=<cublasLtGetVersion()>"
// (files of earlier builds hold the words only).
std::string encode_choice(const cublasLtMatmulAlgo_t& a, size_t workspace) {
  std::string s;
  for (uint64_t w : a.data) s += fmt::format("{}{:016x}", s.empty() ? "" : " ", w);
  return s + fmt::format(" ws={} lt={}", workspace, cublasLtGetVersion());
}

// A stored choice: the algorithm, and, when the text has them, its workspace bytes and the
// cuBLASLt version that wrote it (0 when absent). False when the text does not parse.
struct StoredAlgo {
  cublasLtMatmulAlgo_t algo{};
  uint64_t workspace = 0;
  uint64_t version = 0;
};

bool decode_choice(const std::string& s, StoredAlgo* out) {
  cublasLtMatmulAlgo_t* a = &out->algo;
  constexpr size_t kWords = sizeof(a->data) / sizeof(a->data[0]);
  constexpr size_t kWordsChars = kWords * 17 - 1;
  if (s.size() < kWordsChars) return false;
  for (size_t i = 0; i < kWords; ++i) {
    uint64_t w = 0;
    for (size_t j = 0; j < 16; ++j) {
      const char c = s[i * 17 + j];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      w = (w << 4) | static_cast<uint64_t>(d);
    }
    if (i + 1 < kWords && s[i * 17 + 16] != ' ') return false;
    a->data[i] = w;
  }
  if (s.size() == kWordsChars) return true;  // words only: no workspace, no version
  unsigned long long ws = 0, version = 0;
  int used = 0;
  if (std::sscanf(s.c_str() + kWordsChars, " ws=%llu lt=%llu%n", &ws, &version, &used) != 2 ||
      kWordsChars + static_cast<size_t>(used) != s.size()) {
    return false;
  }
  out->workspace = ws;
  out->version = version;
  return true;
}

// Whether stored choices written by this cuBLASLt version are used without
// cublasLtMatmulAlgoCheck (TG_TRUST_STORED_ALGOS=0: never; measured A/B).
bool trust_stored() { return env::trust_stored_algos(); }

void destroy(LtPlan& p) {
  if (p.la) cublasLtMatrixLayoutDestroy(p.la);
  if (p.lb) cublasLtMatrixLayoutDestroy(p.lb);
  if (p.lc) cublasLtMatrixLayoutDestroy(p.lc);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
}

// The cached plan of `key` (nullptr when none).
const LtPlan* cached_plan(const LtKey& key) {
  std::lock_guard<std::mutex> lock(g_plans_mu);
  auto it = g_plans.find(key);
  return it == g_plans.end() ? nullptr : it->second.get();
}

// `plan` into the cache, unless another thread put one there first (then that one is kept).
const LtPlan& keep(const LtKey& key, std::unique_ptr<LtPlan> plan) {
  std::lock_guard<std::mutex> lock(g_plans_mu);
  auto [it, inserted] = g_plans.try_emplace(key, std::move(plan));  // not moved from when present
  if (!inserted) destroy(*plan);
  return *it->second;
}

// A new plan of `key` (not cached; built without holding the cache's lock: cuBLASLt's first
// algorithm check in a process takes tens of ms). Its algorithm: a stored choice of a saved
// executable, used as is when `trust` and the choice was written by this cuBLASLt version with
// its workspace size (cuBLASLt documents the algorithm as serializable for the same version;
// `trusted` is then set: the caller validates it by running it), else checked by
// cublasLtMatmulAlgoCheck for this problem; without a usable stored choice the heuristics' first
// answer, or, with `tune`, the fastest of their first kCandidates answers as tune(plan, answers)
// picks it (autotune.h).
using Tuner = std::function<int(const LtPlan&, std::span<const cublasLtMatmulHeuristicResult_t>)>;
constexpr int kCandidates = 8;
std::unique_ptr<LtPlan> build_plan(const LtKey& key, cublasLtHandle_t handle, const char* op, bool trust,
                                   bool* trusted, const Tuner* tune = nullptr) {
  *trusted = false;
  const LtTypes t = lt_types(key.mode);
  auto plan = std::make_unique<LtPlan>();
  check(cublasLtMatmulDescCreate(&plan->desc, t.compute, t.scale), op, "cublasLtMatmulDescCreate");
  const cublasOperation_t opa = key.tb ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our B
  const cublasOperation_t opb = key.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)),
        op, "cublasLtMatmulDescSetAttribute(transa)");
  check(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)),
        op, "cublasLtMatmulDescSetAttribute(transb)");
  // Our row-major [r, c] matrix is cuBLASLt's column-major [c, r] with ld = c.
  plan->la = make_layout(t.in, static_cast<uint64_t>(key.b_cols), static_cast<uint64_t>(key.b_rows),
                         key.b_cols, key.count, key.sb, op);
  plan->lb = make_layout(t.in, static_cast<uint64_t>(key.a_cols), static_cast<uint64_t>(key.a_rows),
                         key.a_cols, key.count, key.sa, op);
  plan->lc = make_layout(t.out, static_cast<uint64_t>(key.n), static_cast<uint64_t>(key.m), key.n,
                         key.count, key.m * key.n, op);
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), op, "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kMaxWorkspace;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof(ws)),
        op, "cublasLtMatmulPreferenceSetAttribute(workspace)");
  const uint32_t al[3] = {key.align_b, key.align_a, key.align_c};  // cuBLASLt's A, B, C/D
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0],
                                             sizeof(uint32_t)),
        op, "cublasLtMatmulPreferenceSetAttribute(alignment)");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1],
                                             sizeof(uint32_t)),
        op, "cublasLtMatmulPreferenceSetAttribute(alignment)");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2],
                                             sizeof(uint32_t)),
        op, "cublasLtMatmulPreferenceSetAttribute(alignment)");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2],
                                             sizeof(uint32_t)),
        op, "cublasLtMatmulPreferenceSetAttribute(alignment)");
  if (key.deterministic) {
    // No split-K: every output element is one dot product in a fixed order.
    const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                               &mask, sizeof(mask)),
          op, "cublasLtMatmulPreferenceSetAttribute(reduction scheme)");
  } else if (t.out == CUDA_R_16F || t.out == CUDA_R_16BF) {
    // Partial sums must stay in f32 (one rounding to the 16-bit output, as on the CPU).
    const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                               &mask, sizeof(mask)),
          op, "cublasLtMatmulPreferenceSetAttribute(reduction scheme)");
  }
  plan->choice_key = choice_key(key);
  if (const std::optional<std::string> text = algo_choices::find(plan->choice_key)) {
    StoredAlgo stored;
    // The plan with the stored algorithm and a workspace of `ws` bytes.
    auto with_stored = [&](size_t ws) {
      cublasLtMatmulPreferenceDestroy(pref);
      plan->algo = stored.algo;
      plan->workspace = ws;
      plan->choice = encode_choice(plan->algo, plan->workspace);
      return std::move(plan);
    };
    if (decode_choice(*text, &stored)) {
      if (trust && stored.version == cublasLtGetVersion() && stored.workspace <= kMaxWorkspace) {
        phases::Scope timed("cublaslt_trusted_choice");
        *trusted = true;
        return with_stored(stored.workspace);
      }
      phases::Scope timed("cublaslt_from_choice");
      cublasLtMatmulHeuristicResult_t checked{};
      phases::Scope check_time("cublaslt_algo_check");
      if (cublasLtMatmulAlgoCheck(handle, plan->desc, plan->la, plan->lb, plan->lc, plan->lc, &stored.algo,
                                  &checked) == CUBLAS_STATUS_SUCCESS &&
          checked.workspaceSize <= kMaxWorkspace) {
        return with_stored(checked.workspaceSize);
      }
    }
  }
  phases::Scope heuristic_time("cublaslt_heuristic");
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, plan->desc, plan->la, plan->lb,
                                                           plan->lc, plan->lc, pref, tune ? kCandidates : 1,
                                                           results, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  heuristic_time.stop();
  if (st != CUBLAS_STATUS_SUCCESS || returned == 0) {
    destroy(*plan);
    fail(ErrorCode::unsupported, op,
         "cuBLASLt has no algorithm for M={} N={} K={} (batch {}, transpose_a={}, transpose_b={})",
         key.m, key.n, key.k, key.count, key.ta, key.tb);
  }
  int pick = 0;
  if (tune != nullptr && returned > 1) {
    pick = std::clamp((*tune)(*plan, std::span<const cublasLtMatmulHeuristicResult_t>(results, returned)), 0,
                      returned - 1);
  }
  plan->algo = results[pick].algo;
  plan->workspace = results[pick].workspaceSize;
  plan->choice = encode_choice(plan->algo, plan->workspace);
  return plan;
}

// The plan of `key`, cached on first use. A stored choice is checked (build_plan without trust):
// only the preparation workers, which run a trusted plan before publishing it, use one unchecked.
// Without one, `tune` (may be null) picks among the heuristics' answers.
const LtPlan& lt_plan(const LtKey& key, cublasLtHandle_t handle, const char* op, const Tuner* tune) {
  if (const LtPlan* p = cached_plan(key)) return *p;
  // A preparation worker building this plan from a saved executable's choice: wait for it.
  const std::string ckey = choice_key(key);
  if (algo_choices::find(ckey) && !algo_choices::claim(ckey)) {
    if (const LtPlan* p = cached_plan(key)) return *p;
  }
  bool trusted = false;
  return keep(key, build_plan(key, handle, op, /*trust=*/false, &trusted, tune));
}

Mode mode_of(DType dtype, ComputePrecision precision) {
  switch (dtype) {
    case DType::f16: return Mode::f16;
    case DType::bf16: return Mode::bf16;
    case DType::f64: return Mode::f64;
    default: break;
  }
  switch (precision) {
    case ComputePrecision::tf32: return Mode::tf32;
    case ComputePrecision::bf16: return Mode::f32_via_bf16;
    case ComputePrecision::f16: return Mode::f32_via_f16;
    default: return Mode::f32;
  }
}

// TensorGraph's own GEMM instead of cuBLASLt (docs/design/0011-first-run-kernels.md): with
// first-run kernels on (first_run::enabled), in a walked run, for a problem whose plan a preparation worker is still
// building (a stored choice, none in the cache yet). Also compiles the program while a code sink is
// set (the runs before Executable::save), so that a saved executable carries it. True when it ran.
bool first_run_matmul(KernelContext& ctx, const Problem& p, const LtKey& key, const void* a, const void* b, void* c) {
  if (!first_run::enabled(ctx.first_run_kernels) || p.batch.size() > 4) return false;
  first_run::Round r{};
  const DType dt = ctx.inputs[0].dtype();
  if (!first_run::rounding_of(dt, ctx.precision, &r)) return false;
  const char* op = ctx.op_name();
  if (nvrtc::code_sink_set()) first_run::prepare_matmul(key.device, dt, r, op);
  const cudaStream_t stream = stream_of(ctx);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capture), op, "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone || cached_plan(key) || !algo_choices::find(choice_key(key))) return false;
  first_run::GemmArgs g{};
  g.m = p.m, g.n = p.n, g.k = p.k, g.lda = p.a.cols, g.ldb = p.b.cols, g.ta = p.a.transposed, g.tb = p.b.transposed;
  g.batch_rank = static_cast<long long>(p.batch.size());
  for (size_t d = 0; d < p.batch.size(); ++d) {
    g.batch_dims[d] = p.batch[d].size, g.batch_sa[d] = p.batch[d].sa, g.batch_sb[d] = p.batch[d].sb;
  }
  phases::Scope timed("first_run_matmul");
  const size_t ws_bytes = first_run::plan(g, p.batches());
  first_run::launch_matmul(key.device, dt, r, a, b, c, g, p.batches(), ws_bytes ? workspace_of(ctx, ws_bytes) : nullptr,
                           stream, op);
  return true;
}

void matmul_lt(KernelContext& ctx, const Problem& p, const void* a, const void* b, void* c) {
  const void* const a_in = a;  // as stored (before a rounding cast)
  const void* const b_in = b;
  const char* op = ctx.op_name();
  DeviceContext& dc = context_of(ctx);
  const cudaStream_t stream = stream_of(ctx);
  Mode mode = mode_of(ctx.inputs[0].dtype(), ctx.precision);
  const LtTypes t = lt_types(mode);
  // Reduced-precision inputs: round both operands (same layout) into scratch buffers.
  if (mode == Mode::f32_via_bf16 || mode == Mode::f32_via_f16) {
    const bool bf16 = mode == Mode::f32_via_bf16;
    const int64_t na = ctx.inputs[0].num_elements(), nb = ctx.inputs[1].num_elements();
    void* a_low = workspace_of(ctx, static_cast<size_t>(na) * 2);
    void* b_low = workspace_of(ctx, static_cast<size_t>(nb) * 2);
    kernels::launch_f32_to_lowp(static_cast<const float*>(a), a_low, na, bf16, stream);
    check_launch(op, "f32_to_lowp");
    kernels::launch_f32_to_lowp(static_cast<const float*>(b), b_low, nb, bf16, stream);
    check_launch(op, "f32_to_lowp");
    a = a_low;
    b = b_low;
  }
  const size_t in_size = type_size(t.in), out_size = type_size(t.out);

  // Shape of the GEMM calls: the innermost coalesced batch dim is batched in cuBLASLt, the outer
  // ones are looped over here.
  int64_t m = p.m, count = 1, sa = 0, sb = 0;
  std::vector<BatchDim> outer;
  if (!p.batch.empty()) {
    const BatchDim& in = p.batch.back();
    outer.assign(p.batch.begin(), p.batch.end() - 1);
    if (outer.empty() && in.sb == 0 && !p.a.transposed && in.sa == p.a.rows * p.a.cols) {
      m = p.m * in.size;  // B shared by every batch, A's batches contiguous: fold into M
    } else {
      count = in.size;
      sa = in.sa;
      sb = in.sb;
    }
  }
  if (count > INT32_MAX) {
    fail(ErrorCode::unsupported, op, "a batch of {} matrices exceeds cuBLASLt's int32 count", count);
  }
  int64_t outer_total = 1;
  uint64_t a_bits = reinterpret_cast<uintptr_t>(a) | static_cast<uint64_t>(sa) * in_size;
  uint64_t b_bits = reinterpret_cast<uintptr_t>(b) | static_cast<uint64_t>(sb) * in_size;
  uint64_t c_bits = reinterpret_cast<uintptr_t>(c) |
                    (count > 1 ? static_cast<uint64_t>(p.m * p.n) * out_size : 0);
  for (const BatchDim& d : outer) {
    outer_total *= d.size;
    a_bits |= static_cast<uint64_t>(d.sa) * in_size;
    b_bits |= static_cast<uint64_t>(d.sb) * in_size;
    c_bits |= static_cast<uint64_t>(count * p.m * p.n) * out_size;
  }
  LtKey key{dc.device, mode, m, p.n, p.k,
            m == p.m ? p.a.rows : m, p.a.cols, p.b.rows, p.b.cols,
            p.a.transposed, p.b.transposed, count, sa, sb,
            alignment_of(a_bits), alignment_of(b_bits), alignment_of(c_bits), ctx.deterministic};
  if (first_run_matmul(ctx, p, key, a_in, b_in, c)) return;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const void* alpha = mode == Mode::f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = mode == Mode::f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  const cublasLtHandle_t handle = dc.cublaslt();
  const auto* a8 = static_cast<const char*>(a);
  const auto* b8 = static_cast<const char*>(b);
  auto* c8 = static_cast<char*>(c);
  // A new plan times the heuristics' candidates on this call's own operands (the first of an
  // outer batch loop), writing C, which the call below writes again.
  const Tuner tuner = [&](const LtPlan& pl, std::span<const cublasLtMatmulHeuristicResult_t> cands) {
    size_t ws_max = 0;  // scratch of its own: the run's would grow the arena for every later run
    for (const auto& r : cands) ws_max = std::max(ws_max, r.workspaceSize);
    const std::shared_ptr<void> tune_buf = ws_max > 0 ? device_allocate(dc.device, ws_max) : nullptr;
    void* tune_ws = tune_buf.get();
    return fastest_candidate(static_cast<int>(cands.size()), [&](int i) {
      return cublasLtMatmul(handle, pl.desc, alpha, b8, pl.la, a8, pl.lb, beta, c8, pl.lc, c8, pl.lc, &cands[i].algo,
                            tune_ws, cands[i].workspaceSize, stream) == CUBLAS_STATUS_SUCCESS;
    }, stream);
  };
  const bool tune = !key.deterministic && env::matmul_autotune();
  const LtPlan& plan = lt_plan(key, handle, op, tune ? &tuner : nullptr);
  if (!plan.choice.empty()) algo_choices::note(plan.choice_key, plan.choice);
  void* ws = plan.workspace > 0 ? workspace_of(ctx, plan.workspace) : nullptr;
  phases::Scope timed("cublaslt_matmul");
  for (int64_t i = 0; i < outer_total; ++i) {
    int64_t rem = i, ao = 0, bo = 0;
    for (size_t d = outer.size(); d-- > 0;) {
      const int64_t idx = rem % outer[d].size;
      rem /= outer[d].size;
      ao += idx * outer[d].sa;
      bo += idx * outer[d].sb;
    }
    const int64_t co = i * count * p.m * p.n;
    check(cublasLtMatmul(handle, plan.desc, alpha, b8 + bo * static_cast<int64_t>(in_size), plan.la,
                         a8 + ao * static_cast<int64_t>(in_size), plan.lb, beta,
                         c8 + co * static_cast<int64_t>(out_size), plan.lc,
                         c8 + co * static_cast<int64_t>(out_size), plan.lc, &plan.algo, ws,
                         plan.workspace, stream),
          op, "cublasLtMatmul");
  }
}

// ---- integers -------------------------------------------------------------------------------

void matmul_int(KernelContext& ctx, const Problem& p, kernels::IntType type, const void* a,
                const void* b, void* c) {
  kernels::MatmulBatchMap map;
  if (p.batch.size() > static_cast<size_t>(kernels::MatmulBatchMap::kMaxRank)) {
    fail(ErrorCode::unsupported, ctx.op_name(), "more than {} non-broadcast batch dims",
         kernels::MatmulBatchMap::kMaxRank);
  }
  map.rank = static_cast<int>(p.batch.size());
  for (size_t d = 0; d < p.batch.size(); ++d) {
    map.dims[d] = p.batch[d].size;
    map.a_stride[d] = p.batch[d].sa;
    map.b_stride[d] = p.batch[d].sb;
  }
  kernels::launch_matmul_int(type, a, b, c, p.batches(), map, p.m, p.n, p.k, p.a.transposed,
                             p.b.transposed, p.a.cols, p.b.cols, stream_of(ctx));
  check_launch(ctx.op_name(), "matmul_int");
}

void matmul_kernel(KernelContext& ctx) {
  const TensorData& a = ctx.inputs[0];
  const TensorData& b = ctx.inputs[1];
  TensorData& c = ctx.outputs[0];
  const Problem p = make_problem(a.shape(), b.shape(), std::get<MatmulDesc>(ctx.node.attrs),
                                 ctx.op_name());
  const DType dt = a.dtype();
  if (dt == DType::bool_ || b.dtype() != dt) {
    fail(ErrorCode::dtype_mismatch, ctx.op_name(), "dtype {} is not supported", dtype_name(dt));
  }
  if (c.num_elements() == 0) return;
  if (p.k == 0) {  // empty contraction: every element is an empty sum (all-zero bits are 0)
    check(cudaMemsetAsync(ptr(c), 0, c.nbytes(), stream_of(ctx)), ctx.op_name(), "cudaMemsetAsync");
    return;
  }
  switch (dt) {
    case DType::i8: return matmul_int(ctx, p, kernels::IntType::i8, ptr(a), ptr(b), ptr(c));
    case DType::u8: return matmul_int(ctx, p, kernels::IntType::u8, ptr(a), ptr(b), ptr(c));
    case DType::i32: return matmul_int(ctx, p, kernels::IntType::i32, ptr(a), ptr(b), ptr(c));
    case DType::i64: return matmul_int(ctx, p, kernels::IntType::i64, ptr(a), ptr(b), ptr(c));
    default: return matmul_lt(ctx, p, ptr(a), ptr(b), ptr(c));
  }
}

// The plan key of a stored choice's key (choice_key's inverse); false when it does not parse.
bool parse_choice_key(const std::string& text, int device, LtKey* k) {
  int mode = 0, ta = 0, tb = 0, det = 0;
  long long v[10] = {};
  unsigned al[3] = {};
  const int n = std::sscanf(text.c_str(),
                            "algo:cublaslt/v1 mode=%d m=%lld n=%lld k=%lld a=%lldx%lld b=%lldx%lld ta=%d tb=%d "
                            "count=%lld sa=%lld sb=%lld align=%u,%u,%u det=%d",
                            &mode, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &ta, &tb, &v[7], &v[8], &v[9],
                            &al[0], &al[1], &al[2], &det);
  if (n != 17 || mode < 0 || mode > static_cast<int>(Mode::f64)) return false;
  for (long long x : v) {
    if (x < 0 || x > (int64_t{1} << 40)) return false;
  }
  k->device = device;
  k->mode = static_cast<Mode>(mode);
  k->m = v[0];
  k->n = v[1];
  k->k = v[2];
  k->a_rows = v[3];
  k->a_cols = v[4];
  k->b_rows = v[5];
  k->b_cols = v[6];
  k->ta = ta != 0;
  k->tb = tb != 0;
  k->count = v[7];
  k->sa = v[8];
  k->sb = v[9];
  k->align_a = al[0];
  k->align_b = al[1];
  k->align_c = al[2];
  k->deterministic = det != 0;
  return choice_key(*k) == text;  // exactly what this build writes
}

}  // namespace

namespace {

// Runs `plan` once on scratch buffers on `stream` with `handle` and waits for it: loads the
// algorithm's kernel before a run needs it, and validates a trusted plan (cuBLASLt's status).
cublasStatus_t warm_run(int device, const LtKey& k, const LtPlan& plan, cublasLtHandle_t handle,
                        cudaStream_t stream) {
  phases::Scope timed("cublaslt_warm_run");
  const LtTypes t = lt_types(k.mode);
  const auto extent = [](int64_t rows, int64_t cols, int64_t count, int64_t stride) {
    return static_cast<size_t>(rows * cols + (count > 1 ? (count - 1) * stride : 0));
  };
  const size_t in_size = type_size(t.in), out_size = type_size(t.out);
  const auto align_up = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  const size_t a_bytes = align_up(extent(k.b_rows, k.b_cols, k.count, k.sb) * in_size);  // cuBLASLt's A
  const size_t b_bytes = align_up(extent(k.a_rows, k.a_cols, k.count, k.sa) * in_size);
  const size_t c_bytes = align_up(extent(k.m, k.n, k.count, k.m * k.n) * out_size);
  std::shared_ptr<void> buf = device_allocate(device, a_bytes + b_bytes + c_bytes + std::max<size_t>(plan.workspace, 1));
  auto* base = static_cast<char*>(buf.get());
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const void* alpha = k.mode == Mode::f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = k.mode == Mode::f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  void* c = base + a_bytes + b_bytes;
  const cublasStatus_t st =
      cublasLtMatmul(handle, plan.desc, alpha, base, plan.la, base + a_bytes, plan.lb, beta, c, plan.lc, c, plan.lc,
                     &plan.algo, plan.workspace > 0 ? base + a_bytes + b_bytes + c_bytes : nullptr, plan.workspace,
                     stream);
  check(cudaStreamSynchronize(stream), "matmul", "cudaStreamSynchronize (warm-up)");  // before buf is reused
  return st;
}

}  // namespace

void algo_choices::prepare_matmul_choice(int device, const std::string& key, cudaStream_t warm_stream,
                                         const std::function<void()>& built) {
  LtKey k{};
  if (!parse_choice_key(key, device, &k)) return;
  activate(device);
  if (cached_plan(k)) return;
  // This worker's own handle (cuBLASLt handles are per thread here, as PyTorch keeps them).
  thread_local std::map<int, cublasLtHandle_t> owns;  // one per device
  cublasLtHandle_t& own = owns[device];
  if (own == nullptr) {
    phases::Scope timed("cublasLtCreate");
    check(cublasLtCreate(&own), "matmul", "cublasLtCreate");  // never destroyed: lives as the thread
  }
  // A choice written by this cuBLASLt version is used without cublasLtMatmulAlgoCheck (whose first
  // call in a process took 120-135 ms on the H200), validated by running it before it is
  // published; one that cuBLASLt refuses then is checked as without trust (and, refused again,
  // replaced by the heuristics' answer), so a run never executes an unvalidated algorithm.
  bool trusted = false;
  std::unique_ptr<LtPlan> fresh = build_plan(k, own, "matmul", trust_stored(), &trusted);
  bool warmed = false;
  if (trusted) {
    if (warm_run(device, k, *fresh, own, warm_stream) == CUBLAS_STATUS_SUCCESS) {
      warmed = true;
    } else {
      phases::Scope timed("cublaslt_trusted_refused");
      cudaGetLastError();
      destroy(*fresh);
      fresh = build_plan(k, own, "matmul", /*trust=*/false, &trusted);
    }
  }
  const LtPlan& plan = keep(k, std::move(fresh));
  built();
  if (warmed) return;
  check(warm_run(device, k, plan, own, warm_stream), "matmul", "cublasLtMatmul (warm-up)");
}

void register_matmul_kernels(KernelTable& t) { t.set(ir::OpKind::matmul, matmul_kernel); }

}  // namespace tg::cuda
