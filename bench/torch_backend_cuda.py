"""torch.compile(backend=tensorgraph.torch.backend) on a GPU (PyTorch >= 2), issue 22's checks:

1. torchvision ResNet-50 and Hugging Face BERT-base (random weights, eval, batch 1): graph breaks
   (Dynamo's and ours), outputs vs eager (TF32 on both sides, max |diff| / max |eager|), latency
   (median of timed calls) vs torch.compile(mode="reduce-overhead") in the same process;
2. ResNet-50 training step (batch 128, 224x224, bf16 autocast, Adam): 10 steps' losses vs eager
   from the same initial weights and data, step time vs eager and vs torch.compile's default
   backend (inductor).
Each part guards itself (a failure prints its traceback and the run goes on); --budget-s skips the
peers' compiles when time runs out. Prints one "RESULT key value" line per figure.
"""
import argparse
import copy
import logging
import statistics
import time
import traceback

import torch

import tensorgraph.torch as tgt

logging.basicConfig(level=logging.WARNING)
T0 = time.time()


def result(key, value):
    print(f"RESULT {key} {value}", flush=True)


def elapsed():
    return time.time() - T0


def timed(fn, warmup=3, iters=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def dynamo_breaks():
    from torch._dynamo.utils import counters
    return sum(counters["graph_break"].values())


def inference(name, make, inputs, out_of, args):
    torch._dynamo.reset()
    tgt.backend_stats(reset=True)
    model = make().cuda().eval()
    with torch.no_grad():
        ref = out_of(model(*inputs))
        t = time.time()
        compiled = torch.compile(model, backend=tgt.backend, dynamic=False)
        got = out_of(compiled(*inputs))
        result(f"{name}.tg_compile_s", round(time.time() - t, 1))
        s = tgt.backend_stats()
        result(f"{name}.graphs", s["graphs"])
        result(f"{name}.nodes_left_to_pytorch", s["nodes_left_to_pytorch"])
        result(f"{name}.unsupported", s["unsupported"])
        result(f"{name}.dynamo_graph_breaks", dynamo_breaks())
        rel = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        result(f"{name}.max_rel_diff_vs_eager", f"{rel:.3e}")
        result(f"{name}.eager_ms", round(timed(lambda: model(*inputs)), 3))
        result(f"{name}.tg_ms", round(timed(lambda: compiled(*inputs)), 3))
        if elapsed() < args.budget_s * 0.4:
            torch._dynamo.reset()
            t = time.time()
            ro = torch.compile(model, mode="reduce-overhead", dynamic=False)
            ro(*inputs)
            ro(*inputs)
            result(f"{name}.reduce_overhead_compile_s", round(time.time() - t, 1))
            result(f"{name}.reduce_overhead_ms", round(timed(lambda: ro(*inputs)), 3))
        else:
            result(f"{name}.reduce_overhead_ms", "not run (time budget)")


def training(args):
    import torchvision
    torch.manual_seed(0)
    base = torchvision.models.resnet50().cuda().train()
    n = args.batch
    data = [(torch.randn(n, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (n,), device="cuda"))
            for _ in range(2)]

    def run(model, steps, record):
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        losses, times = [], []
        for i in range(steps):
            x, y = data[i % 2]
            torch.cuda.synchronize()
            t = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
            losses.append(loss.item())
        return losses, times

    eager = copy.deepcopy(base)
    le, te = run(eager, args.steps, True)
    result("train.eager_losses", [round(v, 5) for v in le])
    result("train.eager_step_ms", round(statistics.median(te[3:]) * 1e3, 2))
    torch._dynamo.reset()
    tgt.backend_stats(reset=True)
    mine = torch.compile(copy.deepcopy(base), backend=tgt.backend, dynamic=False)
    t = time.time()
    lt, tt = run(mine, args.steps, True)
    result("train.tg_first_step_s", round(tt[0], 1))
    s = tgt.backend_stats()
    result("train.graphs", s["graphs"])
    result("train.nodes_left_to_pytorch", s["nodes_left_to_pytorch"])
    result("train.unsupported", s["unsupported"])
    result("train.dynamo_graph_breaks", dynamo_breaks())
    result("train.tg_losses", [round(v, 5) for v in lt])
    result("train.max_rel_loss_diff", f"{max(abs(a - b) / abs(b) for a, b in zip(lt, le)):.3e}")
    result("train.tg_step_ms", round(statistics.median(tt[3:]) * 1e3, 2))
    if elapsed() < args.budget_s - 110:
        torch._dynamo.reset()
        ind = torch.compile(copy.deepcopy(base), dynamic=False)
        li, ti = run(ind, args.steps, True)
        result("train.inductor_first_step_s", round(ti[0], 1))
        result("train.inductor_step_ms", round(statistics.median(ti[3:]) * 1e3, 2))
    else:
        result("train.inductor_step_ms", "not run (time budget)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--budget-s", type=float, default=270)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--parts", default="resnet50,bert,train")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    result("torch", torch.__version__)
    parts = args.parts.split(",")
    if "resnet50" in parts:
        try:
            import torchvision
            torch.manual_seed(0)
            inference("resnet50", lambda: torchvision.models.resnet50(), (torch.randn(1, 3, 224, 224, device="cuda"),),
                      lambda o: o, args)
        except Exception:
            traceback.print_exc()
    if "bert" in parts:
        try:
            from transformers import BertConfig, BertModel
            torch.manual_seed(0)
            ids = torch.randint(0, 30522, (1, 128), device="cuda")
            inference("bert", lambda: BertModel(BertConfig()), (ids,), lambda o: o.last_hidden_state, args)
        except Exception:
            traceback.print_exc()
    if "train" in parts:
        try:
            training(args)
        except Exception:
            traceback.print_exc()
    result("total_s", round(elapsed(), 1))


if __name__ == "__main__":
    main()
