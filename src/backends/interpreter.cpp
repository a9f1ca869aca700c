#include "backends/interpreter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/env.h"

#include "core/error_util.h"
#include "ops/registry.h"
#include "passes/passes.h"

namespace tg::backends {

const char* KernelContext::op_name() const { return ir::op_name(node.kind).data(); }

namespace {

// TG_PROFILE=1: time per op kind and device, printed at exit (core/env.h).
class Profiler {
 public:
  struct Row {
    int64_t calls = 0;
    double seconds = 0;
    double bytes = 0;  ///< input + output bytes
  };
  static Profiler& get() {
    static Profiler p;
    return p;
  }
  void add(const std::string& device, const std::string& name, double seconds, double bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    Row& r = rows_[{device, name}];
    r.calls++;
    r.seconds += seconds;
    r.bytes += bytes;
  }
  ~Profiler() {
    if (rows_.empty()) return;
    std::map<std::string, double> total;
    for (const auto& [k, r] : rows_) total[k.first] += r.seconds;
    std::vector<std::pair<double, std::pair<std::string, std::string>>> order;
    for (const auto& [k, r] : rows_) order.push_back({r.seconds, k});
    std::sort(order.rbegin(), order.rend());
    std::fprintf(stderr, "[tg profile] %-8s %-26s %9s %12s %7s %10s\n", "device", "op", "calls", "total ms",
                 "share", "GB/s");
    for (const auto& [secs, k] : order) {
      const Row& r = rows_[k];
      std::fprintf(stderr, "[tg profile] %-8s %-26s %9lld %12.3f %6.1f%% %10.1f\n", k.first.c_str(),
                   k.second.c_str(), static_cast<long long>(r.calls), 1e3 * r.seconds,
                   100.0 * r.seconds / std::max(total[k.first], 1e-12), r.bytes / std::max(r.seconds, 1e-12) / 1e9);
    }
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Row> rows_;
};

// The profile row of a node: its op kind; with TG_PROFILE=shapes also its operand types.
template <typename Values>
std::string profile_row(const ir::Node& node, const Values& inputs, const Values& outs) {
  std::string row(ir::op_name(node.kind));
  if (!env::profile_shapes()) return row;
  for (size_t i = 0; i < inputs.size(); ++i) row += (i ? ", " : " ") + inputs[i].type().to_string();
  for (size_t i = 0; i < outs.size(); ++i) row += (i ? ", " : " -> ") + outs[i].type().to_string();
  return row;
}

// Kernels timed by device events in a profiled run (TG_PROFILE on a backend with record_event):
// evaluated after the run, when the events have completed.
struct Timed {
  std::string name;  ///< the row: op kind (TG_PROFILE=shapes: and operand types)
  double bytes;
  void* start;
  void* end;
};
thread_local std::vector<Timed> t_timed;

// How to run one graph: the program's top level or a region body.
struct GraphPlan {
  const ir::Graph* graph = nullptr;
  std::vector<int> schedule;    ///< node ids in execution order
  std::vector<Kernel> kernels;  ///< per step
  std::vector<char> dynamic;    ///< per step: output shapes known only at run time
  std::vector<std::vector<ir::ValueRef>> release_after;  ///< per step
  std::vector<int> feed_index;  ///< per node: which feed (or argument) it is, or -1
  std::vector<ir::ValueRef> results;
};

GraphPlan make_plan(const KernelTable& table, const ir::Graph& g, std::vector<int> schedule,
                    std::vector<std::vector<ir::ValueRef>> release, const std::vector<int>& feeds,
                    std::vector<ir::ValueRef> results) {
  GraphPlan p;
  p.graph = &g;
  p.schedule = std::move(schedule);
  p.release_after = std::move(release);
  p.results = std::move(results);
  for (int id : p.schedule) {
    const ir::Node& n = g.node(id);
    p.kernels.push_back(table.get(n.kind));
    bool dynamic = false;
    for (const TensorType& t : n.outputs) dynamic = dynamic || !is_static(t.shape);
    p.dynamic.push_back(dynamic);
  }
  p.feed_index.assign(static_cast<size_t>(g.size()), -1);
  for (size_t i = 0; i < feeds.size(); ++i) p.feed_index[feeds[i]] = static_cast<int>(i);
  return p;
}

GraphPlan make_region_plan(const KernelTable& table, const ir::Region& r) {
  const ir::Graph& g = *r.body;
  std::vector<int> schedule;
  for (const ir::Node& n : g.nodes()) schedule.push_back(n.id);
  auto release = passes::plan_buffers(g, schedule, r.results);
  return make_plan(table, g, std::move(schedule), std::move(release), r.params, r.results);
}

class Interpreter final : public Program, public RegionRunner {
 public:
  Interpreter(std::shared_ptr<const PlannedGraph> plan, Device device, const KernelTable& table)
      : plan_(std::move(plan)), device_(device), table_(table) {
    const ir::Graph& g = *plan_->graph;
    top_ = make_plan(table_, g, plan_->schedule, plan_->release_after, plan_->feed_nodes, plan_->targets);
    add_region_plans(g);
  }

  std::vector<TensorData> run(std::span<const TensorData> feeds) const override {
    ir::VariableTransaction variables(plan_->graph->variables(), device_);
    std::vector<TensorData> on_device, on_host;
    for (const TensorData& f : feeds) {
      on_device.push_back(f.to(device_));
      // Small host feeds keep a host copy for kernels that branch on them (KernelContext::host_inputs).
      bool shadow = !device_.is_cpu() && f.device().is_cpu() && f.num_elements() <= 64;
      on_host.push_back(shadow ? f : TensorData());
    }
    // TG_PROFILE times runs after a program's first (which compiles kernels and picks algorithms).
    profile_run_ = env::profile() && runs_.fetch_add(1) > 0;
    std::vector<TensorData> result = execute(top_, on_device, variables, on_host);
    if (profile_run_ && table_.record_event) collect_timed();
    variables.commit();  // only a run that got this far publishes its assignments
    return result;
  }

  std::vector<TensorData> run_region(const ir::Region& region, std::span<const TensorData> args,
                                     ir::VariableTransaction& variables) const override {
    auto it = regions_.find(region.body.get());
    if (it == regions_.end() || args.size() != region.params.size()) {
      fail(ErrorCode::internal, device_.to_string(), "region not planned or {} arguments for {} parameters",
           args.size(), region.params.size());
    }
    return execute(it->second, args, variables);
  }

 private:
  // Device time of each timed kernel, and the time the device sat idle between consecutive
  // kernels (waiting for the host to queue the next: host-bound stretches).
  void collect_timed() const {
    table_.synchronize(device_);
    const std::string dev = device_.to_string();
    for (size_t i = 0; i < t_timed.size(); ++i) {
      const Timed& t = t_timed[i];
      Profiler::get().add(dev, t.name, table_.event_ms(t.start, t.end) / 1e3, t.bytes);
      if (i > 0) Profiler::get().add(dev, "(device idle between)", table_.event_ms(t_timed[i - 1].end, t.start) / 1e3, 0);
    }
    for (const Timed& t : t_timed) {
      table_.release_event(t.start);
      table_.release_event(t.end);
    }
    t_timed.clear();
  }

  void add_region_plans(const ir::Graph& g) {
    for (const ir::Node& n : g.nodes()) {
      for (const ir::Region& r : n.regions) {
        if (regions_.count(r.body.get())) continue;
        regions_.emplace(r.body.get(), make_region_plan(table_, r));
        add_region_plans(*r.body);
      }
    }
  }

  std::vector<TensorData> execute(const GraphPlan& p, std::span<const TensorData> feeds,
                                  ir::VariableTransaction& variables,
                                  std::span<const TensorData> host_feeds = {}) const {
    const ir::Graph& g = *p.graph;
    std::vector<std::vector<TensorData>> values(static_cast<size_t>(g.size()));
    std::vector<TensorData> inputs, host_inputs;
    std::vector<TensorData> host_of;  // per node: host copy of output 0 of a fed placeholder
    if (!host_feeds.empty()) host_of.resize(static_cast<size_t>(g.size()));
    for (size_t step = 0; step < p.schedule.size(); ++step) {
      const ir::Node& node = g.node(p.schedule[step]);
      std::vector<TensorData>& outs = values[node.id];
      if (node.kind == ir::OpKind::placeholder) {
        int f = p.feed_index[node.id];
        if (f < 0 || f >= static_cast<int>(feeds.size()))
          fail(ErrorCode::internal, device_.to_string(), "placeholder %{} not fed", node.id);
        outs = {feeds[f]};
        if (!host_of.empty() && f < static_cast<int>(host_feeds.size())) host_of[node.id] = host_feeds[f];
      } else {
        inputs.clear();
        for (const auto& v : node.inputs) inputs.push_back(values[v.node][v.index]);
        host_inputs.clear();
        bool any_host = false;
        if (!host_of.empty()) {
          for (const auto& v : node.inputs) {
            host_inputs.push_back(v.index == 0 ? host_of[v.node] : TensorData());
            any_host = any_host || !host_inputs.back().empty();
          }
        }
        const std::span<const TensorData> host_view =
            any_host ? std::span<const TensorData>(host_inputs) : std::span<const TensorData>();
        if (profile_run_ && node.regions.empty() && table_.record_event) {
          // Device events around the kernel: no waiting, so the queue stays as in a normal run.
          void* start = table_.record_event(device_);
          run_node(node, p.kernels[step], p.dynamic[step] != 0, inputs, outs, variables, host_view);
          void* end = table_.record_event(device_);
          double bytes = 0;
          for (const TensorData& t : inputs) bytes += static_cast<double>(t.nbytes());
          for (const TensorData& t : outs) bytes += static_cast<double>(t.nbytes());
          t_timed.push_back({profile_row(node, inputs, outs), bytes, start, end});
        } else if (profile_run_ && node.regions.empty()) {
          if (table_.synchronize) table_.synchronize(device_);
          auto t0 = std::chrono::steady_clock::now();
          run_node(node, p.kernels[step], p.dynamic[step] != 0, inputs, outs, variables, host_view);
          if (table_.synchronize) table_.synchronize(device_);
          double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          double bytes = 0;
          for (const TensorData& t : inputs) bytes += static_cast<double>(t.nbytes());
          for (const TensorData& t : outs) bytes += static_cast<double>(t.nbytes());
          Profiler::get().add(device_.to_string(), profile_row(node, inputs, outs), secs, bytes);
        } else if (env::trace()) {
          // One line per node before it runs, then a wait for the device: a kernel that fails or
          // never finishes is the last line printed.
          std::string row = fmt::format("[tg trace] {} %{} {}", device_.to_string(), node.id, ir::op_name(node.kind));
          for (size_t i = 0; i < inputs.size(); ++i) row += (i ? ", " : " ") + inputs[i].type().to_string();
          std::fprintf(stderr, "%s\n", row.c_str());
          std::fflush(stderr);
          run_node(node, p.kernels[step], p.dynamic[step] != 0, inputs, outs, variables, host_view);
          if (table_.synchronize) table_.synchronize(device_);
        } else {
          run_node(node, p.kernels[step], p.dynamic[step] != 0, inputs, outs, variables, host_view);
        }
      }
      for (const auto& v : p.release_after[step]) values[v.node][v.index] = TensorData();
    }
    std::vector<TensorData> result;
    for (const auto& t : p.results) result.push_back(values[t.node][t.index]);
    return result;
  }

  void run_node(const ir::Node& node, Kernel kernel, bool dynamic,
                std::span<const TensorData> inputs, std::vector<TensorData>& outs,
                ir::VariableTransaction& variables, std::span<const TensorData> host_inputs) const {
    if (!node.regions.empty()) {  // control flow: the kernel returns the region's results
      outs.assign(node.outputs.size(), TensorData());
      KernelContext ctx{node, inputs, outs, variables, this, device_, plan_->precision, host_inputs};
      kernel(ctx);
      check_control_outputs(node, outs);
      return;
    }
    if (!dynamic) {
      outs.clear();
      if (returns_outputs(node.kind)) {
        outs.resize(node.outputs.size());  // the kernel hands out a stored value or a view
      } else {
        for (const TensorType& t : node.outputs) outs.emplace_back(t.shape, t.dtype, device_);
      }
      KernelContext ctx{node, inputs, outs, variables, this, device_, plan_->precision, host_inputs};
      kernel(ctx);
      return;
    }
    // Shapes known only now: infer them for the actual inputs; the kernel sees a node with them.
    std::vector<TensorType> types;
    for (const TensorData& t : inputs) types.push_back(t.type());
    ir::Node concrete = node;
    concrete.outputs = ops::infer_types(node, types);
    outs.clear();
    for (const TensorType& t : concrete.outputs) outs.emplace_back(t.shape, t.dtype, device_);
    KernelContext ctx{concrete, inputs, outs, variables, this, device_, plan_->precision, host_inputs};
    kernel(ctx);
  }

  /// Kinds whose kernels set their outputs to existing data (constants, variable values, views)
  /// on every backend: no output buffer is allocated for them.
  static bool returns_outputs(ir::OpKind k) {
    return k == ir::OpKind::constant || k == ir::OpKind::variable || k == ir::OpKind::read_variable ||
           k == ir::OpKind::assign_variable || k == ir::OpKind::reshape;
  }

  static void check_control_outputs(const ir::Node& node, const std::vector<TensorData>& outs) {
    bool ok = outs.size() == node.outputs.size();
    for (size_t i = 0; ok && i < outs.size(); ++i) {
      const TensorType& want = node.outputs[i];
      ok = !outs[i].empty() && outs[i].dtype() == want.dtype &&
           outs[i].shape().size() == want.shape.size();
      for (size_t d = 0; ok && d < want.shape.size(); ++d)
        ok = want.shape[d] == -1 || want.shape[d] == outs[i].shape()[d];
      if (!ok) {
        fail(ErrorCode::internal, ir::op_name(node.kind), "output {} is {}, expected {}", i,
             outs[i].empty() ? "missing" : outs[i].type().to_string(), want.to_string());
      }
    }
    if (!ok)
      fail(ErrorCode::internal, ir::op_name(node.kind), "{} outputs, expected {}", outs.size(),
           node.outputs.size());
  }

  std::shared_ptr<const PlannedGraph> plan_;
  mutable std::atomic<int64_t> runs_{0};
  static thread_local bool profile_run_;
  Device device_;
  const KernelTable& table_;
  GraphPlan top_;
  std::unordered_map<const ir::Graph*, GraphPlan> regions_;
};

thread_local bool Interpreter::profile_run_ = false;

}  // namespace

std::unique_ptr<Program> make_interpreter(std::shared_ptr<const PlannedGraph> plan, Device device,
                                          const KernelTable& kernels) {
  return std::make_unique<Interpreter>(std::move(plan), device, kernels);
}

}  // namespace tg::backends
