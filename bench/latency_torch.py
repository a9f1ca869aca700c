#!/usr/bin/env python3
"""PyTorch side of the batch-1 latency benchmarks (bench/bench_latency_cuda.cpp), run in the same
invocation on the same GPU, and the BERT-base export the C++ side imports.

  export_bert DIR               BERT-base (transformers BertModel(BertConfig()), seed 0, eval) as
                                DIR/bert.onnx (input_ids int64 [1,128] -> last_hidden_state,
                                pooler_output; the legacy TorchScript exporter, opset 17), with
                                DIR/input_ids.pb and DIR/output_0.pb (PyTorch's float32
                                last_hidden_state, for the C++ side's accuracy check).
  resnet50 MODE ITERS           torchvision resnet50, batch 1, 224x224 (MODE tf32: float32 with TF32
                                allowed, channels-last)
  bert MODE ITERS DIR           BERT-base (same weights; PyTorch's default SDPA attention), batch 1,
                                seq 128; MODE tf32 (float32, TF32 allowed) or f16 (model.half())

Each timing job prints one JSON line per PyTorch mode: eager, cuda_graph (torch.cuda.CUDAGraph
capture of the forward, replayed), and for bert also compile_ro (torch.compile(mode=
"reduce-overhead"), which captures CUDA graphs). A timed call is the forward (or replay) followed
by torch.cuda.synchronize(), wall clock, median over ITERS after warm-up: the same measure the C++
side takes (run, then the result read back).
"""
import json
import os
import sys
import time

import torch


def wall_ms(f, iters, warm):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def graphed(fn, example):
    """fn(example) captured into a CUDA graph; returns a callable that replays it."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(example)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(example)
    return lambda: (g.replay(), out)[1]


def emit(job, mode, precision, ms, **extra):
    print(json.dumps({"peer": "pytorch", "version": torch.__version__, "job": job, "mode": mode,
                      "precision": precision, "ms": ms, **extra}), flush=True)


def bert_model(attention=None):
    """BERT-base with seeded random weights; attention="eager" for the export (plain ops), else
    PyTorch's default attention (SDPA) for the timings."""
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    cfg = BertConfig() if attention is None else BertConfig(attn_implementation=attention)
    return BertModel(cfg).eval()


def bert_outputs(bert):
    """A module input_ids -> (last_hidden_state, pooler_output): the exported graph's outputs."""
    import torch

    class Outputs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids):
            o = self.bert(input_ids=input_ids)
            return o.last_hidden_state, o.pooler_output

    return Outputs()


def export_bert(out_dir):
    import onnx
    from onnx import numpy_helper
    os.makedirs(out_dir, exist_ok=True)
    m = bert_model("eager")
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 30522, (1, 128), generator=g)
    with torch.no_grad():
        ref = m(input_ids=ids)
    path = os.path.join(out_dir, "bert.onnx")
    with torch.no_grad():
        torch.onnx.export(bert_outputs(m), (ids,), path, input_names=["input_ids"],
                          output_names=["last_hidden_state", "pooler_output"], opset_version=17,
                          dynamo=False)
    for name, value in (("input_ids.pb", ids), ("output_0.pb", ref.last_hidden_state)):
        with open(os.path.join(out_dir, name), "wb") as f:  # a TensorProto, as the ONNX test data
            f.write(numpy_helper.from_array(value.numpy(), name.split(".")[0]).SerializeToString())
    model = onnx.load(path)
    ops = sorted({n.op_type for n in model.graph.node})
    print(json.dumps({"exported": path, "nodes": len(model.graph.node), "ops": ops}), flush=True)


def export_resnet50(out_dir):
    """torchvision's ResNet-50 (seeded random weights, eval) exported as PyTorch exports it: NCHW."""
    import torchvision
    from onnx import numpy_helper
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    m = torchvision.models.resnet50(weights=None).eval()
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = m(x)
        path = os.path.join(out_dir, "resnet50.onnx")
        torch.onnx.export(m, (x,), path, input_names=["x"], output_names=["logits"], opset_version=17, dynamo=False)
    for name, value in (("input_0.pb", x), ("output_0.pb", ref)):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(numpy_helper.from_array(value.numpy(), name.split(".")[0]).SerializeToString())
    print(json.dumps({"exported": path}), flush=True)


def resnet50(mode, iters):
    import torchvision
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    m = torchvision.models.resnet50(weights=None).cuda().eval().to(memory_format=torch.channels_last)
    x = torch.randn(1, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    with torch.no_grad():
        emit("resnet50_b1", "eager", mode, wall_ms(lambda: m(x), iters, 20))
        replay = graphed(m, x)
        emit("resnet50_b1", "cuda_graph", mode, wall_ms(replay, iters, 20))


def bert(mode, iters, out_dir):
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    m = bert_model().cuda()
    if mode == "f16":
        m = m.half()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 30522, (1, 128), generator=g).cuda()
    with torch.no_grad():
        emit("bert_b1_s128", "eager", mode, wall_ms(lambda: m(input_ids=ids), iters, 20))
        replay = graphed(lambda t: m(input_ids=t).last_hidden_state, ids)
        emit("bert_b1_s128", "cuda_graph", mode, wall_ms(replay, iters, 20))
        t0 = time.time()
        mc = torch.compile(m, mode="reduce-overhead")
        for _ in range(3):
            mc(input_ids=ids)
        torch.cuda.synchronize()
        first = time.time() - t0
        emit("bert_b1_s128", "compile_ro", mode, wall_ms(lambda: mc(input_ids=ids), iters, 20),
             first_calls_s=first)


def main():
    job = sys.argv[1]
    if job == "export_bert":
        export_bert(sys.argv[2])
    elif job == "export_resnet50":
        export_resnet50(sys.argv[2])
    elif job == "resnet50":
        resnet50(sys.argv[2], int(sys.argv[3]))
    elif job == "bert":
        bert(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        raise SystemExit(f"unknown job {job}")


if __name__ == "__main__":
    main()
