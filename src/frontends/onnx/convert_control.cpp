// Control-flow ONNX ops: If, Loop, Scan.
//  - If: a condition known at import time inlines the taken branch; otherwise tg::if_else runs
//    the branch chosen at run time (both branches must give the same dtypes and ranks).
//  - Loop: unrolled when the trip count and the condition of every iteration are known at import
//    time (from constants, initializers and shapes; with scan outputs also through
//    ImportOptions::input_values); otherwise
//    (a data-dependent exit, a trip count fed at run time) tg::while_loop over (iteration,
//    condition, carried values), which runs on the device; scan outputs then are unsupported.
//  - Scan (opset 9+): unrolled over the (static) sequence length.
#include <algorithm>

#include "frontends/onnx/converters.h"
#include "tg/control_flow.h"

namespace tg::onnx {
namespace {

// Stacks per-iteration tensors along `axis` (a new dim); `reverse` stacks them last to first.
Tensor stack(NodeContext& c, std::vector<Tensor> items, int64_t axis, bool reverse) {
  if (items.empty()) c.fail(ErrorCode::unsupported, "scan outputs of zero iterations are not supported");
  if (reverse) std::reverse(items.begin(), items.end());
  int64_t rank = items[0].rank() + 1;
  int64_t a = c.axis(axis, rank, "scan output axis");
  for (Tensor& t : items) t = expand_dims(t, a);
  return items.size() == 1 ? items[0] : concat(items, a);
}

bool truthy(const TensorData& v) { return v.num_elements() > 0 && v.element_as_double(0) != 0; }

// A one-element condition as a bool scalar.
Tensor bool_scalar(Tensor t) {
  if (t.rank() > 0) t = reshape(t, {});
  return t.dtype() == DType::bool_ ? t : cast(t, DType::bool_);  // non-zero: true
}

// The run-time form of Loop: while_loop over (i: i64, cond: bool, carried...), where `before`
// tests cond && i < M (M when given) and `after` runs the body once and counts the iteration.
std::vector<Tensor> loop_on_device(NodeContext& c, const pb::GraphProto& body, const std::vector<Tensor>& carried,
                                   int n_scan) {
  if (n_scan > 0) {
    c.fail(ErrorCode::unsupported,
           "a loop whose trip count or condition is known only at run time cannot have scan outputs ({})", n_scan);
  }
  std::optional<Tensor> max_trips;
  if (c.has_input(0)) max_trips = reshape(cast(c.input(0), DType::i64), {});
  std::vector<Tensor> init = {c.scalar_constant(0, DType::i64),
                              c.has_input(1) ? bool_scalar(c.input(1)) : c.constant(TensorData::scalar<bool>(true))};
  init.insert(init.end(), carried.begin(), carried.end());
  const size_t n_carried = carried.size();
  std::vector<Tensor> r = while_loop(
      init,
      [&](std::span<const Tensor> v) {
        Tensor go = max_trips ? logical_and(v[1], less(v[0], *max_trips)) : v[1];
        return std::pair{go, std::vector<Tensor>(v.begin(), v.end())};
      },
      [&](std::span<const Tensor> v) {
        std::vector<Tensor> out = c.subgraph(body, std::vector<Tensor>(v.begin(), v.end()));
        if (out.size() < 1 + n_carried) c.fail(ErrorCode::invalid_argument, "the body has too few outputs");
        std::vector<Tensor> next = {v[0] + 1.0, bool_scalar(out[0])};
        next.insert(next.end(), out.begin() + 1, out.begin() + 1 + static_cast<ptrdiff_t>(n_carried));
        return next;
      });
  return std::vector<Tensor>(r.begin() + 2, r.end());
}

// An import-time value of input i (a one-element tensor), or nullopt when it is known only at
// run time.
std::optional<double> scalar_now(NodeContext& c, int i) {
  std::optional<TensorData> v = c.try_value(i);
  if (!v) return std::nullopt;
  if (v->num_elements() != 1) c.fail(ErrorCode::invalid_argument, "input {} must hold one value, got {}", i, v->type().to_string());
  return v->element_as_double(0);
}

}  // namespace

std::vector<Tensor> convert_if(NodeContext& c) {
  const pb::GraphProto& then_g = c.attr_graph("then_branch");
  const pb::GraphProto& else_g = c.attr_graph("else_branch");
  std::optional<TensorData> known = c.try_value(0);
  if (known) return c.subgraph(truthy(*known) ? then_g : else_g, {});
  Tensor cond = c.input(0);
  if (cond.rank() > 0) cond = reshape(cond, {});
  return if_else(
      cond, [&] { return c.subgraph(then_g, {}); }, [&] { return c.subgraph(else_g, {}); });
}

std::vector<Tensor> convert_loop(NodeContext& c) {
  const pb::GraphProto& body = c.attr_graph("body");
  std::vector<Tensor> carried = c.inputs_from(2);
  const std::vector<Tensor> initial = carried;
  int n_carried = static_cast<int>(carried.size());
  int n_scan = body.output_size() - 1 - n_carried;
  if (n_scan < 0) c.fail(ErrorCode::invalid_argument, "the body has too few outputs");
  if (!c.has_input(0) && !c.has_input(1)) {
    c.fail(ErrorCode::invalid_argument, "a loop without trip count and condition never ends");
  }
  const std::optional<double> trips_now = c.has_input(0) ? scalar_now(c, 0) : std::optional<double>(-1);
  const std::optional<double> cond_now = c.has_input(1) ? scalar_now(c, 1) : std::optional<double>(1);
  if ((!trips_now || !cond_now) && n_scan == 0) return loop_on_device(c, body, initial, n_scan);
  // Scan outputs need unrolling: the trip count and condition may still be fixed through
  // ImportOptions::input_values (value() asks for them).
  int64_t max_trips = static_cast<int64_t>(trips_now ? *trips_now : c.scalar(0));
  bool cond = (cond_now ? *cond_now : c.scalar(1)) != 0;
  constexpr int64_t kMaxUnroll = 4096;
  std::vector<std::vector<Tensor>> scans(static_cast<size_t>(n_scan));
  for (int64_t i = 0; cond && (max_trips < 0 || i < max_trips); ++i) {
    if (i >= kMaxUnroll) {
      c.fail(ErrorCode::unsupported, "loops of more than {} iterations are not unrolled", kMaxUnroll);
    }
    std::vector<Tensor> in = {c.scalar_constant(static_cast<double>(i), DType::i64),
                              c.constant(TensorData::scalar<bool>(cond))};
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Tensor> out = c.subgraph(body, in);
    std::copy(out.begin() + 1, out.begin() + 1 + n_carried, carried.begin());
    for (int k = 0; k < n_scan; ++k) scans[k].push_back(out[1 + n_carried + k]);
    // The condition must be known now to decide whether to unroll another iteration.
    std::optional<TensorData> next = c.known(out[0]);
    if (!next) {
      Graph g = c.graph();
      try {
        next = g.run({}, {out[0]}, {}, Device::cpu()).at(0);
      } catch (const Error&) {
        // A data-dependent exit: the loop runs on the device instead (the nodes unrolled so far
        // are dead code, removed at compile); scan outputs cannot (their length is unknown).
        if (n_scan == 0) return loop_on_device(c, body, initial, n_scan);
        c.fail(ErrorCode::unsupported, "the loop condition depends on run-time values");
      }
    }
    cond = truthy(*next);
  }
  std::vector<Tensor> results = carried;
  for (int k = 0; k < n_scan; ++k) results.push_back(stack(c, scans[k], 0, false));
  return results;
}

std::vector<Tensor> convert_scan(NodeContext& c) {
  const pb::GraphProto& body = c.attr_graph("body");
  c.require_attr("num_scan_inputs");
  auto m = static_cast<int>(c.attr_int("num_scan_inputs", 0));
  std::vector<Tensor> all = c.inputs_from(0);
  int n = static_cast<int>(all.size()) - m;
  if (m < 1 || n < 0) c.fail(ErrorCode::invalid_argument, "num_scan_inputs {} does not fit {} inputs", m, all.size());
  int k = body.output_size() - n;
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  std::vector<int64_t> in_dirs = c.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  std::vector<int64_t> out_dirs = c.attr_ints("scan_output_directions", std::vector<int64_t>(k, 0));
  if (static_cast<int>(in_axes.size()) != m || static_cast<int>(in_dirs.size()) != m ||
      static_cast<int>(out_axes.size()) != k || static_cast<int>(out_dirs.size()) != k) {
    c.fail(ErrorCode::invalid_argument, "scan axes/directions do not match the inputs/outputs");
  }
  std::vector<Tensor> state(all.begin(), all.begin() + n);
  int64_t len = -1;
  for (int j = 0; j < m; ++j) {
    Tensor x = all[n + j];
    in_axes[j] = c.axis(in_axes[j], x.rank(), "scan input axis");
    int64_t d = x.shape()[in_axes[j]];
    if (d < 0) c.fail(ErrorCode::unsupported, "scan input {} has a dynamic sequence length", j);
    if (len >= 0 && d != len) c.fail(ErrorCode::shape_mismatch, "scan inputs differ in length");
    len = d;
  }
  std::vector<std::vector<Tensor>> scans(static_cast<size_t>(k));
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Tensor> in = state;
    for (int j = 0; j < m; ++j) {
      int64_t at = in_dirs[j] != 0 ? len - 1 - t : t;
      Tensor x = all[n + j];
      in.push_back(squeeze(slice(x, {.begin = {at}, .end = {at + 1}, .axes = {in_axes[j]}}),
                           {in_axes[j]}));
    }
    std::vector<Tensor> out = c.subgraph(body, in);
    std::copy(out.begin(), out.begin() + n, state.begin());
    for (int j = 0; j < k; ++j) scans[j].push_back(out[n + j]);
  }
  std::vector<Tensor> results = state;
  for (int j = 0; j < k; ++j) results.push_back(stack(c, scans[j], out_axes[j], out_dirs[j] != 0));
  return results;
}

}  // namespace tg::onnx
