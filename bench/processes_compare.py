#!/usr/bin/env python3
"""Collectives over 8 devices as 1 x 8, 2 x 4 and 4 x 2 processes x devices against Open
MPI's own over 8 ranks, in one invocation (issue 25): "jit" is a jit(shard_map(...))
call waited on (dispatch and output allocation included), "group" the comm layer
alone (the devices' group called on reused buffers, as MPI's bare call is). Prints a
table of median microseconds and the ratios MPI / Tessera (> 1: Tessera faster).
Usage: processes_compare.py BUILD_DIR [--max-mib 64]

MPI's benchmark reuses its buffers; Tessera's outputs come from the allocator, whose
per-device cache (256 MiB by default) would drop the 512 MiB outputs of a 64 MiB
all_gather and fault fresh pages on every call, so the runs here raise it to 1 GiB."""
import os
import subprocess
import sys

build = sys.argv[1]
extra = sys.argv[2:]
exe = os.path.join(build, "bench", "processes_bench")
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           TSR_ALLOCATOR_CACHE_BYTES=str(1 << 30))
mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "-x", "TSR_ALLOCATOR_CACHE_BYTES",
          "--mca", "btl_vader_single_copy_mechanism", "none"]


def run(cmd):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return {(op, int(b)): float(t) for op, b, t in (l.split() for l in out.splitlines() if l.strip())}


runs = {
    "mpi 8 ranks": run(mpirun + ["-np", "8", exe, "--mode", "mpi"] + extra),
    "tsr 1x8": run([exe, "--mode", "tsr"] + extra),
    "tsr 2x4": run(mpirun + ["-np", "2", exe, "--mode", "tsr"] + extra),
    "tsr 4x2": run(mpirun + ["-np", "4", exe, "--mode", "tsr"] + extra),
    "group 1x8": run([exe, "--mode", "group"] + extra),
    "group 2x4": run(mpirun + ["-np", "2", exe, "--mode", "group"] + extra),
    "group 4x2": run(mpirun + ["-np", "4", exe, "--mode", "group"] + extra),
}
cols = ["tsr 1x8", "tsr 2x4", "tsr 4x2", "group 1x8", "group 2x4", "group 4x2"]
keys = sorted(runs["mpi 8 ranks"], key=lambda k: (k[0], k[1]))
print("| op | bytes/device | MPI 8 ranks, us | jit 1x8 | jit 2x4 | jit 4x2 | group 1x8 | "
      "group 2x4 | group 4x2 | MPI / jit 2x4 | MPI / jit 4x2 | MPI / group 2x4 | "
      "MPI / group 4x2 |")
print("|---" * 13 + "|")
for k in keys:
    m = runs["mpi 8 ranks"][k]
    t = [runs[r][k] for r in cols]
    size = f"{k[1] >> 20} MiB" if k[1] >= 1 << 20 else f"{k[1] >> 10} KiB"
    print(f"| {k[0]} | {size} | {m:.0f} | " + " | ".join(f"{x:.0f}" for x in t) + " | " +
          " | ".join(f"{m / x:.2f}" for x in (t[1], t[2], t[4], t[5])) + " |")
