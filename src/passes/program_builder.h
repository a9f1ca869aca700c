// Programs of the fused ops (ir::FusedAttrs with the graph values they read) and a builder that
// assembles one from pieces of others, shared by the fusion passes (fuse_reduce.cpp,
// fuse_rows.cpp, fuse_stencil.cpp).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "ir/graph.h"
#include "passes/passes.h"

namespace tg::passes {

/// A program: its inputs (graph values) and its steps, as fused_elementwise/fused_reduce hold.
struct Prog {
  std::vector<ir::ValueRef> inputs;
  ir::FusedAttrs attrs;
  int num_inputs() const { return static_cast<int>(inputs.size()); }
};

/// The program of a fused_elementwise / fused_reduce node, or of a single fusible elementwise
/// node (one step); nullopt for other nodes.
inline std::optional<Prog> program_of(const ir::Node& n) {
  if (n.kind == ir::OpKind::fused_elementwise || n.kind == ir::OpKind::fused_reduce) {
    return Prog{n.inputs, std::get<ir::FusedAttrs>(n.attrs)};
  }
  if (!is_fusible_elementwise(n)) return std::nullopt;
  Prog p{n.inputs, {}};
  p.attrs.shape = n.outputs[0].shape;
  ir::FusedStep s{n.kind, {}, n.outputs[0].dtype};
  for (int i = 0; i < p.num_inputs(); ++i) s.args.push_back(i);
  p.attrs.steps.push_back(std::move(s));
  p.attrs.outputs.push_back(p.num_inputs());
  return p;
}

/// Steps whose kernels check the integer-division flag.
inline bool has_int_division(const ir::FusedAttrs& a) {
  for (const ir::FusedStep& s : a.steps) {
    const bool division = s.kind == ir::OpKind::div || s.kind == ir::OpKind::mod ||
                          s.kind == ir::OpKind::floor_mod || s.kind == ir::OpKind::floor_div;
    if (division && is_integer(s.dtype)) return true;
  }
  return false;
}

/// Builds a program from pieces of others. Values are tagged while building: input i is
/// -(i + 1), step j is j; identical steps are shared.
class Builder {
 public:
  int input(ir::ValueRef v) {
    auto [it, added] = input_index_.emplace(v, static_cast<int>(inputs_.size()));
    if (added) inputs_.push_back(v);
    return -(it->second + 1);
  }
  int step(ir::OpKind kind, DType dtype, std::vector<int> args) {
    auto key = std::make_tuple(kind, dtype, args);
    auto it = cse_.find(key);
    if (it != cse_.end()) return it->second;
    steps_.push_back({kind, std::move(args), dtype});
    const int id = static_cast<int>(steps_.size()) - 1;
    cse_.emplace(std::move(key), id);
    return id;
  }
  /// Copies the cone of p's value v; `leaf(i)` gives the tagged value of p's input i.
  int copy(const Prog& p, int v, std::map<int, int>& memo, const std::function<int(int)>& leaf) {
    if (v < p.num_inputs()) return leaf(v);
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    const ir::FusedStep& s = p.attrs.steps[static_cast<size_t>(v - p.num_inputs())];
    std::vector<int> args;
    for (int a : s.args) args.push_back(copy(p, a, memo, leaf));
    const int r = step(s.kind, s.dtype, std::move(args));
    memo[v] = r;
    return r;
  }
  Prog finish(const ir::FusedAttrs& like, const std::vector<int>& outputs) const {
    Prog p{inputs_, like};
    const int n = static_cast<int>(inputs_.size());
    auto final_value = [&](int t) { return t < 0 ? -t - 1 : n + t; };
    p.attrs.steps = steps_;
    for (ir::FusedStep& s : p.attrs.steps) {
      for (int& a : s.args) a = final_value(a);
    }
    p.attrs.outputs.clear();
    for (int t : outputs) p.attrs.outputs.push_back(final_value(t));
    return p;
  }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_steps() const { return steps_.size(); }

 private:
  std::vector<ir::ValueRef> inputs_;
  std::map<ir::ValueRef, int> input_index_;
  std::vector<ir::FusedStep> steps_;
  std::map<std::tuple<ir::OpKind, DType, std::vector<int>>, int> cse_;
};

}  // namespace tg::passes
