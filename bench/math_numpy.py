#!/usr/bin/env python3
"""NumPy's side of bench/math_bench.cpp: the same ops on the same float32 inputs.

Each row runs its op for --min-time seconds per repetition and reports the mean
time per call; the median over --repetitions is printed (as Google Benchmark's
*_median rows). NumPy runs on one thread. Run it before and after math_bench:

    /usr/bin/python3 bench/math_numpy.py --repetitions 5
"""
import argparse
import statistics
import time

import numpy as np

N = 1 << 24  # 16 M floats
SUM_N = 1 << 20  # 4 MiB of floats
STEP2 = 0.7548776662466927


def inputs(n, lo, hi, step=0.6180339887498949):
    """x[i] in [lo, hi), spread by the golden ratio, as math_bench.cpp's inputs()."""
    f = np.arange(n, dtype=np.float64) * step
    return (lo + (hi - lo) * (f - np.floor(f))).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()

    rows = []

    def unary(name, fn, lo, hi):
        x = inputs(N, lo, hi)
        rows.append((name, lambda: fn(x), "ms"))

    unary("tanh", np.tanh, -4, 4)
    unary("tanh(x*2+1)", lambda x: np.tanh(x * np.float32(2) + np.float32(1)), -4, 4)
    unary("exp", np.exp, -10, 10)
    unary("log", np.log, 0.01, 100)
    unary("log1p", np.log1p, -0.5, 100)
    unary("expm1", np.expm1, -10, 10)
    unary("logistic", lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)), -10, 10)
    unary("sin", np.sin, -100, 100)
    unary("cos", np.cos, -100, 100)
    unary("tan", np.tan, -100, 100)
    px, py = inputs(N, 0.01, 10), inputs(N, -4, 4, STEP2)
    rows.append(("pow", lambda: np.power(px, py), "ms"))
    ay, ax = inputs(N, -10, 10), inputs(N, -10, 10, STEP2)
    rows.append(("atan2", lambda: np.arctan2(ay, ax), "ms"))
    s = inputs(SUM_N, -1, 1)
    rows.append(("sum 4 MiB", lambda: np.sum(s), "us"))
    m = s.reshape(1024, 1024)
    rows.append(("sum axis 0 [1024,1024]", lambda: np.sum(m, axis=0), "us"))
    rows.append(("max 4 MiB", lambda: np.max(s), "us"))

    print(f"NumPy {np.__version__}, median of {args.repetitions} repetitions")
    for name, fn, unit in rows:
        fn()  # warm up (page faults of the first output)
        reps = []
        for _ in range(args.repetitions):
            calls, t0 = 0, time.perf_counter()
            while True:
                fn()
                calls += 1
                el = time.perf_counter() - t0
                if el >= args.min_time:
                    break
            reps.append(el / calls)
        scale = 1e3 if unit == "ms" else 1e6
        print(f"{name:28s} {statistics.median(reps) * scale:10.3f} {unit}")


if __name__ == "__main__":
    main()
