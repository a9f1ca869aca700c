#!/usr/bin/env python3
"""Peers of the control-flow benchmark (bench/bench_control_flow_cuda.cpp), run in the same
invocation on the same GPU: JAX/XLA (lax.while_loop, lax.fori_loop, lax.cond inside fori_loop,
jitted) and PyTorch (host loops: a predicate read back per iteration where the loop needs one).

  control_flow_peers.py PEER N ITERS REPS T_WHILE T_IF

PEER is jax or torch; N elements (f32, all 2.0 at the start); ITERS iterations of the for loops;
REPS timed runs (median) after 3 warm-up runs. The loops, as on the C++ side:
  while: while mean(y) > T_WHILE: y = y * 0.999 + 0.001
  for:   ITERS times y = y * 0.999 + 0.001
  forif: ITERS times y = y * 0.999 + 0.001 if mean(y) > T_IF else y * 1.001
A timed run is the loop and mean(y) read back to the host (wall clock). Prints one JSON line per
loop: {"peer", "loop", "ms", "mean"} (the final mean, to check the sides agree).
"""
import json
import sys
import time


def median_ms(f, reps):
    for _ in range(3):
        f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        m = f()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2], m


def run_jax(n, iters, reps, t_while, t_if):
    import jax
    import jax.numpy as jnp
    from jax import lax

    y0 = jnp.full((n,), 2.0, jnp.float32)

    def step(y):
        return y * 0.999 + 0.001

    @jax.jit
    def while_(y):
        return jnp.mean(lax.while_loop(lambda y: jnp.mean(y) > t_while, step, y))

    @jax.jit
    def for_(y):
        return jnp.mean(lax.fori_loop(0, iters, lambda i, y: step(y), y))

    @jax.jit
    def forif(y):
        body = lambda i, y: lax.cond(jnp.mean(y) > t_if, step, lambda y: y * 1.001, y)
        return jnp.mean(lax.fori_loop(0, iters, body, y))

    for name, f in (("while", while_), ("for", for_), ("forif", forif)):
        ms, m = median_ms(lambda: float(f(y0)), reps)
        print(json.dumps({"peer": "jax", "loop": name, "ms": ms, "mean": m}), flush=True)


def run_torch(n, iters, reps, t_while, t_if):
    import torch

    y0 = torch.full((n,), 2.0, dtype=torch.float32, device="cuda")

    def while_():
        y = y0
        while y.mean() > t_while:  # the predicate read back each iteration
            y = y * 0.999 + 0.001
        return y.mean().item()

    def for_():
        y = y0
        for _ in range(iters):
            y = y * 0.999 + 0.001
        return y.mean().item()

    def forif():
        y = y0
        for _ in range(iters):
            y = y * 0.999 + 0.001 if y.mean() > t_if else y * 1.001
        return y.mean().item()

    for name, f in (("while", while_), ("for", for_), ("forif", forif)):
        ms, m = median_ms(f, reps)
        print(json.dumps({"peer": "torch", "loop": name, "ms": ms, "mean": m}), flush=True)


if __name__ == "__main__":
    peer, n, iters, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    t_while, t_if = float(sys.argv[5]), float(sys.argv[6])
    (run_jax if peer == "jax" else run_torch)(n, iters, reps, t_while, t_if)
