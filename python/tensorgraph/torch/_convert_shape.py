"""Converters of shape ATen ops: views and reshapes, permutations, broadcasting, concatenation,
slicing, selection, splitting, factories of constant tensors. Target shapes come from the node's
example output (ctx.out_shape), so -1 and symbolic-free sizes need no re-derivation."""
from .. import _tensorgraph as tg
from ._helpers import cast_to, norm_axis, refuse_negative_indices, tensor
from ._registry import Unsupported, converter
from ._symbolic import FxDim, dims, is_symbolic_size, same_shape, tg_dims


@converter("aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias",
           "aten::flatten", "aten::unflatten", "aten::view_copy", "aten::_reshape_copy",
           notes="any size (dtype views unsupported)")
def reshape(ctx, x, *args, **kw):
    if args and not isinstance(args[0], (list, tuple, int)):
        raise Unsupported(f"view as {args[0]}")
    x = tensor(x)
    if ctx.out_dtype != x.dtype:
        raise Unsupported("view with a dtype")
    shape = ctx.out_shape
    if same_shape(x, shape):
        return x
    # A size PyTorch has as an expression of a symbol (an FxDim): TensorGraph's derived symbol of
    # it, else inferred (-1) where only one is (_check compares the result).
    try:
        shape = tg_dims(shape)
    except Unsupported:
        if sum(isinstance(d, FxDim) for d in shape) != 1:
            raise
        shape = [-1 if isinstance(d, FxDim) else d for d in shape]
    return tg.reshape(x, shape)


@converter("aten::permute")
def permute(ctx, x, dims):
    x = tensor(x)
    return tg.transpose(x, [norm_axis(d, x.ndim) for d in dims])


@converter("aten::transpose", inplace=True)
def transpose(ctx, x, d0, d1):
    x = tensor(x)
    perm = list(range(x.ndim))
    a, b = norm_axis(d0, x.ndim), norm_axis(d1, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return tg.transpose(x, perm) if a != b else x


@converter("aten::t", notes="2-D transpose (rank < 2 unchanged)")
def t(ctx, x):
    x = tensor(x)
    return tg.transpose(x, [1, 0]) if x.ndim == 2 else x


@converter("aten::expand", "aten::broadcast_to", "aten::expand_copy", notes="sizes with -1")
def expand(ctx, x, *args, **kw):
    x = tensor(x)
    return x if same_shape(x, ctx.out_shape) else tg.broadcast_to(x, tg_dims(ctx.out_shape))


@converter("aten::expand_as")
def expand_as(ctx, x, other):
    return expand(ctx, x)


@converter("aten::repeat")
def repeat(ctx, x, repeats):
    x = tensor(x)
    if len(repeats) > x.ndim:
        x = tg.reshape(x, [1] * (len(repeats) - x.ndim) + list(x.shape))
    return tg.tile(x, list(repeats))


@converter("aten::cat", "aten::concat", notes="operands promoted to the output dtype; legacy empty [0] operands skipped")
def cat(ctx, tensors, dim=0):
    parts = [cast_to(tensor(t), ctx.out_dtype) for t in tensors]
    parts = [p for p in parts if not (p.ndim == 1 and p.shape[0] == 0)]
    if len(parts) == 1:
        return parts[0]
    return tg.concat(parts, norm_axis(dim, len(ctx.out_shape)))


@converter("aten::stack")
def stack(ctx, tensors, dim=0):
    axis = norm_axis(dim, len(ctx.out_shape))
    return tg.concat([tg.expand_dims(cast_to(tensor(t), ctx.out_dtype), axis) for t in tensors], axis)


def _clamp_index(i, size, default):
    if i is None:
        return default
    i = int(i)
    if i < 0:
        i += size
    return min(max(i, 0), size)


@converter("aten::slice", "aten::slice_copy",
           notes="step >= 1; start/end clamped as in PyTorch; symbolic sizes (compile-once): to "
                 "the end or to -m from start >= 0, and [0:s] of a symbol s")
def slice_(ctx, x, dim=0, start=None, end=None, step=1):
    x = tensor(x)
    d = norm_axis(dim, x.ndim)
    size = x.shape[d]
    if step < 1:
        raise Unsupported(f"slice step {step}")
    if any(isinstance(v, (str, FxDim)) for v in (size, start, end)):
        return _symbolic_slice(ctx, x, d, size, start, end, int(step))
    b, e = _clamp_index(start, size, 0), _clamp_index(end, size, size)
    if b == 0 and e == size and step == 1:
        return x
    e = max(e, b)
    return tg.slice(x, [b], [e], strides=[int(step)], axes=[d])


def _symbolic_slice(ctx, x, d, size, start, end, step):
    """A slice where the axis or the end is a symbol (compile-once lowering, _symbolic.py):
    - [0:end] where end is a symbol: the whole axis when that is its size, else the first `end`
      elements, gathered by an iota of that length (the ONNX importer's rule: PyTorch's output is
      then `end` itself, guarded end <= size; a run past the axis raises gather's out_of_range);
    - a symbolic axis from start >= 0 to its end or to -m: TensorGraph's derived size
      (ceil((s - m - start) / step));
    - [start:end] of ints where PyTorch's output size is end - start (it guarded size >= end):
      a gather of those indices.
    Anything else is Unsupported (the graph compiles per shape)."""
    b = 0 if start is None else start
    if isinstance(b, (str, FxDim)) or b < 0 and isinstance(size, str):
        raise Unsupported(f"slice from {start} of a symbolic size")
    big = end is None or (isinstance(end, int) and end >= 2 ** 62)
    if isinstance(end, (str, FxDim)):
        if not isinstance(end, str) or b != 0 or step != 1:
            raise Unsupported(f"slice [{start}:{end}:{step}] with a symbolic end (only [0:s] of a symbol s)")
        if size == end:
            return x
        return tg.gather(x, tg.iota(ctx.g, [end], 0, tg.int64), axis=d)
    if big or end < 0:
        if b == 0 and big and step == 1:
            return x
        return tg.slice(x, [b], [None if big else end], strides=[step], axes=[d])
    if step == 1 and ctx.out_shape[d] == end - b and end > b:
        import torch
        return tg.gather(x, ctx.constant(torch.arange(b, end, dtype=torch.int64)), axis=d)
    raise Unsupported(f"slice [{start}:{end}:{step}] of the symbolic size {size}")


@converter("aten::select", "aten::select_copy", notes="int index (>= 0 on a symbolic size)")
def select(ctx, x, dim, index):
    x = tensor(x)
    d = norm_axis(dim, x.ndim)
    if isinstance(x.shape[d], (str, FxDim)):  # a symbolic size: PyTorch guarded index < size
        if not isinstance(index, int) or index < 0:
            raise Unsupported(f"select {index} of the symbolic size {x.shape[d]}")
        return tg.gather(x, ctx.g.constant(int(index), dtype=tg.int64), axis=d)
    i = int(index) + (x.shape[d] if index < 0 else 0)
    if not 0 <= i < x.shape[d]:
        raise Unsupported(f"select index {index} out of range for size {x.shape[d]}")
    return tg.squeeze(tg.slice(x, [i], [i + 1], axes=[d]), [d])


@converter("aten::narrow")
def narrow(ctx, x, dim, start, length):
    return slice_(ctx, x, dim, start, start + length, 1)


@converter("aten::unsqueeze", "aten::unsqueeze_copy", inplace=True)
def unsqueeze(ctx, x, dim):
    x = tensor(x)
    return tg.expand_dims(x, norm_axis(dim, x.ndim + 1))


@converter("aten::squeeze", "aten::squeeze_copy", notes="default, dim and dims overloads (only size-1 dims go)", inplace=True)
def squeeze(ctx, x, dim=None):
    x = tensor(x)
    dims = range(x.ndim) if dim is None else [dim] if isinstance(dim, int) else dim
    axes = [a for a in (norm_axis(d, x.ndim) for d in dims) if x.shape[a] == 1]
    return tg.squeeze(x, sorted(set(axes))) if axes else x


@converter("aten::split", "aten::split_with_sizes", notes="Tensor (split_size) and with-sizes overloads")
def split(ctx, x, split_size, dim=0):
    x = tensor(x)
    d = norm_axis(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size, int):
        sizes = [min(split_size, n - i) for i in range(0, n, split_size)] if n else [0]
    else:
        sizes = [int(s) for s in split_size]
    if len(sizes) == 1:
        return (x,)
    return tuple(tg.split(x, sizes, d))


@converter("aten::chunk")
def chunk(ctx, x, chunks, dim=0):
    x = tensor(x)
    n = x.shape[norm_axis(dim, x.ndim)]
    return split(ctx, x, (n + chunks - 1) // chunks, dim)


@converter("aten::unbind")
def unbind(ctx, x, dim=0):
    x = tensor(x)
    d = norm_axis(dim, x.ndim)
    parts = tg.split(x, [1] * x.shape[d], d) if x.shape[d] > 1 else [x]
    return tuple(tg.squeeze(p, [d]) for p in parts)


@converter("aten::zeros", "aten::ones", "aten::full", "aten::arange", "aten::scalar_tensor",
           "aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::zeros_like", "aten::ones_like",
           "aten::full_like", "aten::empty", "aten::empty_like", "aten::new_empty", "aten::empty_strided",
           notes="constants (their values depend on no tensor's values); empty* give zeros")
def factory(ctx, *args, **kw):
    import torch
    base = ctx.op_name.split("::")[1]
    shape, dtype = ctx.out_shape, ctx.out.dtype
    if any(isinstance(d, (str, FxDim)) for d in shape):
        return _symbolic_factory(ctx, base, shape, args)
    if base in ("zeros", "zeros_like", "new_zeros", "empty", "empty_like", "new_empty", "empty_strided"):
        v = torch.zeros(shape, dtype=dtype)
    elif base in ("ones", "ones_like", "new_ones"):
        v = torch.ones(shape, dtype=dtype)
    elif base in ("full", "full_like", "new_full"):
        if not isinstance(args[1], (bool, int, float)):
            raise Unsupported("fill value is not a Python scalar")
        v = torch.full(shape, args[1], dtype=dtype)
    elif base == "scalar_tensor":
        v = torch.tensor(args[0], dtype=dtype)
    else:  # arange(end), arange(start, end), arange(start, end, step)
        if not all(isinstance(a, (int, float)) for a in args):
            raise Unsupported("arange bounds are not Python scalars")
        v = torch.arange(*args, dtype=dtype)
    if list(v.shape) != shape:
        raise Unsupported(f"{base} gives shape {list(v.shape)}, the graph expects {shape}")
    return ctx.constant(v)


def _symbolic_factory(ctx, base, shape, args):
    """A factory whose shape has symbols (compile-once lowering): a fill of that shape, or for
    arange(s) / arange(0, s) of a symbol s, an iota (TensorGraph computes it per run)."""
    from ._helpers import tg_dtype
    dt = tg_dtype(ctx.out.dtype)
    shape = tg_dims(shape)  # an expression of a symbol as TensorGraph's derived symbol
    if base == "arange":
        bounds = list(args)  # (end), (start, end) or (start, end, step); dtype and device are keywords
        if not (len(bounds) == 1 or (len(bounds) in (2, 3) and bounds[0] == 0 and bounds[2:] in ([], [1]))):
            raise Unsupported(f"arange{tuple(args)} with a symbolic end (only arange(s), arange(0, s))")
        return tg.iota(ctx.g, shape, 0, dt)
    if base in ("full", "full_like", "new_full"):
        if not isinstance(args[1], (bool, int, float)):
            raise Unsupported("fill value is not a Python scalar")
        value = args[1]
    elif base == "scalar_tensor":
        raise Unsupported("scalar_tensor of a symbolic shape")
    else:
        value = 1 if base in ("ones", "ones_like", "new_ones") else 0
    return tg.fill(ctx.g, shape, float(value), dt)


@converter("aten::copy", notes="out-of-place: src broadcast to self's shape and dtype")
def copy(ctx, x, src, non_blocking=False):
    src = cast_to(tensor(src), ctx.out_dtype)
    return src if same_shape(src, ctx.out_shape) else tg.broadcast_to(src, tg_dims(ctx.out_shape))


@converter("aten::index_select", notes="1-D index; a negative index raises, as in PyTorch")
def index_select(ctx, x, dim, index):
    x = tensor(x)
    axis = norm_axis(dim, x.ndim)
    return tg.gather(x, refuse_negative_indices(x, tensor(index), axis), axis=axis)


@converter("aten::gather", notes="index of the input's rank; a negative index raises, as in PyTorch")
def gather(ctx, x, dim, index, sparse_grad=False):
    x = tensor(x)
    axis = norm_axis(dim, x.ndim)
    return tg.gather_elements(x, refuse_negative_indices(x, tensor(index), axis), axis=axis)


@converter("aten::sym_size", "aten::sym_numel", "aten::sym_stride", "aten::sym_storage_offset",
           notes="sizes: Python ints for concrete shapes; a symbol of the inputs' shapes by name "
                 "(compile-once, _symbolic.py)")
def sym_size(ctx, x, *args):
    if isinstance(ctx.out, int):
        return ctx.out
    if is_symbolic_size(ctx.out):
        return dims([ctx.out])[0]  # raises Unsupported for an expression (numel, strides)
    raise Unsupported("symbolic size without a concrete value")
