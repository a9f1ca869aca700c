"""PyTorch models on TensorGraph (docs/torch.md).

    import tensorgraph.torch as tgt
    fast = tgt.compile_module(model.eval(), (x,))       # PyTorch >= 1.13, inference
    fast(x)                                              # forward runs on TensorGraph
    fast.nodes_left_to_pytorch                           # 0 when every ATen op converted

    model = torch.compile(model, backend=tgt.backend)    # PyTorch >= 2: inference and training

Graphs of ATen ops (captured by ``torch.fx.experimental.proxy_tensor.make_fx``, or given by
``torch.compile`` through AOTAutograd) are converted op by op with one converter table
(``supported_ops_markdown()`` prints it); tensors cross through DLPack. Importing this module
does not import torch; the functions raise ImportError when torch is missing.
"""
from ._registry import CONVERTERS, Unsupported, supported_ops_markdown  # noqa: F401


def _require_torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover (torch is installed where the tests run)
        raise ImportError("tensorgraph.torch needs PyTorch (Debian: apt-get install python3-torch)") from e
    return torch


def compile_module(model, example_inputs, device=None, precision="f32", memory_budget_bytes=0):
    """Returns an ``nn.Module`` whose forward runs `model` (inference) on TensorGraph.

    model: a callable (usually an ``nn.Module`` in eval mode); example_inputs: a tensor or tuple of
    tensors with the shapes and dtypes of later calls (static shapes: another shape recompiles).
    The model is traced to ATen ops with ``make_fx``; parameters and buffers become TensorGraph
    constants, guarded: one whose address or version counter changed (an in-place update,
    ``load_state_dict``) recompiles with its new value before the next call, and after two such
    recompiles they are fed each call (writes through ``tensor.data`` are not seen). device: 'cpu', 'cuda', 'cuda:N' (default: the inputs'
    device); precision: 'f32', 'tf32', 'bf16' or 'f16' (conv and matmul on CUDA);
    memory_budget_bytes: TensorGraph's CompileOptions bound on its arenas (0: unbounded).
    Ops without a converter stay in PyTorch (a graph break, one log line names them);
    ``.nodes_left_to_pytorch`` counts them and ``.unsupported`` maps op name -> count.
    Raises ImportError without torch.
    """
    torch = _require_torch()
    from ._module import compile_module as impl
    return impl(torch, model, example_inputs, device, precision, memory_budget_bytes)


def backend(gm, example_inputs, **options):
    """``torch.compile`` backend (PyTorch >= 2): ``torch.compile(model, backend=tensorgraph.torch.backend)``.

    Each Dynamo graph goes through AOTAutograd: the forward (and, when gradients are needed, the
    backward) ATen graph is converted and compiled for the inputs' device, and runs ordered on
    PyTorch's current CUDA stream; in training graphs parameters stay PyTorch tensors fed each call
    through DLPack (optimizers unchanged). Under
    ``torch.autocast`` the casts are in the graph and bf16/f16 convolutions and matmuls compile at
    that precision; float32 ones at 'tf32' when ``torch.backends.cuda.matmul.allow_tf32`` is set.
    freeze=True (opt-in, like Inductor's ``freezing``): inference graphs (no gradients needed)
    compile the model's parameters and buffers in as constants on their first call (batch norm's
    scale and shift are computed once; a call feeds only the activations), guarded: a parameter
    or buffer whose address or version counter changed (an in-place update, ``load_state_dict``)
    recompiles with its new value before the call; one that keeps changing is fed each call after
    two recompiles. Writers that bypass the version counter are NOT seen: ``tensor.data`` writes,
    and optimizers writing raw memory (apex/DeepSpeed fused optimizers, parameters re-pointed into a
    flat buffer); the constants also hold a second copy of the weights on the device. Default
    (False): parameters are fed each call. Training graphs always feed them.
    Options (``functools.partial(backend, ...)``): precision, memory_budget_bytes, freeze.
    Shapes: a graph Dynamo traced for fixed sizes recompiles for a new shape; one with symbolic
    sizes (``dynamic=True``, or Dynamo's automatic dynamic shapes after a second size) is one
    compile-once executable for every size when all its nodes convert with them, else it
    compiles per shape (one INFO line on logger ``tensorgraph.torch`` says which; docs/torch.md).
    """
    torch = _require_torch()
    if not hasattr(torch, "compile"):
        raise ImportError(f"tensorgraph.torch.backend needs torch.compile (PyTorch >= 2; this is {torch.__version__}): "
                          "use tensorgraph.torch.compile_module")
    from ._backend import backend as impl
    return impl(gm, example_inputs, **options)


def check_device_errors():
    """Raises a device-side error that a call on a CUDA device found and has not raised yet.

    Values are checked on the device where only the device knows them (an embedding's or
    gather's index out of range). As PyTorch's device-side asserts, such an error does not stop
    the call that found it (no host wait per call): that call's outputs, and those of later calls
    of the same graph until the error is raised, are not valid (a bad index reads as 0). The
    error, a ``tensorgraph.Error`` naming the op, the index and its position, is raised by the
    next call of the same compiled graph, or here (this waits for the device); one still unraised
    at interpreter exit is logged (logger ``tensorgraph.torch``, level ERROR).
    ``TG_TORCH_DEFERRED_ERRORS=0`` makes every call wait and raise its own error instead.
    """
    from ._lower import check_device_errors as impl
    impl()


def backend_stats(reset=False):
    """{'graphs', 'nodes_left_to_pytorch', 'unsupported': {op: count}, 'frozen_inputs',
    'channels_last_outputs', 'channels_last_feeds', 'stand_in_outputs', 'unread_inputs'} over the
    graphs ``backend`` compiled in this process (reset with ``backend_stats(reset=True)``);
    frozen_inputs counts the inputs (parameters, buffers) live graphs compiled in as constants;
    channels_last_outputs / _feeds the saved activations forward graphs hand back NHWC and
    backward graphs take NHWC (docs/design/0010 step 3); stand_in_outputs / unread_inputs the
    max-pool indices forward graphs hand over uncomputed and backward graphs do not take."""
    from ._backend import Stats
    out = {"graphs": Stats.graphs, "nodes_left_to_pytorch": Stats.nodes_left_to_pytorch,
           "unsupported": dict(Stats.unsupported), "frozen_inputs": Stats.frozen_inputs(),
           "channels_last_outputs": Stats.channels_last_outputs, "channels_last_feeds": Stats.channels_last_feeds,
           "stand_in_outputs": Stats.stand_in_outputs, "unread_inputs": Stats.unread_inputs}
    if reset:
        Stats.reset()
    return out
