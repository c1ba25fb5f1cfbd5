#!/usr/bin/env python3
"""Writes window_fixtures.json: JAX's float64 results for reduce_window and pooling.

The fixture file is committed; CI reads it (tests/unit/window_test.cpp) without JAX.
Regenerate with the reference venv (tests/reference/setup_venv.sh):
  .venv-reference/bin/python tests/reference/window_fixtures.py
Every case is one tsr call with the same arguments (see the test's `run`), and its
value and input-gradient (of sum(f(x) * w), w a fixed ramp) in float64.
"""
import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(20261128)


def pool(x, init, fn, window, strides, padding):
    """flax.linen.pooling.pool (batch..., spatial..., features)."""
    nb = x.ndim - (len(window) + 1)
    strides = strides or (1,) * len(window)
    dims = (1,) * nb + tuple(window) + (1,)
    st = (1,) * nb + tuple(strides) + (1,)
    if not isinstance(padding, str):
        padding = ((0, 0),) * nb + tuple(map(tuple, padding)) + ((0, 0),)
    return lax.reduce_window(x, init, fn, dims, st, padding)


def avg(x, window, strides, padding, include):
    y = pool(x, 0.0, lax.add, window, strides, padding)
    if include:
        return y / np.prod(window)
    ones = jnp.ones(x.shape[:-1] + (1,))
    return y / pool(ones, 0.0, lax.add, window, strides, padding)


CASES = {
    "max_pool_2x2": (lambda x: pool(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID"), (2, 6, 6, 3)),
    "max_pool_3x3_same": (lambda x: pool(x, -jnp.inf, lax.max, (3, 3), (1, 1), "SAME"), (2, 5, 5, 2)),
    "min_pool_3x3_stride2_same": (lambda x: pool(x, jnp.inf, lax.min, (3, 3), (2, 2), "SAME"), (2, 7, 6, 2)),
    "avg_pool_2x2": (lambda x: avg(x, (2, 2), (2, 2), "VALID", True), (2, 6, 6, 3)),
    "avg_pool_3x3_same_exclude_pad": (lambda x: avg(x, (3, 3), (1, 1), "SAME", False), (2, 5, 5, 2)),
    "avg_pool_explicit_padding": (lambda x: avg(x, (2, 3), (2, 1), ((1, 1), (0, 2)), True), (2, 6, 5, 2)),
    "reduce_window_sum_dilated": (lambda x: lax.reduce_window(
        x, 0.0, lax.add, (2, 3), (2, 1), ((0, 0), (1, 2)), (1, 2), (1, 2)), (6, 7)),
    "reduce_window_max_dilated_same": (lambda x: lax.reduce_window(
        x, -jnp.inf, lax.max, (2, 3), (1, 2), "SAME", None, (1, 2)), (5, 9)),
    "reduce_window_sum_init_one_same": (lambda x: lax.reduce_window(
        x, 1.0, lax.add, (3, 3), (1, 1), "SAME"), (4, 5)),
    "reduce_window_max_base_dilation": (lambda x: lax.reduce_window(
        x, -jnp.inf, lax.max, (3, 2), (1, 1), ((1, 0), (0, 1)), (2, 1), (1, 1)), (4, 5)),
}

cases = []
for name, (f, shape) in CASES.items():
    x = rng.standard_normal(shape)
    y = f(x)
    w = np.arange(y.size, dtype=np.float64).reshape(y.shape) % 7 - 3.0
    try:
        g = np.asarray(jax.grad(lambda x: jnp.sum(f(x) * w))(x)).ravel().tolist()
    except (NotImplementedError, ValueError):
        # JAX has no max-pool VJP with window dilation, and no reverse mode through a
        # reduce_window whose init is not the identity (Tessera has both).
        g = None
    cases.append({"name": name, "x": {"shape": list(shape), "data": x.ravel().tolist()},
                  "y": {"shape": list(y.shape), "data": np.asarray(y).ravel().tolist()},
                  "grad": g})

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "window_fixtures.json")
with open(out, "w") as fh:
    json.dump({"generator": "tests/reference/window_fixtures.py", "jax": jax.__version__,
               "cases": cases}, fh, separators=(",", ":"))
    fh.write("\n")
print(f"wrote {len(cases)} cases to {out}")
