"""Helpers shared by the converters: dtypes, argument normalization, scalar operands."""
from .. import _tensorgraph as tg
from ._registry import Unavailable, Unsupported

# torch dtype (its str) -> TensorGraph dtype.
_DTYPES = {
    "torch.float32": tg.float32, "torch.float64": tg.float64, "torch.float16": tg.float16,
    "torch.bfloat16": tg.bfloat16, "torch.int64": tg.int64, "torch.int32": tg.int32,
    "torch.int8": tg.int8, "torch.uint8": tg.uint8, "torch.bool": tg.bool_,
}


def tg_dtype(torch_dtype):
    """The TensorGraph dtype of a torch dtype; Unsupported for the others (complex, int16, ...)."""
    d = _DTYPES.get(str(torch_dtype))
    if d is None:
        raise Unsupported(f"dtype {torch_dtype} has no TensorGraph equivalent")
    return d


def torch_dtype(dt):
    """The torch dtype of a TensorGraph dtype (those of _DTYPES)."""
    import torch
    for name, d in _DTYPES.items():
        if d == dt:
            return getattr(torch, name.split(".")[1])
    raise Unsupported(f"dtype {dt} has no torch equivalent")


def is_tensor(x):
    return isinstance(x, tg.Tensor)


def tensor(x, what="input"):
    """x as a tg.Tensor; Unsupported for outputs TensorGraph does not compute."""
    if isinstance(x, Unavailable):
        raise Unsupported(f"{what} is {x.what}, which TensorGraph does not compute")
    if not is_tensor(x):
        raise Unsupported(f"{what} is {type(x).__name__}, expected a tensor")
    return x


def norm_axis(axis, ndim):
    axis = int(axis)
    if axis < -max(ndim, 1) or axis >= max(ndim, 1):
        raise Unsupported(f"axis {axis} out of range for rank {ndim}")
    return axis + ndim if axis < 0 else axis


def norm_axes(axes, ndim):
    if axes is None:
        return list(range(ndim))
    if isinstance(axes, int):
        axes = [axes]
    axes = [norm_axis(a, ndim) for a in axes]
    return axes if axes else list(range(ndim))


def pair(v, n=2):
    """An int or list of ints as n ints (PyTorch's pool/conv argument convention)."""
    if isinstance(v, int):
        return [v] * n
    v = [int(i) for i in v]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise Unsupported(f"expected {n} values, got {v}")
    return v


def cast_to(x, dt):
    return x if x.dtype == dt else tg.cast(x, dt)


def operand(ctx, x, dt):
    """A tensor or Python scalar operand of an elementwise op as a tg.Tensor of dtype dt."""
    if isinstance(x, Unavailable):
        tensor(x)
    if is_tensor(x):
        return cast_to(x, dt)
    if isinstance(x, (bool, int, float)):
        return ctx.g.constant(float(x) if dt.is_floating else int(x), dtype=dt)
    from ._symbolic import FxDim, size_scalar, symbolic_lowering
    if symbolic_lowering() and isinstance(x, (str, FxDim)):  # a size as a value: fed per call
        return size_scalar(ctx.g, x, dt)
    raise Unsupported(f"operand of type {type(x).__name__}")


def refuse_negative_indices(x, indices, axis):
    """indices for a gather along x's `axis` where PyTorch refuses negative indices (aten::embedding,
    index_select, gather raise IndexError / RuntimeError for them), while TensorGraph's gathers count
    them from the end (ONNX's rule). Each negative index i becomes i - n (n: the dim's size; i - 2^30
    when the size is not static), outside the gather's valid range [-n, n), so the gather raises
    tg.Error(out_of_range) for it (on CUDA when the device's errors are raised: docs/torch.md)
    instead of reading row n + i. One fused elementwise kernel; constant indices fold."""
    n = x.shape[axis]
    shift = n if isinstance(n, int) and n >= 0 else 2 ** 30
    return tg.select(tg.less(indices, 0), indices - shift, indices)


def element_count(x, axes, dtype=None):
    """How many elements of x a reduction over `axes` takes: an int, or where one of those dims
    is a symbol (a compile-once lowering, _symbolic.py) a scalar tensor of `dtype` (default
    float32) holding this run's count: ones of those dims, summed (never x's values: a NaN or
    inf in x must not reach a count that a gradient divides by, adaptive pooling's backward).
    Raises Unsupported for a dim unknown until run time (-1)."""
    n = 1
    for a in axes:
        if not isinstance(x.shape[a], int):
            break
        n *= x.shape[a]
    else:
        return n
    shape = [x.shape[a] for a in axes]
    if -1 in shape:
        raise Unsupported(f"element count of the unknown sizes {shape}")
    return tg.reduce_sum(tg.fill(x.graph, shape, 1.0, dtype or tg.float32))
