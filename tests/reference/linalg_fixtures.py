#!/usr/bin/env python3
"""Writes linalg_fixtures.json: NumPy's float64 results for tsr::linalg's functions.

The fixture file is committed; CI reads it (tests/unit/linalg_test.cpp) without NumPy.
Regenerate after changing a case:  tests/reference/setup_venv.sh (once), then
  .venv-ref/bin/python tests/reference/linalg_fixtures.py   (any Python with NumPy).
Results that are unique only up to signs (eigenvectors, singular vectors, QR) are
normalised here and in the test alike: every column of Q / V / U made to have a
non-negative largest-|x| entry (and the matching row of R / Vh flipped with it).
"""
import json
import os

import numpy as np

rng = np.random.default_rng(20261127)


def mat(*shape):
    return rng.standard_normal(shape)


def spd(*shape):
    x = mat(*shape)
    n = shape[-1]
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def sym(*shape):
    x = mat(*shape)
    return x + np.swapaxes(x, -1, -2)


def lu(a):
    """Partial pivoting as LAPACK's getrf (the first largest |pivot| wins)."""
    a = np.array(a, dtype=np.float64)
    m, n = a.shape
    k = min(m, n)
    piv = np.zeros(k, dtype=np.int64)
    perm = np.arange(m)
    for j in range(k):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv[j] = p
        if p != j:
            a[[j, p]] = a[[p, j]]
            perm[[j, p]] = perm[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, piv, perm


def sign_fix(cols, rows=None):
    """Flips columns of `cols` (and rows of `rows`) so each column's largest-|x| entry is >= 0."""
    cols = np.array(cols)
    rows = None if rows is None else np.array(rows)
    for j in range(cols.shape[-1]):
        i = int(np.argmax(np.abs(cols[:, j])))
        if cols[i, j] < 0:
            cols[:, j] *= -1
            if rows is not None:
                rows[j, :] *= -1
    return cols, rows


cases = []


def case(name, inputs, outputs, **params):
    cases.append({
        "name": name,
        "params": params,
        "inputs": [{"shape": list(np.shape(x)), "data": np.ravel(x).tolist()} for x in inputs],
        "outputs": [{"shape": list(np.shape(y)), "data": np.ravel(np.asarray(y, dtype=np.float64)).tolist()}
                    for y in outputs],
    })


a = spd(2, 5, 5)
case("cholesky", [a], [np.linalg.cholesky(a)])
case("cholesky_upper", [a], [np.swapaxes(np.linalg.cholesky(a), -1, -2)])
t = np.tril(mat(5, 5)) + 4 * np.eye(5)
b = mat(5, 3)
case("solve_triangular_lower", [t, b], [np.linalg.solve(t, b)])
case("solve_triangular_lower_trans", [t, b], [np.linalg.solve(t.T, b)])
a, b = mat(2, 5, 5), mat(2, 5, 3)
case("solve", [a, b], [np.linalg.solve(a, b)])
a, b = mat(4, 4), mat(4)
case("solve_vector", [a, b], [np.linalg.solve(a, b)])
a = mat(3, 5, 5)
case("inv", [a], [np.linalg.inv(a)])
for n in (2, 3, 6):
    a = mat(4, n, n)
    case(f"det_{n}x{n}", [a], [np.linalg.det(a)])
a = mat(4, 6, 6)
s, l = np.linalg.slogdet(a)
case("slogdet", [a], [s, l])
a = sym(2, 6, 6)
w, v = np.linalg.eigh(a)
case("eigh", [a], [w, np.stack([sign_fix(v[i])[0] for i in range(2)])])
for shape in ((6, 4), (4, 6)):
    a = mat(*shape)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    u, vh = sign_fix(u, vh)
    case(f"svd_{shape[0]}x{shape[1]}", [a], [u, s, vh])
a = mat(6, 4)
q, r = np.linalg.qr(a)
q, r = sign_fix(q, r)
case("qr_reduced", [a], [q, r])
for shape in ((5, 5), (6, 4), (4, 6)):
    a = mat(*shape)
    f, piv, perm = lu(a)
    case(f"lu_{shape[0]}x{shape[1]}", [a], [f, piv, perm])
a, b = mat(8, 4), mat(8, 2)
x, resid, rank, s = np.linalg.lstsq(a, b, rcond=None)
case("lstsq", [a, b], [x, resid, rank, s])
a = mat(6, 4)
case("pinv", [a], [np.linalg.pinv(a)])
a = mat(5, 4)
for ord_ in ("fro", "nuc", 1, -1, 2, -2, "inf", "-inf"):
    o = {"inf": np.inf, "-inf": -np.inf}.get(ord_, ord_)
    case(f"norm_matrix_{ord_}", [a], [np.linalg.norm(a, o)], ord=str(ord_))
v = mat(7)
v[2] = 0.0
for ord_ in (0, 1, 2, 3, "inf", "-inf"):
    o = {"inf": np.inf, "-inf": -np.inf}.get(ord_, ord_)
    case(f"norm_vector_{ord_}", [v], [np.linalg.norm(v, o)], ord=str(ord_))
a = mat(4, 4)
for p in (0, 1, 3, 6, -2):
    case(f"matrix_power_{p}", [a], [np.linalg.matrix_power(a, p)], n=p)

a = mat(3, 6, 4)
a[1] = np.outer(mat(6), mat(4))  # rank 1
case("matrix_rank", [a], [np.linalg.matrix_rank(a)])
a = mat(2, 5, 5)
for p in ("None", "fro", "1", "inf", "-2"):
    o = {"None": None, "fro": "fro", "1": 1, "inf": np.inf, "-2": -2}[p]
    case(f"cond_{p}", [a], [np.linalg.cond(a, o)], ord=p)
ms = [mat(4), mat(4, 6), mat(6, 3), mat(3, 5), mat(5)]
case("multi_dot", ms, [np.linalg.multi_dot(ms)])
a, b = spd(2, 5, 5), mat(2, 5, 3)
case("cho_solve_lower", [a, b], [np.linalg.solve(a, b)], lower=True)
case("cho_solve_upper", [a, b], [np.linalg.solve(a, b)], lower=False)
a, b = mat(5, 5), mat(5, 2)
case("lu_solve", [a, b], [np.linalg.solve(a, b)], trans=0)
case("lu_solve_trans", [a, b], [np.linalg.solve(a.T, b)], trans=1)
b = mat(5)
case("lu_solve_vector", [a, b], [np.linalg.solve(a, b)], trans=0)

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linalg_fixtures.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/reference/linalg_fixtures.py", "numpy": np.__version__,
               "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(cases)} cases to {out}")
