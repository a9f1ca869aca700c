// Vector-Jacobian rule of matmul. With A = op(a), B = op(b) (the operands after rank-1 promotion
// and the transpose flags) and y = A @ B: dA = g @ B^T and dB = A^T @ g, each written as one
// matmul with transpose flags so that no transpose is materialized; batch dims that broadcasting
// added or stretched are summed away (unbroadcast) and rank-1 operands reshaped back.
#include "autodiff/rules.h"

namespace tg::autodiff {
namespace {

void matmul_rule(VjpContext& c) {
  if (!c.cotangents[0].valid() || !is_floating(c.inputs[0].dtype())) return;
  const MatmulDesc& d = c.attrs<MatmulDesc>();
  Tensor a = c.inputs[0], b = c.inputs[1], g = c.cotangents[0];
  const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
  // Rank-1 promotion: a [K] -> [1, K], b [K] -> [K, 1] (their transpose flags are ignored), and
  // the dims the forward op dropped are put back into g.
  const bool ta = d.transpose_a && !a_vector, tb = d.transpose_b && !b_vector;
  if (a_vector) a = reshape(a, {1, a.shape()[0]});
  if (b_vector) b = reshape(b, {b.shape()[0], 1});
  if (b_vector) g = expand_dims(g, g.rank());
  if (a_vector) g = expand_dims(g, g.rank() - 1);

  // a = A (or A^T when ta): da = g @ B^T (or its transpose, B @ g^T).
  Tensor da = ta ? matmul(b, g, {.transpose_a = tb, .transpose_b = true})
                 : matmul(g, b, {.transpose_a = false, .transpose_b = !tb});
  // b = B (or B^T when tb): db = A^T @ g (or its transpose, g^T @ A).
  Tensor db = tb ? matmul(g, a, {.transpose_a = true, .transpose_b = ta})
                 : matmul(a, g, {.transpose_a = !ta, .transpose_b = false});
  da = unbroadcast(da, a.shape());
  db = unbroadcast(db, b.shape());
  c.input_cotangents[0] = a_vector ? reshape(da, c.inputs[0].shape()) : da;
  c.input_cotangents[1] = b_vector ? reshape(db, c.inputs[1].shape()) : db;
}

}  // namespace

void register_matmul_rules(RuleTable& t) { t.set(ir::OpKind::matmul, matmul_rule); }

}  // namespace tg::autodiff
