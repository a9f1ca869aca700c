// Helpers of the control family's vector-Jacobian rules (control.cpp: if_else and the shared
// pieces; control_loops.cpp: for_loop and while_loop).
#pragma once
#include <vector>

#include "autodiff/rules.h"
#include "ops/control.h"

namespace tg::autodiff {

/// A region computing a vector-Jacobian product of `fwd`: its parameters are fwd's followed by
/// one cotangent per result in `results` (indices into fwd.results, floating); its results are
/// the cotangents of fwd's parameters `params` (indices, floating), zeros where none flows. It
/// recomputes what it needs of fwd's body; fwd's side effects (variable assignments) are dropped.
ir::Region vjp_region(const ir::Region& fwd, const std::vector<size_t>& results,
                      const std::vector<size_t>& params);

/// Tensors of `region`'s body for its parameters (i, i+1, ...).
std::vector<Tensor> region_params(const ir::Region& region);
/// Refs of tensors.
std::vector<ir::ValueRef> refs_of(const std::vector<Tensor>& ts);

void for_loop_rule(VjpContext& c);
void while_loop_rule(VjpContext& c);

}  // namespace tg::autodiff
