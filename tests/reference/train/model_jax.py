"""The transformer of include/tsr/nn (tsr::nn::Transformer) written in JAX, for the
training reference check. Parameters are a flat dict keyed by Tessera's leaf paths
("blocks[0].attn.wq.value"), so the initial values load straight from the dump."""
import jax
import jax.numpy as jnp


def layernorm(x, scale, bias, eps):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * scale + bias


def rope(x, base=10000.0):
    """Rotary positions, non-interleaved (GPT-NeoX / LLaMA rotate_half), x [B,T,H,D]."""
    t, d = x.shape[1], x.shape[3]
    half = d // 2
    inv_freq = 1.0 / (base ** (jnp.arange(half, dtype=jnp.float32) * 2.0 / d))
    ang = jnp.arange(t, dtype=jnp.float32)[:, None] * inv_freq[None, :]  # [T, half]
    cos = jnp.concatenate([jnp.cos(ang), jnp.cos(ang)], -1)[None, :, None, :]
    sin = jnp.concatenate([jnp.sin(ang), jnp.sin(ang)], -1)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    rot = jnp.concatenate([-x2, x1], -1)
    return x * cos + rot * sin


def attention(p, pre, x, cfg):
    q = jnp.einsum("bte,ehd->bthd", x, p[pre + "wq.value"])
    k = jnp.einsum("bte,ehd->bthd", x, p[pre + "wk.value"])
    v = jnp.einsum("bte,ehd->bthd", x, p[pre + "wv.value"])
    if cfg["positions"] == "rotary":
        q, k = rope(q), rope(k)
    s = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    t = x.shape[1]
    mask = jnp.arange(t)[None, :] <= jnp.arange(t)[:, None]  # [t, s]: s <= t
    s = jnp.where(mask, s, jnp.float32(cfg["mask_value"]))
    w = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhts,bshd->bthd", w, v)
    return jnp.einsum("bthd,hde->bte", o, p[pre + "wo.value"])


def mlp(p, pre, x):
    h = x @ p[pre + "w1.value"] + p[pre + "b1.value"]
    h = jax.nn.gelu(h, approximate=True)
    return h @ p[pre + "w2.value"] + p[pre + "b2.value"]


def apply(p, tokens, cfg):
    x = p["embed.table.value"][tokens]
    if cfg["positions"] == "learned":
        x = x + p["pos.value"][: tokens.shape[1]]
    for i in range(cfg["layers"]):
        pre = f"blocks[{i}]."
        ln = lambda n, y: layernorm(y, p[pre + n + ".scale.value"], p[pre + n + ".bias.value"], cfg["eps"])
        x = x + attention(p, pre + "attn.", ln("ln1", x), cfg)
        x = x + mlp(p, pre + "mlp.", ln("ln2", x))
    x = layernorm(x, p["ln_f.scale.value"], p["ln_f.bias.value"], cfg["eps"])
    return x @ p["head.w.value"]


def loss_fn(p, inputs, targets, cfg):
    logits = apply(p, inputs, cfg)
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(nll)
