#!/usr/bin/env python3
"""JAX/XLA side of the ResNet-50 training benchmark (bench/bench_resnet50_cuda.cpp --peers jax),
run in the same invocation on the same GPU:

  train BATCH STEPS     flax ResNet-50 (bottleneck v1.5, as torchvision's), bf16 compute (dtype
                        bfloat16, float32 parameters), NHWC, batch norm momentum 0.9, optax Adam
                        1e-3, softmax cross-entropy on integer labels, synthetic data, one jitted
                        step; timed per step with block_until_ready after 3 warm-up steps.

Prints one JSON line: {"peer": "jax", "job": "train", "mode": "bf16", "batch": B, "ms": median,
"first_step_s": compile + first step}.
"""
import json
import sys
import time

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax


class Bottleneck(nn.Module):
    filters: int
    stride: int
    project: bool

    @nn.compact
    def __call__(self, x, train=True):
        def bn():
            return nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=jnp.bfloat16)

        def conv(f, k, s=1):
            return nn.Conv(f, (k, k), (s, s), padding=[(k // 2, k // 2)] * 2, use_bias=False,
                           dtype=jnp.bfloat16)

        r = x
        y = nn.relu(bn()(conv(self.filters, 1)(x)))
        y = nn.relu(bn()(conv(self.filters, 3, self.stride)(y)))
        y = bn()(conv(self.filters * 4, 1)(y))
        if self.project:
            r = bn()(conv(self.filters * 4, 1, self.stride)(x))
        return nn.relu(y + r)


class ResNet50(nn.Module):
    @nn.compact
    def __call__(self, x, train=True):
        x = nn.Conv(64, (7, 7), (2, 2), padding=[(3, 3), (3, 3)], use_bias=False, dtype=jnp.bfloat16)(x)
        x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9, dtype=jnp.bfloat16)(x))
        x = nn.max_pool(x, (3, 3), (2, 2), padding=[(1, 1), (1, 1)])
        for i, (blocks, filters) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)]):
            for j in range(blocks):
                x = Bottleneck(filters, 2 if (j == 0 and i > 0) else 1, j == 0)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(1000, dtype=jnp.bfloat16)(x).astype(jnp.float32)


def train(batch, steps):
    model = ResNet50()
    x = jax.random.normal(jax.random.PRNGKey(0), (batch, 224, 224, 3))
    y = jax.random.randint(jax.random.PRNGKey(1), (batch,), 0, 1000)
    v = model.init(jax.random.PRNGKey(2), x[:2])
    params, stats = v["params"], v["batch_stats"]
    tx = optax.adam(1e-3)
    opt = tx.init(params)

    @jax.jit
    def step(params, stats, opt, x, y):
        def loss_fn(p):
            logits, upd = model.apply({"params": p, "batch_stats": stats}, x, mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), upd

        (loss, upd), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
        u, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, u), upd["batch_stats"], opt, loss

    t0 = time.time()
    params, stats, opt, loss = step(params, stats, opt, x, y)
    jax.block_until_ready(loss)
    first = time.time() - t0
    for _ in range(3):
        params, stats, opt, loss = step(params, stats, opt, x, y)
    jax.block_until_ready(loss)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        params, stats, opt, loss = step(params, stats, opt, x, y)
        jax.block_until_ready(loss)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(json.dumps({"peer": "jax", "version": jax.__version__, "job": "train", "mode": "bf16",
                      "batch": batch, "ms": times[len(times) // 2], "first_step_s": first}), flush=True)


if __name__ == "__main__":
    train(int(sys.argv[2]), int(sys.argv[3]))
