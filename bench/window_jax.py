#!/usr/bin/env python3
"""JAX (CPU, jit) times of bench/window_bench.cpp's pooling cases, same shapes.

  .venv-reference/bin/python bench/window_jax.py      (tests/reference/setup_venv.sh)
Prints the median of 5 runs of each case (ms), after a warm-up call.
"""
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


def avg_pool(x):
    return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0


def median_ms(f, x, reps=5, min_time=1.0):
    f(x).block_until_ready()
    times = []
    for _ in range(reps):
        n, t0 = 0, time.perf_counter()
        while True:
            f(x).block_until_ready()
            n += 1
            if time.perf_counter() - t0 >= min_time:
                break
        times.append((time.perf_counter() - t0) / n * 1e3)
    return sorted(times)[len(times) // 2]


x = jax.random.normal(jax.random.key(0), (32, 112, 112, 64), jnp.float32)
cases = {
    "max_pool 3x3 s2 SAME": jax.jit(max_pool),
    "max_pool 3x3 s2 SAME grad": jax.jit(jax.grad(lambda a: jnp.sum(max_pool(a)))),
    "avg_pool 2x2 s2": jax.jit(avg_pool),
}
for name, f in cases.items():
    print(f"{name}: {median_ms(f, x):.2f} ms")
