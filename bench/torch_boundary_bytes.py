"""Bytes a training step copies across TensorGraph's run boundary (tensorgraph.torch, CPU).

A torchvision ResNet (eval-mode batch norm, so the whole step converts on PyTorch 1.13) runs its
forward and backward ATen graphs through functorch's AOTAutograd with tensorgraph.torch's
compilers (the ones `backend` uses). After two warm-up steps it prints, per step, TensorGraph's
runtime counters (runs, bytes copied into input slots, bytes of results copied out of an arena),
the bytes of the forward's results and the backward's feeds (the saved activations cross there),
the transposes left in each graph, and the gradients' largest difference from eager PyTorch.

    PYTHONPATH=build/python python3 bench/torch_boundary_bytes.py [--model resnet18] [--batch 8]
        [--size 32] [--steps 3]
"""
import argparse
import copy
import json

import torch
import torchvision
from functorch.compile import aot_module

import tensorgraph
from tensorgraph.torch import _lower
from tensorgraph.torch._backend import decompositions, make_compiler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    runners = []
    real = _lower.Runner.__init__

    def spy(self, *args, **kw):
        real(self, *args, **kw)
        runners.append(self)
        run = self._run

        def tg_run(ins, **kw2):  # TensorGraph's own results (what a run used to copy out)
            outs = run(ins, **kw2)
            if counting:
                tg_bytes[id(self)] = tg_bytes.get(id(self), 0) + sum(o.nbytes for o in outs)
            return outs
        self._run = tg_run
    _lower.Runner.__init__ = spy
    tg_bytes = {}  # runner -> bytes of TensorGraph results while counting
    addresses, same = {}, {}  # runner -> its results' data_ptrs; (kept, results) over the last step
    seen = {}  # runner -> [calls, bytes of tensor feeds, bytes of results] while counting
    call = _lower.Runner.__call__

    def count(self, *args):
        outs = call(self, *args)
        if counting:
            flat = outs if isinstance(outs, (list, tuple)) else [outs]
            c = seen.setdefault(id(self), [0, 0, 0])
            c[0] += 1
            c[1] += sum(v.numel() * v.element_size() for v in args if isinstance(v, torch.Tensor))
            c[2] += sum(v.numel() * v.element_size() for v in flat if isinstance(v, torch.Tensor))
            ptrs = [v.data_ptr() for v in flat if isinstance(v, torch.Tensor)]
            last = addresses.get(id(self))
            if last is not None:  # results at the address of the same result one step before
                kept = sum(p == q for p, q in zip(ptrs, last))
                same[id(self)] = (kept, len(ptrs))
            addresses[id(self)] = ptrs
        return outs
    _lower.Runner.__call__ = count
    counting = False
    torch.manual_seed(0)
    net = getattr(torchvision.models, a.model)(num_classes=10).eval()
    ref = copy.deepcopy(net)
    comp = make_compiler("f32")
    model = aot_module(net, fw_compiler=comp, bw_compiler=comp, decompositions=decompositions())
    x, t = torch.randn(a.batch, 3, a.size, a.size), torch.randint(0, 10, (a.batch,))
    keys = ["runs", "interpreted_runs", "graph_launches", "input_copy_bytes", "result_copy_bytes"]

    def step(m):
        m.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(m(x), t).backward()
    for _ in range(2):
        step(model)
    before = tensorgraph.runtime_stats()
    counting = True
    for _ in range(a.steps):
        step(model)
    counting = False
    after = tensorgraph.runtime_stats()
    step(ref)
    per_step = {k: (after.get(k, 0) - before.get(k, 0)) / a.steps for k in keys}
    io = [[round(v / a.steps) for v in seen.get(id(r), [0, 0, 0])] for r in runners]
    diff = max(float((p.grad - q.grad).abs().max()) for p, q in zip(net.parameters(), ref.parameters()))
    print("RESULT", json.dumps({
        "model": a.model, "batch": a.batch, "size": a.size, "graphs": len(runners),
        "per_step": per_step,
        "per_graph_calls_feed_bytes_result_bytes": io,
        "per_graph_tg_result_bytes": [round(tg_bytes.get(id(r), 0) / a.steps) for r in runners],
        "per_graph_results_at_last_steps_address": [same.get(id(r)) for r in runners],
        "transposes": [str(r.exe).count("transpose") for r in runners],
        "max_grad_diff": diff}))


if __name__ == "__main__":
    main()
