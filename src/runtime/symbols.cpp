#include "runtime/symbols.h"

#include <set>

#include <type_traits>
#include <variant>

#include "core/dim_expr.h"
#include "core/error_util.h"
#include "ops/builder.h"
#include "passes/passes.h"

namespace tg::runtime {
namespace {

// Symbol -> dim (a symbol or a size). A derived symbol (core/dim_expr.h) not in `to` whose base
// is follows it: its value for the base's size (refused below its bound, naming `op`), or the
// same expression of the base's new symbol. Symbols left stay, or become -1 with `drop_unbound`.
void substitute(ir::Graph& g, const std::map<int64_t, int64_t>& to, bool drop_unbound, std::string_view op) {
  auto dim = [&](int64_t& d) {
    if (!is_symbolic_dim(d)) return;
    auto it = to.find(d);
    if (it != to.end()) {
      d = it->second;
      return;
    }
    if (const std::optional<core::DimExpr> e = core::derived_dim(d)) {
      auto b = to.find(e->base);
      if (b != to.end() && b->second >= 0) {
        if (b->second < e->lo) {
          fail(ErrorCode::shape_mismatch, op,
               "symbol {} is {}, but the graph's size {} needs {} >= {} (it was compiled once for sizes where "
               "that holds; compile with fixed shapes for smaller ones)",
               dim_name(e->base), b->second, dim_name(d), dim_name(e->base), e->lo);
        }
        if (!core::eval_dim_expr(*e, b->second, &d)) {
          fail(ErrorCode::shape_mismatch, op, "symbol {} is {}: the graph's size {} overflows", dim_name(e->base),
               b->second, dim_name(d));
        }
        return;
      }
      if (b != to.end() && is_symbolic_dim(b->second)) {
        const int64_t renamed = core::affine_dim(b->second, e->a, e->b, e->c, e->lo);
        if (renamed != -1 || drop_unbound) {
          d = renamed;
          return;
        }
      }
    }
    if (drop_unbound) d = -1;
  };
  auto shape = [&](Shape& s) {
    for (int64_t& d : s) dim(d);
  };
  for (ir::Node& n : g.nodes()) {
    std::visit(
        [&](auto& a) {
          if constexpr (requires { a.shape; }) {
            if constexpr (std::is_same_v<std::decay_t<decltype(a.shape)>, Shape>) shape(a.shape);
          }
        },
        n.attrs);
    for (TensorType& t : n.outputs) shape(t.shape);
    for (ir::Region& r : n.regions) {
      if (!r.body) continue;
      r.body = std::make_shared<ir::Graph>(*r.body);  // bodies may be shared with the cached graph
      substitute(*r.body, to, drop_unbound, op);
    }
  }
}

std::string symbol_safe(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 48)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == ':' || c == '[' || c == ']';
    out += ok ? c : '_';
  }
  return out.empty() ? std::string("input") : out;
}

}  // namespace

TensorType name_varying_dims(const TensorType& type, const std::string& placeholder, const TensorType& declared,
                             int node, const std::set<int64_t>& user_symbols) {
  TensorType out = type;
  std::string base = symbol_safe(placeholder);
  if (base != placeholder) base.append(1, ':').append(std::to_string(node));  // "a b" and "a_b" stay apart
  for (size_t i = 0; i < out.shape.size(); ++i) {
    if (out.shape[i] != -1) continue;
    const bool named = i < declared.shape.size() && is_symbolic_dim(declared.shape[i]);
    if (named) {
      out.shape[i] = declared.shape[i];
      continue;
    }
    // A user's symbol of the same name ("d.0" declared for another input) is another size.
    std::string name = base + "." + std::to_string(i);
    int64_t symbol = symbolic_dim(name);
    while (user_symbols.count(symbol) > 0) symbol = symbolic_dim(name += "_");
    out.shape[i] = symbol;
  }
  return out;
}

SymbolAliases unify_symbols(ir::Graph& g, const std::vector<int>& feeds) {
  std::map<int64_t, int64_t> parent;
  auto find = [&](int64_t s) {
    while (true) {
      auto it = parent.find(s);
      if (it == parent.end()) return s;
      s = it->second;
    }
  };
  for (int round = 0;; ++round) {
    ops::SymbolEqualities eq;
    {
      ops::RecordSymbolEqualities record(eq);
      passes::infer_types(g);
    }
    bool merged = false;
    for (const auto& [a, b] : eq.pairs) {
      const int64_t ra = find(a), rb = find(b);
      if (ra == rb) continue;
      parent[std::min(ra, rb)] = std::max(ra, rb);  // the symbol interned first represents the class
      merged = true;
    }
    if (!merged) break;
    TG_CHECK_INTERNAL(round < 64, "symbol unification does not converge");
    std::map<int64_t, int64_t> to;
    for (const auto& [s, p] : parent) to[s] = find(s);
    substitute(g, to, false, "compile");
    (void)feeds;  // the feed nodes' types are among the substituted values
  }
  SymbolAliases aliases;
  for (const auto& [s, p] : parent) aliases[s] = find(s);
  return aliases;
}

SymbolBinding bind_symbols(const std::vector<TensorType>& symbolic, const std::vector<std::string>& names,
                           const std::vector<TensorType>& fed, const SymbolAliases& aliases, std::string_view op) {
  SymbolBinding binding;
  std::map<int64_t, std::pair<size_t, size_t>> bound_by;  // symbol -> (feed, dim) that bound it
  for (size_t i = 0; i < symbolic.size(); ++i) {
    const Shape& s = symbolic[i].shape;
    for (size_t j = 0; j < s.size() && j < fed[i].shape.size(); ++j) {
      if (!is_symbolic_dim(s[j]) || fed[i].shape[j] == s[j]) continue;
      const int64_t size = fed[i].shape[j];
      auto [it, added] = binding.emplace(s[j], size);
      if (added) {
        bound_by[s[j]] = {i, j};
      } else if (it->second != size) {
        const auto [fi, fj] = bound_by[s[j]];
        fail(ErrorCode::shape_mismatch, op, "placeholder '{}' dim {} is {}, but symbol {} is {} (placeholder '{}' dim {})",
             names[i], j, dim_name(size), dim_name(s[j]), dim_name(it->second), names[fi], fj);
      }
    }
  }
  for (const auto& [member, rep] : aliases) {
    auto it = binding.find(rep);
    if (it == binding.end()) continue;
    // A derived symbol unified with another (x[1:] + y: seq-1 with y's symbol) must equal it for
    // its base's size too, and hold from its bound.
    if (const std::optional<core::DimExpr> e = core::derived_dim(member)) {
      auto b = binding.find(e->base);
      int64_t v = 0;
      if (b != binding.end() && b->second >= 0 &&
          (b->second < e->lo || !core::eval_dim_expr(*e, b->second, &v) || v != it->second)) {
        fail(ErrorCode::shape_mismatch, op,
             "symbol {} is {}, so the graph's size {} is {}, but it must equal symbol {}, which is {} (symbol {} "
             "holds from {} >= {})",
             dim_name(e->base), b->second, dim_name(member), b->second < e->lo ? std::string("below its bound") : std::to_string(v),
             dim_name(rep), it->second, dim_name(member), dim_name(e->base), e->lo);
      }
    }
    binding[member] = it->second;
  }
  return binding;
}

void substitute_symbols(ir::Graph& g, const SymbolBinding& binding, bool drop_unbound, std::string_view op) {
  if (!binding.empty() || drop_unbound) substitute(g, binding, drop_unbound, op);
}

}  // namespace tg::runtime
