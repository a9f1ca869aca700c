"""torch.compile backend (PyTorch >= 2): Dynamo graph -> AOTAutograd -> ATen graphs -> TensorGraph.

The forward and backward graphs AOTAutograd produces are each converted and compiled with
_lower.compile_graph; PyTorch's own decompositions first rewrite the backward ops the converter
table does not cover (DECOMPOSED) into ops it does. Parameters are graph inputs: training graphs
feed them each call through DLPack (they stay PyTorch tensors, optimizers unchanged); inference
graphs compile them in as guarded constants (_freeze.py).
"""
import logging

from ._lower import compile_graph

log = logging.getLogger("tensorgraph.torch")

# Ops rewritten by torch._decomp before conversion (backward and composite ops).
DECOMPOSED = ("native_layer_norm_backward", "gelu_backward", "silu_backward", "embedding_dense_backward",
              "hardswish_backward", "hardsigmoid_backward", "leaky_relu_backward", "elu_backward",
              "native_dropout_backward", "mse_loss", "mse_loss_backward", "logsumexp", "var_mean",
              "addcmul", "addcdiv", "lerp", "log_sigmoid_forward", "nll_loss2d_forward",
              "nll_loss2d_backward", "binary_cross_entropy", "binary_cross_entropy_backward", "softplus",
              "softplus_backward", "split_with_sizes_copy", "unbind_copy")


def decompositions():
    """The decomposition table given to AOTAutograd (see DECOMPOSED)."""
    import torch
    from torch._decomp import get_decompositions
    ops = [getattr(torch.ops.aten, n) for n in DECOMPOSED if hasattr(torch.ops.aten, n)]
    return get_decompositions(ops)


def _precision(explicit):
    """The compile precision: explicit, else bf16/f16 under torch.autocast, else tf32 when PyTorch
    allows TF32 matmuls, else f32."""
    import torch
    if explicit:
        return explicit
    try:
        on = torch.is_autocast_enabled("cuda")
        dt = torch.get_autocast_dtype("cuda") if on else None
    except TypeError:  # PyTorch < 2.4: no device argument
        on = torch.is_autocast_enabled()
        dt = torch.get_autocast_gpu_dtype() if on else None
    if on:
        return "bf16" if dt == torch.bfloat16 else "f16"
    if torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return "f32"


def _device(example_inputs):
    import torch
    for a in example_inputs:
        if isinstance(a, torch.Tensor) and a.device.type == "cuda":
            return f"cuda:{a.device.index or 0}"
    return "cpu"


class Stats:
    """What the backend compiled in this process: graphs, nodes left to PyTorch (op -> count), and
    the compiled callables (frozen_inputs: how many inputs their calls compiled in as constants)."""
    graphs = 0
    nodes_left_to_pytorch = 0
    unsupported = {}
    compiled = []  # weak references to the Compiled callables
    channels_last_outputs = 0  # saved activations handed back NHWC (docs/design/0010 step 3)
    channels_last_feeds = 0  # inputs fed NHWC
    stand_in_outputs = 0  # max-pool indices only the backward gets (and never reads): not computed
    unread_inputs = 0  # such indices a backward graph does not take

    @classmethod
    def reset(cls):
        cls.graphs, cls.nodes_left_to_pytorch, cls.unsupported, cls.compiled = 0, 0, {}, []
        cls.channels_last_outputs = cls.channels_last_feeds = cls.stand_in_outputs = cls.unread_inputs = 0

    @classmethod
    def frozen_inputs(cls):
        return sum(getattr(getattr(r(), "fn", None), "frozen_count", 0) for r in cls.compiled)


def static_input_predicate(gm, positions=()):
    """The predicate (tensor, position) -> bool telling a call's parameters and buffers from its
    activations: nn.Parameter objects, tensors Dynamo marked static (its inlined modules'
    parameters and buffers carry `_dynamo_static_input_type`), the Dynamo graph's own parameters
    and buffers (AOTAutograd lifts them to inputs of the ATen graph), and the `positions`
    AOTAutograd's metadata lists as static inputs. A wrong guess costs recompiles, never a stale
    value (_freeze.Frozen holds the compiled-in tensors' storage, so no other tensor can come at
    their addresses)."""
    import torch
    own = [*gm.parameters(), *gm.buffers()] if isinstance(gm, torch.nn.Module) else []
    ids = {id(t) for t in own}
    positions = frozenset(positions)

    def is_static(t, i=None):
        return (isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None
                or id(t) in ids or i in positions)
    is_static.keep = own  # the ids stay theirs while the predicate lives
    return is_static


def _aot_static_positions():
    """AOTAutograd's static input indices (parameters, buffers) of the graph being compiled, when
    this PyTorch records them (fw_metadata.static_input_indices, PyTorch >= 2.4), else ()."""
    try:
        from torch._guards import TracingContext
        ctx = TracingContext.try_get()
        return tuple(getattr(getattr(ctx, "fw_metadata", None), "static_input_indices", None) or ())
    except Exception:  # noqa: BLE001 (an internal API: absent or changed means no hint)
        return ()


def _aot_saved_slice():
    """The forward graph's outputs that AOTAutograd saves for the backward (a slice of its flat
    outputs: fw_metadata.tensors_saved_for_backwards_slice), else None: an older PyTorch, effect
    tokens among the outputs, or TG_TORCH_NHWC_SAVED=0."""
    import os
    if os.environ.get("TG_TORCH_NHWC_SAVED", "") == "0":
        return None
    try:
        from torch._guards import TracingContext
        meta = getattr(TracingContext.try_get(), "fw_metadata", None)
        if meta is None or getattr(meta, "tokens", None):
            return None
        sl = meta.tensors_saved_for_backwards_slice
        return sl if isinstance(sl, slice) else None
    except Exception:  # noqa: BLE001 (an internal API: absent or changed means no hint)
        return None


def make_compiler(precision=None, memory_budget_bytes=0, freeze=None, role=None, saved_slice=None):
    """An AOTAutograd graph compiler (fw, bw or inference): gm, example_inputs -> callable.
    freeze: positions -> the predicate of inputs compiled in as constants (inference graphs;
    _freeze.py), positions being AOTAutograd's static input indices. role 'forward': the outputs
    saved for the backward may be handed back channels-last; 'backward': channels-last inputs are
    fed NHWC (docs/design/0010 step 3; saved_slice: the forward's saved outputs, default
    AOTAutograd's metadata)."""
    def compiler(gm, example_inputs):
        import weakref
        prec = _precision(precision)
        pred = freeze(_aot_static_positions()) if freeze else None
        saved = (saved_slice or _aot_saved_slice()) if role == "forward" else None
        fn = compile_graph(gm, example_inputs, _device(example_inputs), prec, memory_budget_bytes,
                           freeze=pred, saved_outputs=saved, nhwc_inputs=role == "backward")
        Stats.compiled.append(weakref.ref(fn))
        Stats.graphs += 1
        Stats.nodes_left_to_pytorch += fn.nodes_left_to_pytorch
        Stats.channels_last_outputs += len(getattr(fn.fn, "nhwc_outputs", ()))
        Stats.channels_last_feeds += len(getattr(fn.fn, "_nhwc_feeds", ()))
        Stats.stand_in_outputs += len(getattr(fn.fn, "zero_outputs", ()))
        Stats.unread_inputs += getattr(fn.fn, "unread_inputs", 0)
        for k, v in fn.unsupported.items():
            Stats.unsupported[k] = Stats.unsupported.get(k, 0) + v

        def boxed(args):  # AOTAutograd's boxed convention: the list is ours to clear (frees inputs early)
            a = list(args)
            args.clear()
            return fn(*a)
        boxed._boxed_call = True
        boxed.nodes_left_to_pytorch = fn.nodes_left_to_pytorch
        return boxed
    return compiler


def backend(gm, example_inputs, precision=None, memory_budget_bytes=0, freeze=False):
    """See tensorgraph.torch.backend."""
    from torch._dynamo.backends.common import aot_autograd
    # The precision is read when each graph compiles (inside the caller's autocast region).
    forward = make_compiler(precision, memory_budget_bytes, role="forward")
    backward = make_compiler(precision, memory_budget_bytes, role="backward")
    static = (lambda positions: static_input_predicate(gm, positions)) if freeze else None
    inference = make_compiler(precision, memory_budget_bytes, static)
    return aot_autograd(fw_compiler=forward, bw_compiler=backward, inference_compiler=inference,
                        decompositions=decompositions())(gm, example_inputs)
