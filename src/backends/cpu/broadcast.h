// NumPy-broadcast iteration for elementwise CPU kernels.
//
// The output is row-major and contiguous; every input is read through per-dim element strides that
// are 0 on broadcast dims. plan_broadcast drops size-1 dims and merges adjacent dims wherever all
// operands allow it, so same-shape operands become a single contiguous run and a scalar operand
// a single stride-0 dim. for_each_row then splits the output into parallel chunks and hands the
// kernel whole runs of the innermost dim (pointer offsets + inner strides + length): index math
// happens once per run, never per element. The *_row helpers are the inner loops, specialised for
// contiguous and stride-0 operands so that the common cases vectorize.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "backends/cpu/parallel.h"
#include "core/error_util.h"
#include "tg/shape.h"

namespace tg::cpu {

/// Loop nest of an N-input broadcast: merged output dims (outermost first, rank >= 1) and, per
/// input, the element stride of each merged dim (0 where the input is broadcast).
template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> strides;
  int64_t num_elements = 0;
};

namespace detail {

/// Row-major strides of `in` laid over `out` (aligned at the right), 0 on broadcast dims. Raises
/// tg::Error(shape_mismatch) naming `op` when `in` does not broadcast to `out`.
inline std::vector<int64_t> broadcast_strides(const Shape& out, const Shape& in, std::string_view op) {
  const size_t r = out.size();
  if (in.size() > r) fail(ErrorCode::shape_mismatch, op, "operand shape {} does not broadcast to {}", str(in), str(out));
  std::vector<int64_t> strides(r, 0);
  const size_t lead = r - in.size();
  int64_t stride = 1;
  for (size_t j = in.size(); j-- > 0;) {
    const int64_t dim = in[j], target = out[j + lead];
    if (dim != target && dim != 1) {
      fail(ErrorCode::shape_mismatch, op, "operand shape {} does not broadcast to {}", str(in), str(out));
    }
    strides[j + lead] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

}  // namespace detail

/// Plans the iteration of output shape `out` over inputs of shapes `*in[k]`.
template <size_t N>
BroadcastPlan<N> plan_broadcast(const Shape& out, const std::array<const Shape*, N>& in,
                                std::string_view op) {
  BroadcastPlan<N> p;
  p.num_elements = num_elements(out);
  if (std::all_of(in.begin(), in.end(), [&](const Shape* s) { return *s == out; })) {
    // Fast path: every operand has the output's shape, one contiguous run.
    p.dims = {p.num_elements};
    for (auto& s : p.strides) s = {1};
    return p;
  }
  std::array<std::vector<int64_t>, N> raw;
  for (size_t k = 0; k < N; ++k) raw[k] = detail::broadcast_strides(out, *in[k], op);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;  // size-1 dims contribute nothing
    bool merge = !p.dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = p.strides[k].back() == raw[k][d] * out[d];
    if (merge) {
      p.dims.back() *= out[d];
      for (size_t k = 0; k < N; ++k) p.strides[k].back() = raw[k][d];
    } else {
      p.dims.push_back(out[d]);
      for (size_t k = 0; k < N; ++k) p.strides[k].push_back(raw[k][d]);
    }
  }
  if (p.dims.empty()) {  // scalar output (or all dims 1)
    p.dims = {1};
    for (auto& s : p.strides) s = {0};
  }
  return p;
}

/// Calls row(out_offset, in_offsets, in_strides, count) on runs covering the output once, in
/// parallel chunks of at least `grain` elements: run element i is output element out_offset + i
/// and reads input k at in_offsets[k] + i * in_strides[k] (element units).
template <size_t N, typename Row>
void for_each_row(const BroadcastPlan<N>& p, int64_t grain, Row&& row) {
  const size_t rank = p.dims.size();
  const int64_t inner = p.dims.back();
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = p.strides[k].back();
  parallel_for(p.num_elements, grain, [&](int64_t begin, int64_t end) {
    // Multi-index of `begin` (outer dims) and the input offsets of the start of its row.
    std::vector<int64_t> idx(rank, 0);
    std::array<int64_t, N> base{};
    int64_t rem = begin;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      if (d + 1 < rank) {
        for (size_t k = 0; k < N; ++k) base[k] += idx[d] * p.strides[k][d];
      }
    }
    int64_t j = idx[rank - 1];  // position inside the current row
    std::array<int64_t, N> off;
    for (int64_t pos = begin; pos < end;) {
      const int64_t n = std::min(inner - j, end - pos);
      for (size_t k = 0; k < N; ++k) off[k] = base[k] + j * inner_stride[k];
      row(pos, off, inner_stride, n);
      pos += n;
      j = 0;
      for (size_t d = rank - 1; d-- > 0;) {  // odometer step over the outer dims
        for (size_t k = 0; k < N; ++k) base[k] += p.strides[k][d];
        if (++idx[d] < p.dims[d]) break;
        for (size_t k = 0; k < N; ++k) base[k] -= p.dims[d] * p.strides[k][d];
        idx[d] = 0;
      }
    }
  });
}

/// o[i] = f(a[i * sa], b[i * sb]) for i in [0, n).
template <typename O, typename A, typename B, typename F>
inline void binary_row(O* __restrict o, const A* __restrict a, int64_t sa, const B* __restrict b,
                       int64_t sb, int64_t n, const F& f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const B bv = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const A av = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * sa], b[i * sb]);
  }
}

/// o[i] = f(a[i * sa], b[i * sb], c[i * sc]) for i in [0, n).
template <typename O, typename A, typename B, typename C, typename F>
inline void ternary_row(O* __restrict o, const A* __restrict a, int64_t sa, const B* __restrict b,
                        int64_t sb, const C* __restrict c, int64_t sc, int64_t n, const F& f) {
  if (sa == 1 && sb == 1 && sc == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i], c[i]);
  } else if (sa == 1 && sb == 0 && sc == 0) {  // e.g. clamp(x, scalar, scalar)
    const B bv = b[0];
    const C cv = c[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv, cv);
  } else if (sa == 1 && sb == 0 && sc == 1) {  // e.g. select(x <= 0, 0, x) (relu): branch-free
    const B bv = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv, c[i]);
  } else if (sa == 1 && sb == 1 && sc == 0) {  // e.g. select(cond, x, 0)
    const C cv = c[0];
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i], cv);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * sa], b[i * sb], c[i * sc]);
  }
}

}  // namespace tg::cpu
