#!/usr/bin/env python3
"""PyTorch side of the ResNet-50 GPU benchmarks (bench/bench_resnet50_cuda.cpp), run in the same
invocation on the same GPU. Mirrors ../shared/anchors/gpu_baselines.py:

  train  BATCH STEPS MODE   MODE: f32 (NCHW, no TF32), tf32 (channels-last), bf16 (autocast,
                            channels-last); Adam, cross-entropy, synthetic data, cudnn.benchmark.
  infer  BATCH ITERS MODE   MODE: tf32 (float32 model, TF32 allowed) or f16 (half model,
                            channels-last); eval, no_grad.
  profile BATCH STEPS MODE  the train job under torch.profiler: GPU kernel time per step by kernel
                            name (top 30), to compare with TG_PROFILE's table.
Prints one JSON line: {"peer": "pytorch", "job": ..., "mode": ..., "batch": B, "ms": median}
(train: ms per step; infer: ms per forward), timed with CUDA events after warm-up steps.
"""
import json
import sys

import torch
import torchvision


def cuda_time(f, iters, warm):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        s.record()
        f()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def profile(step, steps):
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    rows = [(e.device_time_total, e.count, e.key) for e in prof.key_averages()
            if e.device_time_total > 0]
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"[torch profile] GPU kernel time per step: {total / 1e3 / steps:.3f} ms")
    for t, n, name in rows[:30]:
        print(f"[torch profile] {t / 1e3 / steps:8.3f} ms {n // steps:5d}x  {name[:110]}")


def main():
    job, batch, iters, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    tf32 = mode != "f32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.manual_seed(0)
    m = torchvision.models.resnet50(weights=None).to(dev)
    mf = torch.contiguous_format if mode == "f32" else torch.channels_last
    if job in ("train", "profile"):
        m = m.to(memory_format=mf)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=mf)
        y = torch.randint(0, 1000, (batch,), device=dev)
        lossf = torch.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "bf16"):
                loss = lossf(m(x), y)
            loss.backward()
            opt.step()

        if job == "profile":
            return profile(step, iters)
        ms = cuda_time(step, iters, warm=5)
    else:
        m = m.eval()
        x = torch.randn(batch, 3, 224, 224, device=dev)
        if mode == "f16":
            m = m.half().to(memory_format=torch.channels_last)
            x = x.half().to(memory_format=torch.channels_last)
        with torch.no_grad():
            ms = cuda_time(lambda: m(x), iters, warm=10)
    print(json.dumps({"peer": "pytorch", "version": torch.__version__, "job": job, "mode": mode,
                      "batch": batch, "ms": ms}), flush=True)


if __name__ == "__main__":
    main()
