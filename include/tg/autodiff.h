// Reverse-mode automatic differentiation at build time (as MPSGraph's gradient API): the backward
// ops are appended to the same graph as the forward ones.
#pragma once
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

/// Gradients of `y` with respect to each of `xs`, in the order of `xs`, each with its x's shape
/// and dtype. A non-scalar y is summed first (the gradient of reduce_sum(y)). An x that y does
/// not depend on gets zeros. Gradients flow through ops with a vector-Jacobian rule
/// (src/autodiff/rules/<family>.cpp); through non-differentiable ops (comparisons, argmax,
/// integer casts, stop_gradient) none flows. Raises tg::Error(dtype_mismatch) "[gradients] ..."
/// when y or an x is not floating, tg::Error(invalid_argument) for tensors of another graph, and
/// tg::Error(unsupported) naming the op when a differentiable op on the path has no rule.
TG_API std::vector<Tensor> gradients(Tensor y, const std::vector<Tensor>& xs);

/// Vector-Jacobian products: sum over k of cotangents[k]^T * d ys[k] / d x, for each x in xs.
/// cotangents[k] has the shape and dtype of ys[k] (tg::Error(shape_mismatch / dtype_mismatch)
/// otherwise). Errors as gradients().
TG_API std::vector<Tensor> vjp(const std::vector<Tensor>& ys, const std::vector<Tensor>& xs,
                        const std::vector<Tensor>& cotangents);

/// Identity in the forward pass; blocks gradients (JAX lax.stop_gradient, tf.stop_gradient).
TG_API Tensor stop_gradient(Tensor x);

}  // namespace tg
