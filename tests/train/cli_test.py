"""tsr-train end to end (issue 24): flag errors before any work, a short run whose
loss falls below the unigram entropy, Ctrl-C writes a checkpoint, a resumed run
reproduces the uninterrupted loss curve bit for bit on the same mesh and to float
tolerance on another mesh. Usage: cli_test.py TSR_TRAIN [CASE...]"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

TRAIN = sys.argv[1]
# Small and fast: the tiny model on 1/20 of the word list.
BASE = ["--model", "tiny", "--batch", "8", "--seq", "32", "--text-bytes", "60000",
        "--samples", "0", "--log-every", "1"]
failures = []


def run(args, expect=0):
    r = subprocess.run([TRAIN] + args, capture_output=True, text=True, timeout=600)
    if r.returncode != expect:
        raise AssertionError(f"tsr-train {' '.join(args)} exited {r.returncode}, expected "
                             f"{expect}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}")
    return r


def losses(out):
    with open(os.path.join(out, "loss.csv")) as f:
        rows = [l.strip().split(",") for l in f.readlines()[1:]]
    return {int(s): l for s, l, _ in rows}


def case(fn):
    def wrapped(tmp):
        try:
            fn(tmp)
            print(f"[ OK ] {fn.__name__}")
        except AssertionError as e:
            failures.append(fn.__name__)
            print(f"[FAIL] {fn.__name__}: {e}")
    wrapped.__name__ = fn.__name__
    return wrapped


@case
def flag_errors(tmp):
    bad = [
        (["--devices", "8", "--mesh", "3x2"], 2, "--mesh 3x2 has 6 devices, but there are 8 (--devices)"),
        (["--devices", "8", "--mesh", "8", "--rules", "tp"], 2, "which --mesh 8 lacks"),
        (["--devices", "8", "--mesh", "4x2", "--batch", "6"], 2,
         "--batch 6 does not split over the 4 devices of the batch axes (data)"),
        (["--devices", "8", "--mesh", "4x2", "--batch", "8", "--micro", "4"], 2,
         "--batch 8 in --micro 4 micro-batches does not split over the 4 devices"),
        (["--mesh", "4x"], 2, "--mesh '4x' is not a mesh shape"),
        (["--devices", "8", "--mesh", "1x8", "--rules", "tp"], 2,
         "the model does not split under --rules tp on --mesh 1x8: leaf 'blocks[0].attn.wq.value'"),
        (["--model", "huge"], 2, "--model: huge not in {tiny,small}"),
        (["--resume"], 2, "--resume needs --checkpoint DIR"),
        (["--steps", "0"], 2, "--steps"),
        (["--text", "/nonexistent/words"], 1, "cannot read the text file '/nonexistent/words'"),
        (["--resume", "--checkpoint", os.path.join(tmp, "none")], 2, "--resume: no checkpoint in"),
    ]
    for args, code, text in bad:
        r = run(args, expect=code)
        err = r.stderr.strip()
        assert text in err, f"{args}: {err!r} lacks {text!r}"
        assert err.count("\n") == 0, f"{args}: not one line: {err!r}"
        assert "step " not in r.stdout, f"{args}: training started before the error"


@case
def loss_falls_below_unigram_entropy(tmp):
    out = os.path.join(tmp, "short")
    r = run(BASE + ["--steps", "60", "--out", out])
    h = float(re.search(r"unigram entropy ([0-9.]+) nats", r.stdout).group(1))
    l = losses(out)
    first, last = float(l[1]), sum(float(l[s]) for s in range(51, 61)) / 10
    assert last < h - 0.2, f"loss {first:.3f} -> {last:.3f}, unigram entropy {h:.3f}"
    svg = open(os.path.join(out, "loss.svg")).read()
    assert "<svg" in svg and "<polyline" in svg and "unigram entropy" in svg


@case
def resume_is_bitwise_on_the_same_mesh_and_close_on_another(tmp):
    mesh = ["--devices", "8", "--mesh", "4x2", "--rules", "dp+tp"]
    full, half = os.path.join(tmp, "full"), os.path.join(tmp, "half")
    run(BASE + mesh + ["--steps", "16", "--out", full])
    ck = os.path.join(tmp, "ck")
    run(BASE + mesh + ["--steps", "16", "--stop-after", "8", "--out", half, "--checkpoint", ck])
    other = os.path.join(tmp, "other")
    shutil.copytree(half, other)
    run(BASE + mesh + ["--steps", "16", "--out", half, "--checkpoint", ck, "--resume"])
    a, b = losses(full), losses(half)
    assert sorted(b) == list(range(1, 17)), sorted(b)
    diff = [s for s in a if a[s] != b[s]]
    assert not diff, f"resumed losses differ at steps {diff}: {[(a[s], b[s]) for s in diff]}"
    # Accumulating over 2 micro-batches: the same steps to float rounding.
    acc = os.path.join(tmp, "micro")
    run(BASE + mesh + ["--steps", "16", "--micro", "2", "--out", acc])
    c = losses(acc)
    worst = max(abs(float(c[s]) - float(a[s])) / float(a[s]) for s in a)
    assert worst < 1e-4, f"--micro 2: relative loss difference {worst:.2e}"
    # The step-8 checkpoint restored onto 8 devices as fsdp, and onto 1 device as dp.
    for n, m, rules in [("8", "8", "fsdp"), ("1", "1", "dp")]:
        ck2 = os.path.join(tmp, f"ck_{n}_{rules}")
        shutil.copytree(os.path.join(ck, "step_00000008"), os.path.join(ck2, "step_00000008"))
        out = os.path.join(tmp, f"other_{n}_{rules}")
        shutil.copytree(other, out)
        run(BASE + ["--devices", n, "--mesh", m, "--rules", rules, "--steps", "16", "--out", out,
                    "--checkpoint", ck2, "--resume"])
        c = losses(out)
        worst = max(abs(float(c[s]) - float(a[s])) / float(a[s]) for s in range(9, 17))
        assert worst < 1e-4, f"{rules} on {m}: relative loss difference {worst:.2e}"


@case
def trace_writes_a_timeline(tmp):
    # --trace FILE: Chrome trace events with a caller track, 8 device tracks, steps,
    # collectives (dp+tp: all-reduces), jit events and memory counters.
    path = os.path.join(tmp, "run.json")
    run(BASE + ["--devices", "8", "--mesh", "4x2", "--rules", "dp+tp", "--steps", "2",
                "--out", os.path.join(tmp, "traced"), "--trace", path])
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names >= {"caller"} | {f"device {d} (cpu)" for d in range(8)}, names
    cats = {e.get("cat") for e in events if e["ph"] == "X"}
    assert {"step", "collective", "jit", "dispatch", "transfer"} <= cats, cats
    kinds = {e["args"]["kind"] for e in events if e.get("cat") == "collective"}
    assert "all_reduce" in kinds or "reshard" in kinds, kinds
    assert any(e["ph"] == "C" and e["name"].startswith("memory device") for e in events)
    assert any(e["name"].startswith("jit compile") for e in events)


@case
def ctrl_c_writes_a_checkpoint(tmp):
    ck, out = os.path.join(tmp, "ck_int"), os.path.join(tmp, "int")
    p = subprocess.Popen([TRAIN] + BASE + ["--steps", "100000", "--out", out, "--checkpoint", ck],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("step"):
            p.send_signal(signal.SIGINT)
            break
    rest, err = p.communicate(timeout=300)
    assert p.returncode == 130, f"exit {p.returncode}: {err}"
    m = re.search(r"interrupted at step (\d+)", rest)
    assert m, rest
    step = int(m.group(1))
    assert os.path.exists(os.path.join(ck, f"step_{step:08d}", "checkpoint.json"))
    assert os.path.exists(os.path.join(out, "loss.csv"))


def main():
    names = sys.argv[2:]
    tmp = tempfile.mkdtemp(prefix="tsr_train_cli_")
    try:
        for fn in [flag_errors, loss_falls_below_unigram_entropy,
                   resume_is_bitwise_on_the_same_mesh_and_close_on_another,
                   trace_writes_a_timeline, ctrl_c_writes_a_checkpoint]:
            if not names or fn.__name__ in names:
                fn(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
