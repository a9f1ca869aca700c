"""tensorgraph.torch's compile-once lowering of graphs with symbolic sizes (_symbolic.py):
adversarial cases. The contract: a symbolic graph either compiles once and gives eager PyTorch's
values for every size, or falls back to per-shape compiles (PerShape) with eager's values; never
a wrong value or shape, a crash, or a silent specialization.

Debian's PyTorch 1.13 cannot trace convolutions symbolically, so the FX graphs are built by hand
with symbolic example values (node.meta['val'] with sympy sizes, as Dynamo gives them)."""
import operator
import types

import pytest

torch = pytest.importorskip("torch")
sympy = pytest.importorskip("sympy")
import tensorgraph as tg  # noqa: E402
from tensorgraph.torch import _symbolic  # noqa: E402
from tensorgraph.torch._lower import PerShape, Runner, compile_graph  # noqa: E402

aten = torch.ops.aten
S = sympy.Symbol("s0", integer=True, positive=True)
BIG = 2 ** 63 - 1  # PyTorch's end of a slice to the end


class _SymSize:
    """A stand-in for a SymInt (a SymFloat or SymBool with pytype float or bool): what _symbolic
    reads of one, node.expr (a sympy expression) and node.pytype."""

    def __init__(self, expr, pytype=int):
        self.node = types.SimpleNamespace(expr=expr, pytype=pytype)


class _SymTensor(torch.Tensor):
    """An example value with symbolic sizes (a stand-in for Dynamo's fake tensors, which torch
    1.13's tracer cannot make for convolutions): a tensor whose .shape holds _SymSizes (shape:
    ints, sympy expressions or _SymSizes)."""

    @staticmethod
    def __new__(cls, shape, dtype=torch.float32):
        t = torch.Tensor._make_subclass(cls, torch.empty(0, dtype=dtype))
        t._sym_shape = tuple(d if isinstance(d, (int, _SymSize)) else _SymSize(d) for d in shape)
        return t

    @property
    def shape(self):
        return self._sym_shape


def _graph(build):
    """An FX graph of ATen ops with symbolic example values: build(g, val) adds the nodes,
    val(node, shape, dtype) sets one node's value (a shape of ints and sympy expressions, or a
    sympy expression for a size) and gives the node back."""
    g = torch.fx.Graph()

    def val(node, shape, dtype=torch.float32):
        if isinstance(shape, _SymSize):
            node.meta["val"] = shape
        elif isinstance(shape, sympy.Expr):
            node.meta["val"] = _SymSize(shape)
        else:
            node.meta["val"] = _SymTensor(shape, dtype)
        return node

    build(g, val)
    return torch.fx.GraphModule(torch.nn.Module(), g)


_sym_graph = _graph  # the name the first compile-once tests use


def _same(got, want):
    """got equals eager's want: the same structure, shapes, dtypes and values (ints exactly)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g_, w in zip(got, want):
            _same(g_, w)
        return
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), got
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
        low = want.dtype in (torch.bfloat16, torch.float16)  # PyTorch's default tolerance: 1-2 roundings
        torch.testing.assert_close(got, want, equal_nan=True, **({} if low else dict(atol=1e-5, rtol=1e-5)))
        return
    assert type(got) is type(want) and got == want, (got, want)


def _runs_like_eager(gm, args_of, eager, sizes, once):
    """Compiles gm from args_of(sizes[0]) and checks every size's result against eager(*args).
    once: whether it must be one compile-once Runner (True), fall back to PerShape (False), or
    either (None). Returns the compiled callable."""
    c = compile_graph(gm, args_of(sizes[0]), "cpu")
    assert c.nodes_left_to_pytorch == 0, c.unsupported
    if once is not None:
        assert isinstance(c.fn, Runner if once else PerShape), c.fn
    for n in sizes:
        args = args_of(n)
        _same(c(*args), eager(*args))
    return c


def _floordiv(a, b):
    """PyTorch's floor division of sizes as sympy (torch 1.13's FloorDiv where it has one)."""
    try:
        from torch.fx.experimental.symbolic_shapes import FloorDiv
        return FloorDiv(a, b)
    except ImportError:
        return sympy.floor(a / b)


@pytest.mark.parametrize("begin,end,step", [(1, BIG, 2), (3, BIG, 3), (1, -1, 1), (2, -1, 2), (0, BIG, 4)])
def test_strided_slices_of_a_symbolic_axis_compile_once(begin, end, step):
    """x[begin:end:step] of a symbolic axis (PyTorch's size FloorDiv(s - m - begin + step - 1, step),
    m the end's distance from the axis' end) matches TensorGraph's derived size: compiled once,
    eager's values for every size past the slice's begin."""
    m = 0 if end == BIG else -end
    size = _floordiv(S - m - begin + step - 1, step)

    def build(g, val):
        x = val(g.placeholder("x"), [S, 3])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, begin, end, step)), [size, 3])
        g.output((val(g.call_function(aten.mul.Tensor, (y, 2.0)), [size, 3]),))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3),), lambda x: (x[begin:end:step] * 2,),
                     list(range(begin + m + 2, begin + m + 12)), once=True)


def test_slice_to_a_fixed_end_of_a_symbolic_axis():
    """x[:4] of a symbolic axis: PyTorch's size is 4 where it guarded s >= 4 (a gather of rows
    0..3, compiled once), or Min(4, s) where it did not (compiled per shape)."""
    def build_with(size):
        def build(g, val):
            x = val(g.placeholder("x"), [S, 3])
            y = val(g.call_function(aten.slice.Tensor, (x, 0, 0, 4)), [size, 3])
            g.output((val(g.call_function(aten.mul.Tensor, (y, 2.0)), [size, 3]),))
        return build

    eager = lambda x: (x[:4] * 2,)  # noqa: E731
    _runs_like_eager(_graph(build_with(4)), lambda n: (torch.randn(n, 3),), eager, [5, 4, 9], once=True)
    _runs_like_eager(_graph(build_with(sympy.Min(4, S))), lambda n: (torch.randn(n, 3),), eager, [5, 2, 3, 9],
                     once=None)


def test_negative_select_and_select_of_a_derived_axis():
    """x[-1] of a symbolic axis (compiled per shape: not a gather of a constant index) and y[0] of
    y = x[1:] (an axis of derived size s - 1): eager's values for every size."""
    def build(g, val):
        x = val(g.placeholder("x"), [S, 3])
        last = val(g.call_function(aten.select.int, (x, 0, -1)), [3])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 1, BIG)), [S - 1, 3])
        g.output((last, val(g.call_function(aten.select.int, (y, 0, 0)), [3])))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3),), lambda x: (x[-1], x[1:][0]), [4, 2, 7], once=None)

    def build2(g, val):
        x = val(g.placeholder("x"), [S, 3])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 1, BIG)), [S - 1, 3])
        g.output((val(g.call_function(aten.select.int, (y, 0, 1)), [3]),))

    _runs_like_eager(_graph(build2), lambda n: (torch.randn(n, 3),), lambda x: (x[1:][1],), [4, 3, 8], once=True)


def test_negative_begin_slice_of_a_derived_axis():
    """y[-2:] of y = x[1:] (derived size s - 1): PyTorch's size is 2 (guarded); eager's values."""
    def build(g, val):
        x = val(g.placeholder("x"), [S, 3])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 1, BIG)), [S - 1, 3])
        z = val(g.call_function(aten.slice.Tensor, (y, 0, -2, BIG)), [2, 3])
        g.output((val(g.call_function(aten.mul.Tensor, (z, 2.0)), [2, 3]),))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3),), lambda x: (x[1:][-2:] * 2,), [5, 3, 9], once=None)


def _pool_size(h, k, s, p, ceil_mode, traced_at):
    """PyTorch's symbolic pooling size of h (pooling_output_shape), its ceil_mode adjustment taken
    as it was at the traced size (a guard in PyTorch)."""
    e = _floordiv(h + 2 * p - (k - 1) - 1 + (s - 1 if ceil_mode else 0), s) + 1
    if ceil_mode and int(e.xreplace({h: traced_at}) - 1) * s >= traced_at + p:
        e = e - 1
    return e


@pytest.mark.parametrize("op,k,s,p,ceil_mode,traced_at", [
    ("max", 3, 2, 1, True, 8), ("max", 2, 2, 1, True, 8), ("max", 2, 2, 1, True, 9), ("max", 3, 2, 0, True, 8),
    ("avg", 3, 2, 1, True, 8), ("avg", 2, 2, 0, True, 7), ("avg", 3, 3, 1, False, 9)])
def test_pooling_with_padding_and_ceil_mode(op, k, s, p, ceil_mode, traced_at):
    """Pooling of a symbolic image size with padding and ceil_mode: compiled once where PyTorch's
    size expression is TensorGraph's derived one for every size, else per shape (ceil_mode's
    adjustment is a guard of the traced size); eager's values for every size either way."""
    hs = sympy.Symbol("s1", integer=True, positive=True)
    ho = _pool_size(hs, k, s, p, ceil_mode, traced_at)
    shape = [2, 3, ho, ho]

    def build(g, val):
        x = val(g.placeholder("x"), [2, 3, hs, hs])
        if op == "max":
            y = g.call_function(aten.max_pool2d_with_indices.default, (x, [k, k], [s, s], [p, p], [1, 1], ceil_mode))
            y.meta["val"] = (_SymTensor(shape), _SymTensor(shape, torch.int64))
            y = val(g.call_function(operator.getitem, (y, 0)), shape)
        else:
            y = val(g.call_function(aten.avg_pool2d.default, (x, [k, k], [s, s], [p, p], ceil_mode, True)), shape)
        g.output((y,))

    def eager(x):
        if op == "max":
            return (torch.nn.functional.max_pool2d(x, k, s, p, ceil_mode=ceil_mode),)
        return (torch.nn.functional.avg_pool2d(x, k, s, p, ceil_mode=ceil_mode, count_include_pad=True),)

    _runs_like_eager(_graph(build), lambda n: (torch.randn(2, 3, n, n),), eager, [traced_at] + list(range(4, 14)),
                     once=None)


def test_reshapes_with_an_expression_size():
    """view [s, 6] -> [2s, 3] (one FxDim: -1); view [s, 4] -> [s//2, 8] (PyTorch
    guarded s even) gives eager's values for even sizes and, like eager, no result for odd ones."""
    def build(g, val):
        x = val(g.placeholder("x"), [S, 6])
        y = val(g.call_function(aten.view.default, (x, [-1, 3])), [2 * S, 3])
        g.output((val(g.call_function(aten.mul.Tensor, (y, 2.0)), [2 * S, 3]),))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 6),), lambda x: (x.view(-1, 3) * 2,), [3, 2, 5],
                     once=None)
    half = _floordiv(S, 2)

    def build2(g, val):
        x = val(g.placeholder("x"), [S, 4])
        y = val(g.call_function(aten.view.default, (x, [-1, 8])), [half, 8])
        g.output((val(g.call_function(aten.mul.Tensor, (y, 2.0)), [half, 8]),))

    c = _runs_like_eager(_graph(build2), lambda n: (torch.randn(n, 4),), lambda x: (x.view(-1, 8) * 2,), [4, 2, 10],
                         once=None)
    with pytest.raises(Exception):  # eager raises too (a view of 12 elements as [?, 8])
        c(torch.randn(3, 4))


def test_arange_ones_and_fills_of_symbolic_shapes():
    """arange(0, s), arange(1, s), arange(0, s, 2), ones([s, s-1]), full([s//2+1], 7) and
    zeros_like of a derived shape: eager's values for every s (compiled once or per shape)."""
    def build(g, val):
        x = val(g.placeholder("x"), [S, 3])
        n = val(g.placeholder("n"), S)
        m = val(g.call_function(operator.sub, (n, 1)), S - 1)
        h = val(g.call_function(operator.add, (val(g.call_function(operator.floordiv, (n, 2)), _floordiv(S, 2)), 1)),
                _floordiv(S, 2) + 1)
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 1, BIG, 2)), [_floordiv(S, 2), 3])
        g.output((val(g.call_function(aten.arange.start, (0, n), {"dtype": torch.int64}), [S], torch.int64),
                  val(g.call_function(aten.arange.start, (1, n), {"dtype": torch.int64}), [S - 1], torch.int64),
                  val(g.call_function(aten.arange.start_step, (0, n, 2), {"dtype": torch.int64}),
                      [_floordiv(S + 1, 2)], torch.int64),
                  val(g.call_function(aten.ones.default, ([n, m],), {"dtype": torch.float32}), [S, S - 1]),
                  val(g.call_function(aten.full.default, ([h], 7.0), {"dtype": torch.float32}), [_floordiv(S, 2) + 1]),
                  val(g.call_function(aten.zeros_like.default, (y,)), [_floordiv(S, 2), 3])))

    def eager(x, n):
        return (torch.arange(0, n), torch.arange(1, n), torch.arange(0, n, 2), torch.ones(n, n - 1),
                torch.full((n // 2 + 1,), 7.0), torch.zeros_like(x[1::2]))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3), n), eager, [4, 2, 7, 10], once=None)


def test_returned_sizes_of_expressions():
    """Sizes a graph returns: sym_size of a strided slice (FloorDiv(s + 1, 2)), s - 1, s * 2 as
    ints, and s / 2 (a SymFloat: PyTorch returns a float) and s < 5 (a SymBool): eager's values."""
    half = _floordiv(S + 1, 2)

    def build(g, val):
        x = val(g.placeholder("x"), [S, 3])
        n = val(g.placeholder("n"), S)
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 0, BIG, 2)), [half, 3])
        g.output((val(g.call_function(aten.sym_size, (y, 0)), half),
                  val(g.call_function(operator.sub, (n, 1)), S - 1),
                  val(g.call_function(operator.mul, (n, 2)), 2 * S)))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3), n), lambda x, n: ((n + 1) // 2, n - 1, n * 2),
                     [4, 3, 7], once=True)

    def build_float(g, val):
        x = val(g.placeholder("x"), [S, 3])
        n = val(g.placeholder("n"), S)
        g.output((val(g.call_function(aten.mul.Tensor, (x, 2.0)), [S, 3]),
                  val(g.call_function(operator.truediv, (n, 2)), _SymSize(S / 2, float)),
                  val(g.call_function(operator.lt, (n, 5)), _SymSize(sympy.Lt(S, 5), bool))))

    _runs_like_eager(_graph(build_float), lambda n: (torch.randn(n, 3), n), lambda x, n: (x * 2, n / 2, n < 5),
                     [4, 3, 7], once=None)


def test_batch_norm_in_float64_over_symbolic_sizes():
    """Training batch norm of a float64 input over a symbolic batch and image size: its element
    count (a scalar the graph computes) in float64, eager's values to float64 accuracy."""
    n, h = S, sympy.Symbol("s1", integer=True, positive=True)
    xs, c = [n, 3, h, h], [3]

    def build(g, val):
        x, w, b = (val(g.placeholder(k), s, torch.float64) for k, s in (("x", xs), ("w", c), ("b", c)))
        bn = g.call_function(aten.native_batch_norm.default, (x, w, b, None, None, True, 0.1, 1e-5))
        bn.meta["val"] = (_SymTensor(xs, torch.float64), _SymTensor(c, torch.float64), _SymTensor(c, torch.float64))
        g.output(tuple(val(g.call_function(operator.getitem, (bn, i)), s, torch.float64)
                       for i, s in enumerate((xs, c, c))))

    torch.manual_seed(0)
    w, b = torch.rand(3, dtype=torch.float64) + 0.5, torch.randn(3, dtype=torch.float64)

    def eager(x, w, b):
        return tuple(aten.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5))

    c_ = compile_graph(_graph(build), (torch.randn(2, 3, 4, 4, dtype=torch.float64), w, b), "cpu")
    assert isinstance(c_.fn, Runner), c_.fn
    for size in ((2, 4), (3, 5), (1, 7)):
        x = torch.randn(size[0], 3, size[1], size[1], dtype=torch.float64) * 3 + 1
        for got, want in zip(c_(x, w, b), eager(x, w, b)):
            assert got.dtype == torch.float64
            torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype,inf", [(torch.float32, False), (torch.bfloat16, False), (torch.float32, True)])
def test_adaptive_pooling_backward_over_symbolic_sizes(dtype, inf):
    """adaptive_avg_pool2d's backward to 1x1 over a symbolic image size: dy / (h * w) for every
    size, in bfloat16 too (a count of 32 * 32 = 1024 ones, past bfloat16's exact integers when
    summed in it), and where the forward input holds an inf (the gradient does not read x)."""
    h = sympy.Symbol("s1", integer=True, positive=True)

    def build(g, val):
        dy, x = val(g.placeholder("dy"), [2, 3, 1, 1], dtype), val(g.placeholder("x"), [2, 3, h, h], dtype)
        g.output((val(g.call_function(aten._adaptive_avg_pool2d_backward.default, (dy, x)), [2, 3, h, h], dtype),))

    torch.manual_seed(0)
    dy = torch.randn(2, 3, 1, 1).to(dtype)

    def args_of(n):
        x = torch.randn(2, 3, n, n).to(dtype)
        if inf:
            x[0, 0, 0, 0] = float("inf")
        return dy, x

    def eager(dy, x):
        return (aten._adaptive_avg_pool2d_backward(dy, x),)

    _runs_like_eager(_graph(build), args_of, eager, [4, 32, 17, 45], once=True)


def test_unbiased_variance_over_a_symbolic_axis_in_bfloat16():
    """var (correction 1) of a bfloat16 input over a symbolic axis of up to 1000 rows: eager's
    values (its count n / (n - 1) taken exactly)."""
    def build(g, val):
        x = val(g.placeholder("x"), [S, 4], torch.bfloat16)
        g.output((val(g.call_function(aten.var.correction, (x, [0]), {"correction": 1}), [4], torch.bfloat16),))

    torch.manual_seed(0)
    c = compile_graph(_graph(build), (torch.randn(5, 4).bfloat16(),), "cpu")
    assert isinstance(c.fn, Runner), c.fn
    for n in (5, 257, 1000):
        x = torch.randn(n, 4, dtype=torch.float64)
        want = x.bfloat16().double().var(0)
        torch.testing.assert_close(c(x.bfloat16())[0].double(), want, atol=0, rtol=2e-2)


def test_concat_along_a_symbolic_axis():
    """cat([x, x[1:]]) along a symbolic axis (PyTorch's size 2*s - 1): eager's values."""
    def build(g, val):
        x = val(g.placeholder("x"), [S, 3])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 1, BIG)), [S - 1, 3])
        z = val(g.call_function(aten.cat.default, ([x, y], 0)), [2 * S - 1, 3])
        g.output((val(g.call_function(aten.mul.Tensor, (z, 2.0)), [2 * S - 1, 3]),))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3),), lambda x: (torch.cat([x, x[1:]]) * 2,), [3, 2, 6],
                     once=None)


def test_variance_over_a_derived_size():
    """An unbiased variance over axes of which one has a derived size (x[..., ::2]: ceil(h / 2)):
    its count of ones of that shape (a fill of the derived symbol) gives eager's values."""
    h = sympy.Symbol("s1", integer=True, positive=True)
    w = _floordiv(h + 1, 2)

    def build(g, val):
        x = val(g.placeholder("x"), [S, 3, h], torch.float64)
        y = val(g.call_function(aten.slice.Tensor, (x, 2, 0, BIG, 2)), [S, 3, w], torch.float64)
        g.output((val(g.call_function(aten.var.correction, (y, [0, 2]), {"correction": 1}), [3], torch.float64),))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 3, n + 3, dtype=torch.float64),),
                     lambda x: (x[..., ::2].var((0, 2)),), [2, 3, 6, 9], once=True)


def _fx(expr):
    return _symbolic.FxDim(expr, S, "torch_s0")


def test_same_size_checks_pytorchs_forms():
    """_agrees: PyTorch's forms of one size (floor, FloorDiv, ceiling, Mod) equal to
    floor((a*s + b)/c) are accepted; expressions that are not that size for some s are refused,
    also where they differ only past the first few hundred sizes (a divisor of 5000, a Min)."""
    assert _symbolic._agrees(_fx(_floordiv(S - 1, 2) + 1), 1, 1, 2, 0)
    assert _symbolic._agrees(_fx(sympy.floor((S - 1) / 2) + 1), 1, 1, 2, 0)
    assert _symbolic._agrees(_fx(sympy.ceiling(S / 3)), 1, 2, 3, 0)
    assert _symbolic._agrees(_fx((S - sympy.Mod(S, 2)) / 2), 1, 0, 2, 0)
    assert _symbolic._agrees(_fx(2 * S - 1), 2, -1, 1, 0)
    assert not _symbolic._agrees(_fx(_floordiv(S, 2)), 1, 1, 2, 0)
    assert not _symbolic._agrees(_fx(S / 2), 1, 0, 2, 0)
    assert not _symbolic._agrees(_fx(S - 1 + _floordiv(S, 5000)), 1, -1, 1, 0)
    assert not _symbolic._agrees(_fx(sympy.Min(S, 300)), 1, 0, 1, 0)
    assert not _symbolic._agrees(_fx(sympy.Max(S, 2) - 1), 1, -1, 1, 0)
    assert not _symbolic._agrees(_fx(S * S - S * S + S + _floordiv(S * S, 10 ** 6)), 1, 0, 1, 0)


def test_everyday_ops_over_a_symbolic_axis():
    """layer norm, softmax and mean over the symbolic axis, x @ x.T ([s, s]), a sum expanded back
    to [s, 6], repeat ([2s, 6]), an embedding of s ids: compiled once, eager's values; split,
    unbind, chunk and squeeze next to it (sizes read as ints: per shape), eager's values too."""
    def build(g, val):
        x, w, b = val(g.placeholder("x"), [S, 6]), val(g.placeholder("w"), [6]), val(g.placeholder("b"), [6])
        ids, tab = val(g.placeholder("ids"), [S], torch.int64), val(g.placeholder("tab"), [10, 6])
        ln = g.call_function(aten.native_layer_norm.default, (x, [6], w, b, 1e-5))
        ln.meta["val"] = (_SymTensor([S, 6]), _SymTensor([S, 1]), _SymTensor([S, 1]))
        y = val(g.call_function(operator.getitem, (ln, 0)), [S, 6])
        sm = val(g.call_function(aten._softmax.default, (y, 0, False)), [S, 6])
        s = val(g.call_function(aten.sum.dim_IntList, (x, [0], True)), [1, 6])
        xt = val(g.call_function(aten.t.default, (x,)), [6, S])
        g.output((sm, val(g.call_function(aten.mean.dim, (sm, [0])), [6]), val(g.call_function(aten.mm.default, (x, xt)), [S, S]),
                  val(g.call_function(aten.expand.default, (s, [S, 6])), [S, 6]),
                  val(g.call_function(aten.repeat.default, (x, [2, 1])), [2 * S, 6]),
                  val(g.call_function(aten.embedding.default, (tab, ids)), [S, 6])))

    torch.manual_seed(0)
    w, b, tab = torch.randn(6), torch.randn(6), torch.randn(10, 6)

    def eager(x, w, b, ids, tab):
        sm = torch.nn.functional.layer_norm(x, [6], w, b).softmax(0)
        return sm, sm.mean(0), x @ x.t(), x.sum(0, True).expand(x.shape[0], 6), x.repeat(2, 1), tab[ids]

    _runs_like_eager(_graph(build), lambda n: (torch.randn(n, 6), w, b, torch.arange(n) % 10, tab), eager,
                     [3, 2, 7, 12], once=True)

    def build2(g, val):
        x = val(g.placeholder("x"), [S, 6])
        parts = g.call_function(aten.split.Tensor, (x, 2, 0))
        parts.meta["val"] = (_SymTensor([2, 6]), _SymTensor([S - 2, 6]))
        u = g.call_function(aten.unbind.int, (x, 1))
        u.meta["val"] = tuple(_SymTensor([S]) for _ in range(6))
        ch = g.call_function(aten.chunk.default, (x, 2, 1))
        ch.meta["val"] = (_SymTensor([S, 3]), _SymTensor([S, 3]))
        x1 = val(g.call_function(aten.unsqueeze.default, (x, 0)), [1, S, 6])
        g.output((val(g.call_function(operator.getitem, (parts, 0)), [2, 6]), val(g.call_function(operator.getitem, (u, 3)), [S]),
                  val(g.call_function(operator.getitem, (ch, 1)), [S, 3]),
                  val(g.call_function(aten.squeeze.dim, (x1, 0)), [S, 6])))

    _runs_like_eager(_graph(build2), lambda n: (torch.randn(n, 6),), lambda x: (x[:2], x[:, 3], x[:, 3:], x), [4, 3, 7],
                     once=None)


def test_pool_indices_and_sizes_of_a_strided_axis():
    """max_pool2d's indices over a symbolic image size, and a view and arange sized by
    sym_size(x[::3]) (FloorDiv(s + 2, 3)): eager's values for every size."""
    h = sympy.Symbol("s1", integer=True, positive=True)
    ho = _floordiv(h - 2, 2) + 1

    def build(g, val):
        x = val(g.placeholder("x"), [2, 3, h, h])
        p = g.call_function(aten.max_pool2d_with_indices.default, (x, [2, 2], [2, 2]))
        p.meta["val"] = (_SymTensor([2, 3, ho, ho]), _SymTensor([2, 3, ho, ho], torch.int64))
        g.output((val(g.call_function(operator.getitem, (p, 0)), [2, 3, ho, ho]),
                  val(g.call_function(operator.getitem, (p, 1)), [2, 3, ho, ho], torch.int64)))

    _runs_like_eager(_graph(build), lambda n: (torch.randn(2, 3, n, n),),
                     lambda x: tuple(torch.nn.functional.max_pool2d(x, 2, 2, return_indices=True)), [4, 5, 8], once=None)
    third = _floordiv(S + 2, 3)

    def build2(g, val):
        x = val(g.placeholder("x"), [S, 4])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 0, BIG, 3)), [third, 4])
        n = val(g.call_function(aten.sym_size, (y, 0)), third)
        g.output((val(g.call_function(aten.view.default, (y, [n, 2, 2])), [third, 2, 2]),
                  val(g.call_function(aten.arange.default, (n,), {"dtype": torch.float32}), [third]), n))

    _runs_like_eager(_graph(build2), lambda n: (torch.randn(n, 4),),
                     lambda x: (x[::3].view(-1, 2, 2), torch.arange(float(len(x[::3]))), len(x[::3])), [4, 3, 7, 9],
                     once=None)


# The session's first compile-once tests (moved from test_torch.py).

def _symbolic_fx(f, *example):
    """f traced with symbolic sizes (as Dynamo's dynamic shapes give): node.meta['val'] has SymInts."""
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        return make_fx(f, tracing_mode="symbolic")(*example)
    except Exception as e:  # noqa: BLE001 (a PyTorch without symbolic tracing)
        pytest.skip(f"no symbolic tracing here: {e}")


def test_symbolic_sizes_compile_once():
    """A graph with symbolic sizes is one compile-once executable: every call, for any size, is
    one TensorGraph run of it (no recompile), equal to eager, and a size it returns is the fed one."""
    from tensorgraph.torch._lower import Runner, compile_graph
    import tensorgraph as tg

    def f(x, w, b):
        y = torch.relu(x @ w + b)
        z = y.view(y.shape[0], -1) * 2
        return torch.softmax(z, -1), y.shape[0]

    torch.manual_seed(0)
    w, b = torch.randn(3, 5), torch.randn(5)
    gm = _symbolic_fx(f, torch.randn(4, 3), w, b)
    c = compile_graph(gm, (torch.randn(4, 3), w, b), "cpu")
    assert c.nodes_left_to_pytorch == 0 and isinstance(c.fn, Runner), c.fn
    compiles = tg.runtime_stats()["compiles"]
    for n in (4, 2, 7, 1, 9):
        x = torch.randn(n, 3)
        got, size = c(x, w, b)
        want, _ = f(x, w, b)
        assert size == n
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    assert tg.runtime_stats()["compiles"] == compiles  # the one compile served every size


def test_symbolic_sizes_with_arithmetic_compile_once():
    """Arithmetic on symbolic sizes (x.view(2 * n, -1): sizes 2*s0 and s1//2) gives PyTorch's
    expressions, which are TensorGraph's derived symbols (2*s0, s1/2): one compile-once
    executable, eager's values for each size."""
    from tensorgraph.torch._lower import Runner, compile_graph
    import tensorgraph as tg

    def f(x):
        return x.view(x.shape[0] * 2, -1) * 3

    gm = _symbolic_fx(f, torch.randn(4, 6))
    c = compile_graph(gm, (torch.randn(4, 6),), "cpu")
    assert isinstance(c.fn, Runner), c.fn
    compiles = tg.runtime_stats()["compiles"]
    for n, m in ((4, 6), (5, 6), (3, 10), (4, 6)):
        x = torch.randn(n, m)
        torch.testing.assert_close(c(x), f(x), atol=0, rtol=0)
    assert tg.runtime_stats()["compiles"] == compiles


def test_symbolic_conv_sizes_compile_once():
    """Sizes PyTorch gives as expressions of an input symbol (a convolution's floor((h-1)/2)+1, a
    pooling's, a slice's h-1) match TensorGraph's derived symbols, so a CNN with a symbolic batch
    and image size is one compile-once executable: every size runs it, equal to eager."""
    import sympy
    from tensorgraph.torch._lower import Runner, compile_graph
    import tensorgraph as tg
    aten = torch.ops.aten
    n, h = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    h1 = sympy.floor((h + 2 - 3) / 2) + 1  # conv 3x3, stride 2, padding 1 (as PyTorch writes it)
    h2 = sympy.floor((h1 - 3) / 2) + 1  # max pool 3x3, stride 2, no padding
    torch.manual_seed(0)
    w, b = torch.randn(4, 3, 3, 3), torch.randn(4)

    def build(g, val):
        x, wp, bp = val(g.placeholder("x"), [n, 3, h, h]), val(g.placeholder("w"), [4, 3, 3, 3]), val(g.placeholder("b"), [4])
        y = val(g.call_function(aten.convolution.default, (x, wp, bp, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)),
                [n, 4, h1, h1])
        y = val(g.call_function(aten.relu.default, (y,)), [n, 4, h1, h1])
        p = g.call_function(aten.max_pool2d_with_indices.default, (y, [3, 3], [2, 2]))
        p.meta["val"] = tuple(_SymTensor([_SymSize(d) if isinstance(d, sympy.Expr) else d for d in (n, 4, h2, h2)], dt)
                              for dt in (torch.float32, torch.int64))
        pooled = val(g.call_function(operator.getitem, (p, 0)), [n, 4, h2, h2])
        tail = val(g.call_function(aten.slice.Tensor, (y, 3, 1, 2 ** 63 - 1)), [n, 4, h1, h1 - 1])
        g.output((val(g.call_function(aten.mean.dim, (pooled, [2, 3])), [n, 4]),
                  val(g.call_function(aten.mul.Tensor, (tail, 2.0)), [n, 4, h1, h1 - 1])))

    import operator
    gm = _sym_graph(build)
    c = compile_graph(gm, (torch.randn(2, 3, 16, 16), w, b), "cpu")
    assert c.nodes_left_to_pytorch == 0 and isinstance(c.fn, Runner), c.fn
    compiles = tg.runtime_stats()["compiles"]
    for batch, size in ((2, 16), (3, 9), (1, 12), (4, 7), (2, 31)):
        x = torch.randn(batch, 3, size, size)
        got_mean, got_tail = c(x, w, b)
        y = torch.relu(torch.nn.functional.conv2d(x, w, b, stride=2, padding=1))
        want_mean = torch.nn.functional.max_pool2d(y, 3, 2).mean((2, 3))
        assert got_tail.shape == y[..., 1:].shape, (got_tail.shape, y.shape)
        torch.testing.assert_close(got_mean, want_mean, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got_tail, y[..., 1:] * 2, atol=1e-5, rtol=1e-5)
    assert tg.runtime_stats()["compiles"] == compiles  # the one compile served every size


def test_symbolic_size_that_differs_from_tensorgraphs_falls_back():
    """A size PyTorch claims that TensorGraph's derived symbol does not equal (here a wrong
    expression for a slice's length) is never trusted: the graph compiles per shape, with
    eager's results."""
    import sympy
    from tensorgraph.torch._lower import PerShape, compile_graph
    aten = torch.ops.aten
    s = sympy.Symbol("s0", integer=True, positive=True)

    def build(g, val):
        x = val(g.placeholder("x"), [s, 4])
        y = val(g.call_function(aten.slice.Tensor, (x, 0, 2, 2 ** 63 - 1)), [sympy.floor(s / 2), 4])
        g.output((val(g.call_function(aten.mul.Tensor, (y, 3.0)), [sympy.floor(s / 2), 4]),))

    gm = _sym_graph(build)
    c = compile_graph(gm, (torch.randn(6, 4),), "cpu")
    assert isinstance(c.fn, PerShape), c.fn
    x = torch.randn(7, 4)
    torch.testing.assert_close(c(x)[0], x[2:] * 3, atol=0, rtol=0)


def test_symbolic_batch_statistics_count_at_run_time():
    """Training batch norm (forward and backward) and an unbiased variance over a symbolic batch
    and image size divide by the element count of each run (a scalar the graph computes), so one
    compile-once executable gives eager's values for every size."""
    import sympy
    from tensorgraph.torch._lower import Runner, compile_graph
    aten = torch.ops.aten
    n, h = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    x_shape, c = [n, 3, h, h], [3]
    torch.manual_seed(0)
    w, b = torch.rand(3) + 0.5, torch.randn(3)

    def build(g, val):
        x, wp, bp, dy = (val(g.placeholder(k), s) for k, s in (("x", x_shape), ("w", c), ("b", c), ("dy", x_shape)))
        bn = g.call_function(aten.native_batch_norm.default, (x, wp, bp, None, None, True, 0.1, 1e-5))
        bn.meta["val"] = (_SymTensor([_SymSize(d) if isinstance(d, sympy.Expr) else d for d in x_shape]),
                          _SymTensor(c), _SymTensor(c))
        y, mean, invstd = (val(g.call_function(operator.getitem, (bn, i)), s) for i, s in enumerate((x_shape, c, c)))
        back = g.call_function(aten.native_batch_norm_backward.default,
                               (dy, x, wp, None, None, mean, invstd, True, 1e-5, [True, True, True]))
        back.meta["val"] = (bn.meta["val"][0], _SymTensor(c), _SymTensor(c))
        dx, dw, db = (val(g.call_function(operator.getitem, (back, i)), s) for i, s in enumerate((x_shape, c, c)))
        var = val(g.call_function(aten.var.correction, (x, [0, 2, 3]), {"correction": 1}), c)
        g.output((y, mean, invstd, dx, dw, db, var))

    import operator
    gm = _sym_graph(build)
    example = (torch.randn(2, 3, 4, 4), w, b, torch.randn(2, 3, 4, 4))
    c_ = compile_graph(gm, example, "cpu")
    assert c_.nodes_left_to_pytorch == 0 and isinstance(c_.fn, Runner), c_.fn
    for batch, size in ((2, 4), (3, 5), (1, 7)):
        x, dy = torch.randn(batch, 3, size, size, dtype=torch.float64), torch.randn(batch, 3, size, size, dtype=torch.float64)
        y, mean, invstd = aten.native_batch_norm(x, w.double(), b.double(), None, None, True, 0.1, 1e-5)
        want = (y, mean, invstd) + tuple(aten.native_batch_norm_backward(
            dy, x, w.double(), None, None, mean, invstd, True, 1e-5, [True, True, True])) + (x.var((0, 2, 3)),)
        got = c_.fn(x.float(), w, b, dy.float())
        for k, (g_, e) in enumerate(zip(got, want)):
            torch.testing.assert_close(g_.double(), e, atol=1e-4, rtol=1e-4, msg=f"output {k}, size {batch}x{size}")


def test_symbolic_slices_selects_and_factories():
    """The shape ops a transformer applies to its sequence length s with symbolic sizes:
    position ids sliced to [0:s] of a longer buffer, an arange(s), ones([1, s]), the first row
    (select 0), the rows after it (slice 1:): one compile-once executable, eager's values per s."""
    import sympy
    from tensorgraph.torch._lower import Runner, compile_graph
    aten = torch.ops.aten
    s = sympy.Symbol("s0", integer=True, positive=True)

    def build(g, val):
        x, pos = val(g.placeholder("x"), [s, 8]), val(g.placeholder("pos"), [1, 16], torch.int64)
        n = g.placeholder("n")
        n.meta["val"] = _SymSize(s)
        ids = val(g.call_function(aten.slice.Tensor, (pos, 1, 0, n)), [1, s], torch.int64)
        ar = val(g.call_function(aten.arange.default, (n,), {"dtype": torch.int64}), [s], torch.int64)
        ones = val(g.call_function(aten.ones.default, ([1, n],), {"dtype": torch.float32}), [1, s])
        first = val(g.call_function(aten.select.int, (x, 0, 0)), [8])
        tail = val(g.call_function(aten.slice.Tensor, (x, 0, 1, 2 ** 63 - 1)), [s - 1, 8])
        g.output((val(g.call_function(aten.add.Tensor, (ids, ar)), [1, s], torch.int64), ones, first,
                  val(g.call_function(aten.mul.Tensor, (tail, 2.0)), [s - 1, 8])))

    gm = _sym_graph(build)
    pos = torch.arange(100, 116).reshape(1, 16)
    c = compile_graph(gm, (torch.randn(5, 8), pos, 5), "cpu")
    assert c.nodes_left_to_pytorch == 0 and isinstance(c.fn, Runner), c.fn
    for n in (5, 2, 16, 9):
        x = torch.randn(n, 8)
        ids, ones, first, tail = c(x, pos, n)
        assert torch.equal(ids, pos[:, :n] + torch.arange(n)), ids
        assert torch.equal(ones, torch.ones(1, n)) and torch.equal(first, x[0]) and torch.equal(tail, x[1:] * 2)


def test_symbolic_backward_graph_inputs_of_derived_size():
    """A backward graph's inputs (saved activations, gradients) have sizes that are expressions
    of the forward's symbols (a convolution's output floor((h-1)/2)+1): they are declared with
    TensorGraph's derived symbol of that expression, so the backward is one compile-once
    executable too (convolution and max-pool backward; the max-pool indices input is not read)."""
    import sympy
    from tensorgraph.torch._lower import Runner, compile_graph
    import tensorgraph as tg
    aten = torch.ops.aten
    n, h = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    h1 = sympy.floor((h - 1) / 2) + 1  # conv 3x3, stride 2, padding 1
    h2 = sympy.floor((h1 - 3) / 2) + 1  # max pool 3x3, stride 2
    torch.manual_seed(0)
    w = torch.randn(4, 3, 3, 3)

    def build(g, val):
        x = val(g.placeholder("x"), [n, 3, h, h])
        wp = val(g.placeholder("w"), [4, 3, 3, 3])
        y = val(g.placeholder("y"), [n, 4, h1, h1])
        dyp = val(g.placeholder("dyp"), [n, 4, h2, h2])
        idx = val(g.placeholder("idx"), [n, 4, h2, h2], torch.int64)
        dy = val(g.call_function(aten.max_pool2d_with_indices_backward.default,
                                 (dyp, y, [3, 3], [2, 2], [0, 0], [1, 1], False, idx)), [n, 4, h1, h1])
        back = g.call_function(aten.convolution_backward.default,
                               (dy, x, wp, [4], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]))
        back.meta["val"] = (_SymTensor([_SymSize(n), 3, _SymSize(h), _SymSize(h)]), _SymTensor([4, 3, 3, 3]),
                            _SymTensor([4]))
        g.output(tuple(val(g.call_function(operator.getitem, (back, i)), s)
                       for i, s in enumerate(([n, 3, h, h], [4, 3, 3, 3], [4]))))

    import operator
    gm = _sym_graph(build)

    def args(batch, size):
        x = torch.randn(batch, 3, size, size, dtype=torch.float64)
        y = torch.nn.functional.conv2d(x, w.double(), stride=2, padding=1)
        pooled, idx = torch.nn.functional.max_pool2d(y, 3, 2, return_indices=True)
        return x, y, torch.randn(pooled.shape, dtype=torch.float64), idx

    x, y, dyp, idx = args(2, 16)
    c = compile_graph(gm, (x.float(), w, y.float(), dyp.float(), idx), "cpu")
    assert c.nodes_left_to_pytorch == 0 and isinstance(c.fn, Runner), c.fn
    compiles = tg.runtime_stats()["compiles"]
    for batch, size in ((2, 16), (3, 9), (1, 12)):
        x, y, dyp, idx = args(batch, size)
        dy = aten.max_pool2d_with_indices_backward(dyp, y, [3, 3], [2, 2], [0, 0], [1, 1], False, idx)
        want = aten.convolution_backward(dy, x, w.double(), [4], [2, 2], [1, 1], [1, 1], False, [0, 0], 1,
                                         [True, True, True])
        got = c(x.float(), w, y.float(), dyp.float(), idx)
        for k, (g_, e) in enumerate(zip(got, want)):
            torch.testing.assert_close(g_.double(), e, atol=1e-4, rtol=1e-4, msg=f"output {k}, {batch}x{size}")
    assert tg.runtime_stats()["compiles"] == compiles


def test_symbolic_forward_hands_unread_pool_indices_over_as_zeros():
    """A training forward's max-pool indices that only the backward gets (whose converter routes
    by the forward input) are not computed for symbolic sizes: zeros of each call's size. Where
    the caller gets them (not saved for the backward), the graph compiles per shape and they
    are PyTorch's indices."""
    import sympy
    from tensorgraph.torch._lower import PerShape, Runner, compile_graph
    aten = torch.ops.aten
    n, h = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    h2 = sympy.floor((h - 3) / 2) + 1  # max pool 3x3, stride 2

    def build(g, val):
        x = val(g.placeholder("x"), [n, 4, h, h])
        p = g.call_function(aten.max_pool2d_with_indices.default, (x, [3, 3], [2, 2]))
        p.meta["val"] = tuple(_SymTensor([_SymSize(d) if isinstance(d, sympy.Expr) else d for d in (n, 4, h2, h2)], dt)
                              for dt in (torch.float32, torch.int64))
        shape = [n, 4, h2, h2]
        y = val(g.call_function(operator.getitem, (p, 0)), shape)
        g.output((val(g.call_function(aten.relu.default, (y,)), shape),
                  val(g.call_function(operator.getitem, (p, 1)), shape, torch.int64)))

    import operator
    gm = _sym_graph(build)
    saved = compile_graph(gm, (torch.randn(2, 4, 9, 9),), "cpu", saved_outputs=slice(1, 2))
    assert isinstance(saved.fn, Runner), saved.fn
    given = compile_graph(gm, (torch.randn(2, 4, 9, 9),), "cpu")
    assert isinstance(given.fn, PerShape), given.fn
    for batch, size in ((2, 9), (3, 12), (1, 7)):
        x = torch.randn(batch, 4, size, size)
        want, idx = torch.nn.functional.max_pool2d(x, 3, 2, return_indices=True)
        y, zeros = saved(x)
        torch.testing.assert_close(y, want.relu(), atol=0, rtol=0)
        assert zeros.shape == idx.shape and zeros.dtype == torch.int64 and not zeros.any()
        y, got_idx = given(x)
        torch.testing.assert_close(y, want.relu(), atol=0, rtol=0)
        assert torch.equal(got_idx, idx)


def test_sizes_used_as_values_are_fed_per_call():
    """A size used as a value (a mean's backward divides by h * w, an expression of the image
    size that is not floor-affine; a multiple of a derived size) is a scalar fed each call from
    the fed shapes: one compile-once executable, eager's values for every size."""
    aten = torch.ops.aten
    h = sympy.Symbol("s1", integer=True, positive=True)
    h1 = sympy.floor((h - 1) / 2) + 1  # a stride-2 convolution's output size

    def build(g, val):
        dy = val(g.placeholder("dy"), [S, 4])
        x = val(g.placeholder("x"), [S, 4, h, h])
        y = val(g.call_function(aten.slice.Tensor, (x, 2, 0, BIG, 2)), [S, 4, h1, h])
        y = val(g.call_function(aten.slice.Tensor, (y, 3, 0, BIG, 2)), [S, 4, h1, h1])
        col = val(g.call_function(aten.view.default, (dy, [S, 4, 1, 1])), [S, 4, 1, 1])
        spread = val(g.call_function(aten.expand.default, (col, [S, 4, h1, h1])), [S, 4, h1, h1])
        sym_size = aten.sym_size.int if hasattr(aten.sym_size, "int") else aten.sym_size
        k = val(g.call_function(sym_size, (y, 2)), h1)
        area = val(g.call_function(operator.mul, (k, k)), h1 * h1)
        g.output((val(g.call_function(aten.div.Tensor, (spread, area)), [S, 4, h1, h1]),
                  val(g.call_function(aten.mul.Tensor, (y, k)), [S, 4, h1, h1])))

    def args_of(size):
        batch, k = size
        return torch.randn(batch, 4), torch.randn(batch, 4, k, k)

    def eager(dy, x):
        y = x[:, :, ::2, ::2]
        k = y.shape[2]
        return dy[:, :, None, None].expand(y.shape) / (k * k), y * k

    _runs_like_eager(_graph(build), args_of, eager, [(2, 9), (3, 16), (1, 7), (2, 9)], once=True)
