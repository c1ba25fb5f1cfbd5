#!/usr/bin/env python3
"""Fault tests across processes: each scenario runs fault_probe under mpirun with
2 processes; the culprit (the last process) misbehaves and every survivor must raise
the expected typed error within the timeout (TSR_COMM_TIMEOUT) instead of hanging."""
import argparse
import os
import re
import subprocess
import sys
import time

TIMEOUT_S = 3
# scenario -> (who must report, text the error must contain, bound in ms)
SCENARIOS = {
    "kill": ("survivors", "process 1", (TIMEOUT_S + 3) * 1000),
    "raise": ("survivors", "process 1 failed: terminated by an uncaught exception: injected", 2000),
    "exit": ("survivors", "process 1 has shut down", 2000),
    "diverge": ("all", "processes lowered different programs", 2000),
    "mismatch": ("all", "processes disagree on the collective", 2000),
}


def run(args, scenario):
    env = dict(os.environ, TSR_COMM_TIMEOUT=str(TIMEOUT_S), TSR_NUM_CPU_DEVICES="4",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [args.mpirun, "--oversubscribe", "--bind-to", "none",
           "--mca", "btl_vader_single_copy_mechanism", "none",
           # A dead or failing process must not make mpirun kill the survivors before
           # they report: that is the behaviour under test.
           "--mca", "orte_abort_on_non_zero_status", "0", "--mca", "orte_enable_recovery", "1",
           "-np", "2", args.probe, scenario]
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    return p.stdout, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = ap.parse_args()
    failed = []
    for name in args.scenarios:
        who, text, bound = SCENARIOS[name]
        out, wall = run(args, name)
        results = {}
        for m in re.finditer(r"RESULT (\S+) process (\d+) (\d+) ms (\S+): (.*)$", out, re.M):
            results[int(m.group(2))] = (int(m.group(3)), m.group(4), m.group(5))
        expect = [0, 1] if who == "all" else [0]
        ok = True
        for p in expect:
            r = results.get(p)
            if r is None or r[1] != "CommError" or text not in r[2] or r[0] > bound:
                ok = False
        status = "ok" if ok else "FAILED"
        print(f"{name:9s} {status}: " + "; ".join(
            f"process {p}: {r[0]} ms {r[1]}: {r[2][:160]}" for p, r in sorted(results.items()))
            + f" (mpirun {wall:.1f} s)")
        if not ok:
            failed.append(name)
            print(out[-3000:])
    if failed:
        print("failed scenarios:", " ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
