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


# ---- collectives in shard_map bodies (manual-spmd §4) ---------------------------------

def smap1(f, in_specs, out_specs, sizes=(4,), names=("x",), arrays=(), **kw):
    m = mesh(list(sizes), list(names))
    with jax.set_mesh(m):
        g = jax.shard_map(f, in_specs=in_specs, out_specs=out_specs, **kw)
        return g(*[jax.device_put(a, s) for a, s in arrays])


@case("smap_pmean")
def _():
    return smap1(lambda b: lax.pmean(b, "x"), P("x"), P(), arrays=[(ramp((8, 2)), P("x"))])


@case("smap_psum_of_invariant")
def _():
    return smap1(lambda b: lax.psum(lax.psum(b, "x"), "x"), P("x"), P(),
                 arrays=[(ramp((4,)), P("x"))])


@case("smap_all_gather_stacked")
def _():
    return smap1(lambda b: note_type(lax.all_gather(b, "x")), P("x"), P("x"),
                 arrays=[(ramp((8,)), P("x"))])


@case("smap_all_gather_invariant_out")
def _():
    return smap1(lambda b: note_type(lax.all_gather(b, "x", axis=0, tiled=True, to="invarying")),
                 P("x"), P(), arrays=[(ramp((8,)), P("x"))])


@case("smap_all_gather_to_replicated_refused")
def _():
    return smap1(lambda b: lax.all_gather(b, "x", tiled=True), P("x"), P(),
                 arrays=[(ramp((8,)), P("x"))])


@case("smap_psum_scatter_tiled")
def _():
    return smap1(lambda b: lax.psum_scatter(b, "x", tiled=True), P(None, "x"), P("x"),
                 sizes=(2,), arrays=[(ramp((4, 4)), P(None, "x"))])


@case("smap_psum_scatter_untiled_size_error")
def _():
    return smap1(lambda b: lax.psum_scatter(b, "x"), P("x"), P("x"),
                 arrays=[(ramp((12,)), P("x"))])


@case("smap_ppermute_ring")
def _():
    return smap1(lambda b: lax.ppermute(b, "x", [(0, 1), (1, 2), (2, 3), (3, 0)]), P("x"), P("x"),
                 arrays=[(ramp((8,)), P("x"))])


@case("smap_ppermute_partial_zeros")
def _():
    return smap1(lambda b: lax.ppermute(b, "x", [(0, 2), (1, 3)]), P("x"), P("x"),
                 arrays=[(ramp((8,)) + 1.0, P("x"))])


@case("smap_ppermute_duplicate_dest_error")
def _():
    return smap1(lambda b: lax.ppermute(b, "x", [(0, 1), (2, 1)]), P("x"), P("x"),
                 arrays=[(ramp((8,)), P("x"))])


@case("smap_all_to_all")
def _():
    return smap1(lambda b: lax.all_to_all(b, "x", 1, 0, tiled=True), P("x"), P("x"),
                 sizes=(2,), arrays=[(ramp((4, 4)), P("x"))])


@case("smap_axis_index_2d")
def _():
    return smap1(lambda b: b * 0.0 + note_type(lax.axis_index(("x", "y"))).astype(jnp.float32),
                 P(("x", "y")), P(("x", "y")), sizes=(4, 2), names=("x", "y"),
                 arrays=[(jnp.zeros(8), P(("x", "y")))])


@case("smap_out_specs_replication_error")
def _():
    return smap1(lambda b: b * 2.0, P("x", "y"), P(None, "y"), sizes=(2, 2), names=("x", "y"),
                 arrays=[(ramp((4, 4)), P("x", "y"))])


@case("unbound_axis_error")
def _():
    return jax.jit(lambda b: lax.psum(b, "z"))(ramp((3,)))


@case("smap_pvary_twice_error")
def _():
    return smap1(lambda b: lax.pcast(b, "x", to="varying"), P("x"), P("x"), sizes=(2,),
                 arrays=[(ramp((4,)), P("x"))])


@case("smap_partial_manual")
def _():
    return smap1(lambda b: note_type(lax.psum(note_type(b) * 2.0, "x")), P("x"), P(),
                 sizes=(2, 2), names=("x", "y"), arrays=[(ramp((4, 4)), P("x", "y"))],
                 axis_names={"x"})


@case("smap_scan_varying_carry")
def _():
    def body(b):
        c, ys = lax.scan(lambda c, x: (c + x, c * x), b[0], b)
        return note_type(c).reshape(1), ys
    return smap1(body, P("x"), P("x"), sizes=(2,), arrays=[(ramp((6,)), P("x"))])


# ---- AD through shard_map (manual-spmd §5) ---------------------------------------------

def with_mesh(sizes, names, fn):
    with jax.set_mesh(mesh(list(sizes), list(names))):
        return fn()


@case("grad_of_smap_sin")
def _():
    def go():
        sm = jax.shard_map(jnp.sin, in_specs=P("x"), out_specs=P("x"))
        return jax.grad(lambda x: jnp.sum(sm(x)))(jax.device_put(ramp((8,)), P("x")))
    return with_mesh([4], ["x"], go)


@case("grad_of_smap_fanin_psum")
def _():
    def go():
        sm = jax.shard_map(lambda b: lax.psum(b * b, "x"), in_specs=P("x"), out_specs=P())
        return jax.grad(lambda x: jnp.sum(sm(x)))(jax.device_put(ramp((8,)), P("x")))
    return with_mesh([4], ["x"], go)


@case("grad_of_smap_fanout")
def _():
    def go():
        sm = jax.shard_map(lambda b: b * 3.0, in_specs=P(), out_specs=P("x"))
        return jax.grad(lambda x: jnp.sum(sm(x) * sm(x)))(jax.device_put(ramp((2,)), P()))
    return with_mesh([4], ["x"], go)


@case("jvp_of_smap")
def _():
    def go():
        sm = jax.shard_map(lambda b: lax.psum(jnp.sin(b) * b, "x"), in_specs=P("x"), out_specs=P())
        x = jax.device_put(ramp((4,)), P("x"))
        return jax.jvp(sm, (x,), (jax.device_put(jnp.ones(4), P("x")),))
    return with_mesh([2], ["x"], go)


@case("vjp_of_smap_check_vma_false")
def _():
    def go():
        sm = jax.shard_map(lambda b: b * 2.0, in_specs=P(), out_specs=P(), check_vma=False)
        return jax.grad(lambda x: jnp.sum(sm(x)))(jax.device_put(ramp((3,)), P()))
    return with_mesh([4], ["x"], go)


def _lin_body(fix):
    p = jnp.array([1.0], jnp.float32)

    def body(t):
        pv = lax.pcast(p, "x", to="varying") if fix else p
        out, fwd = jax.linearize(lambda v: jnp.mean(v * v), pv)
        out_t = fwd(t)
        if not fix:
            return out_t
        return jax.linear_transpose(fwd, pv)(out_t)[0]
    return body


@case("linearize_transpose_in_body_error")
def _():
    return smap1(_lin_body(False), P("x"), P("x"), sizes=(2,), arrays=[(jnp.ones(2), P("x"))])


@case("linearize_transpose_in_body_pvary")
def _():
    return smap1(_lin_body(True), P("x"), P("x"), sizes=(2,), arrays=[(jnp.ones(2), P("x"))])


@case("pmax_grad_error")
def _():
    def go():
        sm = jax.shard_map(lambda b: lax.pmax(b, "x"), in_specs=P("x"), out_specs=P())
        return jax.grad(lambda x: jnp.sum(sm(x)))(jax.device_put(ramp((4,)), P("x")))
    return with_mesh([2], ["x"], go)


@case("jit_grad_of_smap")
def _():
    def go():
        sm = jax.shard_map(lambda b: lax.psum(jnp.tanh(b), ("x", "y")), in_specs=P("x", "y"),
                           out_specs=P())
        g = jax.jit(jax.grad(lambda x: jnp.sum(sm(x))))
        return g(jax.device_put(ramp((4, 4)), P("x", "y")))
    return with_mesh([2, 2], ["x", "y"], go)


# ---- vmap with axis_name, pmap (manual-spmd §6, §7) -----------------------------------

@case("vmap_axis_name_collectives")
def _():
    def f(r):
        return (lax.psum(r, "i"), lax.all_gather(r, "i"), lax.axis_index("i"),
                lax.ppermute(r, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]))
    return jax.vmap(f, out_axes=0, axis_name="i")(ramp((4, 3)))


@case("vmap_out_axes_none_batched_error")
def _():
    return jax.vmap(lambda r: r * 2.0, out_axes=None, axis_name="foo")(ramp((4, 3)))


@case("vmap_of_smap")
def _():
    def go():
        sm = jax.shard_map(lambda b: lax.psum(b * b, "x"), in_specs=P("x"), out_specs=P())
        return jax.vmap(sm)(jax.device_put(ramp((3, 4)), P(None, "x")))
    return with_mesh([2], ["x"], go)


@case("pmap_psum")
def _():
    return jax.pmap(lambda r: r / lax.psum(r, "i"), axis_name="i")(ramp((4,)) + 2.0)


@case("pmap_grad_legacy")
def _():
    def f(w, d):
        return jax.grad(lambda v: lax.psum(jnp.sum((v * v + 1.0) * d), "batch"))(w)
    return jax.pmap(f, axis_name="batch", in_axes=(None, 0))(
        jnp.array([1.0], jnp.float32), jnp.array([[0.0], [1.0]], jnp.float32))
