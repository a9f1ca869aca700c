"""compile_module: PyTorch >= 1.13 without torch.compile (tensorgraph.torch.compile_module)."""
import logging

from ._lower import compile_graph

log = logging.getLogger("tensorgraph.torch")


def _flat_inputs(example_inputs, torch):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


def compile_module(torch, model, example_inputs, device, precision, memory_budget_bytes):
    from torch.fx.experimental.proxy_tensor import make_fx

    inputs = _flat_inputs(example_inputs, torch)
    if device is None:
        device = str(inputs[0].device) if inputs else "cpu"
    # Traced with gradients on: modules with fused inference fast paths (nn.TransformerEncoder's
    # _transformer_encoder_layer_fwd) then record their decomposed ATen ops. Nothing is
    # differentiated; parameters are read as constants.
    with torch.enable_grad():
        gm = make_fx(lambda *a: model(*a))(*inputs)

    class TensorGraphModule(torch.nn.Module):
        """`model`'s forward on TensorGraph (see tensorgraph.torch.compile_module)."""

        def __init__(self):
            super().__init__()
            self.graph_module = gm
            self.device = device
            self._cache = {}
            self.nodes_left_to_pytorch = 0
            self.unsupported = {}
            # The parameters and buffers compiled in as constants (_freeze.py's guard: a change
            # recompiles; after MAX_REFRESHES they are fed each call).
            from ._freeze import Guard, MAX_REFRESHES
            self._attrs = [n for n in gm.graph.nodes if n.op == "get_attr"]
            self._guard = Guard([_attr(gm, n.target) for n in self._attrs
                                 if isinstance(_attr(gm, n.target), torch.Tensor)])
            self._max_refreshes, self.refreshes, self._attr_feeds = MAX_REFRESHES, 0, False
            self._compile(inputs)

        def _compile(self, args):
            key = tuple((tuple(a.shape), a.dtype, a.device) for a in args)
            fn = self._cache.get(key)
            if fn is None:
                fn = compile_graph(gm, args, device, precision, memory_budget_bytes, attr_feeds=self._attr_feeds)
                self._cache[key] = fn
                self.nodes_left_to_pytorch = fn.nodes_left_to_pytorch
                self.unsupported = dict(fn.unsupported)
            return fn

        def _refresh(self):
            from ._freeze import Guard
            self.refreshes += 1
            self._cache.clear()
            if self.refreshes > self._max_refreshes:
                log.warning("tensorgraph.torch: the module's parameters changed again; they are fed each call "
                            "from now on")
                self._attr_feeds = True
                self._guard = None
            else:
                log.info("tensorgraph.torch: recompiling with the module's new parameter values")
                self._guard = Guard(self._guard.objs)

        def forward(self, *args):
            if any(isinstance(a, torch.Tensor) and a.numel() == 0 for a in args):
                # An empty batch runs in PyTorch: learning a new shape replays the traced ATen
                # graph eagerly (_lower.example_values), and torch 1.13's CPU native_batch_norm
                # divides by zero on an empty input there (SIGFPE), where the module's own forward
                # returns an empty result.
                with torch.no_grad():
                    return model(*args)
            if self._guard is not None and not self._guard.holds():
                self._refresh()
            with torch.no_grad():
                return self._compile(args)(*args)

    return TensorGraphModule()


def _attr(gm, target):
    t = gm
    for part in target.split("."):
        t = getattr(t, part)
    return t
