// Helpers shared by the op builders (src/ops/<family>.cpp).
#pragma once
#include <string_view>
#include <vector>

#include "core/error_util.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "ops/slice.h"
#include "tg/ops.h"

namespace tg::ops {

/// Builds a node of `kind` with `inputs` and `attrs`: checks that the inputs are valid tensors of
/// one graph, infers the output types (raising the op's errors), appends the node, and returns
/// its outputs.
std::vector<Tensor> make_op_multi(ir::OpKind kind, const std::vector<Tensor>& inputs,
                                  ir::Attrs attrs = ir::NoAttrs{});
/// make_op_multi for single-output ops.
Tensor make_op(ir::OpKind kind, const std::vector<Tensor>& inputs, ir::Attrs attrs = ir::NoAttrs{});
/// Builds a source node (no data inputs) whose output type is given.
Tensor make_source(Graph& g, ir::OpKind kind, ir::Attrs attrs, TensorType type,
                   std::string name = "");

/// A 0-d constant of `dtype` holding `value` in the graph of `like`.
Tensor scalar_like(const Tensor& like, double value, DType dtype);

/// axis in [-rank, rank) -> [0, rank); raises tg::Error(invalid_argument) naming `op` otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op);
/// Normalizes every axis and rejects duplicates; returns them sorted.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    std::string_view op);

/// NumPy broadcast of two shapes (-1 dims propagate unless the other dim decides; a symbol
/// against a size gives the size, checked once the symbol is bound; two different symbols must
/// name one size: the result is unify_dims' and the pair is noted, see SymbolEqualities);
/// raises tg::Error(shape_mismatch) "[op] shapes [2,3] and [4] do not broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

/// Two dims an op needs equal: sizes must agree (false otherwise); -1 takes the other; of two
/// symbols the larger value (interned first) is kept and the pair noted. `out` is the merged dim.
bool unify_dims(int64_t a, int64_t b, int64_t& out);

/// Pairs of different symbols that type inference found must name one size (broadcasting,
/// matmul's contracted dims...), collected while a RecordSymbolEqualities is alive on this
/// thread (compile's inference over symbolic feeds); with none alive, nothing is recorded.
struct SymbolEqualities {
  std::vector<std::pair<int64_t, int64_t>> pairs;
};
class RecordSymbolEqualities {
 public:
  explicit RecordSymbolEqualities(SymbolEqualities& into);
  ~RecordSymbolEqualities();
  RecordSymbolEqualities(const RecordSymbolEqualities&) = delete;
  RecordSymbolEqualities& operator=(const RecordSymbolEqualities&) = delete;

 private:
  SymbolEqualities* previous_;
};

/// Raises tg::Error(dtype_mismatch) unless all types share one dtype.
void check_same_dtype(std::span<const TensorType> types, std::string_view op);

}  // namespace tg::ops
