"""PyTorch side of bench/bench_stencil_cuda.cpp (issue 18): the same jobs on the same GPU, fp32.

Usage: stencil_torch.py JOBS   (comma-separated: laplacian,stencil3d,maxpool,gather_nd,gather,lrn)
Prints one JSON line per job: {"job": ..., "ms": ...}: the op alone (its inputs made beforehand),
timed like tg's side: 20 calls between two CUDA events after warm-up calls, the median of 7 rounds.
"""
import json
import sys

import torch
import torch.nn.functional as F


def time_ms(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rounds = []
    for _ in range(7):
        a.record()
        for _ in range(20):
            fn()
        b.record()
        b.synchronize()
        rounds.append(a.elapsed_time(b) / 20)
    rounds.sort()
    return rounds[3]


def main():
    jobs = sys.argv[1].split(",") if len(sys.argv) > 1 else []
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False  # fp32 arithmetic, as tg's stencil
    g = torch.Generator(device=dev).manual_seed(0)
    for job in jobs:
        if job == "laplacian":
            x = torch.rand(1, 1, 8192, 8192, device=dev, generator=g) * 2 - 1
            w = torch.tensor([[0.0, 1, 0], [1, -4, 1], [0, 1, 0]], device=dev).view(1, 1, 3, 3)
            fn = lambda: F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w)
        elif job == "stencil3d":
            x = torch.rand(1, 1, 512, 512, 512, device=dev, generator=g) * 2 - 1
            w = torch.zeros(27, device=dev)
            w[[4, 10, 12, 14, 16, 22]] = 1
            w[13] = -6
            w = w.view(1, 1, 3, 3, 3)
            fn = lambda: F.conv3d(x, w, padding=1)
        elif job == "maxpool":
            x = torch.rand(1, 1, 8192, 8192, device=dev, generator=g) * 2 - 1
            fn = lambda: F.max_pool2d(x, 3, stride=1, padding=1)
        elif job == "gather_nd":
            x = torch.rand(32, 256, 256, 16, device=dev, generator=g) * 2 - 1
            idx = torch.randint(0, 256, (32, 65536, 2), device=dev, generator=g)
            b = torch.arange(32, device=dev).view(32, 1)
            fn = lambda: x[b, idx[..., 0], idx[..., 1]]
        elif job == "gather":
            table = torch.rand(1 << 20, 64, device=dev, generator=g) * 2 - 1
            idx = torch.randint(0, 1 << 20, (1 << 20,), device=dev, generator=g)
            fn = lambda: torch.index_select(table, 0, idx)
        elif job == "lrn":
            x = torch.rand(16, 64, 128, 128, device=dev, generator=g) * 2 - 1
            sq = (x * x).unsqueeze(1)
            # the window mean (the sum / 5): one kernel, the same bytes as the sum
            fn = lambda: F.avg_pool3d(sq, (5, 1, 1), stride=1, padding=(2, 0, 0), count_include_pad=True)
        else:
            print(f"unknown job {job}")
            continue
        print(json.dumps({"job": job, "ms": time_ms(fn)}), flush=True)


if __name__ == "__main__":
    main()
