// CPU kernels of the matmul op family.
//
// Batches are broadcast by offset tables (no copies). f32 runs dnnl_sgemm (row-major) once per
// batch (sgemm threads internally; many small batches are instead spread over the threads, where
// sgemm runs single-threaded). f16/bf16 are converted to f32, multiplied, and rounded back.
// f64 and integers use a cache-blocked loop (i-k-j order, vectorizable over j); integer products
// and sums wrap around in two's complement, computed in uint64 without UB.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"

namespace tg::cpu {
namespace {

constexpr int64_t kRowBlock = 32;   // rows of C per unit of the generic kernel
constexpr int64_t kColBlock = 256;  // columns of C accumulated at once
constexpr int64_t kDepthBlock = 128;
constexpr int64_t kSmallGemm = 1 << 18;  // multiply-adds below which a batch runs on one thread

// One operand stored as a stack of row-major [rows, cols] matrices.
struct Operand {
  int64_t rows = 0, cols = 0;
  bool transposed = false;  // op(X) = X^T
};

// Everything a kernel needs: dims, effective transposes, and per-batch element offsets.
struct Plan {
  int64_t m = 0, n = 0, k = 0;
  Operand a, b;
  std::vector<int64_t> a_off, b_off;  // one per output batch
  int64_t batches() const { return static_cast<int64_t>(a_off.size()); }
};

Operand operand(const Shape& s, bool transpose, bool is_b) {
  int64_t r = static_cast<int64_t>(s.size());
  if (r == 1) return is_b ? Operand{s[0], 1, false} : Operand{1, s[0], false};
  return {s[r - 2], s[r - 1], transpose};
}

// Offsets (in elements) of the matrices of an operand with `batch` dims for each index of the
// broadcast batch shape `out` (batch dims aligned at the right; a dim of 1 repeats).
std::vector<int64_t> batch_offsets(const Shape& batch, const Shape& out, int64_t matrix_size) {
  int64_t total = num_elements(out);
  std::vector<int64_t> offs(static_cast<size_t>(total), 0);
  size_t lead = out.size() - batch.size();
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, off = 0, stride = matrix_size;
    for (size_t d = out.size(); d-- > lead;) {
      int64_t idx = rem % out[d];
      rem /= out[d];
      int64_t dim = batch[d - lead];
      if (dim != 1) off += idx * stride;
      stride *= dim;
    }
    offs[static_cast<size_t>(i)] = off;
  }
  return offs;
}

Shape batch_of(const Shape& s) { return s.size() <= 2 ? Shape{} : Shape(s.begin(), s.end() - 2); }

Plan make_plan(const TensorData& a, const TensorData& b, const MatmulDesc& desc, const char* op) {
  Plan p;
  p.a = operand(a.shape(), desc.transpose_a, false);
  p.b = operand(b.shape(), desc.transpose_b, true);
  p.m = p.a.transposed ? p.a.cols : p.a.rows;
  p.k = p.a.transposed ? p.a.rows : p.a.cols;
  int64_t kb = p.b.transposed ? p.b.cols : p.b.rows;
  p.n = p.b.transposed ? p.b.rows : p.b.cols;
  if (kb != p.k) fail(ErrorCode::shape_mismatch, op, "contraction dims differ: {} and {}", p.k, kb);
  Shape ba = batch_of(a.shape()), bb = batch_of(b.shape());
  Shape out(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    size_t from_right = out.size() - i;  // 1-based
    int64_t da = from_right <= ba.size() ? ba[ba.size() - from_right] : 1;
    int64_t db = from_right <= bb.size() ? bb[bb.size() - from_right] : 1;
    if (da != db && da != 1 && db != 1) {
      fail(ErrorCode::shape_mismatch, op, "batch dims {} and {} do not broadcast", str(ba), str(bb));
    }
    out[i] = da == 1 ? db : da;
  }
  p.a_off = batch_offsets(ba, out, p.a.rows * p.a.cols);
  p.b_off = batch_offsets(bb, out, p.b.rows * p.b.cols);
  return p;
}

// ---- f32: oneDNN sgemm --------------------------------------------------------------------

void sgemm_one(const Plan& p, const float* a, const float* b, float* c) {
  dnnl_status_t st = dnnl_sgemm(p.a.transposed ? 'T' : 'N', p.b.transposed ? 'T' : 'N', p.m, p.n,
                                p.k, 1.0f, a, p.a.cols, b, p.b.cols, 0.0f, c, p.n);
  if (st != dnnl_success) fail(ErrorCode::internal, "matmul", "dnnl_sgemm failed (status {})", static_cast<int>(st));
}

void matmul_f32(const Plan& p, const float* a, const float* b, float* c) {
  int64_t mn = p.m * p.n, work = mn * p.k;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sgemm_one(p, a + p.a_off[i], b + p.b_off[i], c + i * mn);
  };
  if (p.batches() > 1 && work < kSmallGemm) {
    parallel_for(p.batches(), std::max<int64_t>(1, kSmallGemm / std::max<int64_t>(1, work)), run);
  } else {
    run(0, p.batches());
  }
}

// f16/bf16: widen both operands to f32, multiply, round back.
template <typename T>
void matmul_half(const Plan& p, const TensorData& a, const TensorData& b, TensorData& c) {
  auto widen = [](const TensorData& t) {
    std::vector<float> v(static_cast<size_t>(t.num_elements()));
    const T* src = static_cast<const T*>(t.raw_data());
    parallel_for(t.num_elements(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) v[i] = static_cast<float>(src[i]);
    });
    return v;
  };
  std::vector<float> fa = widen(a), fb = widen(b), fc(static_cast<size_t>(c.num_elements()));
  matmul_f32(p, fa.data(), fb.data(), fc.data());
  T* dst = static_cast<T*>(c.raw_data());
  parallel_for(c.num_elements(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dst[i] = T(fc[i]);
  });
}

// ---- f64 and integers: blocked loop ---------------------------------------------------------

template <typename T>
using gemm_acc_t = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;

template <typename T>
gemm_acc_t<T> widen_acc(T v) {
  if constexpr (std::is_floating_point_v<T>) return v;
  else return static_cast<uint64_t>(static_cast<int64_t>(v));
}

// Copies each [rows, cols] matrix of b transposed, so the kernel reads B as [K, N] rows.
template <typename T>
std::vector<T> transpose_matrices(const T* b, int64_t count, int64_t rows, int64_t cols) {
  std::vector<T> out(static_cast<size_t>(count * rows * cols));
  parallel_for(count * rows, kGrain / std::max<int64_t>(1, cols), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      int64_t mat = t / rows, r = t % rows;
      const T* src = b + mat * rows * cols + r * cols;
      T* dst = out.data() + mat * rows * cols + r;
      for (int64_t j = 0; j < cols; ++j) dst[j * rows] = src[j];
    }
  });
  return out;
}

// Rows [i0, i1) of one batch: C = op(A) B with B as row-major [K, N] (ldb = N).
template <typename T>
void gemm_rows(const Plan& p, const T* a, const T* b, T* c, int64_t i0, int64_t i1) {
  using Acc = gemm_acc_t<T>;
  const int64_t n = p.n, k = p.k, lda = p.a.cols;
  Acc acc[kRowBlock * kColBlock];
  for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
    int64_t w = std::min(kColBlock, n - j0);
    std::fill(acc, acc + (i1 - i0) * kColBlock, Acc(0));
    for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
      int64_t k1 = std::min(k, k0 + kDepthBlock);
      for (int64_t i = i0; i < i1; ++i) {
        Acc* ci = acc + (i - i0) * kColBlock;
        for (int64_t kk = k0; kk < k1; ++kk) {
          Acc av = widen_acc(p.a.transposed ? a[kk * lda + i] : a[i * lda + kk]);
          const T* brow = b + kk * n + j0;
          for (int64_t j = 0; j < w; ++j) ci[j] += av * widen_acc(brow[j]);
        }
      }
    }
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t j = 0; j < w; ++j) c[i * n + j0 + j] = static_cast<T>(acc[(i - i0) * kColBlock + j]);
    }
  }
}

template <typename T>
void matmul_generic(const Plan& p, const T* a, const T* b, T* c, int64_t b_matrices) {
  std::vector<T> packed;
  if (p.b.transposed) {  // make B row-major [K, N]
    packed = transpose_matrices(b, b_matrices, p.b.rows, p.b.cols);
    b = packed.data();
  }
  int64_t row_blocks = (p.m + kRowBlock - 1) / kRowBlock;
  int64_t units = p.batches() * row_blocks;
  int64_t unit_work = std::max<int64_t>(1, kRowBlock * p.n * p.k);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t bi = u / row_blocks, i0 = (u % row_blocks) * kRowBlock;
      gemm_rows(p, a + p.a_off[bi], b + p.b_off[bi], c + bi * p.m * p.n, i0,
                std::min(p.m, i0 + kRowBlock));
    }
  };
  parallel_for(units, std::max<int64_t>(1, kSmallGemm / unit_work), run);
}

void matmul_kernel(KernelContext& ctx) {
  const TensorData& a = ctx.inputs[0];
  const TensorData& b = ctx.inputs[1];
  TensorData& c = ctx.outputs[0];
  Plan p = make_plan(a, b, std::get<MatmulDesc>(ctx.node.attrs), ctx.op_name());
  if (c.num_elements() == 0) return;
  if (p.k == 0) {  // empty contraction: every element is an empty sum
    std::memset(c.raw_data(), 0, c.nbytes());
    return;
  }
  int64_t b_matrices = b.num_elements() / (p.b.rows * p.b.cols);
  dispatch<DTypeGroup::numeric>(a.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      matmul_f32(p, a.data<float>(), b.data<float>(), c.data<float>());
    } else if constexpr (std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>) {
      matmul_half<T>(p, a, b, c);
    } else {
      matmul_generic<T>(p, static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()),
                        static_cast<T*>(c.raw_data()), b_matrices);
    }
  });
}

}  // namespace

void register_matmul_kernels(KernelTable& t) { t.set(ir::OpKind::matmul, matmul_kernel); }

}  // namespace tg::cpu
