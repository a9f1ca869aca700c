#!/usr/bin/env python3
"""DLPack exchange of CUDA tensors between TensorGraph and PyTorch / JAX without copies: each check
prints both device pointers (equal when no copy was made) and compares values. Needs a GPU, the
tensorgraph package (built for this Python) and torch; JAX is checked when it imports.

    PYTHONPATH=build/python python3 bench/dlpack_cuda.py
"""
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU with torch

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorgraph as tg  # noqa: E402

failures = []


def check(name, cond):
    print(("PASS " if cond else "FAIL ") + name, flush=True)
    if not cond:
        failures.append(name)


def main():
    print(f"tensorgraph {tg.__version__} on {tg.Device.cuda_device_count()} GPU(s); torch {torch.__version__}")
    t = torch.arange(1 << 20, dtype=torch.float32, device="cuda").reshape(1024, 1024) * 0.5
    d = tg.from_dlpack(t)
    check(f"torch -> tg: device pointer {t.data_ptr():#x} == {d.data_ptr:#x}, {d.device}",
          d.data_ptr == t.data_ptr() and d.device == tg.Device.cuda(0))
    g = tg.Graph()
    x = g.placeholder([1024, 1024], tg.float32, "x")
    (y,) = g.run({x: d}, [x * 2.0 + 1.0], device="cuda")
    back = torch.from_dlpack(y)
    check(f"tg -> torch: device pointer {y.data_ptr:#x} == {back.data_ptr():#x}",
          back.data_ptr() == y.data_ptr and back.is_cuda)
    check("values (x * 2 + 1) computed by TensorGraph on torch's memory", torch.equal(back, t * 2 + 1))
    exe = g.compile({x: ([1024, 1024], tg.float32)}, [tg.reduce_sum(x)], device="cuda")
    for k in range(3):  # torch writes, TensorGraph reads the same memory, in stream order
        t.add_(1.0)
        s = exe.run([t])[0].item()
        want = t.double().sum().item()
        check(f"run {k} after an in-place torch update: sum {s:.6g} == {want:.6g}", abs(s - want) <= 1e-5 * abs(want))
    for dt in (torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8, torch.bool):
        a = (torch.arange(256, device="cuda") % 3).to(dt)
        dd = tg.from_dlpack(a)
        bb = torch.from_dlpack(dd)
        check(f"{dt}: torch -> tg -> torch keeps the pointer {a.data_ptr():#x}",
              dd.data_ptr == a.data_ptr() == bb.data_ptr() and torch.equal(a, bb))
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001
        print(f"SKIP jax: {type(e).__name__}: {e}")
        return
    print(f"jax {jax.__version__} devices {jax.devices()}")
    ja = jnp.arange(4096, dtype=jnp.float32).reshape(64, 64)
    jptr = ja.unsafe_buffer_pointer()
    dj = tg.from_dlpack(ja)
    check(f"jax -> tg: device pointer {jptr:#x} == {dj.data_ptr:#x}, {dj.device}",
          dj.data_ptr == jptr and dj.device.is_cuda)
    g2 = tg.Graph()
    z = g2.placeholder([64, 64], tg.float32, "z")
    (yj,) = g2.run({z: dj}, [z * 3.0], device="cuda")
    jb = jnp.from_dlpack(yj)
    check(f"tg -> jax: device pointer {yj.data_ptr:#x} == {jb.unsafe_buffer_pointer():#x}",
          jb.unsafe_buffer_pointer() == yj.data_ptr)
    check("values (z * 3) on jax's memory", bool(jnp.array_equal(jb, ja * 3)))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        failures.append(repr(e))
    print("ALL PASS" if not failures else f"{len(failures)} FAILED")
    sys.exit(1 if failures else 0)
