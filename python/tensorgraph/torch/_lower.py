"""FX graph of ATen ops -> TensorGraph graph, and the callables that run it.

``lower(gm, vals)`` converts every live node of `gm` with the converter table (_registry). Example
values `vals` (node -> torch tensor or fake tensor, or tuples of them) give each node's shapes and
dtypes; every converted node's result is checked against them, so a converter that would compute
another shape or dtype is treated as unsupported instead of running wrong. Nodes that cannot be
converted are reported with their reason; ``compile_graph`` then keeps them in PyTorch (a graph
break: the supported parts become TensorGraph submodules of the FX graph) and logs one line naming
them.
"""
import collections
import logging
import operator

from .. import _tensorgraph as tg
from . import _converters  # noqa: F401 (fills the table)
from ._helpers import tg_dtype, torch_dtype
from ._registry import CONVERTERS, Unavailable, Unsupported
from ._symbolic import (FxDim, compile_symbolic, dims, is_symbolic_size, same_shape, symbolic_lowering, symbolic_on,
                        tg_dims)
from ._saved import (ZeroIndices, _IndicesFromInput, _layout_derived, _only_pool_backward_indices,
                     _report_output_strides, _unread_indices, is_channels_last, layout_pass_on)

log = logging.getLogger("tensorgraph.torch")


def op_name(target):
    """'aten::convolution' for an ATen OpOverload (or packet), 'getitem' for operator.getitem."""
    if target is operator.getitem:
        return "getitem"
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return schema.name
    q = getattr(target, "_qualified_op_name", None)
    return q if q else getattr(target, "__name__", str(target))


class Context:
    """What a converter sees besides its arguments (see _registry)."""

    def __init__(self, g, node, name, out, example_args, known=None):
        self.g, self.node, self.op_name, self.out, self.example_args = g, node, name, out, example_args
        self.known = known if known is not None else {}

    def value(self, t):
        """The torch tensor a constant input `t` (a parameter or buffer compiled in) holds, else None:
        converters compute with it at compile time (batch norm's per-channel scale and shift)."""
        if not isinstance(t, tg.Tensor):
            return None
        return self.known.get((t.node_id, t.index))

    @property
    def out_dtype(self):
        return tg_dtype(self.out.dtype)

    @property
    def out_shape(self):
        return dims(self.out.shape)

    def constant(self, t):
        return constant(self.g, t)


def constant(g, t):
    """A TensorGraph constant holding the value of torch tensor t (copied into the graph)."""
    t = t.detach().cpu().contiguous()
    if str(t.dtype) == "torch.bool":
        return g.constant(t.numpy())
    tg_dtype(t.dtype)
    return g.constant(tg.from_dlpack(t))


def _mutates_input(n):
    return (n.op == "call_function" and op_name(n.target).endswith("_") and n.args
            and getattr(n.args[0], "op", None) == "placeholder")


def live_nodes(gm):
    """The nodes the output or an input mutation (aten::copy_ into a graph input) depends on."""
    out = [n for n in gm.graph.nodes if n.op == "output" or _mutates_input(n)]
    live, stack = set(out), list(out)
    while stack:
        n = stack.pop()
        for m in n.all_input_nodes:
            if m not in live:
                live.add(m)
                stack.append(m)
    return live


def _is_tensor(v):
    import torch
    return isinstance(v, torch.Tensor)


def _check(name, out, ex):
    """Raises Unsupported when a converter's result differs in shape or dtype from PyTorch's."""
    if isinstance(ex, (tuple, list)):
        if not isinstance(out, (tuple, list)) or len(out) != len(ex):
            raise Unsupported(f"{name}: converter returned {type(out).__name__}, PyTorch returns {len(ex)} values")
        for o, e in zip(out, ex):
            if isinstance(o, tg.Tensor):
                _check(name, o, e)
        return
    if is_symbolic_size(ex):  # a size of a symbolic lowering: the symbol's name
        if out != dims([ex])[0]:
            raise Unsupported(f"{name}: converted to {out!r}, PyTorch gives {ex!r}")
        return
    if isinstance(ex, (bool, int, float)) and not _is_tensor(ex):
        if out != ex:
            raise Unsupported(f"{name}: converted to {out!r}, PyTorch gives {ex!r}")
        return
    if not isinstance(out, tg.Tensor):
        raise Unsupported(f"{name}: converter returned {type(out).__name__}")
    if not _is_tensor(ex):
        raise Unsupported(f"{name}: PyTorch returns {type(ex).__name__}")
    shape, dt = dims(ex.shape), tg_dtype(ex.dtype)
    if out.dtype != dt or not same_shape(out, shape):
        raise Unsupported(f"{name}: converted to {out.dtype}{list(out.shape)}, PyTorch gives {dt}{shape}")


def _stand_in(g, ex, name):
    """Placeholders standing for an unconverted node's outputs while the rest is converted."""
    if isinstance(ex, (tuple, list)):
        return tuple(_stand_in(g, e, name) for e in ex)
    if _is_tensor(ex):
        try:
            return g.placeholder(tg_dims(dims(ex.shape)), tg_dtype(ex.dtype), name)
        except (Unsupported, tg.Error) as e:  # a size TensorGraph cannot name (an FxDim)
            return Unavailable(str(e))
    return ex


class Lowered:
    """A TensorGraph graph built from an FX graph: feeds (placeholder node, tg placeholder) in the
    FX graph's order, the output structure, and the unconverted nodes with their reasons."""

    def __init__(self):
        self.graph = tg.Graph()
        self.feeds = []
        self.env = {}
        self.unsupported = {}
        self.output = None
        self.mutations = []  # (placeholder node, tg value copied into that input after each run)
        self.attr_values = {}  # get_attr node fed at run time -> its torch tensor (attr_feeds)
        self.known = {}  # (node_id, index) of a constant -> the torch tensor it holds (Context.value)
        self.nhwc_feeds = set()  # placeholder nodes fed as their NHWC permutation (lower's nhwc_inputs)
        self.pool_indices = set()  # getitem nodes of max-pool indices the backward's converter does not read
        self.unfed_indices = set()  # placeholders only max_pool2d_with_indices_backward reads, as its indices


def lower(gm, vals, frozen=None, attr_feeds=False, nhwc_inputs=False):
    """Converts gm's live nodes; see the module docstring. frozen: {placeholder node: real torch
    tensor} compiled in as constants instead of fed (their values now: tensorgraph.torch._freeze
    guards them). Tensor attributes (get_attr) are constants, or feeds read at each call when
    attr_feeds. nhwc_inputs: a placeholder whose example value is channels-last (is_channels_last)
    is fed as its NHWC permutation and transposed to NCHW in the graph, which compile's layout pass
    cancels against its own transposes to NHWC (docs/design/0010 step 3); `low.nhwc_feeds` holds
    those placeholder nodes."""
    import torch
    frozen = frozen or {}
    low = Lowered()
    g, env = low.graph, low.env
    live = live_nodes(gm)
    low.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node in gm.graph.nodes:
        if node not in live:
            continue
        if node.op == "placeholder" and node in frozen:
            env[node] = constant(g, frozen[node])
            low.known[(env[node].node_id, env[node].index)] = frozen[node]
        elif node.op == "placeholder":
            ex = vals.get(node)
            if isinstance(ex, (bool, int, float)):  # a size: compiled in (per_shape recompiles)
                env[node] = ex
                continue
            if is_symbolic_size(ex):  # a size of a symbolic lowering: its symbol's name
                env[node] = dims([ex])[0]
                continue
            if not _is_tensor(ex):
                low.unsupported[node] = f"input {node.name} is {type(ex).__name__}, not a tensor"
                env[node] = Unavailable(f"non-tensor input {node.name}")
                continue
            if _only_pool_backward_indices(node):  # its converter routes by the forward input
                env[node] = Unavailable("max-pool indices (the backward routes by the forward input)")
                low.unfed_indices.add(node)
                continue
            nhwc = nhwc_inputs and is_channels_last(ex)
            try:
                shape = tg_dims(dims(ex.shape))
                ph = g.placeholder([shape[0], shape[2], shape[3], shape[1]] if nhwc else shape, tg_dtype(ex.dtype),
                                   node.name)
            except Unsupported as e:
                low.unsupported[node] = str(e)
                env[node] = Unavailable(str(e))
                continue
            env[node] = tg.transpose(ph, [0, 3, 1, 2]) if nhwc else ph
            if nhwc:
                low.nhwc_feeds.add(node)
            low.feeds.append((node, ph))
        elif node.op == "get_attr":
            t = gm
            for part in node.target.split("."):
                t = getattr(t, part)
            if not isinstance(t, torch.Tensor):
                env[node] = t
                continue
            try:
                if attr_feeds:
                    env[node] = g.placeholder([int(s) for s in t.shape], tg_dtype(t.dtype), node.name)
                    low.feeds.append((node, env[node]))
                    low.attr_values[node] = t
                    continue
                env[node] = constant(g, t)
                low.known[(env[node].node_id, env[node].index)] = t.detach()
            except Unsupported as e:
                low.unsupported[node] = str(e)
                env[node] = Unavailable(str(e))
        elif node.op == "call_function":
            try:
                env[node] = _convert(g, node, env, vals, low.mutations, low.known, low.pool_indices)
            except Exception as e:  # noqa: BLE001 (Unsupported, tg.Error, a converter's bug: never a crash)
                low.unsupported[node] = str(e) if isinstance(e, (Unsupported, tg.Error)) else f"{type(e).__name__}: {e}"
                env[node] = _stand_in(g, vals.get(node), node.name)
        elif node.op == "output":
            low.output = node.args[0]
        else:
            low.unsupported[node] = f"{node.op} {node.target}"
            env[node] = _stand_in(g, vals.get(node), node.name)
    return low


def _convert(g, node, env, vals, mutations, known=None, marks=None):
    name = op_name(node.target)
    if getattr(node.target, "__module__", None) == "_operator" and name != "getitem":
        # Python arithmetic on sizes (symbolic shapes made concrete for this compile).
        from torch.fx.node import map_arg
        args = map_arg(node.args, lambda n: env[n])
        if not all(isinstance(a, (bool, int, float)) for a in args):
            if is_symbolic_size(vals.get(node)):  # arithmetic on symbols: PyTorch's expression
                return dims([vals[node]])[0]      # of its result (a symbol or an FxDim)
            raise Unsupported(f"operator.{name} on {[type(a).__name__ for a in args]}")
        return node.target(*args)
    if name == "getitem":
        src, i = env[node.args[0]], node.args[1]
        elem = src[i]
        if elem is None:
            raise Unsupported(f"output {i} of {node.args[0].name} was not computed")
        if hasattr(elem, "build"):
            if marks is not None and getattr(elem, "unread_by_backward", False):
                marks.add(node)
                if symbolic_lowering():  # not built (its sizes are symbols): zeros if only the backward gets it
                    return ZeroIndices(elem.like)
            elem = elem.build()
        if isinstance(elem, Unavailable):
            raise Unsupported(f"output {i} of {node.args[0].name} is {elem.what}")
        return elem
    if name == "aten::copy_" and getattr(node.args[0], "op", None) == "placeholder":
        # An input mutation AOTAutograd keeps in the graph (batch norm's running stats): the new
        # value is computed here and copied into the PyTorch tensor after the run (Runner).
        dst, src = env[node.args[0]], env[node.args[1]]
        if not isinstance(dst, tg.Tensor) or not isinstance(src, tg.Tensor):
            raise Unsupported("copy_ of a non-tensor")
        if list(src.shape) != list(dst.shape):
            src = tg.broadcast_to(src, list(dst.shape))
        src = src if src.dtype == dst.dtype else tg.cast(src, dst.dtype)
        mutations.append((node.args[0], src))
        return src
    fn = CONVERTERS.get(name)
    if fn is None:
        raise Unsupported(f"no converter for {name}")
    if name.endswith("_") and node.args and getattr(node.args[0], "op", None) in ("placeholder", "get_attr"):
        raise Unsupported(f"{name} mutates the graph input {node.args[0].name}")
    from torch.fx.node import map_arg
    args = map_arg(node.args, lambda n: env[n])
    kwargs = map_arg(node.kwargs, lambda n: env[n])
    ex_args = map_arg(node.args, lambda n: vals.get(n))
    ctx = Context(g, node, name, vals.get(node), ex_args, known)
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "layout", "pin_memory", "memory_format")
              or name not in ("aten::_to_copy", "aten::to", "aten::clone")}
    out = fn(ctx, *args, **kwargs)
    _check(name, out, ctx.out)
    return out


def example_values(gm, example_inputs, eager=False):
    """node -> example value: node.meta['val'] where every node has one (AOTAutograd's graphs) and
    not `eager`, else the values of one eager run of gm on example_inputs (torch.fx.Interpreter)."""
    import torch
    nodes = [n for n in gm.graph.nodes if n.op in ("placeholder", "call_function", "get_attr", "call_module")]
    if not eager and all("val" in n.meta for n in nodes if n.op != "get_attr"):
        vals = {n: n.meta["val"] for n in nodes if n.op != "get_attr"}
        return vals
    vals = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            vals[n] = v
            return v

    with torch.no_grad():  # on copies: in-place ops of the graph must not touch the caller's tensors
        Recorder(gm).run(*[a.clone() if isinstance(a, torch.Tensor) else a for a in example_inputs])
    return vals


class Runner:
    """Runs a fully converted graph: torch tensors in, torch tensors out, through DLPack (no copy on
    the GPU; ordered on PyTorch's current CUDA stream). The per-call work is a DLPack handoff per
    feed and per result: which arguments are fed, where each result goes and which inputs are
    written back are worked out here, once."""

    def __init__(self, low, device, precision="f32", memory_budget_bytes=0, nhwc_outputs=(), zero_outputs=(),
                 symbolic=False):
        position = {n: i for i, n in enumerate(low.placeholders)}
        arg_feeds = [(n, ph) for n, ph in low.feeds if n.op == "placeholder"]
        attr_feeds = [(n, ph) for n, ph in low.feeds if n.op != "placeholder"]
        self.feed_positions = [position[n] for n, _ in arg_feeds]  # the args that are feeds
        self.unread_inputs = len(low.unfed_indices)  # max-pool indices the backward does not read
        # Feeds taken as their NHWC permutation (lower's nhwc_inputs): k -> True.
        self._nhwc_feeds = frozenset(k for k, (n, _) in enumerate(arg_feeds) if n in low.nhwc_feeds)
        self.attr_tensors = [low.attr_values[n] for n, _ in attr_feeds]  # then these, each call
        targets, self._slots = [], {}
        index = position
        # symbolic: the fed dims that are symbols (compile_symbolic), name -> (argument, axis).
        size_of = {}
        for n, ph in arg_feeds:
            for axis, d in enumerate(ph.shape):
                if isinstance(d, str):
                    size_of.setdefault(d, (position[n], axis))

        def spec(n):
            v = low.env[n]
            if n in index and isinstance(v, tg.Tensor):
                return ("input", index[n])
            if isinstance(v, str) and v in size_of:  # a symbolic size: read off the fed tensor
                return ("size", size_of[v])
            if isinstance(v, FxDim) and v.name in size_of:  # an expression of one: computed from it
                return ("sizeexpr", (v,) + size_of[v.name])
            if isinstance(v, (bool, int, float)):
                return ("const", v)
            if isinstance(v, tg.Tensor):
                key = (v.node_id, v.index)
                if key not in self._slots:
                    self._slots[key] = len(targets)
                    targets.append(v)
                return ("out", self._slots[key])
            raise Unsupported(f"graph output {n.name} is {v!r}")

        # Outputs handed back channels-last (nhwc_outputs: positions in a flat output): the target
        # is transpose(v, [0,2,3,1]) (the layout pass's own NHWC value when v runs NHWC) and the
        # result its permute(0, 3, 1, 2), an NCHW view with channels-last strides.
        self.nhwc_outputs = []
        flat_in = isinstance(low.output, (list, tuple))

        self.zero_outputs = []

        def nhwc_spec(i, n):
            v = low.env.get(n) if isinstance(n, torch_fx_node()) else None
            if i in zero_outputs and isinstance(v, ZeroIndices):  # symbolic sizes: the shape per call
                self.zero_outputs.append(i)
                return ("zeros_sym", v.shape_spec(size_of))
            if i in zero_outputs and isinstance(v, tg.Tensor):
                self.zero_outputs.append(i)
                return ("zeros", tuple(int(d) for d in v.shape))
            if (i not in nhwc_outputs or n in index or not isinstance(v, tg.Tensor) or len(v.shape) != 4
                    or v.dtype not in (tg.float32, tg.bfloat16, tg.float16)):
                return None
            key = ("nhwc", v.node_id, v.index)
            if key not in self._slots:
                self._slots[key] = len(targets)
                targets.append(tg.transpose(v, [0, 2, 3, 1]))
            self.nhwc_outputs.append(i)
            return ("nhwc", self._slots[key])

        from torch.fx.node import map_arg
        if (nhwc_outputs or zero_outputs) and flat_in:
            self.out_spec = type(low.output)(nhwc_spec(i, n) or map_arg(n, spec) for i, n in enumerate(low.output))
        else:
            self.out_spec = map_arg(low.output, spec)
        self.mutations = []
        for n, v in low.mutations:
            key = (v.node_id, v.index)
            if key not in self._slots:
                self._slots[key] = len(targets)
                targets.append(v)
            self.mutations.append((position[n], self._slots[key]))
        self.device = tg.Device(device)
        self._cache = [None] * (len(self.feed_positions) + len(self.attr_tensors))
        feed_types = {ph: tg.TensorType(list(ph.shape), ph.dtype) for _, ph in arg_feeds + attr_feeds}
        # Sizes used as values (_symbolic.size_scalar): fed last, each call, from the fed shapes:
        # (torch dtype, FxDim or None, argument, axis).
        self.size_feeds = []
        for ph, d in getattr(low, "size_feeds", ()):
            name = d.name if isinstance(d, FxDim) else d
            if name not in size_of:
                raise Unsupported(f"size {d} used as a value, which no fed tensor gives")
            self.size_feeds.append((torch_dtype(ph.dtype), d if isinstance(d, FxDim) else None) + size_of[name])
            feed_types[ph] = tg.TensorType([], ph.dtype)
        self.exe = low.graph.compile(feed_types, targets, device=self.device, precision=precision,
                                     memory_budget_bytes=memory_budget_bytes, disable_type_inference=symbolic)
        # The output as a flat tuple of results in order (the common case: one call, no recursion).
        flat = self.out_spec if isinstance(self.out_spec, (list, tuple)) else None
        self._flat_out = None
        self._zeros = {}  # shape -> a zero-strided int64 zero tensor of that shape (zero_outputs)
        if flat is not None and all(isinstance(o, tuple) and len(o) == 2 and o[0] in ("out", "nhwc", "zeros")
                                    for o in flat):
            self._flat_out = [o[1] for o in flat]  # result slots ("zeros": the shape)
            self._flat_kind = [o[0] for o in flat] if self.nhwc_outputs or self.zero_outputs else None
            self._flat_type = type(flat)
        self._run = self.exe.run
        if self.device.is_cuda and _deferred_errors_on():
            # No host wait per call for device checks (an embedding's index check): an error is
            # raised by this graph's next call, or check_device_errors() (docs/torch.md).
            self.exe.set_deferred_device_errors(True)
            _DEFERRED.add(self)
        if self.device.is_cuda:
            import torch
            from torch.utils.dlpack import from_dlpack
            index_ = self.device.index
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # the handle, without a Stream object
            current = raw if raw is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)

            def run(ins):
                outs = self._run(ins, cuda_stream=caller_stream(current(index_)))
                return [from_dlpack(o.__dlpack__(stream=-1)) for o in outs]
        else:
            def run(ins):
                return [_to_torch(o) for o in self._run(ins)]
        self._run_torch = run

    def __call__(self, *args):
        feed = self._feed
        if self._nhwc_feeds:
            nhwc = self._nhwc_feeds
            ins = [_to_tg(args[i].permute(0, 2, 3, 1)) if k in nhwc else feed(k, args[i])
                   for k, i in enumerate(self.feed_positions)]
        else:
            ins = [feed(k, args[i]) for k, i in enumerate(self.feed_positions)]
        if self.attr_tensors:
            n = len(ins)
            ins += [feed(n + k, t) for k, t in enumerate(self.attr_tensors)]
        if self.size_feeds:
            import torch
            for dt, fx, pos, axis in self.size_feeds:
                v = int(args[pos].shape[axis])
                ins.append(_to_tg(torch.tensor(fx.at(v) if fx is not None else v, dtype=dt)))
        outs = self._run_torch(ins)
        for pos, slot in self.mutations:
            args[pos].copy_(outs[slot])
        if self._flat_out is not None:
            if self._flat_kind is not None:
                return self._flat_type(outs[i] if k == "out" else outs[i].permute(0, 3, 1, 2) if k == "nhwc"
                                       else self._zero(i) for i, k in zip(self._flat_out, self._flat_kind))
            return self._flat_type(outs[i] for i in self._flat_out)
        return _build_output(self.out_spec, outs, args, self._zero)

    def _zero(self, shape, dense=False):
        """A stand-in for max-pool indices only the backward gets and never reads (zero_outputs):
        int64 zeros of `shape`, one element expanded (no memory, no kernel per call), or with
        `dense` a contiguous tensor (symbolic sizes: their strides are not reported to
        AOTAutograd, which expects the traced contiguous ones)."""
        if dense:
            import torch
            return torch.zeros(shape, dtype=torch.int64, device=f"cuda:{self.device.index}" if self.device.is_cuda
                               else "cpu")
        z = self._zeros.get(shape)
        if z is None:
            import torch
            dev = f"cuda:{self.device.index}" if self.device.is_cuda else "cpu"
            z = self._zeros[shape] = torch.zeros((), dtype=torch.int64, device=dev).expand(shape)
        return z

    def _feed(self, k, t):
        """Feed k as TensorData. A tensor seen as the same object at the same address on two
        consecutive calls (a parameter or buffer) keeps its DLPack view, saving the import
        (microseconds per tensor) on later calls; other tensors (activations, new each call) are
        never held past their call."""
        import weakref
        c = self._cache[k]
        same = c is not None and c[0]() is t and c[1] == t.data_ptr()
        if same and c[2] is not None:
            return c[2]
        td = _to_tg(t)
        if same and t.is_contiguous():
            self._cache[k] = (c[0], c[1], td)
        else:
            try:
                self._cache[k] = (weakref.ref(t), t.data_ptr(), None)
            except TypeError:
                self._cache[k] = None
        return td


def _deferred_errors_on():
    import os
    return os.environ.get("TG_TORCH_DEFERRED_ERRORS", "1") != "0"


class _Deferred:
    """The CUDA Runners whose device checks report asynchronously (weakly held), checked by
    check_device_errors() and once more at interpreter exit (logged there: exit cannot raise)."""

    def __init__(self):
        import weakref
        self.runners = weakref.WeakSet()
        self.hooked = False

    def add(self, runner):
        self.runners.add(runner)
        if not self.hooked:
            import atexit
            atexit.register(self.at_exit)
            self.hooked = True

    def check(self):
        for r in list(self.runners):
            r.exe.check_device_errors()

    def at_exit(self):
        for r in list(self.runners):
            try:
                r.exe.check_device_errors()
            except Exception as e:  # noqa: BLE001 (any error a run left unraised is reported)
                log.error("tensorgraph.torch: a device check failed in a call whose error was not raised yet: %s", e)


_DEFERRED = _Deferred()


def check_device_errors():
    """Waits for the device and raises the first device-side error (an out-of-range index) that
    a CUDA graph of this process found and no later call of that graph raised yet."""
    _DEFERRED.check()


def torch_fx_node():
    from torch.fx import Node
    return Node


def caller_stream(handle):
    """The cudaStream_t to give Executable.run for PyTorch's current stream `handle`. PyTorch's
    default stream is the legacy default stream, handle 0, which TensorGraph reads as "no caller
    stream" (no ordering at all): pass cudaStreamLegacy (1, as DLPack does) instead."""
    return handle or 1


def _to_tg(t):
    """A torch tensor as TensorData without a copy (DLPack; PyTorch 1.13 exports no bool over
    DLPack, so host bool tensors go through numpy). A CUDA tensor is exported without the stream
    handshake of ``__dlpack__(stream=...)`` (an event recorded and waited on per tensor): the run
    itself is ordered after the caller's current stream (Runner, cuda_stream)."""
    t = t.detach().contiguous()
    if t.device.type == "cuda":
        return tg.from_dlpack(_to_dlpack(t))
    if t.dtype.is_floating_point or str(t.dtype) != "torch.bool":
        return tg.from_dlpack(t)
    return tg.TensorData(t.numpy())


def _to_dlpack(t):
    from torch.utils.dlpack import to_dlpack
    return to_dlpack(t)


def _to_torch(o):
    """A host TensorData as a torch tensor without a copy (bool through numpy, as _to_tg)."""
    import torch
    if o.dtype == tg.bool_:
        return torch.from_numpy(o.numpy())
    return torch.from_dlpack(o)


def _build_output(spec, outs, args, zero=None):
    if isinstance(spec, tuple) and len(spec) == 2 and spec[0] in ("input", "out", "const", "nhwc", "zeros", "size",
                                                                  "sizeexpr", "zeros_sym"):
        if spec[0] == "zeros_sym":  # dense int64 zeros of this call's size (ZeroIndices)
            return zero(ZeroIndices.shape_at(spec[1], args), dense=True)
        if spec[0] == "const":
            return spec[1]
        if spec[0] == "size":
            return int(args[spec[1][0]].shape[spec[1][1]])
        if spec[0] == "sizeexpr":
            fx, pos, axis = spec[1]
            return fx.at(int(args[pos].shape[axis]))
        if spec[0] == "nhwc":
            return outs[spec[1]].permute(0, 3, 1, 2)
        if spec[0] == "zeros":
            return zero(spec[1])
        return args[spec[1]] if spec[0] == "input" else outs[spec[1]]
    if isinstance(spec, (list, tuple)):
        return type(spec)(_build_output(s, outs, args, zero) for s in spec)
    if isinstance(spec, dict):
        return {k: _build_output(v, outs, args, zero) for k, v in spec.items()}
    return spec


class Compiled:
    """The result of compile_graph: a callable with the FX graph's calling convention, and what
    stayed in PyTorch (`nodes_left_to_pytorch`, `unsupported`: op name -> count)."""

    def __init__(self, fn, unsupported):
        self.fn = fn
        self.unsupported = unsupported
        self.nodes_left_to_pytorch = sum(unsupported.values())

    def __call__(self, *args):
        return self.fn(*args)


def _blocking(low, gm):
    """The unconverted call nodes, plus producers whose needed getitem outputs did not convert."""
    bad = {n for n in low.unsupported if n.op in ("call_function", "call_module", "call_method")}
    changed = True
    while changed:
        changed = False
        for n in list(bad):
            if op_name(n.target) == "getitem":
                src = n.args[0]
                if src.op == "call_function" and src not in bad:
                    bad.add(src)
                    changed = True
        for n in gm.graph.nodes:
            if n.op == "call_function" and op_name(n.target) == "getitem" and n.args[0] in bad and n not in bad:
                bad.add(n)
                changed = True
    return bad


def compile_graph(gm, example_inputs, device, precision="f32", memory_budget_bytes=0, vals=None,
                  concrete=False, freeze=None, attr_feeds=False, saved_outputs=None, nhwc_inputs=False):
    """Compiles FX graph gm of ATen ops for `device`; returns a Compiled. Unconvertible nodes stay
    in PyTorch (graph break) and one log line names them. A graph with size inputs becomes a
    PerShape (compiled per concrete shape) unless `concrete` says vals are one call's values.
    freeze: a predicate on a call's torch tensors (parameters and buffers) whose inputs are
    compiled in as constants, guarded (_freeze.Frozen): inference graphs only. attr_feeds: tensor
    attributes are fed each call instead of compiled in (see lower).
    Saved activations across a training step (docs/design/0010 step 3): saved_outputs (a slice of
    the flat output: a forward graph's outputs that only its backward reads) are handed back
    channels-last (NHWC memory, no transpose) where compile's layout pass runs NHWC
    (layout_pass_on), and their strides reported to AOTAutograd (TracingContext.output_strides);
    nhwc_inputs: channels-last example inputs (a backward's saved activations) are fed NHWC."""
    if vals is None:
        vals = example_values(gm, example_inputs)
    if not concrete and _has_sizes(gm, vals):
        # Symbolic sizes: one compile-once executable when every node converts with them
        # (_symbolic.py), else compiled per concrete shape.
        once = (compile_symbolic(gm, vals, device, precision, memory_budget_bytes, saved_outputs)
                if symbolic_on() else None)
        return Compiled(once if once is not None else PerShape(gm, device, precision, memory_budget_bytes), {})
    if nhwc_inputs:  # the inputs' strides (AOTAutograd restrides the backward's; node.meta keeps the traced)
        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(phs) == len(example_inputs):
            vals = dict(vals)
            vals.update({n: a for n, a in zip(phs, example_inputs) if is_channels_last(a)})
    with _real_tensors():
        low = lower(gm, vals, attr_feeds=attr_feeds, nhwc_inputs=nhwc_inputs)
    bad = _blocking(low, gm)
    if not bad and not low.unsupported:
        if freeze is not None:
            from ._freeze import Frozen
            return Compiled(Frozen(gm, vals, low, device, precision, memory_budget_bytes, freeze), {})
        nhwc, zeros = (), ()
        if saved_outputs is not None and isinstance(low.output, (list, tuple)):
            saved = range(len(low.output))[saved_outputs]
            if layout_pass_on(gm, vals, device):
                derived = _layout_derived(gm)  # activations, not weights (a saved bf16 weight stays OIHW)
                nhwc = [i for i in saved if low.output[i] in derived]
            zeros = _unread_indices(gm, low, saved)
        runner = Runner(low, device, precision, memory_budget_bytes, nhwc_outputs=nhwc, zero_outputs=zeros)
        if runner.nhwc_outputs or runner.zero_outputs:
            _report_output_strides(low, vals, runner.nhwc_outputs, runner.zero_outputs)
        return Compiled(runner, {})
    counts = collections.Counter(op_name(n.target) for n in bad if op_name(n.target) != "getitem")
    if not counts:  # only inputs are unsupported (e.g. symbolic sizes): all of it stays in PyTorch
        counts = collections.Counter({"<inputs>": 1})
        log.warning("tensorgraph.torch: graph left to PyTorch: %s", "; ".join(
            f"{n.name}: {r}" for n, r in low.unsupported.items()))
        return Compiled(_IndicesFromInput.wrap(gm, gm), counts)
    reasons = {}
    for n in bad:
        if n in low.unsupported:
            reasons.setdefault(op_name(n.target), low.unsupported[n])
    log.warning("tensorgraph.torch: %d node(s) left to PyTorch (graph break): %s", sum(counts.values()),
                ", ".join(f"{k} x{v} ({reasons.get(k, 'its outputs are needed')})" for k, v in sorted(counts.items())))
    return Compiled(_IndicesFromInput.wrap(_partition(gm, bad, device, precision, memory_budget_bytes), gm), counts)


def _has_sizes(gm, vals):
    """Whether gm takes sizes as inputs (symbolic shapes: SymInt or int placeholders, or tensors of
    symbolic shape), which PerShape makes concrete at each call."""
    import torch
    sym = tuple(t for t in (getattr(torch, "SymInt", None), getattr(torch, "SymFloat", None)) if t)
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        v = vals.get(n)
        if isinstance(v, (bool, int, float) + sym):
            return True
        if _is_tensor(v) and any(not isinstance(d, int) for d in v.shape):
            return True
    return False


class PerShape:
    """A graph with size inputs (PyTorch's symbolic shapes): compiled for each call's concrete
    sizes (its example values from one eager run of the graph on those inputs), cached by input
    shapes, dtypes and size values. Compile-once executables for symbolic shapes replace this when
    TensorGraph has them."""

    def __init__(self, gm, device, precision, memory_budget_bytes):
        self.gm, self.device, self.precision, self.budget = gm, device, precision, memory_budget_bytes
        self.cache = {}

    def __call__(self, *args):
        import torch
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        fn = self.cache.get(key)
        if fn is None:
            vals = example_values(self.gm, args, eager=True)  # not node.meta's symbolic values
            fn = self.cache[key] = compile_graph(self.gm, args, self.device, self.precision, self.budget,
                                                 vals=vals, concrete=True)
        return fn(*args)


def _real_tensors():
    """A context where new torch tensors are real even inside AOTAutograd's fake tensor mode
    (converters build constants, e.g. of torch.arange)."""
    import contextlib
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
    except ImportError:
        return contextlib.nullcontext()
    return unset_fake_temporarily()


def _partition(gm, bad, device, precision, memory_budget_bytes):
    """gm with its convertible parts fused into submodules that run on TensorGraph."""
    import torch
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class Support(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return node.op == "call_function" and node not in bad

    part = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    fused = part.fuse_partitions(part.propose_partitions())
    for node in fused.graph.nodes:
        if node.op == "call_module":
            sub = getattr(fused, node.target)
            setattr(fused, node.target, _LazySubgraph(sub, device, precision, memory_budget_bytes))
    fused.recompile()
    return fused


def _make_lazy_subgraph_class():
    import torch

    class LazySubgraph(torch.nn.Module):
        """A fused part of a graph with a break: compiled on its first call (its input shapes are
        then known), again for new input shapes."""

        def __init__(self, gm, device, precision, memory_budget_bytes):
            super().__init__()
            self.gm, self.device, self.precision, self.budget = gm, device, precision, memory_budget_bytes
            self.cache = {}

        def forward(self, *args):
            key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
            fn = self.cache.get(key)
            if fn is None:
                vals = example_values(self.gm, args, eager=True)  # this call's sizes
                low = lower(self.gm, vals)
                fn = Runner(low, self.device, self.precision, self.budget) if not low.unsupported else self.gm
                self.cache[key] = fn
            return fn(*args)

    return LazySubgraph


def _LazySubgraph(gm, device, precision, budget):
    global _LAZY
    if _LAZY is None:
        _LAZY = _make_lazy_subgraph_class()
    return _LAZY(gm, device, precision, budget)


_LAZY = None
