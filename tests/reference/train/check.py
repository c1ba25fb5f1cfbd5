"""Training reference check (issue 24): the same transformer, batches and AdamW
schedule in JAX + optax as in tsr-train, step for step.

Runs `tsr-train --dump-reference` (which trains on its mesh and records the initial
parameters, every batch, every loss and the final parameters), rebuilds the run in
JAX on one CPU device from the initial parameters, and compares per-step losses and
final parameters (relative difference <= --tol, float32). Exit 0 = agree, 1 =
differ, 77 = the reference environment is missing (ctest SKIP)."""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile


def read_safetensors(path):
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    kinds = {"F32": np.float32, "I32": np.int32}
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=kinds[t["dtype"]]).reshape(t["shape"])
    return out, meta


def jax_run(tensors, meta):
    import numpy as np
    import jax
    import jax.numpy as jnp
    import optax

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import model_jax

    cfg = {"layers": int(meta["layers"]), "positions": meta["positions"],
           "mask_value": float(meta["mask_value"]), "eps": float(meta["ln_eps"])}
    params = {k[len("init/"):]: jnp.asarray(v) for k, v in tensors.items() if k.startswith("init/")}
    sched = optax.warmup_cosine_decay_schedule(
        0.0, float(meta["lr"]), int(meta["warmup"]), int(meta["steps"]), float(meta["end_lr"]))
    mask = jax.tree_util.tree_map(lambda p: p.ndim >= 2, params)
    parts = []
    if float(meta["clip"]) > 0:
        parts.append(optax.clip_by_global_norm(float(meta["clip"])))
    parts.append(optax.adamw(sched, b1=float(meta["b1"]), b2=float(meta["b2"]),
                             eps=float(meta["eps"]), weight_decay=float(meta["weight_decay"]),
                             mask=mask))
    tx = optax.chain(*parts)
    opt = tx.init(params)

    @jax.jit
    def step(p, o, x, y):
        loss, g = jax.value_and_grad(model_jax.loss_fn)(p, x, y, cfg)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, loss

    losses = []
    xs, ys = tensors["batch/inputs"], tensors["batch/targets"]
    for i in range(xs.shape[0]):
        params, opt, loss = step(params, opt, xs[i], ys[i])
        losses.append(float(loss))
    return np.array(losses), {k: np.asarray(v) for k, v in params.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsr-train", required=True)
    ap.add_argument("--python", required=True, help="the reference venv's python")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--config", action="append", default=[],
                    help="devices:mesh:rules to check, e.g. 8:4x2:dp+tp")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.inner and not os.path.exists(args.python):
        print(f"reference venv missing ({args.python}); run tests/reference/setup_venv.sh")
        return 77
    if os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(args.python))) \
            and not args.inner:
        # Everything runs in the venv (numpy, jax, optax); this interpreter only starts it.
        return subprocess.call([args.python, os.path.abspath(__file__)] + sys.argv[1:])
    import numpy as np
    if args.inner:  # the JAX half, run inside the venv
        tensors, meta = read_safetensors(args.inner)
        losses, final = jax_run(tensors, meta)
        np.savez(args.inner + ".jax.npz", losses=losses, **{"final/" + k: v for k, v in final.items()})
        return 0
    configs = args.config or ["1:1:dp", "8:4x2:dp+tp", "8:8:fsdp", "8:2x4:fsdp+tp"]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in configs:
            devices, mesh, rules = c.split(":")
            dump = os.path.join(tmp, f"ref_{devices}_{mesh}_{rules}.safetensors")
            cmd = [args.tsr_train, "--devices", devices, "--mesh", mesh, "--rules", rules,
                   "--model", "tiny", "--steps", str(args.steps), "--batch", "8", "--seq", "32",
                   # A gentle schedule: at lr 3e-3 float32 rounding is amplified into
                   # 1e-3 parameter differences even between JAX in f32 and in f64.
                   "--lr", "1e-3", "--warmup", "10",
                   "--text-bytes", "200000", "--out", tmp, "--dump-reference", dump]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"[{c}] tsr-train failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
                bad += 1
                continue
            r = subprocess.run([args.python, os.path.abspath(__file__), "--tsr-train", "-",
                                "--python", "-", "--inner", dump], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"[{c}] the JAX run failed:\n{r.stdout}\n{r.stderr}")
                bad += 1
                continue
            tensors, _ = read_safetensors(dump)
            ref = np.load(dump + ".jax.npz")
            ours = tensors["losses"].astype(np.float64)
            theirs = ref["losses"]
            rel = np.abs(ours - theirs) / np.abs(theirs)
            worst_p, worst_name = 0.0, ""
            for k in ref.files:
                if not k.startswith("final/"):
                    continue
                a, b = tensors[k].astype(np.float64), ref[k].astype(np.float64)
                d = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
                if d > worst_p:
                    worst_p, worst_name = d, k
            ok = rel.max() <= args.tol and worst_p <= args.tol
            bad += 0 if ok else 1
            print(f"[{c}] {'agree' if ok else 'DIFFER'}: {len(ours)} steps, loss {ours[0]:.4f} -> "
                  f"{ours[-1]:.4f} (JAX {theirs[0]:.4f} -> {theirs[-1]:.4f}); max relative loss "
                  f"difference {rel.max():.2e} at step {int(rel.argmax()) + 1}; worst final "
                  f"parameter {worst_name} {worst_p:.2e} (tolerance {args.tol:g})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
