// Symbolic dims of executables compiled once for varying sizes (issue 17, docs/design/0009).
// At compile, a fed dim of -1 becomes a symbol named after its placeholder and axis ("ids.1"),
// while dims the caller names with tg::symbolic_dim stay; type inference then propagates symbols
// through the graph, and where two different symbols must name one size (broadcasting, matmul's
// contracted dims, concat's other dims) they are unified: every feed type is rewritten to one
// representative symbol per class, so shapes compare equal and the passes can fuse values of
// symbolic shape. At run time each new signature binds the symbols from the fed shapes (a
// contradiction raises before any kernel runs), substitutes them into the optimized graph's
// attributes and types, and infers concrete types.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace tg::runtime {

/// Symbol -> representative symbol, for each symbol unified into another's class.
using SymbolAliases = std::map<int64_t, int64_t>;

/// `type` with each -1 dim replaced by `declared`'s symbol at that dim when it has one, else by
/// the symbol "<placeholder>.<axis>" (the name's characters outside symbolic_dim's set become
/// '_', at most 48 of them kept).
/// `node` (the placeholder's id) keeps names apart when sanitizing or cutting changed them; a name
/// that is one of `user_symbols` (declared by the feeds) gets '_' appended until it is not.
TensorType name_varying_dims(const TensorType& type, const std::string& placeholder, const TensorType& declared,
                             int node, const std::set<int64_t>& user_symbols);

/// Infers `g`'s types (passes::infer_types) for its symbolic feeds, unifying the symbols that
/// inference finds must be equal: the feed nodes' types are rewritten to their classes'
/// representatives (the symbol interned first) and inference runs again, until no new pair
/// appears. Returns the aliases (empty when no symbol met another).
SymbolAliases unify_symbols(ir::Graph& g, const std::vector<int>& feeds);

/// Symbol -> size of one signature.
using SymbolBinding = std::map<int64_t, int64_t>;

/// Binds each symbol of the feed types `symbolic` (feed order, names in `names`) to its dim in
/// `fed` (a size, or at compile another symbol); aliases get their representative's. Raises
/// tg::Error(shape_mismatch) "[run] placeholder 'mask' dim 1 is 100, but symbol seq is 128
/// (placeholder 'ids' dim 1)" when two feed dims of one symbol get different values. A symbol
/// bound to itself is left out.
SymbolBinding bind_symbols(const std::vector<TensorType>& symbolic, const std::vector<std::string>& names,
                           const std::vector<TensorType>& fed, const SymbolAliases& aliases,
                           std::string_view op = "run");

/// Replaces every bound symbol in `g`'s shape attributes (reshape and broadcast_to targets, the
/// fused ops' shapes, convolution gradients' shapes) and value types, regions included; a derived
/// symbol (core/dim_expr.h: "seq-1", "(h+1)/2") takes its value for its base's size, and raises
/// tg::Error(shape_mismatch) naming `op`, the symbol, its size and the bound when the base's size
/// is below the bound the expression holds from. Symbols left unbound (none when every feed is
/// bound) become -1 with `drop_unbound`, else stay.
void substitute_symbols(ir::Graph& g, const SymbolBinding& binding, bool drop_unbound = true,
                        std::string_view op = "run");

}  // namespace tg::runtime
