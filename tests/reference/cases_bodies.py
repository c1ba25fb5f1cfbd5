"""Types inside shard_map bodies (issue 23, items 6-9; twins in cases_bodies.cpp)."""
import jax
import jax.numpy as jnp
from jax import lax
from refjax import P, case, mesh, note_type


def first(b):
    return b[0]


# ---- item 6 ----------------------------------------------------------------------

@case("bodies_while_const_carry")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b):
            c = note_type(lax.while_loop(lambda c: c < 3, lambda c: c + 1, jnp.int32(0)))
            return b + c
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"))
        x = jax.device_put(jnp.ones(4, jnp.float32), P("x"))
        return f(x), jax.jit(f)(x)


@case("bodies_scan_const_carry")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b):
            c, ys = lax.scan(lambda c, _: (c + 1.0, c), jnp.zeros((), jnp.float32), None,
                             length=3)
            note_type(c)
            note_type(ys)
            return b + c + jnp.sum(ys)
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"))
        x = jax.device_put(jnp.ones(4, jnp.float32), P("x"))
        return f(x), jax.jit(f)(x)


@case("bodies_const_carries_every_creator")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b):
            made = [jnp.zeros(2, jnp.float32), jnp.ones(2, jnp.float32),
                    jnp.full((2,), 3.0, jnp.float32), jnp.arange(2).astype(jnp.float32),
                    lax.iota(jnp.float32, 2), jnp.array([1.0, 2.0], jnp.float32),
                    jnp.float32(1.0) + b * 0.0]
            acc = b
            for v in made:
                c = lax.fori_loop(0, 2, lambda i, c: c + 1.0, v)
                d = lax.while_loop(lambda c: jnp.sum(c) < 20.0, lambda c: c + 1.0, v)
                note_type(c)
                acc = acc + c + d
            return acc
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"))
        return f(jax.device_put(jnp.arange(4.0, dtype=jnp.float32), P("x")))


@case("bodies_cond_const_operand")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b):
            w = jnp.array([2.0, 3.0], jnp.float32)
            k = jnp.float32(1.0)
            c = note_type(lax.cond(jnp.sum(b) > 2.0, lambda v: v * k, lambda v: v + k, w))
            return b + c
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"))
        x = jax.device_put(jnp.arange(4.0, dtype=jnp.float32), P("x"))
        return f(x), jax.jit(f)(x)


# ---- item 7 ----------------------------------------------------------------------

@case("bodies_cond_varying_pred_pvary")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b, w):
            pred = note_type(first(b) > 0.0)
            return note_type(lax.cond(pred, lambda v: v * w, lambda v: v + 1.0, b))
        f = jax.shard_map(body, in_specs=(P("x"), P()), out_specs=P("x"))
        x = jax.device_put(jnp.arange(4.0, dtype=jnp.float32), P("x"))
        w = jax.device_put(jnp.float32(3.0), P())
        return f(x, w), jax.jit(f)(x, w)


@case("bodies_cond_varying_pred_invariant_out")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b, w):
            return note_type(lax.cond(first(b) > 0.0, lambda: w * 2.0, lambda: w + 1.0))
        f = jax.shard_map(body, in_specs=(P("x"), P()), out_specs=P())
        x = jax.device_put(jnp.arange(4.0, dtype=jnp.float32), P("x"))
        w = jax.device_put(jnp.float32(3.0), P())
        return f(x, w)


@case("bodies_while_varying_pred_pvary")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b, w):
            return note_type(lax.while_loop(lambda c: first(c) < 5.0, lambda c: c * w, b))
        f = jax.shard_map(body, in_specs=(P("x"), P()), out_specs=P("x"))
        x = jax.device_put(jnp.arange(4.0, dtype=jnp.float32) + 1.0, P("x"))
        w = jax.device_put(jnp.float32(3.0), P())
        return f(x, w), jax.jit(f)(x, w)


@case("bodies_cond_invariant_pred_psum")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b):
            return note_type(lax.cond(lax.psum(jnp.sum(b), "x") > 0.0,
                                      lambda v: lax.psum(v, "x") * 2.0,
                                      lambda v: lax.psum(v, "x"), b))
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P())
        return f(jax.device_put(jnp.arange(4.0, dtype=jnp.float32), P("x")))


# ---- item 8 ----------------------------------------------------------------------

@case("bodies_like_keep_vma")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(b):
            a = note_type(jnp.full_like(b, 2.0))
            note_type(jnp.zeros_like(b))
            o = note_type(jnp.ones_like(b))
            note_type(jnp.empty_like(b))
            i = note_type(jnp.full_like(b, 2.0, dtype=jnp.int32))
            note_type(jnp.zeros_like(b, dtype=jnp.int32))
            note_type(jnp.ones_like(b, dtype=jnp.int32))
            k = note_type(jnp.full_like(b, jnp.float32(5.0)))
            return a + o + i.astype(jnp.float32) + k
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"))
        x = jax.device_put(jnp.arange(4.0, dtype=jnp.float32), P("x"))
        return f(x), jax.jit(f)(x)


@case("bodies_like_partial_manual")
def _():
    m = mesh([2, 2], ["x", "y"])
    with jax.set_mesh(m):
        def body(b):
            note_type(b)
            note_type(jnp.ones_like(b, dtype=jnp.int32))
            return b + note_type(jnp.zeros_like(b))
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
        x = jnp.arange(8.0, dtype=jnp.float32).reshape(4, 2)
        return f(jax.device_put(x, P("x", "y")))


# ---- item 9 ----------------------------------------------------------------------

def psum_vjp():
    @jax.custom_vjp
    def f(v):
        return lax.psum(v, "i")

    def fwd(v):
        return lax.psum(v, "i"), None

    def bwd(_, g):
        return (lax.pcast(g, "i", to="varying"),)
    f.defvjp(fwd, bwd)
    return f


@case("bodies_custom_vjp_psum_type")
def _():
    m = mesh([2], ["i"])
    with jax.set_mesh(m):
        fv = psum_vjp()
        f = jax.shard_map(lambda b: note_type(fv(b)), in_specs=P("i"), out_specs=P())
        x = jax.device_put(jnp.arange(2.0, dtype=jnp.float32), P("i"))
        return f(x), jax.jit(f)(x)


@case("bodies_custom_vjp_psum_grad")
def _():
    m = mesh([2], ["i"])
    with jax.set_mesh(m):
        fv = psum_vjp()
        f = jax.shard_map(lambda b: note_type(jax.grad(lambda v: jnp.sum(fv(v) * 2.0))(b)),
                          in_specs=P("i"), out_specs=P("i"))
        x = jax.device_put(jnp.arange(2.0, dtype=jnp.float32), P("i"))
        return f(x), jax.jit(f)(x)


@case("bodies_custom_vjp_bwd_wrong_vma")
def _():
    m = mesh([2], ["i"])
    with jax.set_mesh(m):
        @jax.custom_vjp
        def k(v):
            return lax.psum(v, "i")
        k.defvjp(lambda v: (lax.psum(v, "i"), None), lambda _, g: (g,))
        f = jax.shard_map(lambda b: jax.grad(lambda v: jnp.sum(k(v)))(b),
                          in_specs=P("i"), out_specs=P("i"))
        return f(jax.device_put(jnp.arange(2.0, dtype=jnp.float32), P("i")))


@case("bodies_custom_jvp_jit_checkpoint_psum")
def _():
    m = mesh([2], ["i"])
    with jax.set_mesh(m):
        @jax.custom_jvp
        def h(v):
            return lax.psum(v, "i")

        @h.defjvp
        def _(p, t):
            return lax.psum(p[0], "i"), lax.psum(t[0], "i")
        jp = jax.jit(lambda v: lax.psum(v, "i"))
        cp = jax.checkpoint(lambda v: lax.psum(v, "i"))

        def fbody(b):
            y1 = note_type(h(b))
            y2 = note_type(jp(b))
            y3 = note_type(cp(b))
            return y1 + y2 + y3

        def gbody(b):
            g1 = jax.grad(lambda v: jnp.sum(h(v) * 2.0))(b)
            g2 = jax.grad(lambda v: jnp.sum(jp(v) * 2.0))(b)
            g3 = jax.grad(lambda v: jnp.sum(cp(v) * 2.0))(b)
            note_type(g1)
            note_type(g2)
            note_type(g3)
            return g1 + g2 + g3
        f = jax.shard_map(fbody, in_specs=P("i"), out_specs=P())
        g = jax.shard_map(gbody, in_specs=P("i"), out_specs=P("i"))
        x = jax.device_put(jnp.arange(2.0, dtype=jnp.float32), P("i"))
        return f(x), g(x)
