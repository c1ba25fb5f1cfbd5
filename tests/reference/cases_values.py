"""Collectives over a vmap's axis_name under autodiff, spmd_axis_name and vmap of pmap
(issue 23 items 1, 10, 11; twins in cases_values.cpp)."""
import jax
import jax.numpy as jnp
from jax import lax
from refjax import P, AxisType, case, iota, mesh


def ramp(shape):
    return iota(shape) * 0.25 - 1.0


def per_example_grad(coll, x, w):
    """vmap(grad(sum(w_k * sin(coll(v))))) over axis 'i'."""
    return jax.vmap(jax.grad(lambda v, wk: jnp.sum(wk * jnp.sin(coll(v)))), axis_name="i")(x, w)


@case("values_vmap_grad_psum")
def _():
    return jax.vmap(jax.grad(lambda x: -lax.psum(x, "i")), axis_name="i")(jnp.ones(5))


@case("values_vmap_grad_pmean")
def _():
    return per_example_grad(lambda v: lax.pmean(v, "i"), ramp((4, 3)), jnp.cos(ramp((4, 3))))


@case("values_vmap_grad_psum_product")
def _():
    # v * psum(v * v): the gradient reads every example's v.
    return jax.vmap(jax.grad(lambda v: jnp.sum(v * lax.psum(v * v, "i"))), axis_name="i")(
        ramp((4, 3)))


@case("values_vmap_grad_all_gather")
def _():
    return per_example_grad(lambda v: lax.all_gather(v, "i", axis=1), ramp((4, 3)),
                            jnp.cos(ramp((4, 3, 4))))


@case("values_vmap_grad_all_gather_tiled")
def _():
    return per_example_grad(lambda v: lax.all_gather(v, "i", tiled=True), ramp((4, 3)),
                            jnp.cos(ramp((4, 12))))


@case("values_vmap_grad_psum_scatter")
def _():
    return per_example_grad(lambda v: lax.psum_scatter(v, "i"), ramp((4, 4, 3)),
                            jnp.cos(ramp((4, 3))))


@case("values_vmap_grad_psum_scatter_tiled")
def _():
    return per_example_grad(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True),
                            ramp((4, 3, 8)), jnp.cos(ramp((4, 3, 2))))


@case("values_vmap_grad_ppermute")
def _():
    perm = [(0, 1), (1, 2), (2, 3), (3, 0)]
    return per_example_grad(lambda v: lax.ppermute(v, "i", perm), ramp((4, 3)),
                            jnp.cos(ramp((4, 3))))


@case("values_vmap_vjp_psum")
def _():
    def one(v, c):
        _, f = jax.vjp(lambda u: jnp.sin(lax.psum(u, "i")), v)
        return f(c)[0]
    return jax.vmap(one, axis_name="i")(ramp((5, 2)), jnp.cos(ramp((5, 2))))


@case("values_grad_of_vmap_all_to_all")
def _():
    # JAX's vmap(grad(all_to_all)) fails (a cotangent shape error), so the gradient of
    # the vmap: the batch rule first, then plain autodiff.
    w = jnp.cos(ramp((4, 3, 4)))
    def loss(x):
        y = jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1), axis_name="i")(x)
        return jnp.sum(w * jnp.sin(y))
    return jax.grad(loss)(ramp((4, 4, 3)))


@case("values_pmap_vmap_grad_mixed_psum")
def _():
    loss = lambda v: -lax.psum(v, ("j", "i"))
    return jax.pmap(jax.vmap(jax.grad(loss), axis_name="i"), axis_name="j")(jnp.ones((2, 3)))


@case("values_vmap_pmap_grad_mixed_psum")
def _():
    loss = lambda v: -lax.psum(v, ("j", "i"))
    return jax.vmap(jax.pmap(jax.grad(loss), axis_name="j"), axis_name="i")(jnp.ones((3, 2)))


@case("values_spmd_axis_name_no_context_mesh")
def _():
    m = mesh([2], ["i"], AxisType.Auto)
    f = jax.shard_map(lambda b: b * 2.0, mesh=m, in_specs=P(), out_specs=P())
    return jax.vmap(f, spmd_axis_name="i")(ramp((4, 2)))


@case("values_spmd_axis_name_2d")
def _():
    m = mesh([2, 2], ["i", "j"], AxisType.Auto)
    f = jax.shard_map(lambda b: b + lax.psum(b, "j"), mesh=m, in_specs=P(), out_specs=P())
    return jax.vmap(f, spmd_axis_name="i")(ramp((4, 4)))


@case("values_vmap_pmap_ppermute")
def _():
    f = jax.pmap(lambda z: lax.ppermute(z, "i", [(0, 1), (1, 0)]), axis_name="j")
    return jax.vmap(f, axis_name="i")(jnp.arange(4.0, dtype=jnp.float32).reshape(2, 2))
