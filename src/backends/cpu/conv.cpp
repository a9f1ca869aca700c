// CPU kernels of the conv op family: conv2d, conv2d_backward_data, conv2d_backward_weights.
//
// f32 runs on oneDNN (conv_onednn.cpp); so does bf16 where the CPU has fast bf16 kernels
// (AVX512-BF16, AMX; oneDNN accumulates in f32 and rounds once). Otherwise bf16, and f16 always,
// are widened to f32, run there, and rounded back. f64 runs the reference loops
// (conv_reference.cpp). Empty tensors never reach either engine: an
// empty output needs nothing, and an output that sums over an empty set (an empty input, e.g. a
// batch of 0 for the weights' gradient) is zero.
#include <cstring>
#include <vector>

#include "backends/cpu/conv_kernels.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dispatch.h"
#include "backends/cpu/parallel.h"
#include "ir/attrs.h"

namespace tg::cpu {
namespace {

// The problem of ctx's node from its static input and output shapes.
ConvProblem problem_of(const KernelContext& ctx, ConvPass pass) {
  const bool forward = pass == ConvPass::forward;
  const Conv2dDesc& d = forward ? std::get<Conv2dDesc>(ctx.node.attrs)
                                : std::get<ir::ConvBackwardAttrs>(ctx.node.attrs).conv;
  const Shape& a = ctx.inputs[0].shape();
  const Shape& b = ctx.inputs[1].shape();
  const Shape& out = ctx.outputs[0].shape();
  ConvProblem p;
  p.pass = pass;
  p.data_layout = d.data_layout;
  p.weights_layout = d.weights_layout;
  p.op = ctx.op_name();
  switch (pass) {
    case ConvPass::forward:
      p.g = ops::conv_geometry(a, b, d);
      break;
    case ConvPass::backward_data:
      p.g = ops::conv_geometry(out, b, d);
      break;
    case ConvPass::backward_weights:
      p.g = ops::conv_geometry(b, out, d);
      break;
  }
  const Shape y = ops::data_shape(p.g.y, d.data_layout);
  TG_CHECK_INTERNAL(y == (forward ? out : a),
                    fmt::format("{}: shapes disagree with the geometry", p.op));
  return p;
}

template <typename T>
std::vector<float> widen(const TensorData& t) {
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  const T* src = static_cast<const T*>(t.raw_data());
  parallel_for(t.num_elements(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) v[static_cast<size_t>(i)] = static_cast<float>(src[i]);
  });
  return v;
}

template <ConvPass P>
void conv_kernel(KernelContext& ctx) {
  const ConvProblem p = problem_of(ctx, P);
  TensorData& out = ctx.outputs[0];
  if (out.num_elements() == 0) return;
  if (ctx.inputs[0].num_elements() == 0 || ctx.inputs[1].num_elements() == 0) {
    std::memset(out.raw_data(), 0, out.nbytes());  // all-zero bits are 0.0 in every float type
    return;
  }
  dispatch<DTypeGroup::floating>(out.dtype(), ctx.op_name(), [&](auto tag) {
    using T = decltype(tag);
    const void* a = ctx.inputs[0].raw_data();
    const void* b = ctx.inputs[1].raw_data();
    if constexpr (std::is_same_v<T, double>) {
      conv_reference_f64(p, static_cast<const double*>(a), static_cast<const double*>(b),
                         out.data<double>());
    } else if constexpr (std::is_same_v<T, float>) {
      conv_onednn(p, a, b, out.raw_data());
    } else {
      ConvProblem native = p;
      native.dtype = DType::bf16;
      if (std::is_same_v<T, bf16_t> && conv_onednn(native, a, b, out.raw_data())) return;
      std::vector<float> fa = widen<T>(ctx.inputs[0]), fb = widen<T>(ctx.inputs[1]);
      std::vector<float> fo(static_cast<size_t>(out.num_elements()));
      conv_onednn(p, fa.data(), fb.data(), fo.data());
      T* dst = static_cast<T*>(out.raw_data());
      parallel_for(out.num_elements(), kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) dst[i] = T(fo[static_cast<size_t>(i)]);
      });
    }
  });
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t.set(ir::OpKind::conv2d, conv_kernel<ConvPass::forward>);
  t.set(ir::OpKind::conv2d_backward_data, conv_kernel<ConvPass::backward_data>);
  t.set(ir::OpKind::conv2d_backward_weights, conv_kernel<ConvPass::backward_weights>);
}

}  // namespace tg::cpu
