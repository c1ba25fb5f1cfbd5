"""General manual-SPMD and transform programs (twins in cases_general.cpp)."""
import jax
import jax.numpy as jnp
from jax import lax
from refjax import P, case, iota, mesh, note_type


def ramp(shape):
    return iota(shape) * 0.5 - 1.0


@case("smap_psum_sum")
def _():
    m = mesh([4], ["x"])
    with jax.set_mesh(m):
        f = jax.shard_map(lambda b: lax.psum(jnp.sum(b), "x"), in_specs=P("x"), out_specs=P())
        return f(jax.device_put(ramp((8,)), P("x")))


@case("smap_types_in_body")
def _():
    m = mesh([2, 2], ["x", "y"])
    with jax.set_mesh(m):
        def body(b):
            note_type(b)
            c = note_type(b * 2.0)
            d = note_type(lax.psum(c, "x"))
            return note_type(lax.all_gather(d, "y", tiled=True))
        f = jax.shard_map(body, in_specs=P("x", "y"), out_specs=P("y"))
        return f(jax.device_put(ramp((4, 4)), P("x", "y")))


@case("smap_grad_invariant_input")
def _():
    m = mesh([2], ["batch"])
    with jax.set_mesh(m):
        def body(w, d):
            return jax.grad(lambda v: lax.psum(jnp.sum((v * v + 1.0) * d), "batch"))(w)
        f = jax.shard_map(body, in_specs=(P(), P("batch")), out_specs=P())
        return f(jax.device_put(jnp.array([1.5], jnp.float32), P()),
                 jax.device_put(jnp.array([0.0, 1.0], jnp.float32), P("batch")))


@case("vmap_psum_grad_neg")
def _():
    return jax.vmap(jax.grad(lambda x: -lax.psum(x, "i")), out_axes=None,
                    axis_name="i")(jnp.ones(5))
