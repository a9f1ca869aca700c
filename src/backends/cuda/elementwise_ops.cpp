#include "backends/cuda/elementwise_ops.h"

#include <fmt/format.h>

#include "core/error_util.h"

namespace tg::cuda {
namespace {

using K = ir::OpKind;

struct OpEntry {
  const char* functor;
  DTypeGroup group;
  bool int_division = false;
};

OpEntry unary_entry(K kind) {
  switch (kind) {
    case K::neg: return {"Neg", DTypeGroup::numeric};
    case K::abs: return {"Abs", DTypeGroup::numeric};
    case K::sign: return {"Sign", DTypeGroup::numeric};
    case K::square: return {"Square", DTypeGroup::numeric};
    case K::exp: return {"Exp", DTypeGroup::floating};
    case K::log: return {"Log", DTypeGroup::floating};
    case K::log1p: return {"Log1p", DTypeGroup::floating};
    case K::expm1: return {"Expm1", DTypeGroup::floating};
    case K::sqrt: return {"Sqrt", DTypeGroup::floating};
    case K::rsqrt: return {"Rsqrt", DTypeGroup::floating};
    case K::reciprocal: return {"Reciprocal", DTypeGroup::floating};
    case K::sin: return {"Sin", DTypeGroup::floating};
    case K::cos: return {"Cos", DTypeGroup::floating};
    case K::tan: return {"Tan", DTypeGroup::floating};
    case K::tanh: return {"Tanh", DTypeGroup::floating};
    case K::sigmoid: return {"Sigmoid", DTypeGroup::floating};
    case K::erf: return {"Erf", DTypeGroup::floating};
    case K::floor: return {"Floor", DTypeGroup::floating};
    case K::ceil: return {"Ceil", DTypeGroup::floating};
    case K::round: return {"Round", DTypeGroup::floating};
    case K::logical_not: return {"LogicalNot", DTypeGroup::boolean};
    case K::is_nan: return {"IsNan", DTypeGroup::floating};
    case K::is_inf: return {"IsInf", DTypeGroup::floating};
    default: return {nullptr, DTypeGroup::all};
  }
}

OpEntry binary_entry(K kind) {
  switch (kind) {
    case K::add: return {"Add", DTypeGroup::numeric};
    case K::sub: return {"Sub", DTypeGroup::numeric};
    case K::mul: return {"Mul", DTypeGroup::numeric};
    case K::div: return {"Div", DTypeGroup::numeric, true};
    case K::pow: return {"Pow", DTypeGroup::floating};
    case K::maximum: return {"Maximum", DTypeGroup::numeric};
    case K::minimum: return {"Minimum", DTypeGroup::numeric};
    case K::mod: return {"Mod", DTypeGroup::numeric, true};
    case K::floor_mod: return {"FloorMod", DTypeGroup::numeric, true};
    case K::floor_div: return {"FloorDiv", DTypeGroup::numeric, true};
    case K::atan2: return {"Atan2", DTypeGroup::floating};
    case K::equal: return {"Equal", DTypeGroup::all};
    case K::not_equal: return {"NotEqual", DTypeGroup::all};
    case K::less: return {"Less", DTypeGroup::all};
    case K::less_equal: return {"LessEqual", DTypeGroup::all};
    case K::greater: return {"Greater", DTypeGroup::all};
    case K::greater_equal: return {"GreaterEqual", DTypeGroup::all};
    case K::logical_and: return {"LogicalAnd", DTypeGroup::boolean};
    case K::logical_or: return {"LogicalOr", DTypeGroup::boolean};
    case K::logical_xor: return {"LogicalXor", DTypeGroup::boolean};
    default: return {nullptr, DTypeGroup::all};
  }
}

void check_same(std::string_view op, DType a, DType b) {
  if (a != b) fail(ErrorCode::dtype_mismatch, op, "operand dtypes {} and {} differ", dtype_name(a), dtype_name(b));
}

}  // namespace

std::string elementwise_expression(ir::OpKind kind, std::span<const DType> in, DType out,
                                   std::span<const std::string> args, std::string_view op, bool* uses_flag) {
  if (OpEntry u = unary_entry(kind); u.functor) {
    require_dtype(u.group, in[0], op);
    return fmt::format("tg_dev::un<tg_dev::{}, {}>({})", u.functor, device_type(out), args[0]);
  }
  if (OpEntry b = binary_entry(kind); b.functor) {
    require_dtype(b.group, in[0], op);
    check_same(op, in[0], in[1]);
    if (b.int_division && is_integer(in[0])) {
      *uses_flag = true;
      return fmt::format("tg_dev::bin_checked<tg_dev::{}, {}>({}, {}, flag)", b.functor, device_type(in[0]), args[0],
                         args[1]);
    }
    return fmt::format("tg_dev::bin<tg_dev::{}, {}>({}, {})", b.functor, device_type(out), args[0], args[1]);
  }
  switch (kind) {
    case K::select:
      require_dtype(DTypeGroup::boolean, in[0], op);
      check_same(op, in[1], in[2]);
      return fmt::format("tg_dev::select({}, {}, {})", args[0], args[1], args[2]);
    case K::clamp:
      require_dtype(DTypeGroup::numeric, in[0], op);
      check_same(op, in[0], in[1]);
      check_same(op, in[0], in[2]);
      return fmt::format("tg_dev::tern<tg_dev::Clamp, {}>({}, {}, {})", device_type(in[0]), args[0], args[1], args[2]);
    case K::cast:
      if (in[0] == out) return args[0];
      return fmt::format("tg_dev::convert<{}, {}>({})", device_type(out), device_type(in[0]), args[0]);
    case K::stop_gradient: return args[0];
    default: return "";
  }
}

}  // namespace tg::cuda
