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
    __slots__ = ("expr", "symbol", "name", "_at")

    def __init__(self, expr, symbol, name):
        self.expr, self.symbol, self.name = expr, symbol, name
        self._at = {}  # symbol size -> this size (at)

    def __eq__(self, other):
        return isinstance(other, FxDim) and (self.expr == other.expr or (self.expr - other.expr) == 0)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.expr)

    def at(self, v):
        """The size for the symbol's size v (an int), as PyTorch computes it."""
        got = self._at.get(v)
        if got is None:
            import sympy
            got = self._at[v] = int(self.expr.xreplace({self.symbol: sympy.Integer(v)}))
        return got

    def __repr__(self):
        return str(self.expr)


def dims(shape):
    """A shape as TensorGraph dims: ints, and while a symbolic lowering runs, the names of its
    symbols (no int() of a symbolic size, which would specialize it) and FxDims for expressions of
    one of them. Raises Unsupported for an expression of several symbols or a symbol no input's
    shape has."""
    if _SYMBOLS is None:
        return [int(s) for s in shape]
    from ._registry import Unsupported
    out = []
    for s in shape:
        if isinstance(s, int):
            out.append(s)
            continue
        e = _expr(s)
        if e is not None and getattr(e, "is_Integer", False):
            out.append(int(e))
        elif e is not None and e in _SYMBOLS:
            out.append(_SYMBOLS[e])
        elif e is not None and len(getattr(e, "free_symbols", ())) == 1 and next(iter(e.free_symbols)) in _SYMBOLS:
            sym = next(iter(e.free_symbols))
            out.append(FxDim(e, sym, _SYMBOLS[sym]))
        else:
            raise Unsupported(f"symbolic size {s} is not a symbol of the inputs' shapes or an expression of one")
    return out


# (expr, a, b, c, lo) -> whether they agree (same_dim): a few distinct expressions per model.
_AGREES = {}


def _agrees(fx, a, b, c, lo):
    """Whether PyTorch's expression fx.expr of its symbol s equals floor((a*s + b)/c) for every
    s >= max(lo, 2) (0 and 1 are sizes Dynamo specializes). Both are floor-affine in s (sums,
    multiples and floor divisions of s by constants), so f(s + P) = f(s) + P*slope for a period P
    that divides the product of their divisors: agreeing on max(256, 8c) consecutive sizes
    (whole periods of any divisors a network's windows make: strides 2^k) and at the bound
    is agreeing everywhere, short of a divisor beyond that range."""
    key = (fx.expr, a, b, c, lo)
    hit = _AGREES.get(key)
    if hit is not None:
        return hit
    import sympy
    start = max(lo, 2)
    ok = True
    for v in range(start, start + min(max(256, 8 * c), 8192)):
        got = fx.expr.xreplace({fx.symbol: sympy.Integer(v)})
        if not getattr(got, "is_Integer", False) or int(got) != (a * v + b) // c:
            ok = False
            break
    _AGREES[key] = ok
    return ok


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


def compile_symbolic(gm, vals, device, precision, memory_budget_bytes):
    """A Runner of gm as one compile-once executable (module docstring), or None (the caller
    compiles per shape). vals: node -> example value with symbolic sizes (node.meta['val'])."""
    global _SYMBOLS
    from . import _lower
    names = {}
    for n in gm.graph.nodes:
        v = vals.get(n) if n.op == "placeholder" else None
        if not _lower._is_tensor(v):
            continue
        for d in v.shape:
            if isinstance(d, int):
                continue
            e = _expr(d)
            if e is None or not getattr(e, "is_Symbol", False):
                log.info("tensorgraph.torch: input %s has size %s; compiled per shape", n.name, d)
                return None
            names.setdefault(e, "torch_" + re.sub(r"\W+", "_", str(e)).strip("_"))
    if not names:
        log.info("tensorgraph.torch: the graph takes sizes, but no input tensor has a symbolic size; compiled "
                 "per shape")
        return None
    _SYMBOLS = names
    try:
        with _lower._real_tensors():
            low = _lower.lower(gm, vals)
        if low.unsupported:
            first = {}
            for node, why in low.unsupported.items():
                first.setdefault(node.target, f"{node.name}: {why}")
            log.info("tensorgraph.torch: %d node(s) need concrete sizes (%s); compiled per shape",
                     len(low.unsupported), "; ".join(list(first.values())[:4]))
            return None
        runner = _lower.Runner(low, device, precision, memory_budget_bytes, symbolic=True)
    except Exception as e:  # noqa: BLE001 (whatever fails here: the per-shape path, never a crash)
        log.info("tensorgraph.torch: symbolic sizes not compiled once (%s: %s); compiled per shape",
                 type(e).__name__, e)
        return None
    finally:
        _SYMBOLS = None
    runner.symbols = sorted(names.values())
    log.info("tensorgraph.torch: compiled once for any %s", ", ".join(f"{e} ({n})" for e, n in names.items()))
    return runner
