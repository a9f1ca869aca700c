// Recurrent ONNX ops RNN, GRU and LSTM (opsets 7-22), unrolled over the static sequence length:
// forward, reverse or bidirectional, layout 0 ([seq, batch, in]) or 1 ([batch, seq, in]),
// biases, initial states, peepholes, clip, activations by name, linear_before_reset, and
// sequence_lens (forward direction: a finished sequence keeps its state and outputs zeros).
#include <cmath>

#include "frontends/onnx/converters.h"

namespace tg::onnx {
namespace {

enum class Cell { rnn, gru, lstm };

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Tensor apply(NodeContext& c, const Activation& a, Tensor x) {
  const std::string& n = a.name;
  Tensor zero = scalar_like(x, 0), one = scalar_like(x, 1);
  if (n == "Tanh") return tanh(x);
  if (n == "Sigmoid") return sigmoid(x);
  if (n == "Relu") return maximum(x, zero);
  if (n == "HardSigmoid") return clamp(x * a.alpha + a.beta, zero, one);
  if (n == "LeakyRelu") return select(less(x, zero), x * a.alpha, x);
  if (n == "ThresholdedRelu") return select(greater(x, scalar_like(x, a.alpha)), x, zero);
  if (n == "Affine") return x * a.alpha + a.beta;
  if (n == "ScaledTanh") return tanh(x * a.beta) * a.alpha;
  if (n == "Elu") return select(less(x, zero), expm1(x) * a.alpha, x);
  if (n == "Softsign") return x / (one + abs(x));
  if (n == "Softplus") return maximum(x, zero) + log1p(exp(neg(abs(x))));
  c.fail(ErrorCode::unsupported, "activation '{}' is not supported", n);
}

// The activations of each direction (defaults per cell), with their alpha/beta.
std::vector<Activation> activations(NodeContext& c, Cell cell, int64_t dirs) {
  std::vector<std::string> def = cell == Cell::rnn ? std::vector<std::string>{"Tanh"}
                                 : cell == Cell::gru
                                     ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                     : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (const pb::AttributeProto* a = c.find_attr("activations")) {
    for (const std::string& s : a->strings()) names.push_back(s);
  }
  if (names.empty()) {
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), def.begin(), def.end());
  }
  if (names.size() != def.size() * static_cast<size_t>(dirs)) {
    c.fail(ErrorCode::invalid_argument, "expected {} activations, got {}", def.size() * dirs, names.size());
  }
  std::vector<double> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  std::vector<Activation> out;
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) {
    Activation a{n};
    bool takes_alpha = n == "HardSigmoid" || n == "LeakyRelu" || n == "ThresholdedRelu" ||
                       n == "Affine" || n == "ScaledTanh" || n == "Elu";
    bool takes_beta = n == "HardSigmoid" || n == "Affine" || n == "ScaledTanh";
    double def_alpha = n == "HardSigmoid" ? 0.2 : n == "LeakyRelu" ? 0.01 : 1.0;
    double def_beta = n == "HardSigmoid" ? 0.5 : n == "Affine" ? 0.0 : 1.0;
    a.alpha = takes_alpha ? (ai < alphas.size() ? alphas[ai++] : def_alpha) : 0;
    a.beta = takes_beta ? (bi < betas.size() ? betas[bi++] : def_beta) : 0;
    out.push_back(a);
  }
  return out;
}

// Row d of a [num_directions, ...] tensor.
Tensor dir(Tensor t, int64_t d) {
  return squeeze(slice(t, {.begin = {d}, .end = {d + 1}, .axes = {0}}), {0});
}

// Gate g of the last dim split into `n` equal parts.
Tensor gate(Tensor t, int64_t g, int64_t n) {
  int64_t size = t.shape().back() / n;
  return slice(t, {.begin = {g * size}, .end = {(g + 1) * size}, .axes = {t.rank() - 1}});
}

std::vector<Tensor> recurrent(NodeContext& c, Cell cell) {
  Tensor x = c.input(0), w = c.input(1), r = c.input(2);
  // (found by fuzzing: an R of rank 0 reached shape().back() of an empty shape)
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3) {
    c.fail(ErrorCode::shape_mismatch, "X, W and R must be 3-d, got {}, {} and {}", shape_to_string(x.shape()),
           shape_to_string(w.shape()), shape_to_string(r.shape()));
  }
  int64_t layout = c.opset() >= 14 ? c.attr_int("layout", 0) : 0;
  if (layout == 1) x = transpose(x, {1, 0, 2});  // -> [seq, batch, in]
  std::string direction = c.attr_string("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    c.fail(ErrorCode::invalid_argument, "unknown direction '{}'", direction);
  }
  int64_t gates = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
  int64_t hidden = c.has_attr("hidden_size") ? c.attr_int("hidden_size", 0) : r.shape().back();
  if (hidden <= 0) c.fail(ErrorCode::invalid_argument, "hidden_size must be positive, got {}", hidden);
  int64_t seq = c.static_dim(0, layout == 1 ? 1 : 0), batch = x.shape()[1];
  if (batch < 0) c.fail(ErrorCode::unsupported, "the batch size must be static");
  double clip = c.attr_float("clip", 0.0);
  bool lbr = cell == Cell::gru && c.attr_int("linear_before_reset", 0) != 0;
  if (cell == Cell::lstm && c.attr_int("input_forget", 0) != 0) {
    c.fail(ErrorCode::unsupported, "input_forget = 1 is not supported");
  }
  std::vector<Activation> acts = activations(c, cell, dirs);
  size_t per_dir = acts.size() / static_cast<size_t>(dirs);
  Tensor lens = c.optional_input(4);
  if (lens.valid() && direction != "forward") {
    c.fail(ErrorCode::unsupported, "sequence_lens is supported with direction forward only");
  }
  auto init = [&](int i) {
    Tensor t = c.optional_input(i);
    if (t.valid() && layout == 1) t = transpose(t, {1, 0, 2});
    return t;
  };
  Tensor h0 = init(5), c0 = cell == Cell::lstm ? init(6) : Tensor();
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    Tensor wd = dir(w, d), rd = dir(r, d);
    Tensor wb, rb;
    if (c.has_input(3)) {
      Tensor b = dir(c.input(3), d);
      wb = slice(b, {.begin = {0}, .end = {gates * hidden}, .axes = {0}});
      rb = slice(b, {.begin = {gates * hidden}, .end = {2 * gates * hidden}, .axes = {0}});
    }
    Tensor p = cell == Cell::lstm && c.has_input(7) ? dir(c.input(7), d) : Tensor();
    Tensor h = h0.valid() ? dir(h0, d) : fill(c.graph(), {batch, hidden}, 0.0, x.dtype());
    Tensor cc = cell != Cell::lstm ? Tensor()
                : c0.valid() ? dir(c0, d) : fill(c.graph(), {batch, hidden}, 0.0, x.dtype());
    const Activation* a = &acts[static_cast<size_t>(d) * per_dir];
    auto clipped = [&](Tensor t) {
      return clip > 0 ? clamp(t, scalar_like(t, -clip), scalar_like(t, clip)) : t;
    };
    std::vector<Tensor> outs(static_cast<size_t>(seq));
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = reverse ? seq - 1 - s : s;
      Tensor xt = squeeze(slice(x, {.begin = {t}, .end = {t + 1}, .axes = {0}}), {0});
      Tensor xw = matmul(xt, wd, {.transpose_b = true});  // [batch, gates*hidden]
      if (wb.valid()) xw = xw + wb;
      Tensor hr = matmul(h, rd, {.transpose_b = true});
      if (rb.valid()) hr = hr + rb;
      Tensor h_new, c_new;
      if (cell == Cell::rnn) {
        h_new = apply(c, a[0], clipped(xw + hr));
      } else if (cell == Cell::gru) {
        Tensor z = apply(c, a[0], clipped(gate(xw, 0, 3) + gate(hr, 0, 3)));
        Tensor rr = apply(c, a[0], clipped(gate(xw, 1, 3) + gate(hr, 1, 3)));
        Tensor pre;
        if (lbr) {
          pre = gate(xw, 2, 3) + rr * gate(hr, 2, 3);  // r * (h Rh^T + Rbh)
        } else {
          Tensor rh_w = slice(rd, {.begin = {2 * hidden}, .end = {3 * hidden}, .axes = {0}});
          Tensor rh = matmul(rr * h, rh_w, {.transpose_b = true});
          if (rb.valid()) rh = rh + gate(rb, 2, 3);
          pre = gate(xw, 2, 3) + rh;
        }
        Tensor hh = apply(c, a[1], clipped(pre));
        h_new = (scalar_like(z, 1) - z) * hh + z * h;
      } else {
        Tensor g = xw + hr;  // gates i, o, f, c
        Tensor gi = gate(g, 0, 4), go = gate(g, 1, 4), gf = gate(g, 2, 4), gc = gate(g, 3, 4);
        if (p.valid()) {
          gi = gi + gate(p, 0, 3) * cc;
          gf = gf + gate(p, 2, 3) * cc;
        }
        Tensor i = apply(c, a[0], clipped(gi)), f = apply(c, a[0], clipped(gf));
        c_new = f * cc + i * apply(c, a[1], clipped(gc));
        if (p.valid()) go = go + gate(p, 1, 3) * c_new;
        h_new = apply(c, a[0], clipped(go)) * apply(c, a[2], c_new);
      }
      Tensor y = h_new;
      if (lens.valid()) {
        // Finished sequences keep their state and output zeros.
        Tensor alive = expand_dims(greater(cast_to(lens, DType::i64),
                                           c.graph().constant(static_cast<double>(t), DType::i64)), 1);
        h_new = select(alive, h_new, h);
        if (c_new.valid()) c_new = select(alive, c_new, cc);
        y = select(alive, y, scalar_like(y, 0));
      }
      h = h_new;
      if (c_new.valid()) cc = c_new;
      outs[t] = expand_dims(y, 0);  // [1, batch, hidden]
    }
    ys.push_back(expand_dims(seq == 1 ? outs[0] : concat(outs, 0), 1));  // [seq, 1, batch, hidden]
    hs.push_back(expand_dims(h, 0));
    if (cc.valid()) cs.push_back(expand_dims(cc, 0));
  }
  Tensor y = dirs == 1 ? ys[0] : concat(ys, 1);  // [seq, dirs, batch, hidden]
  Tensor yh = dirs == 1 ? hs[0] : concat(hs, 0);
  Tensor yc = cs.empty() ? Tensor() : (dirs == 1 ? cs[0] : concat(cs, 0));
  if (layout == 1) {
    y = transpose(y, {2, 0, 1, 3});  // [batch, seq, dirs, hidden]
    yh = transpose(yh, {1, 0, 2});
    if (yc.valid()) yc = transpose(yc, {1, 0, 2});
  }
  std::vector<Tensor> out = {y, yh};
  if (cell == Cell::lstm) out.push_back(yc);
  return out;
}

}  // namespace

std::vector<Tensor> convert_rnn(NodeContext& c) { return recurrent(c, Cell::rnn); }
std::vector<Tensor> convert_gru(NodeContext& c) { return recurrent(c, Cell::gru); }
std::vector<Tensor> convert_lstm(NodeContext& c) { return recurrent(c, Cell::lstm); }

}  // namespace tg::onnx
