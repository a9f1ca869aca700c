#!/usr/bin/env python3
"""PyTorch side of the ResNet-50 CPU training-step benchmark (bench/bench_resnet50_cpu.cpp).

One training step = forward + cross-entropy + backward + Adam update, on torchvision's
resnet50 (random weights), synthetic data, float32. Prints one JSON line:
{"peer": "pytorch", "version": ..., "threads": N, "batch": B, "size": S, "layout": L,
 "step_ms": median, "steps": K}
Usage: resnet50_cpu_torch.py BATCH SIZE STEPS THREADS [nchw|nhwc]
"""
import json
import statistics
import sys
import time

import torch
import torchvision


def main():
    batch, size, steps, threads = (int(a) for a in sys.argv[1:5])
    layout = sys.argv[5] if len(sys.argv) > 5 else "nchw"
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=1000)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 1000, (batch,))
    if layout == "nhwc":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):  # warm-up: allocator, oneDNN primitive caches
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"peer": "pytorch", "version": torch.__version__, "threads": threads,
                      "batch": batch, "size": size, "layout": layout,
                      "step_ms": statistics.median(times), "steps": steps}))


if __name__ == "__main__":
    main()
