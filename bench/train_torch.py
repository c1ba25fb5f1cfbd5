#!/usr/bin/env python3
"""PyTorch's training step of the model bench/train_bench.cpp times (tsr-train's step).

The nn Transformer (include/tsr/nn.h spells it out) in PyTorch 2.x: pre-LayerNorm GPT
with rotary positions (non-interleaved rotate_half, base 10000), causal softmax
attention without bias (F.scaled_dot_product_attention, is_causal: the same math as
the explicit mask), gelu(approximate="tanh") MLP with biases, final LayerNorm, untied
head without bias, mean next-token cross-entropy. The q, k, v projections are one
[E, 3E] matrix (nanoGPT's c_attn: the same parameters as wq, wk, wv side by side). The
optimizer is apps/train/step.h's: clip_grad_norm_(1.0), then AdamW(b1 0.9, b2 0.99,
eps 1e-8, weight decay 0.1 on rank >= 2 parameters only) with optax's
warmup_cosine_decay_schedule(0, 3e-3, 10, 1000, 3e-4) as a LambdaLR.

One step = forward, backward, clip, AdamW, zero grads (set_to_none), scheduler step,
loss.item(). --warmup untimed steps (with --compile the first compiles), then
--repetitions repetitions of --steps steps; prints each repetition's median and the
median over repetitions, and a "RESULT {json}" line for bench/train_compare.py.

    .venv-bench/bin/python bench/train_torch.py [--compile]   # bench/setup_venv.sh
"""
import argparse
import json
import math
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["small", "tiny"], default="small")
    ap.add_argument("--vocab", type=int, default=80)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="torch.compile the forward + loss")
    ap.add_argument("--omp-passive", action="store_true",
                    help="OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep instead of spinning")
    args = ap.parse_args()
    if args.omp_passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    import torch  # after the OpenMP setting above
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    E, H, L, FF = (384, 6, 6, 1536) if args.model == "small" else (128, 4, 4, 512)
    V, T, B, D = args.vocab, args.seq, args.batch, E // H

    def normal(*shape):
        return (torch.randn(*shape) * 0.02).requires_grad_()

    def ones(n):
        return torch.ones(n, requires_grad=True)

    def zeros(n):
        return torch.zeros(n, requires_grad=True)

    params = {"embed": normal(V, E), "head": normal(E, V), "ln_f.s": ones(E), "ln_f.b": zeros(E)}
    for l in range(L):
        params.update({f"{l}.ln1.s": ones(E), f"{l}.ln1.b": zeros(E),
                       f"{l}.wqkv": normal(E, 3 * E), f"{l}.wo": normal(E, E),
                       f"{l}.ln2.s": ones(E), f"{l}.ln2.b": zeros(E),
                       f"{l}.w1": normal(E, FF), f"{l}.b1": zeros(FF),
                       f"{l}.w2": normal(FF, E), f"{l}.b2": zeros(E)})
    n_params = sum(p.numel() for p in params.values())

    half = D // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float32) * 2.0 / D))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]  # [1, T, 1, D]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]

    def rope(x):  # [B, T, H, D]
        x1, x2 = x[..., :half], x[..., half:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def loss_fn(p, tokens, targets):
        x = F.embedding(tokens, p["embed"])
        for l in range(L):
            h = F.layer_norm(x, (E,), p[f"{l}.ln1.s"], p[f"{l}.ln1.b"], 1e-5)
            q, k, v = (h @ p[f"{l}.wqkv"]).view(B, T, 3, H, D).unbind(2)
            q, k = rope(q), rope(k)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True)
            x = x + o.transpose(1, 2).reshape(B, T, E) @ p[f"{l}.wo"]
            h = F.layer_norm(x, (E,), p[f"{l}.ln2.s"], p[f"{l}.ln2.b"], 1e-5)
            x = x + F.gelu(h @ p[f"{l}.w1"] + p[f"{l}.b1"], approximate="tanh") @ p[f"{l}.w2"] \
                + p[f"{l}.b2"]
        x = F.layer_norm(x, (E,), p["ln_f.s"], p["ln_f.b"], 1e-5)
        return F.cross_entropy((x @ p["head"]).view(B * T, V), targets.view(B * T))

    fwd = torch.compile(loss_fn) if args.compile else loss_fn
    decay = [p for p in params.values() if p.ndim >= 2]
    no_decay = [p for p in params.values() if p.ndim < 2]
    lr, warmup, steps, end = 3e-3, 10, 1000, 3e-4
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    try:  # the fused CPU kernel (PyTorch >= 2.4) where there is one: PyTorch's fastest
        opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), eps=1e-8, fused=True)
        impl = "fused"
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), eps=1e-8, foreach=True)
        impl = "foreach"

    def schedule(i):  # optax.warmup_cosine_decay_schedule(0, lr, warmup, steps, end) / lr
        if i < warmup:
            return i / warmup
        frac = min(i - warmup, steps - warmup) / (steps - warmup)
        return (end + (lr - end) * 0.5 * (1 + math.cos(math.pi * frac))) / lr

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, V, (B, T), generator=g)
    targets = torch.randint(0, V, (B, T), generator=g)

    def step():
        loss = fwd(params, tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params.values(), 1.0, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        return loss.item()

    t0 = time.perf_counter()
    first_loss = step()
    first = time.perf_counter() - t0
    for _ in range(args.warmup - 1):
        step()
    medians = []
    for r in range(args.repetitions):
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times))
        print(f"rep {r}: median {medians[-1] * 1e3:.1f} ms/step (min {min(times) * 1e3:.1f}, "
              f"max {max(times) * 1e3:.1f}), loss {loss:.4f}", flush=True)
    med = statistics.median(medians)
    mode = "compiled" if args.compile else "eager"
    policy = os.environ.get("OMP_WAIT_POLICY", "default")
    print(f"torch {torch.__version__} {mode}, {args.threads} threads, OMP {policy}, AdamW {impl}, "
          f"{n_params / 1e6:.2f} M params, batch {B} x {T}: {med * 1e3:.1f} ms/step, "
          f"{B * T / med:.0f} tokens/s, first step {first:.1f} s")
    print("RESULT " + json.dumps({
        "impl": f"torch {mode}", "config": "1", "devices": 1, "ms_per_step": med * 1e3,
        "tokens_per_s": B * T / med, "rep_ms": [m * 1e3 for m in medians], "params": n_params,
        "first_call_s": first, "loss": loss, "first_loss": first_loss,
        "version": torch.__version__, "threads": args.threads, "omp": policy, "adamw": impl}))


if __name__ == "__main__":
    main()
