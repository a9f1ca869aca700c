#include "backends/cpu/cpu_backend.h"

#include "core/error_util.h"

namespace tg::cpu {

const char* KernelContext::op_name() const { return ir::op_name(node.kind).data(); }

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
#define TG_CALL_REGISTER_KERNELS(family) register_##family##_kernels(t);
    TG_OP_FAMILIES(TG_CALL_REGISTER_KERNELS)
#undef TG_CALL_REGISTER_KERNELS
    return t;
  }();
  return table;
}

namespace {

class CpuProgram final : public backends::Program {
 public:
  explicit CpuProgram(std::shared_ptr<const backends::PlannedGraph> plan) : plan_(std::move(plan)) {
    const ir::Graph& g = *plan_->graph;
    for (int id : plan_->schedule) kernels_.push_back(kernel_table().get(g.node(id).kind));
    feed_index_.assign(static_cast<size_t>(g.size()), -1);
    for (size_t i = 0; i < plan_->feed_nodes.size(); ++i) feed_index_[plan_->feed_nodes[i]] = static_cast<int>(i);
  }

  std::vector<TensorData> run(std::span<const TensorData> feeds) const override {
    const ir::Graph& g = *plan_->graph;
    std::vector<std::vector<TensorData>> values(static_cast<size_t>(g.size()));
    std::vector<TensorData> inputs;
    ir::VariableTransaction variables(g.variables());
    for (size_t step = 0; step < plan_->schedule.size(); ++step) {
      const ir::Node& node = g.node(plan_->schedule[step]);
      std::vector<TensorData>& outs = values[node.id];
      if (node.kind == ir::OpKind::placeholder) {
        outs = {feeds[feed_index_[node.id]]};
      } else {
        inputs.clear();
        for (const auto& v : node.inputs) inputs.push_back(values[v.node][v.index]);
        outs.clear();
        for (const TensorType& t : node.outputs) outs.emplace_back(t.shape, t.dtype);
        KernelContext ctx{node, inputs, outs, variables};
        kernels_[step](ctx);
      }
      for (const auto& v : plan_->release_after[step]) values[v.node][v.index] = TensorData();
    }
    std::vector<TensorData> result;
    for (const auto& t : plan_->targets) result.push_back(values[t.node][t.index]);
    variables.commit();  // only a run that got this far publishes its assignments
    return result;
  }

 private:
  std::shared_ptr<const backends::PlannedGraph> plan_;
  std::vector<Kernel> kernels_;
  std::vector<int> feed_index_;
};

class CpuBackend final : public backends::Backend {
 public:
  Device device() const override { return Device::cpu(); }
  bool supports(const ir::Node& node) const override {
    return node.kind == ir::OpKind::placeholder || kernel_table().get(node.kind) != nullptr;
  }
  std::unique_ptr<backends::Program> lower(
      std::shared_ptr<const backends::PlannedGraph> plan) const override {
    return std::make_unique<CpuProgram>(std::move(plan));
  }
};

}  // namespace

const backends::Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace tg::cpu
