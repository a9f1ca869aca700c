#include "runtime/compile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "backends/backend.h"
#include "core/env.h"
#include "core/error_util.h"
#include "core/stats.h"
#include "passes/passes.h"
#include "runtime/specialize.h"
#include "runtime/symbols.h"

namespace tg::runtime {
namespace {

void check_owner(const std::shared_ptr<ir::Graph>& graph, const std::shared_ptr<ir::Graph>& owner,
                 bool valid, std::string_view what) {
  if (!valid) fail(ErrorCode::invalid_argument, "compile", "{} is empty", what);
  if (owner != graph) fail(ErrorCode::invalid_argument, "compile", "{} belongs to another graph", what);
}

// Tensor and Operation handles can be made from raw ids: check them before any pass indexes.
void check_ref(const ir::Graph& g, int node, int index, std::string_view what) {
  if (node < 0 || node >= g.size() || index < 0 ||
      index >= static_cast<int>(g.node(node).outputs.size())) {
    fail(ErrorCode::invalid_argument, "compile", "{} refers to %{}:{}, which is not in the graph", what,
         node, index);
  }
}

// `varying`: a fed dim may be -1 (CompileOptions::disable_type_inference) where the placeholder's is.
void check_feed_type(const ir::Node& ph, const TensorType& fed, std::string_view op, bool varying = false) {
  const TensorType& declared = ph.outputs[0];
  if (fed.dtype != declared.dtype) {
    fail(ErrorCode::dtype_mismatch, op, "placeholder '{}' is {}, fed {}", ph.name,
         declared.to_string(), fed.to_string());
  }
  bool ok = fed.shape.size() == declared.shape.size();
  for (size_t i = 0; ok && i < fed.shape.size(); ++i) {
    // Varying: -1 or a symbol (tg::symbolic_dim; a declared symbol accepts any fed dim).
    const bool symbol = is_symbolic_dim(fed.shape[i]);
    ok = (fed.shape[i] >= 0 || (varying && (fed.shape[i] == -1 || symbol))) &&
         (declared.shape[i] < 0 || declared.shape[i] == fed.shape[i]);
  }
  if (!ok) {
    bool open = false;  // a varying dim without disable_type_inference: say so, the types can print alike
    for (const int64_t d : fed.shape) open = open || d == -1 || is_symbolic_dim(d);
    fail(ErrorCode::shape_mismatch, op, "placeholder '{}' is {}, fed {}{}", ph.name, declared.to_string(),
         fed.to_string(),
         !varying && open ? " (a varying dim (-1 or a symbol) compiles once for every size only with "
                            "CompileOptions::disable_type_inference; else give each dim's size)"
                          : "");
  }
}

// With every feed static, only control flow makes dims dynamic (branches of different shapes,
// loop values that change shape); the nodes reading such values stay dynamic too and the backend
// computes their shapes at run time. Any other dynamic output is a bug.
void check_static(const ir::Graph& g, const ir::Node& n) {
  if (!n.regions.empty()) return;
  for (const ir::ValueRef& in : n.inputs) {
    if (!is_static(g.type(in).shape)) return;
  }
  for (const TensorType& t : n.outputs) {
    if (!is_static(t.shape)) {
      fail(ErrorCode::internal, ir::op_name(n.kind), "output {} is still dynamic after inference",
           t.to_string());
    }
  }
}

// The node and, recursively, the nodes of its regions.
void check_supported(const backends::Backend& backend, Device device, const ir::Node& n) {
  if (!backend.supports(n)) {
    fail(ErrorCode::unsupported, ir::op_name(n.kind), "not supported on {} for {}",
         device.to_string(), n.outputs[0].to_string());
  }
  for (const ir::Region& r : n.regions) {
    for (const ir::Node& inner : r.body->nodes()) check_supported(backend, device, inner);
  }
}

}  // namespace

// Constant folding evaluates elementwise ops with the CPU backend's kernels (through the backend
// contract: passes include no backend).
bool evaluate_on_cpu(const ir::Node& n, std::span<const TensorData> args, TensorData& out) {
  backends::Kernel k = backends::backend_for(Device::cpu()).kernels().get(n.kind);
  if (!k) return false;
  std::vector<TensorData> outs{out};
  backends::KernelContext ctx{n, args, outs};
  try {
    k(ctx);
  } catch (const Error&) {
    return false;
  }
  out = outs[0];
  return true;
}

// Issue 15, deliverable 7: the layout pass runs "where that is faster". TG_CHANNELS_LAST=1 / 0
// forces it. Otherwise, where measured faster (docs/cuda.md): on the CPU for any graph with an
// NCHW convolution (oneDNN; torchvision's ResNet-50 batch 1: 260 ms NCHW vs 67 ms converted,
// MobileNetV3-Large 25.6 vs 19.5 ms); on CUDA when every NCHW convolution is dense (groups 1),
// not float64, and either has constant weights (an imported or frozen model's: stored OHWI once by
// passes::pack_conv_weights; torchvision's ResNet-50 from ONNX, batch 1 TF32: 0.685 ms NCHW vs
// 0.527 converted, session 24) or a static batch of at least 32 (weights fed or variables, which
// are permuted in every run; ResNet-50 TF32 batch 32: 3.44 vs 2.95 ms, batch 128: 12.15 vs 9.21,
// bf16 9.14 vs 5.96). MobileNetV3-Large's depthwise convolutions ran slower NHWC (batch 32: 1.53
// vs 3.46 ms).
bool layout_pass_pays(const ir::Graph& g, Device device) {
  if (const std::optional<bool> forced = env::channels_last_override()) return *forced;
  constexpr int64_t kMinCudaBatch = 32;
  bool any = false;
  for (const ir::Node& n : g.nodes()) {
    // Forward convolutions, and the backward ones of training graphs built outside tg::autodiff
    // (PyTorch's, through tensorgraph.torch): their first input (x, or dy) holds the batch.
    const Conv2dDesc* d = nullptr;
    if (n.kind == ir::OpKind::conv2d) d = &std::get<Conv2dDesc>(n.attrs);
    if (n.kind == ir::OpKind::conv2d_backward_data || n.kind == ir::OpKind::conv2d_backward_weights) {
      d = &std::get<ir::ConvBackwardAttrs>(n.attrs).conv;
    }
    if (d == nullptr || d->data_layout != Layout::nchw) continue;
    any = true;
    if (device.is_cpu()) break;
    const TensorType& x = g.type(n.inputs[0]);
    // float64 convolutions run NCHW in cuDNN's legacy API anyway (an NHWC one is transposed back).
    if (d->groups != 1 || x.shape.empty() || x.dtype == DType::f64) return false;
    const bool constant_weights = n.kind == ir::OpKind::conv2d && g.node(n.inputs[1].node).kind == ir::OpKind::constant;
    if (!constant_weights && x.shape[0] < kMinCudaBatch) return false;
  }
  return any;
}

Executable compile_graph(const std::shared_ptr<ir::Graph>& graph, Device device,
                         const FeedTypes& feed_types, const std::vector<Tensor>& targets,
                         const std::vector<Operation>& target_ops, CompileOptions options,
                         const BoundFeeds& bound) {
  const backends::Backend& backend = backends::backend_for(device);
  auto g = std::make_shared<ir::Graph>(*graph);
  ir::verify(*g);  // before any pass indexes through the edges

  std::vector<ir::ValueRef> roots;
  std::vector<int> root_ops, feeds;
  for (const Tensor& t : targets) {
    check_owner(graph, t.graph_impl(), t.valid(), "a target tensor");
    check_ref(*g, t.node_id(), t.index(), "a target tensor");
    roots.push_back({t.node_id(), t.index()});
  }
  for (const Operation& o : target_ops) {
    check_owner(graph, o.graph_impl(), o.valid(), "a target operation");
    check_ref(*g, o.node_id(), 0, "a target operation");
    root_ops.push_back(o.node_id());
  }
  // Placeholders declaring symbols (tg::symbolic_dim, an ONNX dim_param) get them bound to the
  // fed dims: sizes, or with disable_type_inference symbols (symbols.h).
  std::vector<TensorType> declared, fed;
  std::vector<std::string> fed_names;
  std::set<int64_t> user_symbols;  // declared by the placeholders or the feed types
  for (const auto& [t, type] : feed_types) {
    for (int64_t d : type.shape) {
      if (is_symbolic_dim(d)) user_symbols.insert(d);
    }
    if (t.valid() && t.graph_impl() == graph && t.node_id() >= 0 && t.node_id() < g->size()) {
      for (int64_t d : g->node(t.node_id()).outputs.at(0).shape) {
        if (is_symbolic_dim(d)) user_symbols.insert(d);
      }
    }
  }
  for (const auto& [t, type] : feed_types) {
    check_owner(graph, t.graph_impl(), t.valid(), "a feed");
    check_ref(*g, t.node_id(), t.index(), "a feed");
    ir::Node& ph = g->node(t.node_id());
    if (ph.kind != ir::OpKind::placeholder) {
      fail(ErrorCode::invalid_argument, "compile", "feed %{} ({}) is not a placeholder",
           t.node_id(), ir::op_name(ph.kind));
    }
    if (std::find(feeds.begin(), feeds.end(), t.node_id()) != feeds.end()) {
      fail(ErrorCode::invalid_argument, "compile", "placeholder '{}' is fed twice", ph.name);
    }
    check_feed_type(ph, type, "compile", options.disable_type_inference);
    declared.push_back(ph.outputs[0]);
    // Compile once: each -1 becomes the declared symbol, or one named after the placeholder and
    // axis (symbols.h).
    ph.outputs[0] = options.disable_type_inference ? name_varying_dims(type, ph.name, ph.outputs[0], ph.id, user_symbols) : type;
    fed.push_back(ph.outputs[0]);
    fed_names.push_back(ph.name);
    feeds.push_back(t.node_id());
  }

  for (const auto& [t, value] : bound) {
    check_owner(graph, t.graph_impl(), t.valid(), "a bound feed");
    check_ref(*g, t.node_id(), t.index(), "a bound feed");
    ir::Node& ph = g->node(t.node_id());
    if (ph.kind != ir::OpKind::placeholder || std::find(feeds.begin(), feeds.end(), t.node_id()) != feeds.end()) {
      fail(ErrorCode::invalid_argument, "compile", "bound feed %{} ({}) is not an unfed placeholder", t.node_id(),
           ir::op_name(ph.kind));
    }
    check_feed_type(ph, value.type(), "compile");
    declared.push_back(ph.outputs[0]);  // its declared symbols are bound to the value's dims too
    fed.push_back(value.type());
    fed_names.push_back(ph.name);
    ph.kind = ir::OpKind::constant;
    ph.attrs = ir::ConstantAttrs{value.to(Device::cpu())};
    ph.outputs[0] = value.type();
  }

  substitute_symbols(*g, bind_symbols(declared, fed_names, fed, {}, "compile"), /*drop_unbound=*/false, "compile");
  passes::eliminate_dead_code(*g, roots, root_ops, feeds);
  for (const ir::Node& n : g->nodes()) {
    if (n.kind == ir::OpKind::placeholder &&
        std::find(feeds.begin(), feeds.end(), n.id) == feeds.end()) {
      fail(ErrorCode::not_found, "compile", "placeholder '{}' ({}) is needed but not fed", n.name,
           n.outputs[0].to_string());
    }
  }
  // Backends that fuse (CUDA; any with TG_FUSION=1) also get branch inlining and CSE.
  const bool fuse = env::fusion_override().value_or(backend.fuses_elementwise());
  if (fuse) passes::inline_constant_branches(*g, roots, root_ops, feeds);
  if (fuse && env::branch_select()) passes::select_cheap_branches(*g, roots, root_ops, feeds);
  bool varying = false;
  for (int f : feeds) varying = varying || !is_static(g->node(f).outputs[0].shape);
  // Symbolic feeds: inference unifies the symbols that must name one size (symbols.h).
  SymbolAliases aliases;
  if (varying) aliases = unify_symbols(*g, feeds);
  else passes::infer_types(*g);
  passes::simplify(*g, roots, root_ops, feeds, evaluate_on_cpu);
  if (layout_pass_pays(*g, device) && passes::convert_to_channels_last(*g, roots, root_ops, feeds)) {
    passes::infer_types(*g);  // checks the rewritten ops' types
  }
  passes::pack_conv_weights(
      *g, roots, [&backend](const Conv2dDesc& d, DType dt) { return backend.packed_conv_weights(d, dt); },
      evaluate_on_cpu);
  if (fuse) {
    if (options.precision == ComputePrecision::bf16 || options.precision == ComputePrecision::f16) {
      const DType low = options.precision == ComputePrecision::bf16 ? DType::bf16 : DType::f16;
      passes::autocast(*g, low, roots, root_ops, feeds);
    }
    if (passes::fold_constants(*g, roots, root_ops, feeds, evaluate_on_cpu)) {
      passes::simplify(*g, roots, root_ops, feeds, evaluate_on_cpu);  // folded masks are often uniform
    }
    if (env::project_heads()) passes::project_heads(*g, roots, root_ops, feeds);
    if (env::matmul_folds()) passes::fold_into_matmul(*g, roots, root_ops, feeds);
    passes::eliminate_common_subexpressions(*g, roots, root_ops, feeds);
    if (env::matmul_weights_tn()) {
      passes::store_matmul_weights_transposed(*g, roots, evaluate_on_cpu);  // opt-in while measured
    }
    if (env::merge_projections()) passes::merge_projections(*g, roots, root_ops, feeds);  // after CSE: one X
    passes::fuse_elementwise(*g, roots, root_ops, feeds);
    passes::fuse_reductions(*g, roots, root_ops, feeds);
    passes::fuse_rows(*g, roots, root_ops, feeds);
    passes::fuse_stencils(*g, roots, root_ops, feeds);
    if (env::merge_siblings()) passes::merge_siblings(*g, roots, root_ops, feeds);
    if (const std::string path = env::dump_graph_path(); !path.empty()) {
      // The graph after the passes, appended to that file (what a GPU run's kernels come from).
      if (std::FILE* f = std::fopen(path.c_str(), "a")) {
        const std::string text = ir::print_graph(*g);
        std::fputs(text.c_str(), f);
        std::fputs("\n", f);
        std::fclose(f);
      }
    }
    if (options.precision == ComputePrecision::bf16) {
      passes::demote_activation_storage(*g, DType::bf16, roots, root_ops, feeds);
    }
  }

  std::shared_ptr<runtime::SharedArena> shared;
  if (!options.arena_group.empty()) {
    std::lock_guard<std::mutex> lock(graph->runtime_mutex());
    auto& arena = runtime::graph_state(*graph).arenas[device.to_string() + "|" + options.arena_group];
    if (!arena) arena = std::make_shared<runtime::SharedArena>();
    shared = arena;
  }
  std::shared_ptr<CompiledProgram> compiled;
  if (varying) {
    compiled = specialize_later(g, feeds, roots, root_ops, device, options, std::move(shared), std::move(aliases));
  } else {
    compiled = lower_graph(g, feeds, roots, root_ops, device, options, std::move(shared));
  }
  stats::add(stats::Counter::compiles);  // a pass-pipeline run that produced an executable
  return Executable(std::move(compiled));
}

namespace {

// The plan of an optimized graph (every node checked for backend support; with `static_types`,
// every value that should have a static type checked too) and the executable's description.
std::shared_ptr<CompiledProgram> describe(const std::shared_ptr<ir::Graph>& g, const std::vector<int>& feeds,
                                          const std::vector<ir::ValueRef>& roots, const std::vector<int>& root_ops,
                                          Device device, const CompileOptions& options, bool static_types) {
  const backends::Backend& backend = backends::backend_for(device);
  auto plan = std::make_shared<runtime::PlannedGraph>();
  for (const ir::Node& n : g->nodes()) {
    if (static_types) check_static(*g, n);
    check_supported(backend, device, n);
    plan->schedule.push_back(n.id);
  }
  plan->feed_nodes = feeds;
  plan->precision = options.precision;
  plan->deterministic = options.deterministic || env::deterministic();
  plan->targets = roots;
  plan->target_ops = root_ops;
  plan->graph = g;
  auto compiled = std::make_shared<CompiledProgram>();
  compiled->device = device;
  for (int f : feeds) {
    compiled->feed_names.push_back(g->node(f).name);
    compiled->feed_types.push_back(g->node(f).outputs[0]);
  }
  for (const auto& r : roots) compiled->target_types.push_back(g->type(r));
  compiled->plan = std::move(plan);
  return compiled;
}

}  // namespace

std::shared_ptr<CompiledProgram> lower_graph(std::shared_ptr<ir::Graph> g, const std::vector<int>& feeds,
                                             const std::vector<ir::ValueRef>& roots,
                                             const std::vector<int>& root_ops, Device device,
                                             const CompileOptions& options, std::shared_ptr<SharedArena> shared) {
  std::shared_ptr<CompiledProgram> compiled = describe(g, feeds, roots, root_ops, device, options, true);
  compiled->program = std::make_unique<runtime::Program>(compiled->plan, backends::backend_for(device),
                                                         options.memory_budget_bytes, std::move(shared));
  return compiled;
}

std::shared_ptr<CompiledProgram> specialize_later(std::shared_ptr<ir::Graph> g, const std::vector<int>& feeds,
                                                  const std::vector<ir::ValueRef>& roots,
                                                  const std::vector<int>& root_ops, Device device,
                                                  const CompileOptions& options, std::shared_ptr<SharedArena> shared,
                                                  SymbolAliases aliases) {
  // Backend support is checked now, not at the first run; types are checked per signature.
  std::shared_ptr<CompiledProgram> compiled = describe(g, feeds, roots, root_ops, device, options, false);
  compiled->specializations = std::make_shared<Specializations>(g, feeds, roots, root_ops, device, options,
                                                                 std::move(shared), std::move(aliases));
  return compiled;
}

}  // namespace tg::runtime
