#!/usr/bin/env python3
"""Writes fft_fixtures.json: NumPy's complex128 / float64 results for tsr::fft.

The fixture file is committed; CI reads it (tests/unit/fft_test.cpp) without NumPy.
Regenerate after changing a case (any Python with NumPy):
  python3 tests/reference/fft_fixtures.py
Each case: a function name, its keyword arguments (n / s / axes / axis / norm), one
input (real or complex) and the output, complex values stored as [re, im] pairs.
"""
import json
import os

import numpy as np

rng = np.random.default_rng(20261128)


def real(*shape):
    return rng.standard_normal(shape)


def cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


CASES = [
    ("fft_1d_n8", "fft", {}, cplx(8)),
    ("fft_1d_n7_odd", "fft", {}, cplx(7)),
    ("fft_batched_axis0", "fft", {"axis": 0}, cplx(6, 4)),
    ("fft_real_input", "fft", {}, real(4, 8)),
    ("fft_n_pads", "fft", {"n": 10}, cplx(2, 7)),
    ("fft_n_crops", "fft", {"n": 5}, cplx(2, 7)),
    ("fft_ortho", "fft", {"norm": "ortho"}, cplx(3, 8)),
    ("fft_forward", "fft", {"norm": "forward"}, cplx(3, 8)),
    ("ifft_1d", "ifft", {}, cplx(4, 9)),
    ("ifft_ortho", "ifft", {"norm": "ortho"}, cplx(4, 8)),
    ("rfft_even", "rfft", {}, real(4, 8)),
    ("rfft_odd", "rfft", {}, real(4, 9)),
    ("rfft_n_pads", "rfft", {"n": 12}, real(2, 9)),
    ("rfft_axis0", "rfft", {"axis": 0}, real(6, 3)),
    ("irfft_default_n", "irfft", {}, cplx(4, 5)),
    ("irfft_odd_n", "irfft", {"n": 9}, cplx(4, 5)),
    ("irfft_forward", "irfft", {"norm": "forward"}, cplx(2, 5)),
    ("hfft", "hfft", {}, cplx(3, 5)),
    ("ihfft", "ihfft", {}, real(3, 8)),
    ("fft2", "fft2", {}, cplx(2, 4, 6)),
    ("fft2_axes", "fft2", {"axes": [0, 2]}, cplx(4, 3, 6)),
    ("ifft2_s", "ifft2", {"s": [3, 8]}, cplx(2, 4, 6)),
    ("rfft2", "rfft2", {}, real(2, 4, 6)),
    ("irfft2", "irfft2", {}, cplx(2, 4, 4)),
    ("fftn_3d", "fftn", {}, cplx(3, 4, 5)),
    ("fftn_axes_s", "fftn", {"s": [4, 6], "axes": [2, 0]}, cplx(3, 4, 5)),
    ("fftn_4d_loops", "fftn", {}, cplx(2, 3, 2, 4)),
    ("ifftn_4d_loops", "ifftn", {}, cplx(2, 3, 2, 4)),
    ("rfftn_3d", "rfftn", {}, real(2, 4, 6)),
    ("rfftn_4d_loops", "rfftn", {}, real(2, 3, 2, 4)),
    ("irfftn_3d", "irfftn", {}, cplx(2, 4, 4)),
    ("irfftn_s", "irfftn", {"s": [4, 7]}, cplx(3, 4, 4)),
    ("fft_length_1", "fft", {}, cplx(3, 1)),
    ("rfft_length_1", "rfft", {}, real(3, 1)),
    ("irfft_n_1", "irfft", {"n": 1}, cplx(2, 3)),
]


def enc(x):
    x = np.asarray(x)
    if np.iscomplexobj(x):
        return {"shape": list(x.shape), "re": x.real.ravel().tolist(), "im": x.imag.ravel().tolist()}
    return {"shape": list(x.shape), "re": x.ravel().tolist()}


def main():
    cases = []
    for name, fn, kw, x in CASES:
        y = getattr(np.fft, fn)(x, **kw)
        cases.append({"name": name, "fn": fn, "kwargs": kw, "input": enc(x), "output": enc(y)})
    extras = {
        "fftfreq_8": enc(np.fft.fftfreq(8, 0.5)),
        "fftfreq_7": enc(np.fft.fftfreq(7)),
        "rfftfreq_8": enc(np.fft.rfftfreq(8, 0.25)),
        "rfftfreq_7": enc(np.fft.rfftfreq(7)),
        "fftshift_in": enc(np.arange(15.0).reshape(3, 5)),
        "fftshift": enc(np.fft.fftshift(np.arange(15.0).reshape(3, 5))),
        "ifftshift": enc(np.fft.ifftshift(np.arange(15.0).reshape(3, 5))),
        "fftshift_axis1": enc(np.fft.fftshift(np.arange(15.0).reshape(3, 5), axes=[1])),
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fft_fixtures.json")
    with open(out, "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases, "extras": extras}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
