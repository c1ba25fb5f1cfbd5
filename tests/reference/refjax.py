"""The JAX side of the reference check (README.md): the case registry and helpers
the cases_*.py files use, mirroring ref.h."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P  # noqa: F401 (for the cases)

CASES = {}
_notes = []


def case(name):
    """Registers the decorated function as the JAX twin of REF_CASE(name)."""
    def deco(fn):
        if name in CASES:
            raise SystemExit(f"case {name} defined twice")
        CASES[name] = fn
        return fn
    return deco


def note(text):
    _notes.append(text)


def note_type(x):
    """Records the printed type of x (as ref::note_type); returns x."""
    note(str(jax.typeof(x)))
    return x


def mesh(sizes, names, axis_type=AxisType.Explicit):
    return jax.make_mesh(tuple(sizes), tuple(names), axis_types=(axis_type,) * len(names))


def iota(shape, dtype=jnp.float32):
    import math
    return jnp.arange(math.prod(shape), dtype=dtype).reshape(shape)
