"""Converters of reduction ATen ops: mean, sum, amax/amin, var, softmax and log-softmax, argmax."""
from .. import _tensorgraph as tg
from ._helpers import cast_to, element_count, norm_axes, norm_axis, tensor
from ._registry import Unsupported, converter


def _reduce(fn, floating_only=False):
    def convert(ctx, x, dim=None, keepdim=False, **kw):
        x = tensor(x)
        if isinstance(dim, bool):  # sum(x, dtype=...) style calls never pass a bool dim
            raise Unsupported("bool dim")
        axes = norm_axes(dim, x.ndim)
        x = cast_to(x, ctx.out_dtype)
        if x.ndim == 0:
            return x
        return fn(x, axes=axes, keep_dims=bool(keepdim))
    return convert


converter("aten::mean", notes="default and dim overloads, keepdim, dtype")(_reduce(tg.reduce_mean))
converter("aten::sum", notes="default and dim_IntList overloads, keepdim, dtype")(_reduce(tg.reduce_sum))
converter("aten::amax", notes="dim list (empty: all), keepdim")(_reduce(tg.reduce_max))
converter("aten::amin", notes="dim list (empty: all), keepdim")(_reduce(tg.reduce_min))
converter("aten::prod")(_reduce(tg.reduce_prod))


@converter("aten::var", notes="correction 0 or 1 (unbiased), dims, keepdim")
def var(ctx, x, dim=None, *args, correction=None, keepdim=False, unbiased=None):
    x = tensor(x)
    if args:  # var.dim(x, dim, unbiased, keepdim)
        unbiased = args[0]
        keepdim = args[1] if len(args) > 1 else keepdim
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    axes = norm_axes(dim, x.ndim)
    c = correction if correction is not None else (1 if unbiased in (None, True) else 0)
    v = tg.reduce_variance(x, axes=axes, keep_dims=bool(keepdim))
    if c:
        n = element_count(x, axes, v.dtype)  # an int, or a scalar tensor for symbolic sizes
        if isinstance(n, int) and n <= c:
            raise Unsupported("variance of too few elements")
        v = v * (n / (n - c))
    return v


@converter("aten::_softmax", "aten::softmax", notes="any dim; half_to_float")
def softmax(ctx, x, dim, half_to_float=False, **kw):
    x = cast_to(tensor(x), ctx.out_dtype)
    return tg.softmax(x, axis=norm_axis(dim, x.ndim))


@converter("aten::_safe_softmax", notes="softmax whose fully masked (all -inf) rows give 0, not NaN")
def safe_softmax(ctx, x, dim, dtype=None):
    x = cast_to(tensor(x), ctx.out_dtype)
    a = norm_axis(dim, x.ndim)
    # A row is fully masked when all its values are -inf, i.e. when its max is -inf (a NaN in the
    # row makes both false): the max is the one softmax computes, so the row kernel that computes
    # the softmax decides it too (reduce_and(x == -inf) was one more kernel and one more pass).
    masked = tg.equal(tg.reduce_max(x, axes=[a], keep_dims=True), ctx.g.constant(float("-inf"), dtype=x.dtype))
    return tg.select(tg.broadcast_to(masked, list(x.shape)), ctx.g.constant(0.0, dtype=x.dtype),
                     tg.softmax(x, axis=a))


@converter("aten::_log_softmax", "aten::log_softmax", notes="any dim; half_to_float")
def log_softmax(ctx, x, dim, half_to_float=False, **kw):
    x = cast_to(tensor(x), ctx.out_dtype)
    return tg.log_softmax(x, axis=norm_axis(dim, x.ndim))


@converter("aten::argmax", notes="dim given (int64 result)")
def argmax(ctx, x, dim=None, keepdim=False):
    if dim is None:
        raise Unsupported("argmax over all elements")
    x = tensor(x)
    return cast_to(tg.argmax(x, axis=norm_axis(dim, x.ndim), keep_dims=bool(keepdim)), ctx.out_dtype)


@converter("aten::any", "aten::all", notes="default, dim and dims overloads (nonzero is true)")
def any_all(ctx, x, dim=None, keepdim=False):
    x = tensor(x)
    if x.dtype != tg.bool_:
        x = tg.not_equal(x, ctx.g.constant(0, dtype=x.dtype))
    if x.ndim == 0:
        return x
    fn = tg.reduce_or if ctx.op_name == "aten::any" else tg.reduce_and
    return fn(x, axes=norm_axes(dim, x.ndim), keep_dims=bool(keepdim))
