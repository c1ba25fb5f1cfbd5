#!/usr/bin/env python3
"""Runs the Transformer training benchmark in one go and prints its table.

Tessera (build/bench/train_bench: tsr-train's step), PyTorch (bench/train_torch.py,
eager, and compiled with --compile) and JAX (bench/train_jax.py) on the same model,
batch and optimizer, then bench/checkpoint_bench. PyTorch eager runs first and last,
so that a drift in the machine's speed shows; ratios use the faster of its two runs.
The references run from the venv bench/setup_venv.sh makes. Standard library only:

    bash bench/setup_venv.sh
    cmake --build build -j2 --target train_bench checkpoint_bench
    python3 bench/train_compare.py [--compile] [--constrain] [--quick]

Every program's own output goes to stderr as it runs; the table (markdown) to stdout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS_8 = ["8:8:dp", "8:8:fsdp", "8:4x2:tp", "8:4x2:dp+tp", "8:4x2:fsdp+tp"]


def run(cmd, env=None, timeout=None):
    """Runs cmd, echoing its output to stderr; its RESULT records and its full output."""
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out, rc = out + f"\n(timed out after {timeout} s)", 124
    print(out.rstrip() + f"\n({time.time() - t0:.0f} s, exit {rc})", file=sys.stderr, flush=True)
    results = [json.loads(l[len("RESULT "):]) for l in out.splitlines() if l.startswith("RESULT ")]
    return results, out, rc


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv-bench", "bin", "python"))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--constrain", action="store_true",
                    help="also time JAX with nn's activation constraints on 8 devices")
    ap.add_argument("--quick", action="store_true", help="1 rep x 2 steps, 1 warm-up (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.steps, args.reps = 1, 2, 1
    bench = os.path.join(args.build, "bench")
    for exe in ("train_bench", "checkpoint_bench"):
        if not os.path.exists(os.path.join(bench, exe)):
            sys.exit(f"{bench}/{exe} missing: cmake --build {args.build} --target {exe}")
    if not os.path.exists(args.python):
        sys.exit(f"{args.python} missing: run bash bench/setup_venv.sh")
    shape = ["--batch", str(args.batch), "--seq", str(args.seq), "--warmup", str(args.warmup),
             "--steps", str(args.steps)]
    torch_cmd = [args.python, os.path.join(ROOT, "bench", "train_torch.py"), *shape,
                 "--repetitions", str(args.reps)]
    jax_cmd = [args.python, os.path.join(ROOT, "bench", "train_jax.py"), *shape,
               "--repetitions", str(args.reps)]
    loads = [loadavg()]
    t_start = time.time()

    torch_eager, _, _ = run(torch_cmd)
    jax1, _, _ = run(jax_cmd + ["--configs", "1:1:dp"])
    tsr, _, _ = run([os.path.join(bench, "train_bench"), *shape, "--reps", str(args.reps),
                     "--configs", ",".join(["gemm", "1:1:dp"] + CONFIGS_8)])
    loads.append(loadavg())
    jax8, _, _ = run(jax_cmd + ["--configs", ",".join(CONFIGS_8)])
    jaxc = run(jax_cmd + ["--constrain", "--configs", ",".join(CONFIGS_8)])[0] if args.constrain else []
    compiled = []
    if args.compile:
        compiled, _, rc = run(torch_cmd + ["--compile"], timeout=600)
        if rc != 0:
            print("torch.compile failed or timed out: not in the table", file=sys.stderr)
    torch_eager += run(torch_cmd)[0]
    loads.append(loadavg())
    _, ckpt_out, _ = run([os.path.join(bench, "checkpoint_bench")], env={"TSR_BENCH_REPS": "5"})
    loads.append(loadavg())

    by = {(r["impl"], r["config"]): r for r in tsr + jax1 + jax8 + jaxc}
    t1 = by.get(("tessera", "1:1:dp"))
    best_torch = min(torch_eager, key=lambda r: r["ms_per_step"]) if torch_eager else None
    mib = 1024 * 1024
    print(f"\nTransformer training step, small model ({t1['params'] / 1e6:.2f} M params, vocab 80), "
          f"batch {args.batch} x seq {args.seq} = {args.batch * args.seq} tokens; medians of "
          f"{args.reps} reps x {args.steps} steps after {args.warmup} warm-up; load average "
          f"{' / '.join(loads)} (start / after Tessera / after PyTorch / end); "
          f"{time.time() - t_start:.0f} s in all.\n")
    print("| implementation | config | ms/step | tokens/s | rep medians ms | ratio |")
    print("|---|---|---|---|---|---|")

    def row(r, ratio):
        reps = ", ".join(f"{m:.0f}" for m in r["rep_ms"])
        print(f"| {r['impl']} | {r['config']} | {r['ms_per_step']:.0f} | {r['tokens_per_s']:.0f} | "
              f"{reps} | {ratio} |")

    for i, r in enumerate(torch_eager):
        row(r, f"run {i + 1} of 2" + (" (faster: 1.00x)" if r is best_torch else ""))
    for r in compiled:
        row(r, f"{r['tokens_per_s'] / best_torch['tokens_per_s']:.2f}x eager")
    for r in jax1:
        row(r, f"{r['tokens_per_s'] / best_torch['tokens_per_s']:.2f}x torch eager")
    gemm = by.get(("OpenBLAS GEMMs alone", "gemm"))
    if gemm:
        row(gemm, f"{gemm['gflop']:.1f} GFLOP: {gemm['gflop'] / gemm['ms_per_step'] * 1e3:.0f} GFLOP/s")
    if t1:
        vs = [f"**{t1['tokens_per_s'] / best_torch['tokens_per_s']:.2f}x torch eager**"]
        if compiled:
            vs.append(f"{t1['tokens_per_s'] / compiled[0]['tokens_per_s']:.2f}x torch compiled")
        if jax1:
            vs.append(f"**{t1['tokens_per_s'] / jax1[0]['tokens_per_s']:.2f}x JAX**")
        row(t1, ", ".join(vs))
    for c in CONFIGS_8:
        j, jc, t = by.get(("jax", c)), by.get(("jax constrained", c)), by.get(("tessera", c))
        if j:
            row(j, f"{j['tokens_per_s'] / jax1[0]['tokens_per_s']:.2f}x JAX 1 device" if jax1 else "")
        if jc:
            row(jc, f"{jc['tokens_per_s'] / jax1[0]['tokens_per_s']:.2f}x JAX 1 device" if jax1 else "")
        if t:
            vs = [f"**{t['tokens_per_s'] / t1['tokens_per_s']:.2f}x Tessera 1 device**"]
            if j:
                vs.append(f"**{t['tokens_per_s'] / j['tokens_per_s']:.2f}x JAX**")
            if jc:
                vs.append(f"{t['tokens_per_s'] / jc['tokens_per_s']:.2f}x JAX constrained")
            row(t, ", ".join(vs))

    print("\nTessera memory per device (largest over the mesh), MiB; replicated params + AdamW "
          "state (one full copy of the TrainState) "
          f"{t1['replicated_state_bytes'] / mib:.1f} MiB:\n")
    print("| config | state held | ÷ replicated | peak in a step | ÷ replicated | "
          "peak - state | JAX: XLA temp buffers |")
    print("|---|---|---|---|---|---|---|")
    for c in ["1:1:dp"] + CONFIGS_8:
        t, j = by.get(("tessera", c)), by.get(("jax", c))
        if t:
            rep, st, pk = (t["replicated_state_bytes"], t["state_bytes_per_device"],
                           t["peak_bytes_per_device"])
            jt = f"{j['temp_bytes'] / mib:.1f}" if j and j.get("temp_bytes", -1) >= 0 else "-"
            print(f"| {c} | {st / mib:.1f} | {st / rep:.3f} | {pk / mib:.1f} | {pk / rep:.2f} | "
                  f"{(pk - st) / mib:.1f} | {jt} |")
    print("\ncheckpoint_bench:\n\n```")
    print("\n".join(l for l in ckpt_out.splitlines() if l.strip()))
    print("```")


if __name__ == "__main__":
    main()
