"""Saved activations across a training step's forward/backward boundary (docs/design/0010 step 3)
and the max-pool indices only the backward gets: which saved outputs cross channels-last
(layout_pass_on, _layout_derived), the strides reported to AOTAutograd, the indices handed over
as a stand-in (_unread_indices) and not fed to the backward (_only_pool_backward_indices), and the
fallback that computes them again where PyTorch runs the pooling's backward (_IndicesFromInput),
and for symbolic sizes the stand-in that is not built (ZeroIndices).
Used by _lower.compile_graph, lower and Runner."""
from ._registry import Unavailable, Unsupported


def _op_name(target):
    from ._lower import op_name
    return op_name(target)


def _is_tensor(v):
    import torch
    return isinstance(v, torch.Tensor)


def is_channels_last(t):
    """Whether torch tensor (or fake tensor) t is 4-d with channels-last strides and not also
    contiguous (an NCHW view of NHWC memory, e.g. `y.permute(0, 3, 1, 2)` of a contiguous y)."""
    import torch
    return (_is_tensor(t) and t.dim() == 4 and not t.is_contiguous()
            and t.is_contiguous(memory_format=torch.channels_last))


def _only_pool_backward_indices(node):
    """Whether every user of placeholder `node` is max_pool2d_with_indices_backward taking it as its
    indices (argument 7) only: that converter does not read them."""
    users = list(node.users)
    return bool(users) and all(
        _op_name(u.target) == "aten::max_pool2d_with_indices_backward" and len(u.args) > 7 and u.args[7] is node
        and node not in u.args[:7] and node not in u.kwargs.values() for u in users)


class _IndicesFromInput:
    """A graph whose max_pool2d_with_indices_backward PyTorch may run (not fully converted) called
    with the forward's zero-strided stand-in indices (_unread_indices): the indices are computed
    first from the pooling's saved input, so PyTorch's kernel reads the real ones."""

    def __init__(self, fn, fixes):
        self.fn, self.fixes = fn, fixes

    @classmethod
    def wrap(cls, fn, gm):
        pos = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
        fixes = [(pos[u.args[7]], pos[u.args[1]], tuple(u.args[2:7])) for u in gm.graph.nodes
                 if u.op == "call_function" and _op_name(u.target) == "aten::max_pool2d_with_indices_backward"
                 and len(u.args) > 7 and u.args[7] in pos and u.args[1] in pos]
        return cls(fn, fixes) if fixes else fn

    def __call__(self, *args):
        import torch
        for i, x, (k, s, p, d, ceil) in self.fixes:
            t = args[i]
            if isinstance(t, torch.Tensor) and t.numel() > 1 and not any(t.stride()):
                args = list(args)
                args[i] = torch.ops.aten.max_pool2d_with_indices.default(args[x], k, s, p, d, ceil)[1]
        return self.fn(*args)


_NHWC_OPS = ("aten::convolution", "aten::_convolution", "aten::conv2d", "aten::max_pool2d_with_indices",
             "aten::max_pool2d", "aten::avg_pool2d", "aten::convolution_backward",
             "aten::max_pool2d_with_indices_backward", "aten::avg_pool2d_backward")


def _layout_derived(gm):
    """The nodes of gm the layout pass holds NHWC: a convolution's or pooling's data input
    (transposed to NHWC for it, e.g. the cast of the input image) and result, and what is computed
    from such results: activations, not parameters or their casts (a convolution's weights keep
    their layout, so their NHWC transpose would be a real one)."""
    derived = set()
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        name = _op_name(n.target)
        if name in _NHWC_OPS or any(m in derived for m in n.all_input_nodes):
            derived.add(n)
        if name in _NHWC_OPS:  # data inputs: (x, w, ...) forward, (dy, x, ...) backward
            data = n.args[:2] if name.endswith("_backward") else n.args[:1]
            derived.update(a for a in data if hasattr(a, "op") and a.op == "call_function")
    return derived


def layout_pass_on(gm, vals, device):
    """Whether compile's layout pass will run gm's convolutions NHWC (runtime::layout_pass_pays on
    the FX graph): TG_CHANNELS_LAST when set ("0": off); else, with any 2-D convolution
    (forward or convolution_backward), on the CPU always, on CUDA when every one is dense
    (groups 1), not float64, with a batch of at least 32."""
    import os
    forced = os.environ.get("TG_CHANNELS_LAST", "")
    if forced:
        return forced != "0"
    any_conv = False
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        name = _op_name(n.target)
        if name in ("aten::convolution", "aten::_convolution"):
            transposed, groups = n.args[6] if len(n.args) > 6 else False, n.args[8] if len(n.args) > 8 else 1
        elif name == "aten::convolution_backward":
            transposed, groups = n.args[7] if len(n.args) > 7 else False, n.args[9] if len(n.args) > 9 else 1
        else:
            continue
        x = vals.get(n.args[0])
        if transposed or not _is_tensor(x) or x.dim() != 4:
            continue
        any_conv = True
        if not str(device).startswith("cuda"):
            break
        if groups != 1 or int(x.shape[0]) < 32 or str(x.dtype) == "torch.float64":
            return False
    return any_conv


def _unread_indices(gm, low, saved):
    """Positions of gm's flat outputs that are max-pool indices which only the backward gets (every
    occurrence in `saved`, no other user in gm) and whose backward converter routes by the forward
    input: they are handed over as zero-strided stand-ins, not computed (docs/torch.md). A backward
    that leaves that op to PyTorch computes them again from the saved input (_IndicesFromInput)."""
    saved = set(saved)
    out = []
    for i, n in enumerate(low.output):
        if n not in low.pool_indices or i not in saved:
            continue
        if any(u.op != "output" for u in n.users):
            continue
        if all(j in saved for j, m in enumerate(low.output) if m is n):
            out.append(i)
    return out


def _report_output_strides(low, vals, nhwc_outputs, zero_outputs=()):
    """Tells AOTAutograd the strides of the forward's outputs (TracingContext.output_strides, as
    Inductor does): channels-last for `nhwc_outputs`, the traced ones for the others. AOTAutograd
    restrides the backward graph's placeholders with them, so the backward compiles for the
    channels-last saved activations it will get. No-op where PyTorch has no such context."""
    try:
        from torch._guards import TracingContext
        ctx = TracingContext.try_get()
    except ImportError:
        return
    strides = getattr(ctx, "output_strides", None)
    if strides is None:
        return
    cl, zero = set(nhwc_outputs), set(zero_outputs)
    for i, n in enumerate(low.output):
        v = vals.get(n) if n is not None and hasattr(n, "op") else None
        if not _is_tensor(v):
            strides.append(None)
        elif i in zero:
            strides.append((0,) * v.dim())
        elif i in cl:
            _, c, h, w = (int(d) for d in v.shape)
            strides.append((h * w * c, 1, w * c, c))
        else:
            strides.append(tuple(int(d) for d in v.stride()))


class ZeroIndices(Unavailable):
    """Max-pool indices of symbolic size in a compile-once lowering (not built: TensorGraph cannot
    name their sizes' arithmetic), handed over as zeros when only the backward gets them (the
    backward's converter routes by the forward input: _saved._unread_indices). `like`: the pooled
    output, which has their shape."""

    def __init__(self, like):
        super().__init__("max_pool2d indices (symbolic sizes)")
        self.like = like

    def shape_spec(self, size_of):
        """Each dim of the shape as a size, or (argument, axis, a, b, c): floor((a * that fed
        tensor's size + b) / c). size_of: symbol name -> (argument, axis) of a fed tensor."""
        out = []
        for axis, d in enumerate(self.like.shape):
            if isinstance(d, int):
                out.append(d)
                continue
            e = self.like.dim_expr(axis)
            base, a, b, c = (e[0], e[1], e[2], e[3]) if e is not None else (d, 1, 0, 1)
            if base not in size_of:
                raise Unsupported(f"max-pool indices of size {d}, which no fed tensor gives")
            out.append(size_of[base] + (a, b, c))
        return tuple(out)

    @staticmethod
    def shape_at(spec, args):
        return tuple(d if isinstance(d, int) else (d[2] * int(args[d[0]].shape[d[1]]) + d[3]) // d[4] for d in spec)
