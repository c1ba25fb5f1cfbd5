"""shard_map on Auto meshes and Explicit regions (issue 23 items 2-5; twins in
cases_auto.cpp)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from refjax import AxisType, P, case, iota, mesh


def host_iota(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def psum_rows(m):
    # Item 2's program: out_specs P(None, 'y') needs the psum over 'x'.
    return jax.shard_map(lambda b: lax.psum(b, "x"), mesh=m, in_specs=P("x", "y"),
                         out_specs=P(None, "y"))


@case("auto_smap_host_arg_jit")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)
    sm = psum_rows(m)
    x = host_iota((8, 8))
    return [sm(x), jax.jit(sm)(x)]


@case("auto_smap_host_arg_grad")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)
    sm = psum_rows(m)
    x = host_iota((8, 8))
    loss = lambda a: jnp.sum(sm(a))  # noqa: E731
    y, pull = jax.vjp(sm, x)
    return [jax.grad(loss)(x), jax.jit(jax.grad(loss))(x), y, pull(iota((4, 8)))[0]]


@case("auto_smap_host_arg_vmap")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)
    sm = psum_rows(m)
    xs = host_iota((2, 8, 8))
    return [jax.vmap(sm)(xs), jax.jit(jax.vmap(sm))(xs)]


@case("auto_smap_captured_host_jit")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)

    def f(a, k):
        return jax.shard_map(lambda b: lax.psum(b * k, "x"), mesh=m, in_specs=P("x"),
                             out_specs=P())(a)
    x, c = host_iota((8, 4)), host_iota((4, 4)) * 0.5
    g = jax.jit(jax.grad(lambda a, k: jnp.sum(f(a, k)), argnums=(0, 1)))(x, c)
    return [jax.jit(f)(x, c), g[0], g[1]]


@case("auto_smap_out_specs_layout")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)
    with jax.set_mesh(m):
        xs = jax.device_put(iota((8, 8)), P("x", "y"))
        twice = jax.shard_map(lambda b: b * 2.0, in_specs=P("x", "y"), out_specs=P("x", "y"))
        rows = jax.shard_map(jnp.sin, in_specs=P("x"), out_specs=P("x"))
        summed = jax.shard_map(lambda b: lax.psum(b, "x"), in_specs=P("x", "y"),
                               out_specs=P(None, "y"))
        return [twice(xs), jax.jit(twice)(xs), rows(xs), jax.jit(rows)(xs), jax.jit(summed)(xs)]


@case("auto_smap_block_shape_changes")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)
    with jax.set_mesh(m):
        xs = jax.device_put(iota((8, 8)), P("x", "y"))
        f = jax.shard_map(
            lambda b: jnp.sum(lax.all_gather(b, "y", axis=1, tiled=True), 1, keepdims=True),
            in_specs=P("x", "y"), out_specs=P("x", "y"))
        return [f(xs), jax.jit(f)(xs)]


@case("auto_smap_axis_index_groups")
def _():
    m = mesh([4], ["x"], AxisType.Auto)
    with jax.set_mesh(m):
        xs = jax.device_put(iota((8, 2)), P("x"))
        f = jax.shard_map(lambda b: lax.psum(b, "x", axis_index_groups=[[0, 1], [2, 3]]),
                          in_specs=P("x"), out_specs=P("x"), check_vma=False)
        return [f(xs), jax.jit(lambda v: jnp.exp(f(v) * 0.01))(xs)]


@case("auto_smap_grad_vmap_layout")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Auto)
    with jax.set_mesh(m):
        xs = jax.device_put(iota((8, 8)) / 64.0, P("x", "y"))
        sm = jax.shard_map(jnp.sin, in_specs=P("x", "y"), out_specs=P("x", "y"))
        loss = lambda a: jnp.sum(sm(a))  # noqa: E731
        b3 = jax.device_put(iota((2, 8, 8)) / 128.0, P())
        return [jax.grad(loss)(xs), jax.jit(jax.grad(loss))(xs), jax.vmap(sm)(b3),
                jax.jit(jax.vmap(sm))(b3)]


@case("auto_smap_mixed_mesh_layout")
def _():
    m = jax.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    with jax.set_mesh(m):
        xs = jax.device_put(iota((8, 8)), P("x", "y"))
        f = jax.shard_map(lambda b: b + 1.0, in_specs=P("x", "y"), out_specs=P("x", "y"))
        return [f(xs), jax.jit(f)(xs)]


@case("auto_explicit_axes_exit_open")
def _():
    m = mesh([4], ["X"], AxisType.Auto)
    with jax.set_mesh(m):
        a = jax.device_put(iota((4, 4)) / 16.0, P("X"))
        f = jax.sharding.explicit_axes(jnp.sin, in_sharding=P("X"))
        return [f(a), jax.jit(f)(a)]


@case("auto_use_abstract_mesh_exit_open")
def _():
    m = mesh([4], ["X"], AxisType.Auto)
    ex = m.abstract_mesh.update_axis_types({"X": AxisType.Explicit})
    with jax.set_mesh(m):
        a = jax.device_put(iota((4, 4)) / 16.0, P("X"))

        def region(u):
            with jax.sharding.use_abstract_mesh(ex):
                y = jnp.sin(jax.reshard(u, P("X")))
            return jax.reshard(y, P())
        return [jax.jit(region)(a)]


def manual_to(axis_type, to_auto):
    m = mesh([2, 2], ["x", "y"], axis_type)
    with jax.set_mesh(m):
        xs = jax.device_put(iota((4, 4)), P("x", "y"))

        def body(b):
            if to_auto:
                return jax.sharding.auto_axes(lambda u: u * 2.0, axes="x", out_sharding=P())(b)
            return jax.sharding.explicit_axes(lambda u: u * 2.0, axes="x", in_sharding=P())(b)
        f = jax.shard_map(body, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
        return [jax.jit(f)(xs)]


@case("auto_axes_of_manual_axis")
def _():
    return manual_to(AxisType.Auto, True)


@case("explicit_axes_of_manual_axis")
def _():
    return manual_to(AxisType.Explicit, False)


@case("auto_axes_all_in_manual_body")
def _():
    m = mesh([2, 2], ["x", "y"], AxisType.Explicit)
    with jax.set_mesh(m):
        xs = jax.device_put(iota((4, 4)), P("x", "y"))
        body = jax.sharding.auto_axes(lambda u: u * 2.0, out_sharding=P())
        return [jax.shard_map(body, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})(xs)]
