#!/usr/bin/env python3
"""PyTorch's eager `a + b` on 8-element float32 tensors: the reference for
bench/dispatch_bench.cpp (same chain y = y + x, 256 ops per repetition block).

    /usr/bin/python3 bench/dispatch_torch.py --repetitions 5
"""
import argparse
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--ops", type=int, default=200_000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    x = torch.ones(8)
    y = torch.zeros(8)
    for _ in range(10_000):
        y = y + x
    times = []
    for _ in range(args.repetitions):
        t0 = time.perf_counter()
        for _ in range(args.ops):
            y = y + x
        times.append((time.perf_counter() - t0) / args.ops)
    print(f"torch eager add (8 floats): median {statistics.median(times) * 1e9:.0f} ns/op "
          f"over {args.repetitions} repetitions")


if __name__ == "__main__":
    main()
