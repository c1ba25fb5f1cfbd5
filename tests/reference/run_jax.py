"""Runs every JAX case (cases_*.py) and prints one JSON object per line, in the
format tsr_reference prints (README.md)."""
import glob
import importlib.util
import json
import math
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

import jax  # noqa: E402
import numpy as np  # noqa: E402
import refjax  # noqa: E402

SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
         "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
         "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool"}


def short_type(s):
    """'float32[4@x,2]{V:x}' -> 'f32[4@x,2]{V:x}'."""
    head, bracket, rest = s.partition("[")
    if not bracket:  # not a type (a spec, a message): as it is
        return s
    return SHORT.get(head, head) + "[" + rest


def spec_repr(x):
    sh = x.sharding
    spec = getattr(sh, "spec", None)
    entries = list(spec) if spec is not None else []
    entries += [None] * (x.ndim - len(entries))

    def entry(e):
        if e is None:
            return "None"
        if isinstance(e, (tuple, list)):
            if len(e) == 1:
                return repr(e[0])
            return "(" + ", ".join(repr(a) for a in e) + ")"
        return repr(e)
    s = "P(" + ", ".join(entry(e) for e in entries) + ("," if len(entries) == 1 else "")
    sets = []
    if spec is not None and getattr(spec, "unreduced", None):
        sets.append("unreduced={" + ", ".join(repr(a) for a in sorted(spec.unreduced)) + "}")
    if spec is not None and getattr(spec, "reduced", None):
        sets.append("reduced={" + ", ".join(repr(a) for a in sorted(spec.reduced)) + "}")
    if sets:
        s += (" " if len(entries) == 1 else (", " if entries else "")) + ", ".join(sets)
    return s + ")"


def num(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def array_json(x):
    t = jax.typeof(x)
    vals = np.asarray(x).astype(np.float64).ravel()
    return {"type": short_type(str(t)), "weak": bool(getattr(t, "weak_type", False)),
            "spec": spec_repr(x), "values": [num(v) for v in vals]}


def flatten(r):
    if isinstance(r, (list, tuple)):
        out = []
        for e in r:
            out += flatten(e)
        return out
    return [r]


def run(name, fn):
    refjax._notes.clear()
    rec = {"name": name}
    try:
        outs = flatten(fn())
        parts = [{"text": short_type(n)} for n in refjax._notes]
        for o in outs:
            parts.append({"text": short_type(o)} if isinstance(o, str) else array_json(o))
        rec.update(ok=True, outputs=parts)
    except Exception as e:  # noqa: BLE001 - every class is a result here
        chain = [c.__name__ for c in type(e).__mro__
                 if c.__name__ not in ("object", "BaseException", "Exception", "JaxException")]
        rec.update(ok=False, error=chain, message=str(e))
        if refjax._notes:
            rec["notes"] = [short_type(n) for n in refjax._notes]
    print(json.dumps(rec), flush=True)


def main():
    for path in sorted(glob.glob(os.path.join(here, "cases_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    only = set(sys.argv[1:])
    for name in sorted(refjax.CASES):
        if not only or name in only:
            run(name, refjax.CASES[name])


if __name__ == "__main__":
    main()
