// ONNX Attention (opset 23, 24): scaled dot-product attention with optional mask, causal mask,
// KV cache (past/present), grouped-query heads, softcap and the qk_matmul_output modes, lowered
// as the operator's function body does (so fully masked rows give zero probabilities).
#include <cmath>
#include <limits>

#include "frontends/onnx/converters.h"
#include "tg/nn.h"

namespace tg::onnx {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// [B, S, H*D] -> [B, H, S, D].
Tensor split_heads(NodeContext& c, Tensor x, int64_t heads, const char* what) {
  int64_t hidden = x.shape()[2];
  if (heads < 1 || hidden < 0 || hidden % heads != 0) {
    c.fail(ErrorCode::shape_mismatch, "{} hidden size {} is not divisible by {} heads", what,
           hidden, heads);
  }
  return transpose(reshape(x, {x.shape()[0], x.shape()[1], heads, hidden / heads}), {0, 2, 1, 3});
}

// [B, Hkv, S, D] -> [B, Hkv * rep, S, D], each head repeated rep times in a row.
Tensor repeat_heads(Tensor x, int64_t rep) {
  if (rep == 1) return x;
  const Shape& s = x.shape();
  Tensor e = broadcast_to(expand_dims(x, 2), {s[0], s[1], rep, s[2], s[3]});
  return reshape(e, {s[0], s[1] * rep, s[2], s[3]});
}

// The additive bias [.., Sq, Skv] (float, Q's dtype) from the mask, causality and padding.
Tensor attention_bias(NodeContext& c, Tensor q, int64_t sq, int64_t skv, int64_t past) {
  Graph g = c.graph();
  DType dt = q.dtype();
  Tensor bias = fill(g, {sq, skv}, 0.0, dt);
  if (c.has_input(3)) {
    Tensor m = c.input(3);
    const int64_t w = m.rank() > 0 ? m.shape().back() : -1;  // a 0-d mask broadcasts as it is
    if (w >= 0 && w < skv) {
      PadDesc p{.before = std::vector<int64_t>(static_cast<size_t>(m.rank()), 0),
                .after = std::vector<int64_t>(static_cast<size_t>(m.rank()), 0),
                .value = m.dtype() == DType::bool_ ? 0.0 : kNegInf};
      p.after.back() = skv - w;
      m = pad(m, p);
    }
    if (m.dtype() == DType::bool_) m = select(m, scalar_like(bias, 0), scalar_like(bias, kNegInf));
    bias = bias + cast_to(m, dt);
  }
  if (c.attr_int("is_causal", 0) != 0) {
    Tensor row = iota(g, {sq, 1}, 0, DType::i64);
    Tensor col = iota(g, {1, skv}, 1, DType::i64);
    Tensor off = g.constant(static_cast<double>(past), DType::i64);
    if (c.has_input(6) && !c.has_input(4)) {
      // Static cache: query i of batch b sees keys j <= i + nonpad_kv_seqlen[b] - Sq.
      Tensor nonpad = reshape(cast_to(c.input(6), DType::i64), {-1, 1, 1, 1});
      off = nonpad - g.constant(static_cast<double>(sq), DType::i64);
    }
    Tensor masked = less(row + off, col);
    bias = bias + select(masked, scalar_like(bias, kNegInf), scalar_like(bias, 0));
  }
  if (c.has_input(6)) {
    Tensor nonpad = reshape(cast_to(c.input(6), DType::i64), {-1, 1, 1, 1});
    Tensor col = iota(g, {1, 1, 1, skv}, 3, DType::i64);
    bias = bias + select(less(col, nonpad), scalar_like(bias, 0), scalar_like(bias, kNegInf));
  }
  return bias;
}

}  // namespace

std::vector<Tensor> convert_attention(NodeContext& c) {
  Tensor q = c.input(0), k = c.input(1), v = c.input(2);
  bool three_d = q.rank() == 3;
  if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4)) {
    c.fail(ErrorCode::shape_mismatch, "Q, K, V must all be 3-d or 4-d, got {}, {}, {}",
           str(q.shape()), str(k.shape()), str(v.shape()));
  }
  if (three_d) {
    c.require_attr("q_num_heads");
    c.require_attr("kv_num_heads");
    int64_t hq = c.attr_int("q_num_heads", 1), hkv = c.attr_int("kv_num_heads", 1);
    q = split_heads(c, q, hq, "Q");
    k = split_heads(c, k, hkv, "K");
    v = split_heads(c, v, hkv, "V");
  }
  int64_t past = 0;
  if (c.has_input(4)) {
    past = c.input(4).shape()[2];
    k = concat({c.input(4), k}, 2);
  }
  if (c.has_input(5)) v = concat({c.input(5), v}, 2);
  Tensor present_k = k, present_v = v;
  int64_t hq = q.shape()[1], hkv = k.shape()[1], sq = q.shape()[2], skv = k.shape()[2];
  if (hq < 0 || hkv < 0 || sq < 0 || skv < 0) {
    c.fail(ErrorCode::unsupported, "head counts and sequence lengths must be static");
  }
  if (hkv == 0 || hq % hkv != 0) {
    c.fail(ErrorCode::shape_mismatch, "{} query heads are not a multiple of {} key/value heads",
           hq, hkv);
  }
  k = repeat_heads(k, hq / hkv);
  v = repeat_heads(v, hq / hkv);
  double scale = c.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(q.shape()[3])));
  double s = std::sqrt(scale);
  Tensor qk = matmul(q * s, transpose(k, {0, 1, 3, 2}) * s);
  Tensor capped = qk;
  double softcap = c.attr_float("softcap", 0.0);
  if (softcap > 0) capped = tanh(qk / softcap) * softcap;
  Tensor bias = attention_bias(c, q, sq, skv, past);
  Tensor logits = capped + bias;
  DType precision = c.has_attr("softmax_precision")
                        ? dtype_attr(c, c.attr_int("softmax_precision", 1)) : q.dtype();
  Tensor probs = cast_to(softmax(cast_to(logits, precision), -1), q.dtype());
  // Rows whose every position is masked attend to nothing (zero probabilities, not NaN).
  Tensor row_max = reduce_max(bias, {.axes = {bias.rank() - 1}, .keep_dims = true});
  probs = select(equal(row_max, scalar_like(row_max, kNegInf)), scalar_like(probs, 0), probs);
  Tensor y = matmul(probs, v);
  if (three_d) {
    const Shape& ys = y.shape();
    y = reshape(transpose(y, {0, 2, 1, 3}), {ys[0], ys[2], -1});
  }
  int64_t mode = c.attr_int("qk_matmul_output_mode", 0);
  Tensor qk_out = mode == 0 ? qk : mode == 1 ? capped : mode == 2 ? logits : probs;
  return {y, present_k, present_v, qk_out};
}

}  // namespace tg::onnx

namespace tg::onnx {

// RotaryEmbedding (opset 23), as its function body: input [B, H, S, D] (or [B, S, H*D] with
// num_heads), caches [max_pos, R/2] gathered at position_ids [B, S] (or [B, S, R/2] without
// them); the first R = rotary_embedding_dim (0: D) features of each head are rotated, as two
// halves or interleaved pairs.
std::vector<Tensor> convert_rotary_embedding(NodeContext& c) {
  Tensor x = c.input(0);
  Shape in_shape = x.shape();
  Tensor xin;  // [B, S, H, D]
  if (x.rank() == 4) {
    xin = transpose(x, {0, 2, 1, 3});
  } else if (x.rank() == 3) {
    c.require_attr("num_heads");
    xin = reshape(x, {in_shape[0], in_shape[1], c.attr_int("num_heads", 1), -1});
  } else {
    c.fail(ErrorCode::shape_mismatch, "input must be 3-d or 4-d, got {}", str(in_shape));
  }
  int64_t d = xin.shape()[3];
  int64_t rot = c.attr_int("rotary_embedding_dim", 0);
  if (rot == 0) rot = d;
  if (d < 0 || rot > d || rot % 2 != 0) {
    c.fail(ErrorCode::invalid_argument, "rotary_embedding_dim {} does not fit head size {}", rot, d);
  }
  Tensor cosv = c.input(1), sinv = c.input(2);
  if (c.has_input(3)) {
    cosv = gather(cosv, c.input(3));
    sinv = gather(sinv, c.input(3));
  }
  SliceDesc half{.begin = {0}, .end = {rot / 2}, .axes = {2}};
  cosv = expand_dims(slice(cosv, half), 2);  // [B, S, 1, R/2]
  sinv = expand_dims(slice(sinv, half), 2);
  std::vector<Tensor> parts = split(xin, {rot, d - rot}, 3);
  Tensor x1, x2;
  bool interleaved = c.attr_int("interleaved", 0) != 0;
  if (interleaved) {
    x1 = slice(parts[0], {.begin = {0}, .end = {rot}, .strides = {2}, .axes = {3}});
    x2 = slice(parts[0], {.begin = {1}, .end = {rot}, .strides = {2}, .axes = {3}});
  } else {
    std::vector<Tensor> h = split(parts[0], 2, 3);
    x1 = h[0];
    x2 = h[1];
  }
  Tensor real = cosv * x1 - sinv * x2;
  Tensor imag = sinv * x1 + cosv * x2;
  Tensor rotated = interleaved
                       ? reshape(concat({expand_dims(real, -1), expand_dims(imag, -1)}, -1),
                                 parts[0].shape())
                       : concat({real, imag}, -1);
  Tensor y = d - rot > 0 ? concat({rotated, parts[1]}, -1) : rotated;
  if (x.rank() == 4) return {transpose(y, {0, 2, 1, 3})};
  return {reshape(y, in_shape)};
}

}  // namespace tg::onnx

namespace tg::onnx {

// LinearAttention (opset 27), unrolled over the (static) sequence as its function body's Scan:
// per step, in float32, the state S [B, Hkv, dk, dv] decays (gated: S *= exp(decay_t)), is
// written (linear: S += k v^T; delta: S += k (beta (v - S^T k))^T) and read by the queries
// (out_t = scale q_t S, key/value heads shared by groups of query heads).
std::vector<Tensor> convert_linear_attention(NodeContext& c) {
  Tensor q = c.input(0), k = c.input(1), v = c.input(2);
  std::string rule = c.attr_string("update_rule", "gated_delta");
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (!gated && !delta && rule != "linear") c.fail(ErrorCode::invalid_argument, "unknown update_rule '{}'", rule);
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3) {
    c.fail(ErrorCode::shape_mismatch, "query, key and value must be [B, T, hidden]");
  }
  c.require_attr("q_num_heads");
  c.require_attr("kv_num_heads");
  int64_t hq = c.attr_int("q_num_heads", 1), hkv = c.attr_int("kv_num_heads", 1);
  // (checked before dividing: found by fuzzing, q_num_heads 0 divided by zero)
  if (hq < 1 || hkv < 1 || hq % hkv != 0) {
    c.fail(ErrorCode::invalid_argument, "q_num_heads ({}) must be a positive multiple of kv_num_heads ({})", hq, hkv);
  }
  int64_t b = c.static_dim(0, 0), t_len = c.static_dim(0, 1);
  int64_t dk = c.static_dim(0, 2) / hq, dv = c.static_dim(2, 2) / hkv;
  auto heads = [&](Tensor x, int64_t h) {  // [B, T, h*d] -> [T, B, h, d] in f32
    return cast_to(transpose(reshape(x, {b, t_len, h, -1}), {1, 0, 2, 3}), DType::f32);
  };
  Tensor qs = heads(q, hq), ks = heads(k, hkv), vs = heads(v, hkv);
  Tensor decay = gated ? heads(c.input(4), hkv) : Tensor();
  Tensor beta = delta ? cast_to(transpose(reshape(c.input(5), {b, t_len, -1, 1}), {1, 0, 2, 3}), DType::f32)
                      : Tensor();
  double scale = c.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(dk)));
  Tensor state = c.has_input(3) ? cast_to(c.input(3), DType::f32)
                                : fill(c.graph(), {b, hkv, dk, dv}, 0.0, DType::f32);
  auto step = [](Tensor x, int64_t t) {
    return squeeze(slice(x, {.begin = {t}, .end = {t + 1}, .axes = {0}}), {0});
  };
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < t_len; ++t) {
    Tensor kt = expand_dims(step(ks, t), -1);  // [B, Hkv, dk, 1]
    if (gated) state = state * expand_dims(exp(step(decay, t)), -1);
    Tensor write = step(vs, t);  // [B, Hkv, dv]
    if (delta) {
      Tensor retrieved = squeeze(matmul(state, kt, {.transpose_a = true}), {-1});
      write = step(beta, t) * (write - retrieved);
    }
    state = state + matmul(kt, expand_dims(write, -2));
    Tensor read = hq == hkv ? state
                            : reshape(broadcast_to(expand_dims(state, 2), {b, hkv, hq / hkv, dk, dv}),
                                      {b, hq, dk, dv});
    Tensor out_t = squeeze(matmul(expand_dims(step(qs, t), -2), read), {-2}) * scale;
    outs.push_back(expand_dims(out_t, 1));  // [B, 1, Hq, dv]
  }
  Tensor y = reshape(outs.size() == 1 ? outs[0] : concat(outs, 1), {b, t_len, -1});
  DType state_dtype = c.has_input(3) ? c.input(3).dtype() : q.dtype();
  return {cast_to(y, q.dtype()), cast_to(state, state_dtype)};
}

}  // namespace tg::onnx

namespace tg::onnx {

// ai.onnx.preview FlexAttention: softmax((Q K^T) * scale) V over rank-4 inputs, with the
// optional score_mod and prob_mod subgraphs applied to the scores and the probabilities; K/V
// heads are shared by contiguous groups of query heads.
std::vector<Tensor> convert_flex_attention(NodeContext& c) {
  Tensor q = c.input(0), k = c.input(1), v = c.input(2);
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    c.fail(ErrorCode::shape_mismatch, "Q, K and V must be 4-d, got {}, {}, {}", str(q.shape()),
           str(k.shape()), str(v.shape()));
  }
  int64_t hq = c.static_dim(0, 1), hkv = c.static_dim(1, 1);
  if (hkv <= 0 || hq % hkv != 0) c.fail(ErrorCode::shape_mismatch, "{} query heads, {} key heads", hq, hkv);
  k = repeat_heads(k, hq / hkv);
  v = repeat_heads(v, hq / hkv);
  double scale = c.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(c.static_dim(0, 3))));
  // score_mod / prob_mod: a subgraph of one input and one output (found by fuzzing: one without
  // outputs threw std::out_of_range instead of a tg::Error).
  auto apply_mod = [&](const char* name, const Tensor& t) {
    std::vector<Tensor> r = c.subgraph(c.attr_graph(name), {t});
    if (r.size() != 1) {
      c.fail(ErrorCode::invalid_argument, "attribute '{}' must be a graph with one output, got {}", name, r.size());
    }
    return r[0];
  };
  Tensor scores = matmul(q, k, {.transpose_b = true}) * scale;
  if (c.has_attr("score_mod")) scores = apply_mod("score_mod", scores);
  Tensor probs = softmax(scores, -1);
  if (c.has_attr("prob_mod")) probs = apply_mod("prob_mod", probs);
  return {matmul(probs, v)};
}

}  // namespace tg::onnx
