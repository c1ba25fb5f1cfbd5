"""Issue 23's errors and small API gaps (twins in cases_errors.cpp): typed errors for
traced reads, messages, specs as given, divisibility classes, copy / eval_shape /
check_grads / pcast."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.test_util import check_grads
from refjax import AxisType, P, case, iota, mesh, note, note_type


def branchy(x):
    return x * 2.0 if jnp.sum(x) > 0 else -x


# --- item 12: a traced array read as a bool ---------------------------------------

@case("bool_traced_in_jit")
def _():
    return jax.jit(branchy)(jnp.array([1.0, -2.0, 4.0], jnp.float32))


@case("bool_traced_in_vmap")
def _():
    return jax.vmap(branchy)(iota((2, 3)))


@case("bool_traced_in_grad")
def _():
    return jax.grad(lambda v: jnp.sum(branchy(v)))(jnp.array([1.0, -2.0, 4.0], jnp.float32))


@case("bool_traced_in_shard_map")
def _():
    m = mesh([2], ["i"])
    with jax.set_mesh(m):
        f = jax.shard_map(branchy, in_specs=P("i"), out_specs=P("i"))
        return f(jax.device_put(iota((4,)), P("i")))


@case("item_traced_in_jit")
def _():
    return jax.jit(lambda v: v * jnp.sum(v).item())(jnp.array([1.0, 2.0], jnp.float32))


@case("bool_concrete_one_element")
def _():
    x = jnp.array([1.5], jnp.float32)
    return x * 2.0 if x > 0 else -x


@case("bool_concrete_two_elements")
def _():
    x = jnp.array([1.0, 2.0], jnp.float32)
    return x * 2.0 if x > 0 else -x


# --- item 13: messages (the error classes) ------------------------------------------

@case("smap_in_specs_too_long")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        f = jax.shard_map(lambda b: b, in_specs=P("x", None), out_specs=P("x"))
        return f(jax.device_put(iota((4,)), P("x")))


@case("scan_carry_loses_vma")
def _():
    m = mesh([2], ["i"])
    with jax.set_mesh(m):
        def body(b):
            c, _ = lax.scan(lambda c, _: (lax.psum(c, "i"), None), b, None, length=2)
            return c
        f = jax.shard_map(body, in_specs=P("i"), out_specs=P("i"))
        return f(jax.device_put(iota((4,)), P("i")))


@case("vmap_out_axes_none_mapped")
def _():
    return jax.vmap(lambda x: x * 2.0, out_axes=None, axis_name="foo")(iota((3, 2)))


@case("explicit_axes_no_mesh")
def _():
    return jax.sharding.explicit_axes(lambda v: v, in_sharding=P("x"))(iota((4,)))


# --- item 14: a NamedSharding keeps its spec as given --------------------------------

@case("named_sharding_spec_as_given")
def _():
    m = mesh([2], ["i"])
    x = jax.device_put(iota((4, 2)), NamedSharding(m, P("i")))
    note(str(x.sharding.spec))
    with jax.set_mesh(m):
        y = x * 2.0
    note(str(y.sharding.spec))
    return x, y


# --- item 15: divisibility classes ---------------------------------------------------

@case("indivisible_device_put_explicit")
def _():
    m = mesh([4], ["x"])
    return jax.device_put(iota((6,)), NamedSharding(m, P("x")))


@case("indivisible_zeros_out_sharding")
def _():
    m = mesh([4], ["x"])
    with jax.set_mesh(m):
        return jnp.zeros((6,), out_sharding=P("x"))


@case("indivisible_device_put_auto")
def _():
    m = mesh([4], ["x"], AxisType.Auto)
    return jax.device_put(iota((6,)), NamedSharding(m, P("x")))


@case("indivisible_jit_out_shardings")
def _():
    m = mesh([4], ["x"])
    with jax.set_mesh(m):
        return jax.jit(lambda v: v * 2.0, out_shardings=P("x"))(iota((6,)))


# --- item 16: unreduced placement (sum kind; max/min kinds are beyond JAX) -------------

@case("reshard_replicated_to_unreduced")
def _():
    m = mesh([4], ["x"])
    with jax.set_mesh(m):
        u = jax.sharding.reshard(iota((8,)), P(unreduced={"x"}))
        note_type(u)
        return jax.sharding.reshard(u, P())


# --- item 17: copy, eval_shape, check_grads, pcast ------------------------------------

@case("copy_keeps_type_and_sharding")
def _():
    m = mesh([4], ["x"])
    with jax.set_mesh(m):
        x = jax.device_put(iota((8,)), P("x"))
        return jnp.copy(x), jax.jit(jnp.copy)(x)


@case("eval_shape_types")
def _():
    m = mesh([4], ["x"])
    with jax.set_mesh(m):
        x = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(m, P("x")))
        outs = jax.eval_shape(lambda a: (jnp.sum(a, 1), a * 2, a.astype(jnp.int32)), x)
        return [str(jax.typeof(o)) for o in outs]


@case("check_grads_passes")
def _():
    x = jnp.array([0.5, -1.0, 2.0], jnp.float32)
    check_grads(lambda v: jnp.sum(jnp.sin(v) * v), (x,), 2)
    return x


@jax.custom_jvp
def _wrong(v):
    return jnp.sin(v)


@_wrong.defjvp
def _wrong_jvp(p, t):
    return jnp.sin(p[0]), 2.0 * t[0]


@case("check_grads_wrong_jvp")
def _():
    check_grads(_wrong, (jnp.array([0.5, -1.0, 2.0], jnp.float32),), 1)
    return jnp.zeros(1)


def _smap(body, in_specs, out_specs):
    return jax.shard_map(body, in_specs=in_specs, out_specs=out_specs)


@case("pcast_to_varying")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        w = jax.device_put(jnp.array([1.0, 2.0], jnp.float32), P())
        f = _smap(lambda a: note_type(lax.pcast(a, "x", to="varying")) * 2.0, P(), P("x"))
        return f(w)


@case("pcast_varying_to_unreduced_psum")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(v):
            u = note_type(lax.pcast(v * v, "x", to="unreduced"))
            return note_type(lax.psum(u, "x"))
        return _smap(body, P("x"), P())(jax.device_put(iota((4,)), P("x")))


@case("pcast_reduced_to_varying")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(w, v):
            r = note_type(lax.pcast(w, "x", to="reduced"))
            q = note_type(lax.pcast(r, "x", to="varying"))
            return q * v
        w = jax.device_put(jnp.array([1.0, 2.0], jnp.float32), P())
        return _smap(body, (P(), P("x")), P("x"))(w, jax.device_put(iota((4,)), P("x")))


@case("pcast_reduced_times_varying")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(w, v):
            return note_type(lax.pcast(w, "x", to="reduced") * v)  # the cast is implicit
        w = jax.device_put(jnp.array([1.0, 2.0], jnp.float32), P())
        return _smap(body, (P(), P("x")), P("x"))(w, jax.device_put(iota((4,)), P("x")))


@case("pcast_unreduced_times_reduced")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(w, v):
            u = lax.pcast(v, "x", to="unreduced")
            r = lax.pcast(w, "x", to="reduced")
            return lax.psum(note_type(u * r), "x")
        w = jax.device_put(jnp.array([1.0, 2.0], jnp.float32), P())
        return _smap(body, (P(), P("x")), P())(w, jax.device_put(iota((4,)), P("x")))


@case("pcast_grad_varying_unreduced")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        f = _smap(lambda v: lax.psum(lax.pcast(v * v, "x", to="unreduced"), "x"), P("x"), P())
        return jax.grad(lambda v: jnp.sum(f(v)))(jax.device_put(iota((4,)), P("x")))


@case("pcast_grad_invariant_reduced")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        def body(w, v):
            q = lax.pcast(lax.pcast(w, "x", to="reduced"), "x", to="varying")
            return lax.psum(jnp.sum(q * v), "x")
        f = _smap(body, (P(), P("x")), P())
        w = jax.device_put(jnp.array([1.0, 2.0], jnp.float32), P())
        return jax.grad(f)(w, jax.device_put(iota((4,)), P("x")))


@case("pcast_varying_to_varying")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        f = _smap(lambda v: lax.pcast(v, "x", to="varying"), P("x"), P("x"))
        return f(jax.device_put(iota((4,)), P("x")))


@case("pcast_invariant_to_unreduced")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        f = _smap(lambda w: lax.pcast(w, "x", to="unreduced"), P(), P())
        return f(jax.device_put(iota((2,)), P()))


@case("pcast_unreduced_nonlinear")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        f = _smap(lambda v: lax.psum(jnp.sin(lax.pcast(v, "x", to="unreduced")), "x"),
                  P("x"), P())
        return f(jax.device_put(iota((4,)), P("x")))


@case("pcast_unreduced_times_invariant")
def _():
    m = mesh([2], ["x"])
    with jax.set_mesh(m):
        f = _smap(lambda v: lax.psum(lax.pcast(v, "x", to="unreduced") * 2.0, "x"), P("x"), P())
        return f(jax.device_put(iota((4,)), P("x")))
