#!/usr/bin/env python3
"""PyTorch DDP side of the data-parallel benchmark (bench/bench_data_parallel_cuda.cpp), started
under torchrun (python3 -m torch.distributed.run --standalone --nproc-per-node W ...):

  data_parallel_torch.py BATCH STEPS MODE   MODE: plain (per-GPU batch norm) or sync_bn
                                            (torch.nn.SyncBatchNorm.convert_sync_batchnorm)

ResNet-50 (torchvision), channels-last, bf16 autocast, Adam, cross-entropy, BATCH rows of synthetic
data per GPU, cudnn.benchmark, wrapped in DistributedDataParallel (NCCL; bucket_cap_mb 25, the
default; gradient all-reduce overlapped with backward). Each rank times STEPS steps with CUDA
events after 5 warm-up steps; rank 0 prints one JSON line:
{"peer": "pytorch-ddp", "world": W, "batch_per_gpu": B, "mode": MODE, "ms": median ms per step}.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torchvision

from resnet50_cuda_torch import cuda_time  # bench/, the script's own directory


def main():
    batch, steps, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    dev = torch.device("cuda", local)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    m = torchvision.models.resnet50(weights=None)
    if mode == "sync_bn":
        m = torch.nn.SyncBatchNorm.convert_sync_batchnorm(m)
    m = m.to(dev).to(memory_format=torch.channels_last)
    m = torch.nn.parallel.DistributedDataParallel(m, device_ids=[local])
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    x = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = lossf(m(x), y)
        loss.backward()
        opt.step()

    ms = cuda_time(step, steps, 5)  # median over the steps, after 5 warm-up steps
    if dist.get_rank() == 0:
        print(json.dumps({"peer": "pytorch-ddp", "version": torch.__version__, "world": dist.get_world_size(),
                          "batch_per_gpu": batch, "mode": mode, "ms": ms}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
