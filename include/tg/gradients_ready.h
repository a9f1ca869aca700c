// Gradients handed out as soon as each is complete: the hook data-parallel training uses to start
// a gradient bucket's all_reduce while the rest of the backward pass is still to come, as PyTorch
// DDP's autograd hooks (register_hook) do. tg::gradients (tg/autodiff.h) is the plain form.
#pragma once
#include <functional>
#include <vector>

#include "tg/export.h"
#include "tg/graph.h"

namespace tg {

/// Called once per x, with its index in xs and its complete gradient.
using GradientReady = std::function<void(size_t index, const Tensor& grad)>;

/// tg::gradients(y, xs) (same results, same errors), calling ready(i, grad_i) at the moment the
/// gradient of xs[i] is complete: when the reverse sweep (autodiff/gradients.cpp, reverse build
/// order) reaches xs[i]'s node, every reader of xs[i] has been differentiated. The ops `ready`
/// appends therefore come in build order (the schedule of an executable) right after the
/// gradient's producers and before the backward ops of every node built before xs[i] (for a
/// layer's weights: before the backward of the earlier layers). An x that y does not depend on
/// gets zeros when the sweep passes it; xs built after y and those at the bottom of the sweep are
/// reported after it, in index order.
TG_API std::vector<Tensor> gradients_as_ready(Tensor y, const std::vector<Tensor>& xs, const GradientReady& ready);

}  // namespace tg
