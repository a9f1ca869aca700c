// Control flow in the runtime: if_else, for_loop and while_loop interpret their regions, running
// a region only when it is taken. The predicate or trip count is read on the host (a small host
// feed is read without touching the device; a device value waits for the stream). While a run is
// recorded (a CUDA graph), control flow becomes conditional nodes instead and the host never
// waits (control_flow_graph.cpp).
#include <atomic>
#include <limits>

#include "core/convert.h"
#include "core/error_util.h"
#include "runtime/run_state.h"
#include "tg/interrupt.h"

namespace tg {
namespace {
std::atomic<InterruptCheck> g_interrupt_check{nullptr};
}  // namespace

void set_interrupt_check(InterruptCheck check) { g_interrupt_check.store(check); }

void check_interrupt() {
  if (InterruptCheck check = g_interrupt_check.load(std::memory_order_relaxed)) check();
}
}  // namespace tg

namespace tg::runtime {
namespace {

// A scalar predicate: bool, or a number where non-zero (and NaN) means true.
bool truthy(const TensorData& host, const char* op) {
  if (host.num_elements() != 1) {
    fail(ErrorCode::shape_mismatch, op, "the predicate must have exactly one element, got {}", host.type().to_string());
  }
  const double v = load_as_double(host.dtype(), host.raw_data(), 0);
  return v != 0.0 || v != v;
}

int64_t trip_count(const TensorData& host, const char* op) {
  if (!is_integer(host.dtype())) fail(ErrorCode::dtype_mismatch, op, "trip count must be an integer, got {}", host.type().to_string());
  const double v = load_as_double(host.dtype(), host.raw_data(), 0);
  if (v > std::numeric_limits<int32_t>::max()) {
    fail(ErrorCode::out_of_range, op, "trip count {} does not fit the i32 index", static_cast<int64_t>(v));
  }
  return static_cast<int64_t>(v);
}

// Arguments of a loop region: `own` values, then the captured values (inputs from `captures_at`).
std::vector<TensorData> with_captures(std::vector<TensorData> own, std::span<const TensorData> inputs,
                                      size_t captures_at) {
  own.insert(own.end(), inputs.begin() + static_cast<ptrdiff_t>(captures_at), inputs.end());
  return own;
}

}  // namespace

void RunState::run_control(const ir::Node& node, std::span<const TensorData> inputs, std::vector<TensorData>& outs) {
  const char* op = ir::op_name(node.kind).data();
  if (recording_) {
    record_control(node, inputs, outs);
    check_outputs(node, outs);
    return;
  }
  // The first input (predicate or trip count) on the host: a host feed's copy when there is one.
  auto first_on_host = [&] {
    const TensorData* h = host_value(node.inputs[0]);
    return h != nullptr ? *h : to_host(inputs[0]);
  };
  switch (node.kind) {
    case ir::OpKind::if_else: {
      const bool taken = truthy(first_on_host(), op);
      outs = run_region(node.regions[taken ? 0 : 1], inputs.subspan(1));
      break;
    }
    case ir::OpKind::for_loop: {
      const auto k = static_cast<size_t>(std::get<ir::LoopAttrs>(node.attrs).num_carried);
      const int64_t n = trip_count(first_on_host(), op);
      std::vector<TensorData> values(inputs.begin() + 1, inputs.begin() + 1 + static_cast<ptrdiff_t>(k));
      std::vector<TensorData> args = with_captures(std::vector<TensorData>(1 + k), inputs, 1 + k);
      for (int64_t i = 0; i < n; ++i) {
        check_interrupt();  // may throw: the run fails, nothing is committed
        args[0] = TensorData::scalar<int32_t>(static_cast<int32_t>(i)).to(device());
        for (size_t j = 0; j < k; ++j) args[1 + j] = std::move(values[j]);
        values = run_region(node.regions[0], args);
      }
      outs = std::move(values);
      break;
    }
    case ir::OpKind::while_loop: {
      const auto& a = std::get<ir::LoopAttrs>(node.attrs);
      const auto k = static_cast<size_t>(a.num_carried);
      std::vector<TensorData> before_args = with_captures(
          std::vector<TensorData>(inputs.begin(), inputs.begin() + static_cast<ptrdiff_t>(k)), inputs, k);
      for (int64_t iteration = 0;; ++iteration) {
        check_interrupt();  // may throw: the run fails, nothing is committed
        std::vector<TensorData> b = run_region(node.regions[0], before_args);
        const bool go_on = truthy(to_host(b[0]), op) && (a.max_iterations < 0 || iteration < a.max_iterations);
        b.erase(b.begin());
        if (!go_on) {
          outs = std::move(b);
          break;
        }
        std::vector<TensorData> next = run_region(node.regions[1], with_captures(std::move(b), inputs, k));
        for (size_t j = 0; j < k; ++j) before_args[j] = std::move(next[j]);
      }
      break;
    }
    default: fail(ErrorCode::internal, op, "not a control-flow op");
  }
  check_outputs(node, outs);
}

std::vector<TensorData> RunState::run_region(const ir::Region& region, std::span<const TensorData> args,
                                             std::span<const TensorData> dests) {
  auto it = p_.regions_.find(region.body.get());
  if (it == p_.regions_.end() || args.size() != region.params.size()) {
    fail(ErrorCode::internal, p_.device_.to_string(), "region not planned or {} arguments for {} parameters",
         args.size(), region.params.size());
  }
  std::vector<std::vector<TensorData>> values(static_cast<size_t>(region.body->size()));
  // Destinations: each written by the first result that is a kernel's own output.
  const ir::Graph* saved_graph = dest_graph_;
  std::vector<std::pair<ir::ValueRef, TensorData>> saved = std::move(dest_);
  dest_.clear();
  dest_graph_ = dests.empty() ? nullptr : region.body.get();
  for (size_t r = 0; r < dests.size() && r < it->second.results.size(); ++r) {
    const ir::ValueRef v = it->second.results[r];
    bool first = true;
    for (size_t q = 0; q < r; ++q) first = first && !(it->second.results[q] == v);
    if (first) dest_.emplace_back(v, dests[r]);
  }
  struct Restore {
    RunState& s;
    const ir::Graph* graph;
    std::vector<std::pair<ir::ValueRef, TensorData>>& saved;
    ~Restore() {
      s.dest_graph_ = graph;
      s.dest_ = std::move(saved);
    }
  } restore{*this, saved_graph, saved};
  execute(it->second, args, values, false);
  std::vector<TensorData> out;
  for (const auto& r : it->second.results) out.push_back(values[r.node][r.index]);
  return out;
}

void RunState::check_outputs(const ir::Node& node, const std::vector<TensorData>& outs) {
  bool ok = outs.size() == node.outputs.size();
  for (size_t i = 0; ok && i < outs.size(); ++i) {
    const TensorType& want = node.outputs[i];
    ok = !outs[i].empty() && outs[i].dtype() == want.dtype && outs[i].shape().size() == want.shape.size();
    for (size_t d = 0; ok && d < want.shape.size(); ++d) ok = want.shape[d] == -1 || want.shape[d] == outs[i].shape()[d];
    if (!ok) {
      fail(ErrorCode::internal, ir::op_name(node.kind), "output {} is {}, expected {}", i,
           outs[i].empty() ? "missing" : outs[i].type().to_string(), want.to_string());
    }
  }
  if (!ok) fail(ErrorCode::internal, ir::op_name(node.kind), "{} outputs, expected {}", outs.size(), node.outputs.size());
}

}  // namespace tg::runtime
