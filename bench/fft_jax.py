#!/usr/bin/env python3
"""JAX's and NumPy's figures for bench/fft_bench.cpp: the same transforms on the CPU.

jnp.fft.fft of 2^22 complex64 points (jit, one device) and of a [64, 65536] batch, and
numpy.fft.fft of the same 2^22 points. Medians of 5 repetitions of >= 1 s each.
Run from the JAX venv (tests/reference/setup_venv.sh):
  .venv-reference/bin/python bench/fft_jax.py
"""
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np


def median_ms(fn):
    fn()
    reps = []
    for _ in range(5):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            if time.perf_counter() - t0 >= 1.0:
                break
        reps.append((time.perf_counter() - t0) / n * 1e3)
    return statistics.median(reps)


rng = np.random.default_rng(0)
x1 = (rng.standard_normal(1 << 22) + 0j).astype(np.complex64)
xb = (rng.standard_normal((64, 65536)) + 0j).astype(np.complex64)
f = jax.jit(jnp.fft.fft)
j1, jb = jnp.asarray(x1), jnp.asarray(xb)
print(f"jax fft 2^22 c64: {median_ms(lambda: f(j1).block_until_ready()):.1f} ms")
print(f"jax fft [64, 65536] c64: {median_ms(lambda: f(jb).block_until_ready()):.1f} ms")
print(f"numpy fft 2^22 c64: {median_ms(lambda: np.fft.fft(x1)):.1f} ms")
