"""The one converter table ATen op -> TensorGraph op builder (docs/torch.md lists it).

Each converter is registered under the ATen op's schema name (``aten::convolution``) and covers
all its overloads; in-place variants (``aten::relu_``) share the out-of-place converter when
registered with ``inplace=True``. A converter is called as ``fn(ctx, *args, **kwargs)`` where the
FX node's tensor arguments are TensorGraph tensors and every other argument is as in the ATen
schema; it returns a ``tensorgraph.Tensor`` or a tuple of them (multi-output ops). It raises
``Unsupported`` for an argument combination it cannot lower: that node then stays in PyTorch
(a graph break), never a wrong result. This module imports no torch.
"""

CONVERTERS = {}   # "aten::name" -> Converter
NOTES = {}        # "aten::name" -> note shown in the coverage table


class Unsupported(Exception):
    """A node the converters cannot lower (the message says why); it stays in PyTorch."""


class Unavailable:
    """An output of a multi-output op that TensorGraph does not compute (e.g. a dropout mask's
    RNG state). Consuming it raises Unsupported in the consumer, which then stays in PyTorch."""

    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f"Unavailable({self.what})"


def converter(*names, notes="", inplace=False):
    """Registers fn for the ATen ops `names` ("aten::add"); inplace=True registers "aten::add_" too."""
    def register(fn):
        for n in names:
            all_names = [n, n + "_"] if inplace else [n]
            for m in all_names:
                if m in CONVERTERS:
                    raise RuntimeError(f"two converters for {m}")
                CONVERTERS[m] = fn
                NOTES[m] = notes
        return fn
    return register


def supported_ops_markdown():
    """The coverage table of docs/torch.md (markdown), generated from CONVERTERS."""
    from . import _converters  # noqa: F401 (fills the table)
    rows = ["| ATen op | Notes |", "|---|---|"]
    for name in sorted(CONVERTERS):
        rows.append(f"| `{name}` | {NOTES[name]} |")
    return "\n".join(rows) + "\n"
