"""torch.compile(backend=tensorgraph.torch.backend) on a GPU (PyTorch >= 2), issue 22's checks:

1. torchvision ResNet-50 and Hugging Face BERT-base (random weights, eval, batch 1): graph breaks
   (Dynamo's and ours), outputs vs eager (TF32 on both sides, max |diff| / max |eager|), latency
   (median of timed calls) vs torch.compile(mode="reduce-overhead") in the same process;
2. ResNet-50 training step (batch 128, 224x224, bf16 autocast, Adam): 10 steps' losses vs eager
   from the same initial weights and data, step time vs eager and vs torch.compile's default
   backend (inductor).
TensorGraph's parts run first, the peers' compiles after, each only while --budget-s leaves time
for it; each part guards itself (a failure prints its traceback and the run goes on). Prints one
"RESULT key value" line per figure.
"""
import argparse
import copy
import functools
import logging
import math
import statistics
import time
import traceback

import torch

import tensorgraph.torch as tgt

logging.basicConfig(level=logging.WARNING)
T0 = time.time()
HOST_PROFILE = False  # --host-profile
TORCH_PROFILE = False  # --torch-profile
COUNT_KERNELS = False  # --count-kernels


def result(key, value):
    print(f"RESULT {key} {value}", flush=True)


def left(args):
    return args.budget_s - (time.time() - T0)


def timed(fn, warmup=5, iters=30):
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


def host_us(fn, calls=200):
    """Host microseconds per call with no synchronization between calls (the device runs behind):
    what a call costs the CPU before its work is queued."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t) / calls * 1e6
    torch.cuda.synchronize()
    return round(us, 1)


def host_profile(name, fn, calls=200, rows=14):
    """cProfile of `calls` calls (no synchronization between): where the host time goes."""
    import cProfile
    import io
    import pstats
    pr = cProfile.Profile()
    torch.cuda.synchronize()
    pr.enable()
    for _ in range(calls):
        fn()
    pr.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(rows)
    print(f"== host profile {name} ({calls} calls)", flush=True)
    print("\n".join(line for line in s.getvalue().splitlines() if line.strip())[-4000:], flush=True)


def torch_profile_step(fn, rows=22, sort="cuda_time_total"):
    """One call of fn under torch.profiler (CPU and CUDA activity): the ops and kernels by device
    time (or `sort`: self_cpu_time_total for the host calls), with the step's wall time, so
    TensorGraph's part and PyTorch's part of a step show."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t) * 1e3
    print(f"== torch.profiler, one call ({wall:.1f} ms wall with the profiler on), by {sort}", flush=True)
    print(prof.key_averages().table(sort_by=sort, row_limit=rows, max_name_column_width=60), flush=True)


def kernels_per_call(name, fn):
    """CUDA kernels one call runs (torch.profiler's kernel events, CUDA-graph replays included),
    and the ten most frequent kernel names: how many launches a batch-1 call pays for."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names, kernels = {}, []
    for e in prof.events():
        if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA and "memcpy" not in e.name.lower() \
                and "memset" not in e.name.lower():
            names[e.name] = names.get(e.name, 0) + 1
            kernels.append(e)
    result(f"{name}.kernels_per_call", sum(names.values()))
    result(f"{name}.kernel_us_per_call", round(sum(e.device_time for e in kernels), 1))
    us = {}
    for e in kernels:
        us[e.name] = us.get(e.name, 0.0) + e.device_time
    result(f"{name}.kernel_us_by_name", [(k[:60], round(v, 1), names[k]) for k, v in sorted(us.items(), key=lambda kv: -kv[1])[:14]])
    top = sorted(names.items(), key=lambda kv: -kv[1])[:10]
    result(f"{name}.top_kernels", [(k[:60], v) for k, v in top])
    kernels.sort(key=lambda e: e.time_range.start)  # the call's first kernels, in order, and their us
    result(f"{name}.first_kernels", [(e.name[:40], round(e.device_time, 2)) for e in kernels[:4]])


def dynamo_breaks():
    from torch._dynamo.utils import counters
    return sum(counters["graph_break"].values())


def tg_stats():
    import tensorgraph
    return tensorgraph.runtime_stats()


def stats_delta(name, before, calls):
    """TensorGraph's runtime counters per call over `calls` calls (CUDA graph launches and
    recordings, interpreted runs, host waits, bytes copied into input slots and out of arenas)."""
    after = tg_stats()
    keys = ("runs", "graph_launches", "graph_captures", "capture_fallbacks", "interpreted_runs", "host_waits",
            "input_copy_bytes", "result_copy_bytes", "compiles")
    result(f"{name}.tg_runtime_per_call", {k: round((after[k] - before[k]) / calls, 2) for k in keys})


def guarded(name, fn, *a):
    try:
        return fn(*a)
    except Exception:
        print(f"FAILED {name}", flush=True)
        traceback.print_exc()


def models():
    import torchvision
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    r50 = torchvision.models.resnet50().cuda().eval()
    bert = BertModel(BertConfig()).cuda().eval()
    return {"resnet50": (r50, (torch.randn(1, 3, 224, 224, device="cuda"),), lambda o: o),
            "bert": (bert, (torch.randint(0, 30522, (1, 128), device="cuda"),), lambda o: o.last_hidden_state)}


def tg_inference(name, model, inputs, out_of):
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    tgt.backend_stats(reset=True)
    with torch.no_grad():
        ref = out_of(model(*inputs))
        t = time.time()
        # Inference with the parameters compiled in (freeze=True: opt-in, as Inductor's freezing).
        compiled = torch.compile(model, backend=functools.partial(tgt.backend, freeze=True), dynamic=False)
        got = out_of(compiled(*inputs))
        result(f"{name}.tg_compile_s", round(time.time() - t, 1))
        s = tgt.backend_stats()
        result(f"{name}.graphs", s["graphs"])
        result(f"{name}.nodes_left_to_pytorch", s["nodes_left_to_pytorch"])
        result(f"{name}.unsupported", s["unsupported"])
        result(f"{name}.frozen_inputs", s["frozen_inputs"])  # parameters/buffers compiled in
        result(f"{name}.dynamo_graph_breaks", dynamo_breaks())
        rel = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        result(f"{name}.max_rel_diff_vs_eager", f"{rel:.3e}")
        result(f"{name}.eager_ms", round(timed(lambda: model(*inputs)), 3))
        before = tg_stats()
        result(f"{name}.tg_ms", round(timed(lambda: compiled(*inputs)), 3))
        stats_delta(name, before, 35)
        result(f"{name}.tg_host_us_per_call", host_us(lambda: compiled(*inputs)))
        if HOST_PROFILE:
            host_profile(name, lambda: compiled(*inputs))
        if COUNT_KERNELS:
            kernels_per_call(f"{name}.tg", lambda: compiled(*inputs))
        if TORCH_PROFILE and name == "resnet50":  # one call's host calls and kernels
            torch_profile_step(lambda: compiled(*inputs), rows=16, sort="self_cpu_time_total")
            torch_profile_step(lambda: compiled(*inputs), rows=16)
        # Again after the timed calls (replays of the recorded CUDA graph, reused DLPack views).
        got = out_of(compiled(*inputs))
        rel = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        result(f"{name}.max_rel_diff_vs_eager_after_replays", f"{rel:.3e}")


def ro_inference(name, model, inputs, out_of):
    torch._dynamo.reset()
    with torch.no_grad():
        t = time.time()
        ro = torch.compile(model, mode="reduce-overhead", dynamic=False)
        ro(*inputs)
        ro(*inputs)
        result(f"{name}.reduce_overhead_compile_s", round(time.time() - t, 1))
        result(f"{name}.reduce_overhead_ms", round(timed(lambda: ro(*inputs)), 3))
        result(f"{name}.reduce_overhead_host_us_per_call", host_us(lambda: ro(*inputs)))
        if COUNT_KERNELS:
            kernels_per_call(f"{name}.reduce_overhead", lambda: ro(*inputs))
        if TORCH_PROFILE and name == "resnet50":
            torch_profile_step(lambda: ro(*inputs), rows=16, sort="self_cpu_time_total")
            torch_profile_step(lambda: ro(*inputs), rows=16)


class Training:
    def __init__(self, args):
        import torchvision
        torch.manual_seed(0)
        self.base = torchvision.models.resnet50().cuda().train()
        n = args.batch
        self.steps = args.steps
        self.data = [(torch.randn(n, 3, 224, 224, device="cuda"), torch.randint(0, 1000, (n,), device="cuda"))
                     for _ in range(2)]

    def run(self, model, stats=False, profile=False):
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        losses, times = [], []
        for i in range(self.steps):
            if stats and i == 3:
                before = tg_stats()
            x, y = self.data[i % 2]
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
        if stats and self.steps > 3:
            stats_delta("train", before, self.steps - 3)
        if profile:  # one more step under torch.profiler (--torch-profile)
            torch_profile_step(lambda: self.step(model, opt, self.data[0]))
        return losses, times

    @staticmethod
    def step(model, opt, data):
        x, y = data
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def eager(self):
        self.le, te = self.run(copy.deepcopy(self.base))
        result("train.eager_losses", [round(v, 5) for v in self.le])
        result("train.eager_step_ms", round(statistics.median(te[3:]) * 1e3, 2))

    def tg(self):
        torch._dynamo.reset()
        from torch._dynamo.utils import counters
        counters.clear()
        tgt.backend_stats(reset=True)
        lt, tt = self.run(torch.compile(copy.deepcopy(self.base), backend=tgt.backend, dynamic=False), stats=True,
                          profile=TORCH_PROFILE)
        result("train.tg_first_step_s", round(tt[0], 1))
        s = tgt.backend_stats()
        result("train.graphs", s["graphs"])
        result("train.nodes_left_to_pytorch", s["nodes_left_to_pytorch"])
        result("train.unsupported", s["unsupported"])
        result("train.channels_last_saved", (s.get("channels_last_outputs"), s.get("channels_last_feeds")))
        result("train.pool_indices_stand_ins", (s.get("stand_in_outputs"), s.get("unread_inputs")))
        result("train.dynamo_graph_breaks", dynamo_breaks())
        result("train.tg_losses", [round(v, 5) for v in lt])
        diffs = [abs(a - b) / abs(b) if math.isfinite(a) else math.inf for a, b in zip(lt, self.le)]
        result("train.max_rel_loss_diff_vs_eager", f"{max(diffs):.3e}")
        result("train.tg_step_ms", round(statistics.median(tt[3:]) * 1e3, 2))

    def inductor(self):
        torch._dynamo.reset()
        li, ti = self.run(torch.compile(copy.deepcopy(self.base), dynamic=False), profile=TORCH_PROFILE)
        result("train.inductor_first_step_s", round(ti[0], 1))
        result("train.inductor_losses", [round(v, 5) for v in li])
        result("train.inductor_step_ms", round(statistics.median(ti[3:]) * 1e3, 2))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--budget-s", type=float, default=270)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--only-tg-train", action="store_true",
                   help="only TensorGraph's training steps (e.g. under TG_PROFILE=1, which records no CUDA graphs)")
    p.add_argument("--only-tg-infer", choices=("resnet50", "bert"),
                   help="only TensorGraph's batch-1 inference of one model (e.g. under TG_PROFILE=1)")
    p.add_argument("--host-profile", action="store_true",
                   help="a cProfile of TensorGraph's batch-1 calls (where the host time per call goes)")
    p.add_argument("--torch-profile", action="store_true",
                   help="one more TensorGraph training step under torch.profiler (the step's ops and kernels)")
    p.add_argument("--count-kernels", action="store_true",
                   help="CUDA kernels per batch-1 call (torch.profiler), TensorGraph's and reduce-overhead's")
    p.add_argument("--ab-env", default="",
                   help="VAR=VALUE[,VAR=VALUE]: TensorGraph's batch-1 inference of --ab-models again with these "
                        "variables set (e.g. a rewrite off), then without again, in the same process")
    p.add_argument("--ab-models", default="bert", help="comma-separated models for --ab-env")
    p.add_argument("--infer-only", action="store_true", help="the batch-1 inference rows only (no training)")
    args = p.parse_args()
    global HOST_PROFILE, TORCH_PROFILE, COUNT_KERNELS
    HOST_PROFILE = args.host_profile
    TORCH_PROFILE = args.torch_profile
    COUNT_KERNELS = args.count_kernels
    if args.only_tg_infer:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        m, x, out_of = models()[args.only_tg_infer]
        guarded(args.only_tg_infer, tg_inference, args.only_tg_infer, m, x, out_of)
        return
    if args.only_tg_train:
        torch.backends.cudnn.allow_tf32 = True
        tr = Training(args)
        tr.le = [float("nan")] * args.steps
        guarded("train.tg", tr.tg)
        return
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    result("torch", torch.__version__)
    ms = guarded("models", models) or {}
    for name, (m, x, out_of) in ms.items():
        guarded(name, tg_inference, name, m, x, out_of)
        result("elapsed_s", round(time.time() - T0, 1))
        if name in args.ab_models and args.ab_env:  # the same model with the variables set, then without again
            import os
            env = dict(kv.split("=", 1) for kv in args.ab_env.split(","))
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            guarded(f"{name}_ab", tg_inference, f"{name}_ab", m, x, out_of)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k)
                else:
                    os.environ[k] = v
            guarded(f"{name}_again", tg_inference, f"{name}_again", m, x, out_of)
            result("elapsed_s", round(time.time() - T0, 1))
    tr = None if args.infer_only else guarded("training setup", Training, args)
    if tr is not None:
        guarded("train.eager", tr.eager)
        guarded("train.tg", tr.tg)
        result("elapsed_s", round(time.time() - T0, 1))
    # The peers, while time is left (estimated compile times on the H200's 16 cores).
    for name, (m, x, out_of) in ms.items():
        if left(args) > 60:
            guarded(f"{name}.reduce_overhead", ro_inference, name, m, x, out_of)
        else:
            result(f"{name}.reduce_overhead_ms", "not run (time budget)")
        result("elapsed_s", round(time.time() - T0, 1))
    if tr is not None and left(args) > 75:
        guarded("train.inductor", tr.inductor)
    elif tr is not None:
        result("train.inductor_step_ms", "not run (time budget)")
    result("total_s", round(time.time() - T0, 1))


if __name__ == "__main__":
    main()
