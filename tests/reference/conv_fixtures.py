#!/usr/bin/env python3
"""Writes conv_fixtures.json: JAX's float64 results for lax.conv_general_dilated.

The fixture file is committed; CI reads it (tests/unit/conv_test.cpp) without JAX.
Regenerate with the reference venv (tests/reference/setup_venv.sh):
  .venv-reference/bin/python tests/reference/conv_fixtures.py
Each case stores its parameters (the test calls tsr::conv_general_dilated with them),
the value, and the gradients of sum(f(lhs, rhs) * w) in lhs and rhs (w a fixed ramp).
"""
import json
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(20261127)

NCHW = ("NCHW", "OIHW", "NCHW")
NHWC = ("NHWC", "HWIO", "NHWC")
# name: lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, layouts,
# feature_group_count, batch_group_count
CASES = {
    "nchw_valid": ((2, 3, 6, 5), (4, 3, 3, 2), (1, 1), "VALID", None, None, NCHW, 1, 1),
    "nhwc_same": ((2, 6, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", None, None, NHWC, 1, 1),
    "nhwc_same_stride2": ((2, 7, 6, 3), (3, 3, 3, 4), (2, 2), "SAME", None, None, NHWC, 1, 1),
    "nhwc_same_lower": ((1, 6, 5, 2), (2, 3, 2, 3), (1, 2), "SAME_LOWER", None, None, NHWC, 1, 1),
    "explicit_padding": ((2, 2, 6, 6), (3, 2, 3, 3), (2, 1), ((1, 2), (0, 1)), None, None, NCHW, 1, 1),
    "negative_padding": ((1, 2, 7, 6), (2, 2, 2, 2), (1, 1), ((-1, 1), (1, -2)), None, None, NCHW, 1, 1),
    "rhs_dilation": ((2, 6, 7, 2), (2, 2, 2, 3), (1, 1), "SAME", None, (2, 3), NHWC, 1, 1),
    "lhs_dilation": ((2, 4, 4, 3), (3, 3, 3, 2), (1, 1), ((1, 1), (2, 1)), (2, 2), None, NHWC, 1, 1),
    "lhs_and_rhs_dilation_strided": ((1, 5, 4, 2), (2, 2, 2, 3), (2, 1), ((0, 1), (1, 1)), (2, 3), (2, 1), NHWC, 1, 1),
    "feature_groups": ((2, 6, 6, 4), (3, 3, 2, 6), (1, 1), "SAME", None, None, NHWC, 2, 1),
    "depthwise": ((2, 6, 6, 3), (3, 3, 1, 6), (2, 2), "SAME", None, None, NHWC, 3, 1),
    "batch_groups": ((4, 5, 5, 2), (2, 2, 2, 6), (1, 1), "VALID", None, None, NHWC, 1, 2),
    "conv1d_nwc": ((3, 9, 2), (3, 2, 4), (2,), "SAME", None, None, ("NWC", "WIO", "NWC"), 1, 1),
    "conv3d_ndhwc": ((1, 4, 5, 4, 2), (2, 3, 2, 2, 3), (1, 2, 1), "SAME", None, None,
                     ("NDHWC", "DHWIO", "NDHWC"), 1, 1),
    "mixed_layouts": ((2, 3, 6, 5), (3, 2, 3, 4), (1, 1), "SAME", None, None,
                      ("NCHW", "HWIO", "NHWC"), 1, 1),
    "swapped_spatial": ((2, 5, 6, 3), (2, 3, 3, 4), (1, 2), "VALID", None, None,
                        ("NWHC", "HWIO", "NHWC"), 1, 1),
    "patchify_2x2_s2": ((2, 8, 8, 3), (2, 2, 3, 5), (2, 2), "VALID", None, None, NHWC, 1, 1),
    "resnet_like": ((2, 8, 8, 4), (3, 3, 4, 4), (1, 1), "SAME", None, None, NHWC, 1, 1),
}


def pad_arg(p):
    return p if isinstance(p, str) else [list(x) for x in p]


cases = []
for name, (ls, rs, st, pad, ld, rd, dn, fgc, bgc) in CASES.items():
    lhs = rng.standard_normal(ls)
    rhs = rng.standard_normal(rs)

    def f(a, b):
        return lax.conv_general_dilated(a, b, st, pad, ld, rd, dn, fgc, bgc,
                                        precision=lax.Precision.HIGHEST)

    y = f(lhs, rhs)
    w = np.arange(y.size, dtype=np.float64).reshape(y.shape) % 7 - 3.0
    gl, gr = jax.grad(lambda a, b: jnp.sum(f(a, b) * w), argnums=(0, 1))(lhs, rhs)
    cases.append({
        "name": name,
        "lhs": {"shape": list(ls), "data": lhs.ravel().tolist()},
        "rhs": {"shape": list(rs), "data": rhs.ravel().tolist()},
        "strides": list(st), "padding": pad_arg(pad),
        "lhs_dilation": list(ld) if ld else [], "rhs_dilation": list(rd) if rd else [],
        "dimension_numbers": list(dn), "feature_group_count": fgc, "batch_group_count": bgc,
        "y": {"shape": list(y.shape), "data": np.asarray(y).ravel().tolist()},
        "grad_lhs": np.asarray(gl).ravel().tolist(),
        "grad_rhs": np.asarray(gr).ravel().tolist(),
    })

# conv_transpose (the TF / flax ConvTranspose layer's call).
TRANSPOSE = {
    "conv_transpose_same_s2": ((2, 4, 4, 3), (3, 3, 3, 2), (2, 2), "SAME", False),
    "conv_transpose_valid_s2_kernel_t": ((1, 3, 4, 2), (3, 2, 3, 2), (2, 1), "VALID", True),
    "conv_transpose_pairs": ((1, 4, 3, 2), (2, 3, 2, 3), (2, 2), ((1, 0), (0, 2)), False),
}
for name, (ls, rs, st, pad, tk) in TRANSPOSE.items():
    lhs = rng.standard_normal(ls)
    rhs = rng.standard_normal(rs)

    def f(a, b):
        return lax.conv_transpose(a, b, st, pad, transpose_kernel=tk,
                                  precision=lax.Precision.HIGHEST)

    y = f(lhs, rhs)
    w = np.arange(y.size, dtype=np.float64).reshape(y.shape) % 7 - 3.0
    gl, gr = jax.grad(lambda a, b: jnp.sum(f(a, b) * w), argnums=(0, 1))(lhs, rhs)
    cases.append({
        "name": name, "transpose": True, "transpose_kernel": tk,
        "lhs": {"shape": list(ls), "data": lhs.ravel().tolist()},
        "rhs": {"shape": list(rs), "data": rhs.ravel().tolist()},
        "strides": list(st), "padding": pad_arg(pad),
        "y": {"shape": list(y.shape), "data": np.asarray(y).ravel().tolist()},
        "grad_lhs": np.asarray(gl).ravel().tolist(),
        "grad_rhs": np.asarray(gr).ravel().tolist(),
    })

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv_fixtures.json")
with open(out, "w") as fh:
    json.dump({"generator": "tests/reference/conv_fixtures.py", "jax": jax.__version__,
               "cases": cases}, fh, separators=(",", ":"))
    fh.write("\n")
print(f"wrote {len(cases)} cases to {out}")
