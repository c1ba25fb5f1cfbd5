#!/usr/bin/env python3
"""JAX's training step of the model bench/train_bench.cpp times, on 1 or 8 CPU devices.

The model is tests/reference/train/model_jax.py (the nn Transformer in JAX, parameters
keyed by Tessera's leaf paths; the reference check holds it to tsr-train's losses), the
optimizer tests/reference/train/check.py's optax chain: clip_by_global_norm(1.0),
adamw(warmup_cosine_decay_schedule(0, 3e-3, 10, 1000, 3e-4), b1 0.9, b2 0.99, eps 1e-8,
weight_decay 0.1, mask: ndim >= 2). One jit of value_and_grad + update + apply_updates,
params and optimizer state donated.

A config is devices:mesh:rules as for train_bench. Parameters get
NamedSharding(mesh, spec) with the spec nn::logical_to_spec gives their logical names
under rules_preset(rules) (ported below), the optimizer's moments their parameter's
sharding, the batch logical_to_spec(("batch", "seq")); jit gets them as in_shardings
and out_shardings. Activations are left to XLA's propagation (--constrain pins them by
the same logical names as nn::apply does with rules set). Sets
XLA_FLAGS=--xla_force_host_platform_device_count to the largest config's devices before
importing jax.

    .venv-bench/bin/python bench/train_jax.py --configs 1:1:dp
    .venv-bench/bin/python bench/train_jax.py --configs 8:8:dp,8:8:fsdp,8:4x2:dp+tp
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rules_preset(name):
    """nn::rules_preset: logical name -> mesh axes, in order."""
    batch = name in ("dp", "fsdp", "dp+tp", "fsdp+tp")
    embed = name in ("fsdp", "fsdp+tp")
    tp = name in ("tp", "dp+tp", "fsdp+tp")
    if not batch and not tp:
        raise SystemExit(f"unknown rules preset {name!r}")
    table = []
    if batch:
        table.append(("batch", ("data",)))
    if embed:
        table.append(("embed", ("data",)))
    if tp:
        table += [(n, ("model",)) for n in ("heads", "mlp", "vocab")]
    return table


def logical_to_spec(names, rules, mesh_axes, open_dims=False):
    """nn::logical_to_spec (open_dims: nn::constrain, unmapped dims UNCONSTRAINED)."""
    from jax.sharding import PartitionSpec as P
    used, entries = set(), []
    for n in names:
        axes, pinned = [], False
        for rule, rule_axes in rules:
            if rule == n:
                pinned = not rule_axes
                for a in rule_axes:
                    assert a in mesh_axes, f"rule {rule} names mesh axis {a}, mesh has {mesh_axes}"
                    if a not in used:
                        used.add(a)
                        axes.append(a)
                break
        if axes:
            entries.append(axes[0] if len(axes) == 1 else tuple(axes))
        elif open_dims and not pinned:
            entries.append(P.UNCONSTRAINED)
        else:
            entries.append(None)
    return P(*entries)


def param_names(path):
    """The logical names include/tsr/nn.h gives each parameter path."""
    if path == "embed.table.value":
        return ("vocab", "embed")
    if path == "head.w.value":
        return ("embed", "vocab")
    leaf = path.split(".")[-2]
    return {"scale": ("embed",), "bias": ("embed",), "wq": ("embed", "heads", "kv"),
            "wk": ("embed", "heads", "kv"), "wv": ("embed", "heads", "kv"),
            "wo": ("heads", "kv", "embed"), "w1": ("embed", "mlp"), "b1": ("mlp",),
            "w2": ("mlp", "embed"), "b2": ("embed",)}[leaf]


def init_params(cfg, key):
    """Shapes of nn::Transformer::init (rotary, no pos table), 0.02 normal weights."""
    import jax
    import jax.numpy as jnp
    E, H, L, FF, V = cfg["d_model"], cfg["heads"], cfg["layers"], cfg["d_ff"], cfg["vocab"]
    D = E // H
    shapes = {"embed.table.value": (V, E), "head.w.value": (E, V),
              "ln_f.scale.value": (E,), "ln_f.bias.value": (E,)}
    for l in range(L):
        b = f"blocks[{l}]."
        shapes.update({b + "ln1.scale.value": (E,), b + "ln1.bias.value": (E,),
                       b + "ln2.scale.value": (E,), b + "ln2.bias.value": (E,),
                       b + "attn.wq.value": (E, H, D), b + "attn.wk.value": (E, H, D),
                       b + "attn.wv.value": (E, H, D), b + "attn.wo.value": (H, D, E),
                       b + "mlp.w1.value": (E, FF), b + "mlp.b1.value": (FF,),
                       b + "mlp.w2.value": (FF, E), b + "mlp.b2.value": (E,)})
    keys = jax.random.split(key, len(shapes))
    params = {}
    for k, (name, shape) in zip(keys, sorted(shapes.items())):
        if name.endswith("scale.value"):
            params[name] = jnp.ones(shape, jnp.float32)
        elif len(shape) == 1:
            params[name] = jnp.zeros(shape, jnp.float32)
        else:
            params[name] = 0.02 * jax.random.normal(k, shape, jnp.float32)
    return params


def run_config(text, args, model_jax):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import NamedSharding, PartitionSpec as P

    devices, mesh_text, rules_name = text.split(":")
    shape = tuple(int(s) for s in mesh_text.split("x"))
    names = ("data", "model")[: len(shape)]
    mesh = jax.make_mesh(shape, names, devices=jax.devices()[: int(devices)],
                         axis_types=(jax.sharding.AxisType.Auto,) * len(shape))
    rules = rules_preset(rules_name)
    small = args.model == "small"
    cfg = {"vocab": args.vocab, "d_model": 384 if small else 128, "heads": 6 if small else 4,
           "layers": 6 if small else 4, "d_ff": 1536 if small else 512,
           "positions": "rotary", "mask_value": float(np.finfo(np.float32).min), "eps": 1e-5}

    p_sh = {k: NamedSharding(mesh, logical_to_spec(param_names(k), rules, names))
            for k in init_params_shapes(cfg)}
    params = jax.device_put(init_params(cfg, jax.random.key(0)), p_sh)
    sched = optax.warmup_cosine_decay_schedule(0.0, 3e-3, 10, 1000, 3e-4)
    mask = jax.tree_util.tree_map(lambda p: p.ndim >= 2, params)
    tx = optax.chain(optax.clip_by_global_norm(1.0),
                     optax.adamw(sched, b1=0.9, b2=0.99, eps=1e-8, weight_decay=0.1, mask=mask))
    replicated = NamedSharding(mesh, P())

    def opt_sharding(path, leaf):
        # A moment has its parameter's sharding; counters and masks are replicated.
        for k in path:
            if isinstance(k, jax.tree_util.DictKey) and k.key in p_sh:
                return p_sh[k.key]
        return replicated

    o_sh = jax.tree_util.tree_map_with_path(opt_sharding, jax.eval_shape(tx.init, params))
    opt = jax.jit(tx.init, out_shardings=o_sh)(params)
    b_sh = NamedSharding(mesh, logical_to_spec(("batch", "seq"), rules, names))

    loss_fn = model_jax.loss_fn
    if args.constrain:
        loss_fn = constrained_loss(model_jax, rules, mesh)

    def step(p, o, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y, cfg)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, loss

    step = jax.jit(step, donate_argnums=(0, 1), in_shardings=(p_sh, o_sh, b_sh, b_sh),
                   out_shardings=(p_sh, o_sh, replicated))
    rng = np.random.default_rng(1234)
    x = jax.device_put(rng.integers(0, args.vocab, (args.batch, args.seq), dtype=np.int32), b_sh)
    y = jax.device_put(rng.integers(0, args.vocab, (args.batch, args.seq), dtype=np.int32), b_sh)
    n_params = sum(v.size for v in params.values())
    replicated_bytes = sum(v.nbytes for v in jax.tree_util.tree_leaves((params, opt)))

    def one(p, o):
        p, o, loss = step(p, o, x, y)
        jax.block_until_ready((p, o, loss))
        return p, o, loss

    # Compiled ahead of the first call, so that XLA's memory plan can be read (the jit's
    # call would compile the same program).
    t0 = time.perf_counter()
    step = step.lower(params, opt, x, y).compile()
    mem = step.memory_analysis()
    temp = getattr(mem, "temp_size_in_bytes", -1) if mem is not None else -1
    params, opt, loss = one(params, opt)
    first = time.perf_counter() - t0
    first_loss = float(loss)
    for _ in range(args.warmup - 1):
        params, opt, loss = one(params, opt)
    medians = []
    for _ in range(args.repetitions):
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            params, opt, loss = one(params, opt)
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times))
    med = statistics.median(medians)
    tokens = args.batch * args.seq
    print(f"{text:<14} {med * 1e3:8.1f} ms/step {tokens / med:9.0f} tokens/s  first call "
          f"{first:.2f} s  XLA temp {temp / 2**20:.1f} MiB/device  loss {first_loss:.4f} -> "
          f"{float(loss):.4f}", flush=True)
    print("RESULT " + json.dumps({
        "impl": "jax" + (" constrained" if args.constrain else ""), "config": text,
        "devices": int(devices), "rules": rules_name, "ms_per_step": med * 1e3,
        "tokens_per_s": tokens / med, "rep_ms": [m * 1e3 for m in medians], "params": n_params,
        "replicated_state_bytes": replicated_bytes, "first_call_s": first, "temp_bytes": temp,
        "loss": float(loss), "jax": jax.__version__}), flush=True)


def init_params_shapes(cfg):
    import jax
    return jax.eval_shape(lambda: init_params(cfg, jax.random.key(0))).keys()


def constrained_loss(model_jax, rules, mesh):
    """model_jax.loss_fn with the activation pins nn::apply makes when given rules: the
    residual stream (batch, seq, embed), q/k/v (batch, seq, heads, kv), o (batch, heads,
    seq, kv), the MLP hidden (batch, seq, mlp), logits (batch, seq, vocab)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    def pin(x, *names):
        spec = logical_to_spec(names, rules, mesh.axis_names, True)
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    def attention(p, pre, x, cfg):
        q, k, v = (pin(jnp.einsum("bte,ehd->bthd", x, p[pre + w + ".value"]),
                       "batch", "seq", "heads", "kv") for w in ("wq", "wk", "wv"))
        q, k = model_jax.rope(q), model_jax.rope(k)
        s = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
        t = x.shape[1]
        mask = jnp.arange(t)[None, :] <= jnp.arange(t)[:, None]
        w = jax.nn.softmax(jnp.where(mask, s, jnp.float32(cfg["mask_value"])), axis=-1)
        o = pin(jnp.einsum("bhts,bshd->bhtd", w, v), "batch", "heads", "seq", "kv")
        return jnp.einsum("bhtd,hde->bte", o, p[pre + "wo.value"])

    def apply(p, tokens, cfg):
        x = pin(p["embed.table.value"][tokens], "batch", "seq", "embed")
        for i in range(cfg["layers"]):
            pre = f"blocks[{i}]."
            ln = lambda n, y: model_jax.layernorm(y, p[pre + n + ".scale.value"],
                                                  p[pre + n + ".bias.value"], cfg["eps"])
            x = pin(x + attention(p, pre + "attn.", ln("ln1", x), cfg), "batch", "seq", "embed")
            h = pin(ln("ln2", x) @ p[pre + "mlp.w1.value"] + p[pre + "mlp.b1.value"],
                    "batch", "seq", "mlp")
            h = jax.nn.gelu(h, approximate=True)
            x = pin(x + h @ p[pre + "mlp.w2.value"] + p[pre + "mlp.b2.value"],
                    "batch", "seq", "embed")
        x = model_jax.layernorm(x, p["ln_f.scale.value"], p["ln_f.bias.value"], cfg["eps"])
        return pin(x @ p["head.w.value"], "batch", "seq", "vocab")

    def loss_fn(p, inputs, targets, cfg):
        logp = jax.nn.log_softmax(apply(p, inputs, cfg), axis=-1)
        return jnp.mean(-jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0])

    return loss_fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="1:1:dp", help="devices:mesh:rules, comma separated")
    ap.add_argument("--model", choices=["small", "tiny"], default="small")
    ap.add_argument("--vocab", type=int, default=80)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--constrain", action="store_true",
                    help="pin activations by logical names as nn::apply(rules) does")
    args = ap.parse_args()
    configs = [c for c in args.configs.split(",") if c]
    n = max(int(c.split(":")[0]) for c in configs)
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = (flags + f" --xla_force_host_platform_device_count={n}").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference", "train"))
    import jax
    import model_jax

    print(f"jax {jax.__version__}, {len(jax.devices())} CPU devices, {args.model} model, "
          f"vocab {args.vocab}, batch {args.batch} x seq {args.seq}, {args.warmup} warm-up, "
          f"{args.repetitions} reps x {args.steps} steps", flush=True)
    for c in configs:
        run_config(c, args, model_jax)


if __name__ == "__main__":
    main()
