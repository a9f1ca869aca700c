// Op kinds and their static properties, derived from ops.def.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace tg::ir {

enum class OpKind : uint16_t {
#define TG_OP(name, family, arity, traits) name,
#include "ir/ops.def"
#undef TG_OP
};

/// Number of rows in ops.def.
inline constexpr int kNumOpKinds = 0
#define TG_OP(name, family, arity, traits) +1
#include "ir/ops.def"
#undef TG_OP
    ;

/// Op traits (bit flags).
enum OpTrait : uint32_t {
  kElementwise = 1u << 0,     ///< output[i] depends only on inputs[i] (after broadcasting)
  kCommutative = 1u << 1,     ///< f(a, b) == f(b, a)
  kSideEffect = 1u << 2,      ///< never removed when reached, never reordered across control edges
  kDifferentiable = 1u << 3,  ///< has a vector-Jacobian rule for floating inputs
  kSource = 1u << 4,          ///< no data inputs
  kDataMovement = 1u << 5,    ///< only moves or copies elements (works on raw bytes)
};

/// Op families (one file per family in each layer).
enum class OpFamily : uint8_t {
  source, random, variable, unary, binary, ternary, cast, shape, reduce, matmul, gather, stencil,
  conv, pool, control, fused, collective
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpFamily family;
  std::string_view family_name;
  int arity;  ///< -1: variadic
  uint32_t traits;
};

const OpInfo& op_info(OpKind kind);
std::span<const OpInfo> all_ops();
inline std::string_view op_name(OpKind kind) { return op_info(kind).name; }
inline bool has_trait(OpKind kind, OpTrait t) { return (op_info(kind).traits & t) != 0; }
/// Looks up an op by name; returns false when there is none.
bool op_kind_from_name(std::string_view name, OpKind* out);

}  // namespace tg::ir

/// Every op family, once (X-macro): each has src/ops/<family>.cpp with
/// register_<family>_ops(OpRegistry&) and src/backends/cpu/<family>.cpp with
/// register_<family>_kernels(KernelTable&).
#define TG_OP_FAMILIES(X) \
  X(source) X(random) X(variable) X(unary) X(binary) X(ternary) X(cast) X(shape) X(reduce) X(matmul) X(gather) X(stencil) \
      X(conv) X(pool) X(control) X(fused) X(collective)
