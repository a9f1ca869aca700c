"""Converters of elementwise ATen ops: arithmetic with scalars and broadcasting, comparisons,
activations, casts and copies. Operands are cast to the dtype PyTorch's type promotion gives the
node's output (ctx.out_dtype), so int / float, bool masks and scalars behave as in PyTorch."""
from .. import _tensorgraph as tg
from ._helpers import cast_to, operand, tensor, tg_dtype
from ._registry import Unsupported, converter


def _binary(fn):
    def convert(ctx, a, b, alpha=1, **kw):
        if kw.get("rounding_mode") not in (None,):
            raise Unsupported(f"rounding_mode={kw['rounding_mode']}")
        dt = ctx.out_dtype
        x, y = operand(ctx, a, dt), operand(ctx, b, dt)
        if alpha != 1:
            y = y * operand(ctx, alpha, dt)
        return fn(x, y)
    return convert


converter("aten::add", notes="Tensor and Scalar overloads, alpha", inplace=True)(_binary(tg.add))
converter("aten::sub", notes="Tensor and Scalar overloads, alpha", inplace=True)(_binary(tg.sub))
converter("aten::mul", notes="Tensor and Scalar overloads", inplace=True)(_binary(tg.mul))
converter("aten::maximum")(_binary(tg.maximum))
converter("aten::minimum")(_binary(tg.minimum))


@converter("aten::div", notes="true division; rounding_mode 'floor'/'trunc' for floats", inplace=True)
def div(ctx, a, b, rounding_mode=None):
    dt = ctx.out_dtype
    x, y = operand(ctx, a, dt), operand(ctx, b, dt)
    if rounding_mode is None:
        return tg.div(x, y)
    if not dt.is_floating:
        raise Unsupported(f"integer division with rounding_mode={rounding_mode}")
    q = tg.div(x, y)
    if rounding_mode == "floor":
        return tg.floor(q)
    if rounding_mode == "trunc":
        return tg.sign(q) * tg.floor(tg.abs(q))
    raise Unsupported(f"rounding_mode={rounding_mode}")


@converter("aten::rsub", notes="other - alpha * self")
def rsub(ctx, a, b, alpha=1):
    dt = ctx.out_dtype
    x, y = operand(ctx, a, dt), operand(ctx, b, dt)
    if alpha != 1:
        x = x * operand(ctx, alpha, dt)
    return y - x


@converter("aten::pow", notes="Tensor_Scalar (2 and 0.5 become square and sqrt), Tensor_Tensor")
def pow_(ctx, a, b):
    dt = ctx.out_dtype
    x = operand(ctx, a, dt)
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        if b == 2:
            return tg.square(x)
        if b == 0.5:
            return tg.sqrt(x)
        if b == 1:
            return x
    return tg.pow(x, operand(ctx, b, dt))


def _result_dtype(a, b):
    """PyTorch's type promotion of two operands (tensors, possibly fake, or Python scalars),
    computed from dtypes alone: dimensioned tensors outrank 0-d tensors, which outrank scalars,
    unless the lower one is of a higher category (bool < integer < floating)."""
    import torch

    def category(d):
        return 2 if d.is_floating_point else 0 if d == torch.bool else 1

    def scalar_dtype(v):
        return torch.bool if isinstance(v, bool) else torch.int64 if isinstance(v, int) else torch.get_default_dtype()

    ta, tb = isinstance(a, torch.Tensor), isinstance(b, torch.Tensor)
    if not ta and not tb:
        raise Unsupported("comparison of two scalars")
    if ta and tb and (a.dim() == 0) == (b.dim() == 0):
        return torch.promote_types(a.dtype, b.dtype)
    if ta and tb:
        full, low = (a, b) if b.dim() == 0 else (b, a)
        hi, lo = full.dtype, low.dtype
    else:
        hi, lo = (a.dtype, scalar_dtype(b)) if ta else (b.dtype, scalar_dtype(a))
    if category(lo) > category(hi):
        return lo if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else (
            torch.get_default_dtype() if category(lo) == 2 else torch.int64)
    return hi


def _compare(fn):
    def convert(ctx, a, b):
        dt = tg_dtype(_result_dtype(ctx.example_args[0], ctx.example_args[1]))
        return fn(operand(ctx, a, dt), operand(ctx, b, dt))
    return convert


for _name, _fn in (("eq", tg.equal), ("ne", tg.not_equal), ("lt", tg.less), ("le", tg.less_equal),
                   ("gt", tg.greater), ("ge", tg.greater_equal)):
    converter(f"aten::{_name}", notes="Tensor and Scalar overloads")(_compare(_fn))


@converter("aten::where", notes="self overload (condition, a, b)")
def where(ctx, cond, a, b):
    dt = ctx.out_dtype
    return tg.select(cast_to(tensor(cond), tg.bool_), operand(ctx, a, dt), operand(ctx, b, dt))


@converter("aten::masked_fill", notes="Scalar and 0-d Tensor value", inplace=True)
def masked_fill(ctx, x, mask, value):
    dt = ctx.out_dtype
    return tg.select(cast_to(tensor(mask), tg.bool_), operand(ctx, value, dt), cast_to(x, dt))


def _bitwise(fn):
    def convert(ctx, a, b):
        dt = tg_dtype(_result_dtype(ctx.example_args[0], ctx.example_args[1]))
        if dt.is_floating:
            raise Unsupported("bitwise op on floats")
        return fn(operand(ctx, a, dt), operand(ctx, b, dt))
    return convert


converter("aten::bitwise_and", notes="bool and integer tensors", inplace=True)(_bitwise(lambda a, b: a & b))
converter("aten::__and__", notes="bool and integer tensors")(_bitwise(lambda a, b: a & b))
converter("aten::bitwise_or", notes="bool and integer tensors", inplace=True)(_bitwise(lambda a, b: a | b))
converter("aten::__or__", notes="bool and integer tensors")(_bitwise(lambda a, b: a | b))
converter("aten::bitwise_xor", notes="bool and integer tensors", inplace=True)(_bitwise(lambda a, b: a ^ b))
converter("aten::__xor__", notes="bool and integer tensors")(_bitwise(lambda a, b: a ^ b))


@converter("aten::bitwise_not", notes="bool and integer tensors", inplace=True)
def bitwise_not(ctx, x):
    x = tensor(x)
    if x.dtype.is_floating:
        raise Unsupported("bitwise_not of floats")
    return ~x


@converter("aten::logical_and", "aten::logical_or", "aten::logical_xor", notes="any dtypes (nonzero is true)")
def logical_binary(ctx, a, b):
    fn = {"aten::logical_and": tg.logical_and, "aten::logical_or": tg.logical_or,
          "aten::logical_xor": tg.logical_xor}[ctx.op_name]
    dt = tg_dtype(_result_dtype(ctx.example_args[0], ctx.example_args[1]))
    x, y = operand(ctx, a, dt), operand(ctx, b, dt)
    if dt != tg.bool_:
        zero = ctx.g.constant(0, dtype=dt)
        x, y = tg.not_equal(x, zero), tg.not_equal(y, zero)
    return fn(x, y)


@converter("aten::logical_not")
def logical_not(ctx, x):
    return tg.logical_not(cast_to(tensor(x), tg.bool_))


def _unary(fn, floating=True):
    def convert(ctx, x):
        x = tensor(x)
        return fn(cast_to(x, ctx.out_dtype) if floating else x)
    return convert


for _name, _fn in (("relu", tg.relu), ("sigmoid", tg.sigmoid), ("tanh", tg.tanh), ("silu", tg.silu),
                   ("exp", tg.exp), ("log", tg.log), ("sqrt", tg.sqrt), ("rsqrt", tg.rsqrt),
                   ("neg", tg.neg), ("abs", tg.abs), ("erf", tg.erf), ("sin", tg.sin), ("cos", tg.cos),
                   ("reciprocal", tg.reciprocal), ("log1p", tg.log1p), ("expm1", tg.expm1),
                   ("floor", tg.floor), ("ceil", tg.ceil), ("sign", tg.sign)):
    converter(f"aten::{_name}", inplace=True)(_unary(_fn))


@converter("aten::gelu", notes="approximate 'none' (erf) and 'tanh'", inplace=True)
def gelu(ctx, x, approximate="none"):
    return tg.gelu(tensor(x), approximate_tanh=(approximate == "tanh"))


@converter("aten::hardtanh", notes="clamp(x, min_val, max_val) (ReLU6)", inplace=True)
def hardtanh(ctx, x, min_val=-1.0, max_val=1.0):
    return tg.clamp(tensor(x), float(min_val), float(max_val))


@converter("aten::clamp", notes="Scalar bounds (None: unbounded)", inplace=True)
def clamp(ctx, x, min=None, max=None):
    x = cast_to(tensor(x), ctx.out_dtype)
    if min is not None and max is not None:
        return tg.clamp(x, operand(ctx, min, x.dtype), operand(ctx, max, x.dtype))
    if min is not None:
        return tg.maximum(x, operand(ctx, min, x.dtype))
    if max is not None:
        return tg.minimum(x, operand(ctx, max, x.dtype))
    return x


@converter("aten::clamp_min", inplace=True)
def clamp_min(ctx, x, min):
    return clamp(ctx, x, min=min)


@converter("aten::clamp_max", inplace=True)
def clamp_max(ctx, x, max):
    return clamp(ctx, x, max=max)


@converter("aten::hardswish", notes="x * clamp(x + 3, 0, 6) / 6", inplace=True)
def hardswish(ctx, x):
    x = tensor(x)
    return x * tg.clamp(x + 3.0, 0.0, 6.0) * (1.0 / 6.0)


@converter("aten::hardsigmoid", notes="clamp(x + 3, 0, 6) / 6", inplace=True)
def hardsigmoid(ctx, x):
    return tg.clamp(tensor(x) + 3.0, 0.0, 6.0) * (1.0 / 6.0)


@converter("aten::leaky_relu", inplace=True)
def leaky_relu(ctx, x, negative_slope=0.01):
    return tg.leaky_relu(tensor(x), alpha=float(negative_slope))


@converter("aten::elu", notes="scale = input_scale = 1", inplace=True)
def elu(ctx, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale != 1 or input_scale != 1:
        raise Unsupported("elu with scale or input_scale != 1")
    return tg.elu(tensor(x), alpha=float(alpha))


@converter("aten::_to_copy", "aten::to", "prims::convert_element_type", notes="dtype casts on the same device")
def to_copy(ctx, x, *args, **kw):
    src = ctx.example_args[0] if ctx.example_args else None
    if hasattr(src, "device") and hasattr(ctx.out, "device") and src.device != ctx.out.device:
        raise Unsupported(f"copy from {src.device} to {ctx.out.device}")
    return cast_to(tensor(x), ctx.out_dtype)


@converter("aten::clone", "aten::detach", "aten::alias", "aten::lift_fresh_copy", "aten::contiguous",
           "aten::lift_fresh", notes="identity (values, not storage)")
def identity(ctx, x, *args, **kw):
    return tensor(x)


@converter("aten::type_as")
def type_as(ctx, x, other):
    return cast_to(tensor(x), ctx.out_dtype)


@converter("aten::copy_", notes="into a graph input (AOTAutograd's input mutations, e.g. batch norm's "
                               "running stats): copied into the PyTorch tensor after each run")
def copy_(ctx, dst, src, non_blocking=False):
    # The graph-input case is handled by the lowering (_lower._convert), which sees the FX node.
    raise Unsupported("copy_ into a tensor that is not a graph input")
