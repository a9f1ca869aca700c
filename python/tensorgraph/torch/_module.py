"""compile_module: PyTorch >= 1.13 without torch.compile (tensorgraph.torch.compile_module)."""
from ._lower import compile_graph


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
            self._compile(inputs)

        def _compile(self, args):
            key = tuple((tuple(a.shape), a.dtype, a.device) for a in args)
            fn = self._cache.get(key)
            if fn is None:
                fn = compile_graph(gm, args, device, precision, memory_budget_bytes)
                self._cache[key] = fn
                self.nodes_left_to_pytorch = fn.nodes_left_to_pytorch
                self.unsupported = dict(fn.unsupported)
            return fn

        def forward(self, *args):
            with torch.no_grad():
                return self._compile(args)(*args)

    return TensorGraphModule()
