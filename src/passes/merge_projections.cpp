// Projections merged into one GEMM (passes.h: merge_projections; TG_MERGE_PROJECTIONS=0 turns it
// off), after project_heads, fold_into_matmul and CSE: matmuls matmul(X, W_i) of one input X by
// constants W_i [H_i, K, D] (the heads of an attention's query, key and value: three
// strided-batched GEMMs of 12 batches, each 2 CTAs of 64 x 64 a batch on the H200 for BERT-base at
// batch 1) become one matmul(X, concat(W_i)) [sum H_i, L, D] and a slice of it along axis 0 for
// each (a view of its block, no copy: ops::slice_view_offset): one GEMM with three times the CTAs
// instead of three (BERT-base batch 1 on the H200: 176 kernels and 944 us of kernel time a call
// without, 152 and 768 us with; docs/torch.md, session 26). Exact: the same products. Matched
// without transposes, W_i read once and of one dtype and [K, D], two or more per X. Then dead-code
// elimination.
#include <cstring>
#include <map>

#include "passes/passes.h"
#include "passes/splice.h"

namespace tg::passes {
namespace {

const TensorData* weights_of(const ir::Graph& g, const ir::Node& mm, const std::map<ir::ValueRef, int>& readers) {
  if (mm.kind != ir::OpKind::matmul || mm.inputs.size() != 2 || !mm.control_inputs.empty() || mm.outputs.size() != 1) {
    return nullptr;
  }
  const auto& desc = std::get<MatmulDesc>(mm.attrs);
  if (desc.transpose_a || desc.transpose_b || g.type(mm.inputs[0]).rank() != 2) return nullptr;
  const ir::Node& w = g.node(mm.inputs[1].node);
  if (w.kind != ir::OpKind::constant || !w.control_inputs.empty()) return nullptr;
  auto it = readers.find(mm.inputs[1]);
  if (it == readers.end() || it->second != 1) return nullptr;
  const TensorData& t = std::get<ir::ConstantAttrs>(w.attrs).value;
  if (!t.device().is_cpu() || t.shape().size() != 3 || !is_floating(t.dtype())) return nullptr;
  return &t;
}

/// One merge (the first X with two or more such matmuls); false when none.
bool merge_one(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops, std::vector<int>& keep) {
  std::map<ir::ValueRef, int> readers;
  for (const ir::Node& n : g.nodes()) {
    for (const ir::ValueRef& v : n.inputs) ++readers[v];
  }
  for (const ir::ValueRef& v : roots) readers[v] += 2;
  std::map<ir::ValueRef, std::vector<int>> by_input;  // X -> matmuls, in order
  for (const ir::Node& n : g.nodes()) {
    const TensorData* w = weights_of(g, n, readers);
    if (w == nullptr) continue;
    std::vector<int>& group = by_input[n.inputs[0]];
    if (!group.empty()) {
      const TensorData& first = std::get<ir::ConstantAttrs>(g.node(g.node(group[0]).inputs[1].node).attrs).value;
      if (first.dtype() != w->dtype() || first.shape()[1] != w->shape()[1] || first.shape()[2] != w->shape()[2]) {
        continue;
      }
    }
    group.push_back(n.id);
  }
  for (const auto& [x, group] : by_input) {
    if (group.size() < 2) continue;
    // The concatenated weights, and each matmul's rows of the result.
    std::vector<const TensorData*> ws;
    int64_t heads = 0;
    for (int id : group) {
      ws.push_back(&std::get<ir::ConstantAttrs>(g.node(g.node(id).inputs[1].node).attrs).value);
      heads += ws.back()->shape()[0];
    }
    const Shape ws0 = ws[0]->shape();  // a copy: the splice below moves the constants' nodes
    TensorData all({heads, ws0[1], ws0[2]}, ws[0]->dtype());
    auto* dst = static_cast<uint8_t*>(all.raw_data());
    for (const TensorData* w : ws) {
      std::memcpy(dst, w->raw_data(), w->nbytes());
      dst += w->nbytes();
    }
    const int64_t rows = g.type(x).shape[0];
    const DType dt = ws[0]->dtype();
    std::vector<std::pair<int64_t, int64_t>> ranges;
    int64_t at = 0;
    for (const TensorData* w : ws) {
      ranges.emplace_back(at, at + w->shape()[0]);
      at += w->shape()[0];
    }
    const std::vector<int> members = group;
    Splice sp(g, members[0]);
    ir::Node wn;
    wn.kind = ir::OpKind::constant;
    wn.attrs = ir::ConstantAttrs{std::move(all)};
    wn.outputs = {{{heads, ws0[1], ws0[2]}, dt}};
    const int w_id = sp.append(std::move(wn));
    ir::Node mn;
    mn.kind = ir::OpKind::matmul;
    mn.inputs = {sp.outer(x), {w_id, 0}};
    mn.attrs = MatmulDesc{};
    mn.outputs = {{{heads, rows, ws0[2]}, dt}};
    const int m_id = sp.append(std::move(mn));
    std::vector<int> slices;
    for (const auto& [b, e] : ranges) {
      ir::Node s;
      s.kind = ir::OpKind::slice;
      s.inputs = {{m_id, 0}};
      s.attrs = SliceDesc{{b}, {e}, {1}, {0}};
      s.outputs = {{{e - b, rows, ws0[2]}, dt}};
      slices.push_back(sp.append(std::move(s)));
    }
    sp.finish({ir::ValueRef{slices[0], 0}}, {slices[0]}, roots, root_ops, keep);
    // The other matmuls (after the first; the splice moved the nodes after its target by the
    // appended count minus one: weights, matmul, slices) are read through their slices instead.
    const int shift = static_cast<int>(2 + ranges.size()) - 1;
    for (size_t i = 1; i < members.size(); ++i) {
      const ir::ValueRef old{members[i] + shift, 0};
      const ir::ValueRef now{slices[i], 0};
      for (ir::Node& n : g.nodes()) {
        for (ir::ValueRef& v : n.inputs) {
          if (v == old) v = now;
        }
        for (int& c : n.control_inputs) {
          if (c == old.node) c = now.node;
        }
      }
      for (ir::ValueRef& v : roots) {
        if (v == old) v = now;
      }
      for (int& r : root_ops) {
        if (r == old.node) r = now.node;
      }
    }
    eliminate_dead_code(g, roots, root_ops, keep);
    return true;
  }
  return false;
}

}  // namespace

bool merge_projections(ir::Graph& g, std::vector<ir::ValueRef>& roots, std::vector<int>& root_ops,
                       std::vector<int>& keep) {
  bool changed = false;
  while (merge_one(g, roots, root_ops, keep)) changed = true;
  return changed;
}

}  // namespace tg::passes
