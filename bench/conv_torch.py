#!/usr/bin/env python3
"""PyTorch's figures for bench/conv_bench.cpp: the same ResNet basic block on the CPU.

f32[32, 56, 56, 64] channels-last, two 3x3 64 -> 64 convolutions (padding 1),
y = relu(conv(relu(conv(x, w1)), w2) + x); forward, and forward + backward (the
gradients of y.sum() in x, w1 and w2). Medians of 5 repetitions of >= 1 s each.
Run from the bench venv (bench/setup_venv.sh): .venv-bench/bin/python bench/conv_torch.py
"""
import statistics
import time

import torch
import torch.nn.functional as F

torch.manual_seed(0)
N, H, W, C = 32, 56, 56, 64
x = torch.randn(N, C, H, W).to(memory_format=torch.channels_last)
w1 = (torch.randn(C, C, 3, 3) * 0.05).to(memory_format=torch.channels_last)
w2 = (torch.randn(C, C, 3, 3) * 0.05).to(memory_format=torch.channels_last)


def block(x, w1, w2):
    h = F.relu(F.conv2d(x, w1, padding=1))
    return F.relu(F.conv2d(h, w2, padding=1) + x)


def forward():
    with torch.no_grad():
        block(x, w1, w2)


xg, w1g, w2g = (t.clone().requires_grad_(True) for t in (x, w1, w2))


def forward_backward():
    for t in (xg, w1g, w2g):
        t.grad = None
    block(xg, w1g, w2g).sum().backward()


def median_ms(fn, reps=5, min_time=1.0):
    fn()
    out = []
    for _ in range(reps):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < min_time:
            fn()
            n += 1
        out.append((time.perf_counter() - t0) / n * 1e3)
    return statistics.median(out)


print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
print(f"ResNetBlockForward          {median_ms(forward):8.1f} ms")
print(f"ResNetBlockForwardBackward  {median_ms(forward_backward):8.1f} ms")
