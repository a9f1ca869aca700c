#!/usr/bin/env python3
"""ResNet-50 trained with tensorgraph.nn from Python: the zoo's model, compile, fit (progress bar).

    python3 examples/python/resnet50_fit.py                    # GPU when usable: batch 128, tf32
    python3 examples/python/resnet50_fit.py --device cpu --batch 8 --image 64 --steps 4
    python3 examples/python/resnet50_fit.py --bench            # ms per training step
    python3 examples/python/resnet50_fit.py --smoke            # tiny, for the test suite

The data is synthetic (images ~ N(0, 1), label i*37 mod 1000), as bench/bench_resnet50_cuda.cpp
uses: --bench times the training step the same way (one warm-up fit, then the median of three fits
of --steps steps, data already on the device), so its figure compares with that program's
`tg_bench_resnet50_cuda --jobs train_tf32 --no-peer` (the C++ API) directly.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import tensorgraph as tg
from tensorgraph import nn


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the GPU when usable)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=10, help="training steps per fit")
    p.add_argument("--image", type=int, default=224, help="image height and width")
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--precision", default="tf32", help="f32 (runs NCHW, as the C++ bench), tf32, bf16, f16")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--bench", action="store_true", help="print ms per training step (median of 3 fits)")
    p.add_argument("--smoke", action="store_true", help="a tiny run for the test suite (CPU, 32x32, batch 4)")
    a = p.parse_args()
    if a.smoke:
        a.device, a.batch, a.steps, a.image, a.classes, a.epochs, a.precision = "cpu", 4, 2, 32, 10, 3, "f32"
    device = tg.Device(a.device) if a.device else tg.Device.default_device()
    layout = "nchw" if a.precision == "f32" else "nhwc"  # as bench/bench_resnet50_cuda.cpp
    shape = (3, a.image, a.image) if layout == "nchw" else (a.image, a.image, 3)

    model = nn.zoo.resnet50(input_shape=shape, num_classes=a.classes, layout=layout)
    model.compile(nn.Optimizer.adam(1e-3), "sparse_categorical_crossentropy", ["accuracy"], device=device,
                  precision=a.precision if device.is_cuda else "f32")
    print(f"ResNet-50: {model.parameter_count:,} parameters, {device}, batch {a.batch}, "
          f"{a.image}x{a.image}, {a.precision}, {layout}")
    n = a.batch * a.steps
    x = tg.TensorData.random_normal((n, *shape), 0.0, 1.0, seed=1).to(device)
    y = tg.TensorData((np.arange(n, dtype=np.int64) * 37) % a.classes).to(device)

    if a.bench:
        t0 = time.perf_counter()
        model.fit(x, y, epochs=1, batch_size=a.batch, shuffle=False, verbose=0)
        print(f"first fit (compile + {a.steps} steps): {1e3 * (time.perf_counter() - t0):.0f} ms")
        per_step = []
        for _ in range(3):
            t = time.perf_counter()
            model.fit(x, y, epochs=1, batch_size=a.batch, shuffle=False, verbose=0)
            per_step.append(1e3 * (time.perf_counter() - t) / a.steps)
        ms = statistics.median(per_step)
        print(f"python train step: {ms:.2f} ms, {1e3 * a.batch / ms:.1f} images/s")
        return 0

    history = model.fit(x, y, epochs=a.epochs, batch_size=a.batch, shuffle=True, verbose=1)
    losses = history.history["loss"]
    print("loss per epoch:", ", ".join(f"{v:.4f}" for v in losses))
    if not all(np.isfinite(losses)):
        print("error: the loss is not finite", file=sys.stderr)
        return 1
    if a.smoke and not losses[-1] < losses[0]:
        print("error: the loss did not decrease", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
