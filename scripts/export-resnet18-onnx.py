#!/usr/bin/python3
"""Exports torchvision's ResNet-18 to ONNX for tests/onnx/resnet_test.cpp.

The weights are random (seeded; the batch-norm running statistics too, so normalization is not
the identity), the model is in eval mode, and the export uses torch.onnx.export at opset 13.
Besides model.onnx the output directory gets input.pb and output.pb: one seeded input of shape
[1, 3, 64, 64] and PyTorch's output for it, as ONNX TensorProto files (float32, raw_data).

Usage: export-resnet18-onnx.py OUTPUT_DIR [--seed N] [--size H]
Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3); exits with status 2
and a message when they are missing.
"""
import argparse
import os
import struct
import sys


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def tensor_proto(name, array):
    """A serialized onnx.TensorProto (dims=1, data_type=2, name=8, raw_data=9) of float32 data."""
    msg = bytearray()
    for d in array.shape:
        msg += varint(1 << 3) + varint(d)
    msg += varint(2 << 3) + varint(1)  # FLOAT
    raw = array.astype("<f4").tobytes()
    for field, payload in ((8, name.encode()), (9, raw)):
        msg += varint((field << 3) | 2) + varint(len(payload)) + payload
    return bytes(msg)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=64, help="input height and width")
    args = parser.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"export-resnet18-onnx: needs python3-torch and python3-torchvision ({e})",
              file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    model = torchvision.models.resnet18(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    model.eval()
    x = torch.randn(1, 3, args.size, args.size)
    with torch.no_grad():
        y = model(x)

    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, "model.onnx")
    torch.onnx.export(model, (x,), path, opset_version=13, input_names=["input"],
                      output_names=["logits"], do_constant_folding=True)
    with open(os.path.join(args.output_dir, "input.pb"), "wb") as f:
        f.write(tensor_proto("input", x.numpy()))
    with open(os.path.join(args.output_dir, "output.pb"), "wb") as f:
        f.write(tensor_proto("logits", y.numpy()))
    print(f"wrote {path}, input.pb and output.pb (logits {tuple(y.shape)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
