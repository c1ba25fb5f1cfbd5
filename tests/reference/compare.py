"""Runs the reference cases in Tessera (tsr_reference) and in JAX (run_jax.py) and
compares them (README.md). Exit status: 0 all agree or differ only as
differences.md lists; 1 otherwise; 77 (ctest's skip) when the JAX environment is
missing.

  python compare.py --tsr build/tests/reference/tsr_reference --python .venv-reference/bin/python
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
FIELDS = ("error", "count", "value", "type", "weak", "spec", "text")


def load(lines):
    out = {}
    for line in lines.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["name"]] = rec
    return out


def differences():
    """(case, field) -> reason, from the table in differences.md."""
    table = {}
    with open(os.path.join(here, "differences.md")) as f:
        for line in f:
            m = re.match(r"^\|\s*`?([A-Za-z0-9_]+)`?\s*\|\s*(\w+)\s*\|(.*)\|\s*$", line)
            if m and m.group(1) not in ("case",) and not set(m.group(1)) <= {"-"}:
                if m.group(2) not in FIELDS:
                    raise SystemExit(f"differences.md: unknown field {m.group(2)!r}")
                table[(m.group(1), m.group(2))] = m.group(3).strip()
    return table


def norm_type(t):
    """Sorts the axes of vma / unreduced / reduced sets: {V:(y,x)} == {V:(x,y)}."""
    def fix(m):
        names = m.group(2).strip("()").split(",")
        names = sorted(n.strip() for n in names)
        return m.group(1) + (names[0] if len(names) == 1 else "(" + ",".join(names) + ")")
    return re.sub(r"(\b(?:V|U|R|U_max|U_min):)(\([^)]*\)|[A-Za-z0-9_]+)", fix, t)


def close(a, b):
    if len(a) != len(b):
        return False
    vals = [abs(float(v)) for v in a if isinstance(v, (int, float))]
    scale = max([1.0] + vals)
    for x, y in zip(a, b):
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                return False
        elif abs(x - y) > 1e-5 * scale + 1e-6:
            return False
    return True


def diff(j, t):
    """The fields in which the Tessera record t differs from the JAX record j."""
    if j["ok"] != t["ok"]:
        return {"error"}
    if not j["ok"]:
        return set() if j["error"][0] in t["error"] else {"error"}
    jo, to = j["outputs"], t["outputs"]
    if len(jo) != len(to):
        return {"count"}
    d = set()
    for a, b in zip(jo, to):
        if ("text" in a) != ("text" in b):
            d.add("count")
        elif "text" in a:
            if norm_type(a["text"]) != norm_type(b["text"]):
                d.add("text")
        else:
            if norm_type(a["type"]) != norm_type(b["type"]):
                d.add("type")
            if a["weak"] != b["weak"]:
                d.add("weak")
            if a["spec"] != b["spec"]:
                d.add("spec")
            if not close(a["values"], b["values"]):
                d.add("value")
    return d


def show(rec):
    if not rec["ok"]:
        return f"{rec['error'][0]}: {rec['message'][:400]}"
    parts = []
    for o in rec["outputs"]:
        if "text" in o:
            parts.append(o["text"])
        else:
            v = o["values"]
            vs = ", ".join(str(x) for x in v[:8]) + (", ..." if len(v) > 8 else "")
            parts.append(f"{'~' if o['weak'] else ''}{o['type']} {o['spec']} [{vs}]")
    return " | ".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsr", required=True, help="the tsr_reference executable")
    ap.add_argument("--python", required=True, help="a Python with jax installed")
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    if not os.path.exists(a.python) or subprocess.run(
            [a.python, "-c", "import jax"], capture_output=True).returncode != 0:
        print(f"reference check skipped: no JAX at {a.python} "
              "(tests/reference/setup_venv.sh installs it)")
        return 77
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    jr = subprocess.run([a.python, os.path.join(here, "run_jax.py")] + a.cases,
                        capture_output=True, text=True, env=env)
    if jr.returncode:
        print(jr.stdout, jr.stderr)
        return 1
    tr = subprocess.run([a.tsr] + a.cases, capture_output=True, text=True)
    if tr.returncode:
        print(tr.stdout, tr.stderr)
        print(f"tsr_reference exited with {tr.returncode}")
        return 1
    jax_r, tsr_r = load(jr.stdout), load(tr.stdout)
    allowed = differences()
    bad = []
    n_agree = n_known = 0
    for name in sorted(set(jax_r) | set(tsr_r)):
        if name not in jax_r or name not in tsr_r:
            bad.append(f"{name}: defined only in {'JAX' if name in jax_r else 'Tessera'}")
            continue
        d = diff(jax_r[name], tsr_r[name])
        listed = {f for (c, f) in allowed if c == name}
        if d - listed:
            bad.append(f"{name}: differs in {sorted(d - listed)}\n    JAX:     "
                       f"{show(jax_r[name])}\n    Tessera: {show(tsr_r[name])}")
        elif listed - d:
            bad.append(f"{name}: differences.md lists {sorted(listed - d)} but they agree now "
                       f"(drop the row)\n    both: {show(tsr_r[name])}")
        elif d:
            n_known += 1
        else:
            n_agree += 1
    for (c, _f) in allowed:
        if c not in jax_r and c not in tsr_r:
            bad.append(f"{c}: differences.md names a case that does not exist")
    print(f"reference check: {len(jax_r)} cases; {n_agree} agree, "
          f"{n_known} differ as differences.md lists, {len(bad)} problems")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
