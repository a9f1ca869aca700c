#include "runtime/specialize.h"

#include <algorithm>
#include <set>

#include "core/env.h"
#include "core/error_util.h"
#include "ir/fused_rows.h"
#include "passes/passes.h"

namespace tg::runtime {
namespace {

// Row programs fused over a symbolic row length (passes::fuse_rows) run rows of at most
// ir::kMaxFusedRowLength elements: a signature with longer rows is refused before any kernel runs.
void check_row_lengths(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes()) {
    for (const ir::Region& r : n.regions) {
      if (r.body) check_row_lengths(*r.body);  // loop and branch bodies too, before anything runs
    }
    if (n.kind != ir::OpKind::fused_elementwise) continue;
    const auto& a = std::get<ir::FusedAttrs>(n.attrs);
    const bool rows = std::any_of(a.steps.begin(), a.steps.end(),
                                  [](const ir::FusedStep& s) { return ir::is_row_reduction_step(s.kind); });
    if (rows && !a.shape.empty() && a.shape.back() > ir::kMaxFusedRowLength) {
      fail(ErrorCode::unsupported, "run",
           "a fused row program (softmax, layer normalization) over rows of {} elements: compiled once, rows "
           "may have at most {} (compile with fixed shapes for longer ones)",
           a.shape.back(), ir::kMaxFusedRowLength);
    }
  }
}

}  // namespace

Specializations::Specializations(std::shared_ptr<const ir::Graph> graph, std::vector<int> feeds,
                                 std::vector<ir::ValueRef> roots, std::vector<int> root_ops, Device device,
                                 CompileOptions options, std::shared_ptr<SharedArena> shared, SymbolAliases aliases)
    : graph_(std::move(graph)),
      feeds_(std::move(feeds)),
      roots_(std::move(roots)),
      root_ops_(std::move(root_ops)),
      device_(device),
      options_(std::move(options)),
      shared_(std::move(shared)),
      aliases_(std::move(aliases)),
      capacity_(static_cast<size_t>(env::specialization_cache_size())) {}

std::shared_ptr<const CompiledProgram> Specializations::get(const std::vector<TensorType>& types) const {
  std::string key;
  for (const TensorType& t : types) key += shape_to_string(t.shape);
  {
    std::lock_guard lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->first == key) {
        lru_.splice(lru_.begin(), lru_, it);
        return lru_.front().second;
      }
    }
  }
  auto g = std::make_shared<ir::Graph>(*graph_);
  std::vector<TensorType> symbolic;
  std::vector<std::string> names;
  for (int f : feeds_) {
    symbolic.push_back(graph_->node(f).outputs[0]);
    names.push_back(graph_->node(f).name);
  }
  substitute_symbols(*g, bind_symbols(symbolic, names, types, aliases_));
  for (size_t i = 0; i < feeds_.size(); ++i) g->node(feeds_[i]).outputs[0] = types[i];
  passes::infer_types(*g);
  check_row_lengths(*g);
  std::shared_ptr<const CompiledProgram> p = lower_graph(g, feeds_, roots_, root_ops_, device_, options_, shared_);
  std::vector<std::shared_ptr<const CompiledProgram>> evicted;
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, q] : lru_) {
      if (k == key) return q;  // another thread lowered it meanwhile: one program per signature
    }
    p->program->set_deferred_errors(deferred_.load());
    lru_.emplace_front(key, p);
    while (lru_.size() > capacity_) {  // runs holding an evicted program finish with it
      evicted.push_back(std::move(lru_.back().second));
      lru_.pop_back();
    }
  }
  // An evicted program's unraised deferred error is raised now (waiting for the device: an
  // eviction is rare), not lost with the program.
  if (deferred_.load()) {
    for (const auto& q : evicted) q->program->check_deferred_errors(true);
  }
  return p;
}

void Specializations::set_deferred_errors(bool deferred) const {
  std::lock_guard lock(mu_);
  deferred_.store(deferred);
  for (const auto& [k, q] : lru_) q->program->set_deferred_errors(deferred);
}

void Specializations::check_deferred_errors(const CompiledProgram* running, bool wait) const {
  if (!deferred_.load()) return;
  std::vector<std::shared_ptr<const CompiledProgram>> kept;
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, q] : lru_) {
      if (q.get() != running) kept.push_back(q);
    }
  }
  for (const auto& q : kept) q->program->check_deferred_errors(wait);
}

size_t Specializations::arena_bytes() const {
  std::lock_guard lock(mu_);
  size_t bytes = 0;
  for (const auto& [k, p] : lru_) bytes = std::max(bytes, p->program->arena_bytes());
  return bytes;
}

int Specializations::arena_count() const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& [k, p] : lru_) n += p->program->arena_count();
  return n;
}

size_t Specializations::unplanned_bytes() const {
  std::lock_guard lock(mu_);
  size_t bytes = 0;
  for (const auto& [k, p] : lru_) bytes = std::max(bytes, static_cast<size_t>(p->program->memory().planned_bytes));
  return bytes;
}

size_t Specializations::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

std::vector<backends::CodeObject> Specializations::code_objects() const {
  std::lock_guard lock(mu_);
  std::vector<backends::CodeObject> code;
  std::set<std::string> keys;
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {  // least recently used first: stable order
    for (backends::CodeObject& c : it->second->program->code_objects()) {
      if (keys.insert(c.key).second) code.push_back(std::move(c));
    }
  }
  return code;
}

}  // namespace tg::runtime
