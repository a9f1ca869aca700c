#!/usr/bin/env python3
"""Runs an ONNX model from Python with tensorgraph.onnx and compares it with PyTorch.

    python3 examples/python/onnx_run.py              # exports a small PyTorch CNN, imports, runs, compares
    python3 examples/python/onnx_run.py model.onnx   # any model: random inputs, prints the outputs' shapes

Without an argument it needs PyTorch (Debian's python3-torch); it exits with 77 (skipped) when
torch is missing.
"""
import io
import sys

import numpy as np

import tensorgraph as tg


def run_file(path):
    inputs = tg.onnx.model_inputs(path)
    rng = np.random.default_rng(0)
    values = {}
    for name, dtype, shape in inputs:
        dims = [1 if d < 0 else d for d in (shape or ())]
        values[name] = rng.normal(size=dims).astype(dtype.numpy) if dtype.is_floating else np.zeros(dims, dtype.numpy)
        print(f"input {name}: {dtype} {tuple(dims)}")
    model = tg.onnx.load(path)
    for (name, _), value in zip(model.outputs, model.run(values)):
        print(f"output {name}: {value.dtype} {value.shape}")
    return 0


def main():
    if len(sys.argv) > 1:
        return run_file(sys.argv[1])
    try:
        import torch
    except ImportError:
        print("SKIPPED: needs torch to export a model")
        return 77
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(32, 10)).eval()
    buf = io.BytesIO()
    torch.onnx.export(net, torch.randn(1, 3, 32, 32), buf, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}}, opset_version=13)
    model = tg.onnx.load(buf.getvalue())
    print(f"imported: opset {model.opset}, producer {model.producer_name} {model.producer_version}, "
          f"{model.graph.num_nodes} nodes")
    x = np.random.default_rng(1).normal(size=(8, 3, 32, 32)).astype(np.float32)
    (logits,) = model.run([x])
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    err = float(np.abs(np.asarray(logits) - want).max())
    print(f"logits {logits.shape} on {logits.device}: max |tensorgraph - torch| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
