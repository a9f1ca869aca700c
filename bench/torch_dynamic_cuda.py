"""torch.compile(dynamic=True) with tensorgraph.torch.backend on a GPU (issue 22, deliverable 2):
torchvision ResNet-50 over batch sizes and Hugging Face BERT-base (random weights) over sequence
lengths, inference, TF32. Per size: the largest relative difference from eager, the TensorGraph
compiles since the first call (0: the compile-once executable of the first call served it; a
graph that needs concrete sizes is compiled per shape instead, _symbolic.py), the first call's
seconds and the milliseconds per call against eager. RESULT lines; run by scripts/gpu-torch-check
with DYNAMIC=1. Usage: python3 bench/torch_dynamic_cuda.py [--models resnet50,bert]"""
import argparse
import logging
import time

import torch

import tensorgraph
import tensorgraph.torch as tgt
from torch_backend_cuda import result, timed  # the same protocol as the batch-1 rows (this folder)


def check(name, model, make_inputs, sizes, out_of):
    torch._dynamo.reset()
    tgt.backend_stats(reset=True)
    compiled = torch.compile(model, backend=tgt.backend, dynamic=True)
    stats = tensorgraph.runtime_stats
    with torch.no_grad():
        for k, size in enumerate(sizes):
            inputs = make_inputs(size)
            t = time.time()
            got = out_of(compiled(*inputs))
            first_s = round(time.time() - t, 2)
            if k == 0:
                base = stats()["compiles"]
            ref = out_of(model(*inputs))
            rel = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
            result(f"{name}.{size}.max_rel_diff_vs_eager", f"{rel:.3e}")
            result(f"{name}.{size}.tg_compiles_since_first_call", stats()["compiles"] - base)
            result(f"{name}.{size}.first_call_s", first_s)
            result(f"{name}.{size}.tg_ms", round(timed(lambda: compiled(*inputs)), 3))
            result(f"{name}.{size}.eager_ms", round(timed(lambda: model(*inputs)), 3))
    s = tgt.backend_stats()
    from tensorgraph.torch._backend import Stats
    kinds = [type(getattr(r(), "fn", None)).__name__ for r in Stats.compiled if r() is not None]
    result(f"{name}.compiled_as", ",".join(kinds))  # Runner: compiled once; PerShape: per shape
    result(f"{name}.graphs", s["graphs"])
    result(f"{name}.nodes_left_to_pytorch", s["nodes_left_to_pytorch"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet50,bert")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
    logging.getLogger("tensorgraph.torch").setLevel(logging.INFO)
    logging.getLogger("torch").setLevel(logging.WARNING)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    if "resnet50" in args.models:
        import torchvision
        r50 = torchvision.models.resnet50().cuda().eval()
        check("resnet50", r50, lambda n: (torch.randn(n, 3, 224, 224, device="cuda"),), (2, 4, 8, 3), lambda o: o)
    if "bert" in args.models:
        from transformers import BertConfig, BertModel
        bert = BertModel(BertConfig()).cuda().eval()
        check("bert", bert, lambda s: (torch.randint(0, 30522, (1, s), device="cuda"),), (32, 64, 128, 96),
              lambda o: o.last_hidden_state)


if __name__ == "__main__":
    main()
