#!/usr/bin/env python3
"""PyTorch's training step of the model bench/mlp_train_bench.cpp times.

784 -> 1024 -> 1024 -> 10 relu MLP, softmax cross-entropy, batch 256, float32,
He-normal weights (std sqrt(2 / fan_in)) and zero biases, as examples/mlp.h.
One step: forward, loss.backward(), p -= lr * p.grad under no_grad, zero grads.
Prints the median (and min/max) ms/step of --steps steps after --warmup steps,
per repetition, then the median over repetitions.

    python3 bench/mlp_train_torch.py --repetitions 5

Needs Debian's PyTorch: apt-get install -y python3-torch (see bench/README.md).

Debian's PyTorch runs elementwise ops on OpenMP threads and GEMMs on OpenBLAS's own
pthreads; by default the idle OpenMP threads spin and take the cores from OpenBLAS.
--omp-passive sets OMP_WAIT_POLICY=PASSIVE (before torch loads) to measure the step
without that contention as well.
"""
import argparse
import math
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--sizes", type=int, nargs=4, default=[784, 1024, 1024, 10])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--omp-passive", action="store_true",
                    help="OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep instead of spinning")
    args = ap.parse_args()
    if args.omp_passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    # Imported here so that the OpenMP setting above takes effect.
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sizes = args.sizes
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        # Row-major [in, out] as in the C++ model, so x @ w needs no transpose.
        w = (torch.randn(fan_in, fan_out) * math.sqrt(2.0 / fan_in)).requires_grad_()
        b = torch.zeros(fan_out, requires_grad=True)
        params += [w, b]
    x = torch.randn(args.batch, sizes[0])
    y = torch.randint(0, sizes[-1], (args.batch,))

    def step():
        w1, b1, w2, b2, w3, b3 = params
        h = F.relu(x @ w1 + b1)
        h = F.relu(h @ w2 + b2)
        loss = F.cross_entropy(h @ w3 + b3, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= args.lr * p.grad
                p.grad = None  # zero grads (set_to_none, PyTorch's default)
        return loss.item()

    for _ in range(args.warmup):
        step()
    medians = []
    for r in range(args.repetitions):
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            loss = step()
            times.append((time.perf_counter() - t0) * 1e3)
        med = statistics.median(times)
        medians.append(med)
        print(f"rep {r}: median {med:.2f} ms/step (min {min(times):.2f}, max {max(times):.2f}),"
              f" loss {loss:.4f}")
    policy = os.environ.get("OMP_WAIT_POLICY", "default")
    print(f"torch {torch.__version__}, {args.threads} threads, OMP_WAIT_POLICY {policy}, "
          f"batch {args.batch}, sizes {sizes}: median {statistics.median(medians):.2f} ms/step")


if __name__ == "__main__":
    main()
