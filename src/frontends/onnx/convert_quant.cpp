// Quantization ONNX ops on 8-bit integers: QuantizeLinear, DequantizeLinear (per tensor, per
// axis, blocked), DynamicQuantizeLinear, QLinearMatMul, MatMulInteger, ConvInteger. Integer
// products are computed exactly (int32 matmul; float64 convolution), rounding is half to even.
#include <limits>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

// A scale or zero point broadcast against x [.., D_axis, ..]: a scalar, a [D_axis] vector
// (per axis), or x's shape with D_axis / block_size (blocked, expanded by repetition).
Tensor broadcast_param(NodeContext& c, Tensor p, Tensor x, int64_t axis, int64_t block) {
  if (p.rank() == 0 || (p.rank() == 1 && p.shape()[0] == 1)) return reshape(p, {});
  int64_t r = x.rank();
  if (block > 0) {
    Shape s = p.shape();
    if (static_cast<int64_t>(s.size()) != r) {
      c.fail(ErrorCode::shape_mismatch, "blocked parameters {} need the rank of {}", str(s), str(x.shape()));
    }
    Shape b = s;
    b.insert(b.begin() + axis + 1, block);
    Tensor e = broadcast_to(expand_dims(p, axis + 1), b);
    Shape merged = s;
    merged[axis] = s[axis] * block;
    Tensor full = reshape(e, merged);
    int64_t want = c.static_dim(0, axis);
    if (merged[axis] != want) {
      full = slice(full, {.begin = {0}, .end = {want}, .axes = {axis}});
    }
    return full;
  }
  if (p.rank() != 1) {
    c.fail(ErrorCode::shape_mismatch, "per-axis parameters must be 1-d, got {}", str(p.shape()));
  }
  Shape s(static_cast<size_t>(r), 1);
  s[axis] = -1;
  return reshape(p, s);
}

// round(v) + zp saturated to `dtype` (u8 / i8), v in floating point.
Tensor saturate(Tensor v, Tensor zp_f, DType dtype) {
  double lo = dtype == DType::u8 ? 0 : -128, hi = dtype == DType::u8 ? 255 : 127;
  Tensor q = round(v) + zp_f;
  return cast(clamp(q, scalar_like(q, lo), scalar_like(q, hi)), dtype);
}

DType quant_dtype(NodeContext& c, Tensor zp) {
  if (zp.valid()) return zp.dtype();
  if (c.has_attr("output_dtype") && c.attr_int("output_dtype", 0) != 0) {
    return dtype_attr(c, c.attr_int("output_dtype", 2));
  }
  return DType::u8;
}

// The quantization axis; only per-axis and blocked parameters (rank >= 1, several values) use it.
int64_t quant_axis(NodeContext& c, Tensor x, Tensor scale) {
  if (scale.rank() == 0 || num_elements(scale.shape()) == 1) return 0;
  return c.axis(c.attr_int("axis", 1), x.rank());
}

void require_8bit(NodeContext& c, DType d) {
  if (d != DType::u8 && d != DType::i8) {
    c.fail(ErrorCode::unsupported, "quantized type {} is not supported (uint8 and int8 only)",
           dtype_name(d));
  }
}

}  // namespace

std::vector<Tensor> convert_dequantize_linear(NodeContext& c) {
  Tensor x = c.input(0), scale = c.input(1);
  if (x.dtype() != DType::i32) require_8bit(c, x.dtype());
  int64_t axis = quant_axis(c, x, scale);
  int64_t block = c.opset() >= 21 ? c.attr_int("block_size", 0) : 0;
  DType out = scale.dtype();
  Tensor xf = cast(x, DType::f32);
  if (c.has_input(2)) xf = xf - cast(broadcast_param(c, c.input(2), x, axis, block), DType::f32);
  Tensor s = cast_to(broadcast_param(c, scale, x, axis, block), DType::f32);
  return {cast_to(xf * s, out)};
}

std::vector<Tensor> convert_quantize_linear(NodeContext& c) {
  Tensor x = c.input(0), scale = c.input(1);
  Tensor zp = c.optional_input(2);
  DType q = quant_dtype(c, zp);
  require_8bit(c, q);
  int64_t axis = quant_axis(c, x, scale);
  int64_t block = c.opset() >= 21 ? c.attr_int("block_size", 0) : 0;
  Tensor xf = cast_to(x, DType::f32);
  Tensor s = cast_to(broadcast_param(c, scale, x, axis, block), DType::f32);
  Tensor zf = zp.valid() ? cast(broadcast_param(c, zp, x, axis, block), DType::f32)
                         : c.scalar_constant(0, DType::f32);
  return {saturate(xf / s, zf, q)};
}

std::vector<Tensor> convert_dynamic_quantize_linear(NodeContext& c) {
  Tensor x = cast_to(c.input(0), DType::f32);
  Tensor zero = scalar_like(x, 0);
  Tensor hi = maximum(reduce_max(x), zero), lo = minimum(reduce_min(x), zero);
  Tensor scale = (hi - lo) / 255.0;
  Tensor zp = clamp(round((zero - lo) / scale), zero, scalar_like(x, 255));
  Tensor y = saturate(x / scale, zp, DType::u8);
  return {y, scale, cast(zp, DType::u8)};
}

std::vector<Tensor> convert_matmul_integer(NodeContext& c) {
  Tensor a = cast(c.input(0), DType::i32), b = cast(c.input(1), DType::i32);
  if (c.has_input(2)) a = a - cast(broadcast_param(c, c.input(2), c.input(0), c.input(0).rank() - 1, 0), DType::i32);
  if (c.has_input(3)) {
    Tensor zp = c.input(3);
    // A [N] zero point of B is per column (the last axis).
    b = b - cast(zp.rank() == 0 || num_elements(zp.shape()) == 1 ? reshape(zp, {}) : reshape(zp, {1, -1}),
                 DType::i32);
  }
  return {matmul(a, b)};
}

std::vector<Tensor> convert_qlinear_matmul(NodeContext& c) {
  Tensor a = c.input(0), b = c.input(3);
  require_8bit(c, a.dtype());
  require_8bit(c, b.dtype());
  Tensor ai = cast(a, DType::i32) - cast(reshape(c.input(2), {}), DType::i32);
  Tensor bzp = c.input(5);
  Tensor bi = cast(b, DType::i32) -
              cast(bzp.rank() == 0 || num_elements(bzp.shape()) == 1 ? reshape(bzp, {}) : reshape(bzp, {1, -1}),
                   DType::i32);
  Tensor acc = cast(matmul(ai, bi), DType::f32);
  Tensor as = cast_to(reshape(c.input(1), {}), DType::f32);
  Tensor bs = cast_to(c.input(4).rank() <= 1 && num_elements(c.input(4).shape()) == 1
                          ? reshape(c.input(4), {}) : reshape(c.input(4), {1, -1}), DType::f32);
  Tensor ys = cast_to(reshape(c.input(6), {}), DType::f32);
  Tensor yzp = c.input(7);
  return {saturate(acc * (as * bs / ys), cast(reshape(yzp, {}), DType::f32), yzp.dtype())};
}

// Integer convolutions, computed exactly in float64 (products of 8-bit values summed over a
// window stay far below 2^53).
std::vector<Tensor> convert_conv_integer(NodeContext& c) {
  Tensor x = cast(c.input(0), DType::f64), w = cast(c.input(1), DType::f64);
  if (c.has_input(2)) x = x - cast(reshape(c.input(2), {}), DType::f64);
  if (c.has_input(3)) {
    Tensor zp = c.input(3);
    w = w - cast(num_elements(zp.shape()) == 1 ? reshape(zp, {}) : broadcast_param(c, zp, c.input(1), 0, 0),
                 DType::f64);
  }
  return {cast(conv_with_attrs(c, x, w), DType::i32)};
}

std::vector<Tensor> convert_qlinear_conv(NodeContext& c) {
  Tensor x = cast(c.input(0), DType::f64) - cast(reshape(c.input(2), {}), DType::f64);
  Tensor wzp = c.input(5);
  Tensor w = cast(c.input(3), DType::f64) -
             cast(num_elements(wzp.shape()) == 1 ? reshape(wzp, {}) : broadcast_param(c, wzp, c.input(3), 0, 0),
                  DType::f64);
  Tensor acc = conv_with_attrs(c, x, w);
  if (c.has_input(8)) acc = acc + reshape(cast(c.input(8), DType::f64), {1, -1, 1, 1});
  Tensor ws = c.input(4);
  Tensor ws_b = num_elements(ws.shape()) == 1 ? reshape(ws, {}) : reshape(ws, {1, -1, 1, 1});
  Tensor scale = cast(reshape(c.input(1), {}), DType::f64) * cast(ws_b, DType::f64) /
                 cast(reshape(c.input(6), {}), DType::f64);
  Tensor yzp = c.input(7);
  return {saturate(acc * scale, cast(reshape(yzp, {}), DType::f64), yzp.dtype())};
}

}  // namespace tg::onnx
