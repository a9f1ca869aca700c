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
- arithmetic on symbols (``operator.mul`` of sizes, ``int()`` of a named dim in a converter),
  symbolic sizes that are expressions (``2*s0``) and any node that does not convert make the
  whole graph fall back to ``PerShape`` (compiled per concrete shape: correct, recompiles), with
  one INFO log line naming the reason;
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


def dims(shape):
    """A shape as TensorGraph dims: ints, and while a symbolic lowering runs, the names of its
    symbols (no int() of a symbolic size, which would specialize it). Raises Unsupported for a
    size that is an expression or a symbol no input's shape has."""
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
        else:
            raise Unsupported(f"symbolic size {s} is not a symbol of the inputs' shapes")
    return out


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
        return None
    _SYMBOLS = names
    try:
        with _lower._real_tensors():
            low = _lower.lower(gm, vals)
        if low.unsupported:
            node, why = next(iter(low.unsupported.items()))
            log.info("tensorgraph.torch: %d node(s) need concrete sizes (%s: %s); compiled per shape",
                     len(low.unsupported), node.name, why)
            return None
        runner = _lower.Runner(low, device, precision, memory_budget_bytes, symbolic=True)
    except Exception as e:  # noqa: BLE001 (whatever fails here: the per-shape path, never a crash)
        log.info("tensorgraph.torch: symbolic sizes not compiled once (%s: %s); compiled per shape",
                 type(e).__name__, e)
        return None
    finally:
        _SYMBOLS = None
    runner.symbols = sorted(names.values())
    return runner
