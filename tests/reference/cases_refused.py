"""Programs the differential fuzzer found refused where JAX runs (issue 23, items
18-22); twins in cases_refused.cpp."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import reshard
from refjax import P, case, iota, mesh


def ramp(shape):
    return iota(shape) * 0.25 - 0.5


def cond_of(x):
    return lax.cond(jnp.sum(x) > 0, lambda y: y * 2.0, lambda y: y - 1.0, x)


# ---- item 18: grad(checkpoint(f)) through a cond used nonlinearly -----------------

@case("refused_ckpt_cond_sin")
def _():
    f = lambda x: jnp.sum(jnp.sin(cond_of(x)))
    return jax.grad(jax.checkpoint(f))(ramp((2, 3)))


@case("refused_ckpt_cond_abs")
def _():
    f = lambda x: jnp.abs(jnp.sum(cond_of(x)))
    return jax.grad(jax.checkpoint(f))(ramp((2, 3)))


@case("refused_ckpt_two_conds")
def _():
    f = lambda x: jnp.sum(cond_of(cond_of(x)) ** 2)
    return jax.jit(jax.grad(jax.checkpoint(f)))(ramp((2, 3)))


@case("refused_scan_ckpt_cond")
def _():
    def body(carry, xi):
        y = jnp.sin(lax.cond(xi > 0, lambda a: a * 2.0, lambda a: a * a, carry))
        return y, jnp.sum(jnp.abs(y))

    def loss(x):
        c, ys = lax.scan(jax.checkpoint(body), x[0], x[:, 0])
        return jnp.sum(c) + jnp.sum(ys)
    return jax.grad(loss)(ramp((4, 3)))


# ---- item 19: an input reduced over an axis another operand is sharded on ---------

@case("refused_mul_sharded_by_reduced")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        x = jax.device_put(ramp((8, 3)), P("a", None))
        w = reshard(jnp.ones((1, 3)), P(None, None, reduced={"a"}))
        return x * w


@case("refused_add_sharded_by_reduced_jit")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        x = jax.device_put(ramp((8, 3)), P("a", None))
        w = reshard(jnp.ones((8, 3)), P(None, None, reduced={"a"}))
        return jax.jit(lambda x, w: x + w)(x, w)


@case("refused_reduced_two_sets")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        u = reshard(ramp((4,)), P(None, reduced={"a"}))
        v = reshard(ramp((4,)), P(None, reduced={"b"}))
        return u * v


@case("refused_dot_sharded_reduced")
def _():
    # dot_general propagates no reduced set (JAX's _dot_general_ur_rule): it runs.
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        v = jax.device_put(ramp((8,)), P("a"))
        u = reshard(ramp((8,)) + 1.0, P(None, reduced={"a"}))
        return jnp.dot(v, u)


@case("refused_dot_sharded_reduced_grad")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        v = jax.device_put(ramp((8,)), P("a"))
        u = reshard(ramp((8,)) + 1.0, P(None, reduced={"a"}))
        return jax.grad(lambda v: jnp.dot(v, u))(v)


# ---- item 20: jacrev at a reduced input ------------------------------------------

@case("refused_jacrev_abs_reduced")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        x = reshard(ramp((3,)), P(None, reduced={"a"}))
        return jax.jacrev(jnp.abs)(x)


# ---- item 21: a factor reduced on other axes than the other is unreduced on ------

@case("refused_mul_reduced_other_axes")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        s = reshard(ramp((4,)), P(None, reduced={"b"}))
        u = jax.jit(lambda x: reshard(x, P(None, unreduced={"a"})))(ramp((4,)) + 1.0)
        return jax.jit(lambda s, u: reshard(s * u, P()))(s, u)


@case("refused_mul_reduced_same_axes_grad")
def _():
    # The other factor reduced on exactly the unreduced axes: JAX's rule; the gradient
    # w.r.t. it is unreduced there.
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        s = reshard(ramp((4,)), P(None, reduced={"a"}))
        u = jax.jit(lambda x: reshard(x, P(None, unreduced={"a"})))(ramp((4,)) + 1.0)

        def step(s, u):
            out, g = jax.value_and_grad(lambda s: jnp.sum(reshard(s * u, P())))(s)
            return out, reshard(g, P())
        return jax.jit(step)(s, u)


# ---- item 22: keepdims with an out_sharding ---------------------------------------

@case("refused_sum_keepdims_out_sharding")
def _():
    # jnp.sum has no out_sharding: its twin is lax.reduce_sum then expand_dims (the
    # kept dim is unsharded).
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        x = jax.device_put(ramp((4, 2)), P("a", "b"))
        return jnp.expand_dims(lax.reduce_sum(x, (0,), out_sharding=P("b")), 0)


@case("refused_sum_keepdims_unreduced")
def _():
    m = mesh([2, 2], ["a", "b"])
    with jax.set_mesh(m):
        x = jax.device_put(ramp((4, 2)), P("a", "b"))

        def f(x):
            s = jnp.expand_dims(
                lax.reduce_sum(x, (0,), out_sharding=P("b", unreduced={"a"})), 0)
            return reshard(s, P(None, "b"))
        return jax.jit(f)(x)
