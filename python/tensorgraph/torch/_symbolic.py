"""Graphs with symbolic sizes (PyTorch's dynamic shapes) as compile-once executables.

Dynamo (``torch.compile(..., dynamic=True)``, or automatically after a second input size) and
``make_fx(tracing_mode="symbolic")`` give graphs whose example values have symbolic sizes
(``SymInt``: ``s0``, ``t0.size(0)``), and size inputs. ``compile_symbolic`` lowers such a graph
once with each symbol of the inputs' shapes as a TensorGraph symbol (a named dim), and compiles it
with ``disable_type_inference=True``: one pass pipeline for every size, each new input signature
lowered at its first run (docs/design/0009). What makes this safe:

- every converted node's TensorGraph type must equal PyTorch's symbolic one exactly (``dims``
  maps the symbols to their names in ``_lower._check``): a size baked in where PyTorch has a
  symbol, or a symbol where PyTorch has a size, makes the node unsupported;
- a size PyTorch gives as an expression of one input symbol (a convolution's ``((s0 - 1)//2) + 1``)
  is an ``FxDim``; TensorGraph's matching dim is a derived symbol (``floor((a*s0 + b)/c)``,
  ``Tensor.dim_expr``), and the two are the same size when they agree for every base size from
  the derived symbol's bound over a range of several periods (``same_dim``: both are floor-affine
  in the base, so agreeing over whole periods is agreeing everywhere);
- arithmetic on symbols (``operator.mul`` of sizes, ``int()`` of a named dim in a converter),
  expressions of two symbols (``s0*s1``) and any node that does not convert make the whole graph
  fall back to ``PerShape`` (compiled per concrete shape: correct, recompiles), with one INFO log
  line naming the reason;
- the symbols are bound from the fed tensors' shapes at each run (TensorGraph checks that one
  symbol has one size), and a size the graph returns is read off the fed tensor that has it.

``TG_TORCH_SYMBOLIC=0`` turns this off (every such graph runs per shape).
"""
import logging
import os
import re

log = logging.getLogger("tensorgraph.torch")

# sympy symbol -> TensorGraph symbol name, while compile_symbolic lowers a graph; None otherwise.
_SYMBOLS = None
# Scalar placeholders standing for sizes used as values (size_scalar), while a graph is lowered:
# (placeholder, symbol name or FxDim).
_SIZE_FEEDS = []


def symbolic_on():
    return os.environ.get("TG_TORCH_SYMBOLIC", "1") != "0"


def _expr(d):
    """The sympy expression of a symbolic size (PyTorch >= 2: SymInt.node.expr; 1.13:
    SymIntNode.get_pyobj().expr, or a PySymInt's own expr), else None."""
    if isinstance(d, (bool, int, float)):
        return None
    node = getattr(d, "node", None)
    if node is None and hasattr(d, "get_pyobj"):
        node = d.get_pyobj()
    return getattr(node if node is not None else d, "expr", None)


class FxDim:
    """A symbolic size of PyTorch's that is an expression of one input symbol (a convolution's
    ``((s0 - 1)//2) + 1``), while a symbolic lowering runs: `expr` (sympy), its symbol and that
    symbol's TensorGraph name. Equal to another FxDim of the same expression; a TensorGraph dim
    is compared with it by ``same_dim``, which needs the tensor (its derived symbol)."""
    __slots__ = ("expr", "symbol", "name", "_at", "_tg")

    def __init__(self, expr, symbol, name):
        self.expr, self.symbol, self.name = expr, symbol, name
        self._at = {}  # symbol size -> this size (at)
        self._tg = False  # tg_name, once computed

    def __eq__(self, other):
        return isinstance(other, FxDim) and (self.expr == other.expr or (self.expr - other.expr) == 0)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.expr)

    def tg_name(self):
        """TensorGraph's derived symbol for this size, as a str dim ("(torch_s1+1)/2"), or None
        where the expression is not floor((a*s + b)/c) (_fit). Built by shape ops on a scratch
        graph, so that TensorGraph interns it: Tensor shapes, placeholders and shape attributes
        then take the name (tg::symbolic_dim gives a derived symbol back by its name)."""
        if self._tg is False:
            fit = _fit(self)
            self._tg = _derived_name(self.name, *fit) if fit else None
        return self._tg

    def at(self, v):
        """The size for the symbol's size v (an int), as PyTorch computes it."""
        got = self._at.get(v)
        if got is None:
            import sympy
            got = self.expr.xreplace({self.symbol: sympy.Integer(v)})
            if not getattr(got, "is_Integer", False):
                raise ValueError(f"{self.expr} is {got} at {self.symbol} = {v}")
            got = self._at[v] = int(got)
        return got

    def __repr__(self):
        return str(self.expr)


def _not_an_integer(d, e):
    """Why symbolic value d (expression e) is not an integer size (a SymFloat or SymBool of
    arithmetic on sizes: s0 / 2, s0 < 5), else None: PyTorch >= 2 marks its type (node.pytype);
    a relation or a float constant in e marks it where that is missing."""
    node = getattr(d, "node", None)
    pytype = getattr(node, "pytype", None)
    if pytype is not None and pytype is not int:
        return f"a {pytype.__name__}"
    if getattr(e, "is_Relational", False) or getattr(e, "is_Boolean", False):
        return "a relation"
    if e is not None and hasattr(e, "atoms"):
        import sympy
        if e.atoms(sympy.Float):
            return "a float expression"
    return None


def dims(shape):
    """A shape as TensorGraph dims: ints, and while a symbolic lowering runs, the names of its
    symbols (no int() of a symbolic size, which would specialize it) and FxDims for expressions of
    one of them. Raises Unsupported for an expression of several symbols, a symbol no input's
    shape has, or a value that is not an integer (a SymFloat or SymBool: its FxDim would give an
    int where PyTorch has a float or bool)."""
    if _SYMBOLS is None:
        return [int(s) for s in shape]
    from ._registry import Unsupported
    out = []
    for s in shape:
        if isinstance(s, int):
            out.append(s)
            continue
        e = _expr(s)
        why = _not_an_integer(s, e)
        if why is not None:
            raise Unsupported(f"symbolic value {e} is {why}, not a size")
        if e is not None and getattr(e, "is_Integer", False):
            out.append(int(e))
        elif e is not None and e in _SYMBOLS:
            out.append(_SYMBOLS[e])
        elif e is not None and len(getattr(e, "free_symbols", ())) == 1 and next(iter(e.free_symbols)) in _SYMBOLS:
            out.append(fx_dim(e, next(iter(e.free_symbols)), _SYMBOLS))
        else:
            raise Unsupported(f"symbolic size {s} is not a symbol of the inputs' shapes or an expression of one")
    return out


# (expr, a, b, c, lo) -> whether they agree (same_dim): a few distinct expressions per model.
_AGREES = {}
# (expr, symbol name) -> its FxDim: one per expression, so its values, fit and name are computed once.
_FX_DIMS = {}


def fx_dim(e, sym, symbols):
    """The FxDim of expression e of symbol sym (TensorGraph name symbols[sym]), interned."""
    key = (e, symbols[sym])
    d = _FX_DIMS.get(key)
    if d is None:
        d = _FX_DIMS[key] = FxDim(e, sym, symbols[sym])
    return d


def _period(e, symbol):
    """A period P of PyTorch's size expression e of `symbol` s: e(s + P) - e(s) is the same integer
    for every s, where e is floor-affine in s (sums, rational multiples, floor / ceiling / FloorDiv
    / Mod by integer constants of such terms); P is the product of the divisors along each nesting
    (floor(floor(s/2)/2) has period 4), a multiple of the least. None for any other expression
    (Min, Max, powers, a product of two terms of s): it is not checked by sampling (_agrees)."""
    import math
    if e == symbol or getattr(e, "is_Integer", False):
        return 1
    if getattr(e, "is_Rational", False):
        return int(e.q)
    kind = type(e).__name__
    if getattr(e, "is_Add", False):
        p = 1
        for t in e.args:
            q = _period(t, symbol)
            if q is None:
                return None
            p = math.lcm(p, q)
        return p
    if getattr(e, "is_Mul", False):
        consts = [t for t in e.args if symbol not in t.free_symbols]
        terms = [t for t in e.args if symbol in t.free_symbols]
        if len(terms) != 1 or not all(getattr(t, "is_Rational", False) for t in consts):
            return None
        q = _period(terms[0], symbol)
        return None if q is None else q * math.prod(int(t.q) for t in consts)
    if kind in ("floor", "ceiling", "FloorToInt", "CeilToInt") and len(e.args) == 1:
        return _period(e.args[0], symbol)
    if kind in ("FloorDiv", "Mod", "PythonMod", "IntTrueDiv", "CleanDiv") and len(e.args) == 2:
        d = e.args[1]
        if not getattr(d, "is_Integer", False) or int(d) < 1:
            return None
        q = _period(e.args[0], symbol)
        return None if q is None else q * int(d)
    return None


def _agrees(fx, a, b, c, lo):
    """Whether PyTorch's expression fx.expr of its symbol s equals floor((a*s + b)/c) for every
    s >= max(lo, 2) (0 and 1 are sizes Dynamo specializes). Both are floor-affine in s, f(s + P) =
    f(s) + P*slope for a period P of each (_period: c for TensorGraph's), so agreeing on the
    lcm of their periods plus one consecutive sizes is agreeing everywhere: checked on at least
    max(256, 8c) sizes, at most 8192 (a longer period, or an expression that is not
    floor-affine (Min, Max), does not agree: the graph compiles per shape)."""
    key = (fx.expr, a, b, c, lo)
    hit = _AGREES.get(key)
    if hit is not None:
        return hit
    import math
    start = max(lo, 2)
    p = _period(fx.expr, fx.symbol)
    n = None if p is None else max(256, 8 * c, math.lcm(p, c) + 1)
    try:
        ok = n is not None and n <= 8192 and all(fx.at(v) == (a * v + b) // c for v in range(start, start + n))
    except (TypeError, ValueError):  # not an integer at some size
        ok = False
    _AGREES[key] = ok
    return ok


def _fit(fx):
    """(a, b, c), a >= 1, 1 <= c <= 64, with floor((a*s + b)/c) equal to PyTorch's expression for
    every size s checked by _agrees (the smallest such c), else None."""
    try:
        e0 = fx.at(2)
        for c in range(1, 65):
            a = fx.at(2 + c) - e0  # floor((a*(s+c) + b)/c) = floor((a*s + b)/c) + a
            if a < 1:
                continue
            b0 = c * e0 - 2 * a  # floor((2a + b)/c) = e0 for b in [b0, b0 + c)
            for b in range(b0, b0 + c):
                if _agrees(fx, a, b, c, 0):
                    return a, b, c
    except (TypeError, ValueError):  # not an integer at some size
        return None
    return None


def _derived_name(base, a, b, c):
    """The name TensorGraph gives floor((a*base + b)/c), made by tile, pad or slice and a strided
    slice of a scratch placeholder (ceil(n/c) = floor((n + c - 1)/c) of n = a*base + b - c + 1);
    None where TensorGraph keeps the size unknown (-1)."""
    from .. import _tensorgraph as tg
    t = tg.Graph().placeholder([base], tg.float32, "scratch")
    if a > 1:
        t = tg.tile(t, [a])
    off = b - (c - 1)
    if off > 0:
        t = tg.pad(t, [0], [off])
    elif off < 0:
        t = tg.slice(t, [-off], [None], axes=[0])
    if c > 1:
        t = tg.slice(t, [0], [None], strides=[c], axes=[0])
    d = t.shape[0]
    return d if isinstance(d, str) else None


def tg_dims(shape):
    """dims(...) as TensorGraph can take them: each FxDim as its derived symbol's name
    (FxDim.tg_name). Raises Unsupported for an expression TensorGraph cannot name."""
    from ._registry import Unsupported
    out = []
    for d in shape:
        if isinstance(d, FxDim):
            name = d.tg_name()
            if name is None:
                raise Unsupported(f"size {d} is not floor((a*s + b)/c) of a symbol s")
            d = name
        out.append(d)
    return out


def same_dim(t, axis, d):
    """Whether TensorGraph tensor t's dim `axis` is PyTorch's size d (from dims): equal ints or
    symbol names, or for an FxDim, a derived symbol of the same base that agrees with it."""
    have = t.shape[axis]
    if not isinstance(d, FxDim):
        return have == d
    e = t.dim_expr(axis)
    return e is not None and e[0] == d.name and _agrees(d, *e[1:])


def same_shape(t, shape):
    """Whether TensorGraph tensor t has PyTorch's shape (dims of it): same_dim on every axis."""
    have = list(t.shape)
    if have == shape:
        return True
    return len(have) == len(shape) and all(same_dim(t, i, d) for i, d in enumerate(shape))


def is_symbolic_size(v):
    return _SYMBOLS is not None and not isinstance(v, (bool, int, float)) and _expr(v) is not None


def size_scalar(g, d, dtype):
    """A size used as a value (a mean's divisor: grad / (h * w)) in a compile-once lowering: d a
    symbol's name or an FxDim (any expression of one symbol). A scalar placeholder of `dtype`,
    which the Runner feeds each call with the size computed from the fed tensors' shapes
    (Runner.size_feeds); one per size and dtype."""
    for ph, have in _SIZE_FEEDS:
        if have == d and type(have) is type(d) and ph.dtype == dtype:
            return ph
    ph = g.placeholder([], dtype, f"size_{len(_SIZE_FEEDS)}")
    _SIZE_FEEDS.append((ph, d))
    return ph


def symbolic_lowering():
    """Whether a compile-once lowering is running (converters that cannot name a size's
    arithmetic then take another route)."""
    return _SYMBOLS is not None


def compile_symbolic(gm, vals, device, precision, memory_budget_bytes, saved_outputs=None):
    """A Runner of gm as one compile-once executable (module docstring), or None (the caller
    compiles per shape). vals: node -> example value with symbolic sizes (node.meta['val']).
    saved_outputs: a forward graph's outputs that only its backward gets (a slice of the flat
    output): max-pool indices among them are handed over as zeros (the backward never reads
    them; _saved.ZeroIndices)."""
    global _SYMBOLS
    from . import _lower
    names, derived = {}, []
    for n in gm.graph.nodes:
        v = vals.get(n) if n.op == "placeholder" else None
        if not _lower._is_tensor(v):
            continue
        for d in v.shape:
            if isinstance(d, int):
                continue
            e = _expr(d)
            if e is not None and getattr(e, "is_Symbol", False):
                names.setdefault(e, "torch_" + re.sub(r"\W+", "_", str(e)).strip("_"))
            elif e is not None and len(getattr(e, "free_symbols", ())) == 1 and not getattr(e, "is_Integer", False):
                derived.append((n, d, e))  # a backward graph's saved activation: checked below
            elif e is None or not getattr(e, "is_Integer", False):
                log.info("tensorgraph.torch: input %s has size %s; compiled per shape", n.name, d)
                return None
    # Inputs whose sizes are expressions of a symbol another input has (a backward graph's saved
    # activations: a convolution's output size) are declared with TensorGraph's derived symbol.
    for n, d, e in derived:
        sym = next(iter(e.free_symbols))
        if sym not in names or fx_dim(e, sym, names).tg_name() is None:
            log.info("tensorgraph.torch: input %s has size %s; compiled per shape", n.name, d)
            return None
    if not names:
        log.info("tensorgraph.torch: the graph takes sizes, but no input tensor has a symbolic size; compiled "
                 "per shape")
        return None
    _SYMBOLS = names
    _SIZE_FEEDS.clear()
    try:
        with _lower._real_tensors():
            low = _lower.lower(gm, vals)
        low.size_feeds = list(_SIZE_FEEDS)
        if low.unsupported:
            first = {}
            for node, why in low.unsupported.items():
                first.setdefault(node.target, f"{node.name}: {why}")
            log.info("tensorgraph.torch: %d node(s) need concrete sizes (%s); compiled per shape",
                     len(low.unsupported), "; ".join(list(first.values())[:4]))
            return None
        zeros = ()
        if saved_outputs is not None and isinstance(low.output, (list, tuple)):
            from ._saved import _unread_indices
            zeros = _unread_indices(gm, low, range(len(low.output))[saved_outputs])
        runner = _lower.Runner(low, device, precision, memory_budget_bytes, zero_outputs=zeros, symbolic=True)
    except Exception as e:  # noqa: BLE001 (whatever fails here: the per-shape path, never a crash)
        log.info("tensorgraph.torch: symbolic sizes not compiled once (%s: %s); compiled per shape",
                 type(e).__name__, e)
        return None
    finally:
        _SYMBOLS = None
        _SIZE_FEEDS.clear()
    runner.symbols = sorted(names.values())
    log.info("tensorgraph.torch: compiled once for any %s", ", ".join(f"{e} ({n})" for e, n in names.items()))
    return runner
