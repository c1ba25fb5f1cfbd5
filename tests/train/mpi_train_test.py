"""tsr-train on many processes (issue 25): `mpirun -np 2 tsr-train --devices 4` trains
on one 8-device mesh spanning both processes and gives the loss curve of one process
with 8 devices (to float tolerance: reductions combine per-process partials), for dp,
fsdp and dp+tp; a checkpoint written by 2 processes resumes in 1, and one written by 1
resumes in 4, on the uninterrupted curve; --trace writes one timeline per process. Usage:
mpi_train_test.py TSR_TRAIN MPIRUN"""
import json
import os
import subprocess
import sys
import tempfile

TRAIN, MPIRUN = sys.argv[1], sys.argv[2]
BASE = ["--model", "tiny", "--batch", "8", "--seq", "32", "--text-bytes", "60000",
        "--samples", "0", "--log-every", "1", "--steps", "6"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           TSR_COMM_TIMEOUT="120")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=ENV)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\n"
                 f"stderr:\n{r.stderr[-3000:]}")
    return r.stdout


def mpirun(np, args):
    return run([MPIRUN, "--oversubscribe", "--bind-to", "none", "--mca",
                "btl_vader_single_copy_mechanism", "none", "-np", str(np), TRAIN] + args +
               ["--devices", str(8 // np)])


def losses(out):
    with open(os.path.join(out, "loss.csv")) as f:
        return [float(l.split(",")[1]) for l in f.readlines()[1:]]


failed = False
with tempfile.TemporaryDirectory() as tmp:
    for rules, mesh in [("dp", "8"), ("fsdp", "8"), ("dp+tp", "4x2")]:
        one, two = os.path.join(tmp, rules + "-1"), os.path.join(tmp, rules + "-2")
        args = BASE + ["--rules", rules, "--mesh", mesh]
        run([TRAIN] + args + ["--devices", "8", "--out", one])
        trace = os.path.join(tmp, rules + ".json")  # each process writes <name>.p<k>.json
        text = mpirun(2, args + ["--out", two] + (["--trace", trace] if rules == "dp+tp" else []))
        a, b = losses(one), losses(two)
        worst = max(abs(x - y) / max(abs(x), 1e-6) for x, y in zip(a, b))
        ok = len(a) == len(b) == 6 and worst < 1e-4 and "(2 processes x 4)" in text
        failed |= not ok
        print(f"[{' OK ' if ok else 'FAIL'}] {rules} on {mesh}: 1x8 {a[0]:.5f}..{a[-1]:.5f}, "
              f"2x4 {b[0]:.5f}..{b[-1]:.5f}, largest relative difference {worst:.2e}")
    # The timeline of the dp+tp run: one file per process, its own pid and devices, and
    # collectives that waited for the other process.
    for p in (0, 1):
        with open(os.path.join(tmp, f"dp+tp.p{p}.json")) as f:
            ev = json.load(f)["traceEvents"]
        devs = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
        colls = [e for e in ev if e.get("cat") == "collective"]
        ok = ({e["pid"] for e in ev} == {p} and
              devs == {"caller"} | {f"device {d} (cpu)" for d in range(4 * p, 4 * p + 4)} and
              len(colls) > 0 and all(e["args"]["wait_us"] >= 0 for e in colls))
        failed |= not ok
        print(f"[{' OK ' if ok else 'FAIL'}] trace of process {p}: {len(ev)} events, "
              f"{len(colls)} collectives, tracks {sorted(devs)}")
    # Checkpoints across process counts: 2 -> 1 and 1 -> 4, fsdp+tp on 4x2.
    args = BASE + ["--rules", "fsdp+tp", "--mesh", "4x2"]
    full = os.path.join(tmp, "full")
    run([TRAIN] + args + ["--devices", "8", "--out", full])
    for save_np, resume_np in [(2, 1), (1, 4)]:
        out, ck = os.path.join(tmp, f"ck{save_np}{resume_np}"), os.path.join(tmp, f"c{save_np}{resume_np}")
        part = args + ["--out", out, "--checkpoint", ck]
        for np, extra in [(save_np, ["--stop-after", "3"]), (resume_np, ["--resume"])]:
            if np == 1:
                run([TRAIN] + part + extra + ["--devices", "8"])
            else:
                mpirun(np, part + extra)
        a, b = losses(full), losses(out)
        worst = max(abs(x - y) / max(abs(x), 1e-6) for x, y in zip(a, b))
        files = sorted(os.listdir(os.path.join(ck, "step_00000003")))
        ok = len(b) == 6 and worst < 1e-4
        failed |= not ok
        print(f"[{' OK ' if ok else 'FAIL'}] checkpoint by {save_np} process(es), resumed by "
              f"{resume_np}: files {files}, largest relative difference {worst:.2e}")
sys.exit(1 if failed else 0)
