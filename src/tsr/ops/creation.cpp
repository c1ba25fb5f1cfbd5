// Creation front-ends: every one binds iota/full (so they trace under jit), with
// the placement resolved as an out_sharding (spec §12.1).
#include <cmath>

#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/creation.h"

namespace tsr {
using namespace detail;

namespace {
Array make_full(const Shape& shape, double v, DType dtype, const Placement& where,
                const char* api) {
  check_dtype(dtype, api);
  check_shape(shape, api, itemsize(dtype));
  return bind1(
      std::make_shared<prim::Full>(shape, dtype, v, false, resolve_placed(where, shape, api)), {});
}
Array make_iota(DType dtype, const Shape& shape, int dim, const Placement& where, const char* api) {
  check_dtype(dtype, api);
  check_shape(shape, api, itemsize(dtype));
  return bind1(std::make_shared<prim::Iota>(dtype, shape, dim, resolve_placed(where, shape, api)),
               {});
}
}  // namespace

Array zeros(const Shape& shape, DType dtype, const Placement& where) {
  return make_full(shape, 0, dtype, where, "zeros");
}
Array ones(const Shape& shape, DType dtype, const Placement& where) {
  return make_full(shape, 1, dtype, where, "ones");
}
Array full(const Shape& shape, double value, DType dtype, const Placement& where) {
  return make_full(shape, value, dtype, where, "full");
}
Array iota(const Shape& shape, DType dtype, const Placement& where) {
  return make_iota(dtype, shape, -1, where, "iota");
}
Array broadcasted_iota(DType dtype, const Shape& shape, int dimension, const Placement& where) {
  return make_iota(dtype, shape, dimension, where, "broadcasted_iota");
}

Array arange(double start, double stop, double step, DType dtype, const Placement& where) {
  check_dtype(dtype, "arange");
  if (step == 0) throw ValueError("[arange] step is zero. Got step=0; expected a non-zero step.");
  double span = std::ceil((stop - start) / step);
  // 2^63 is exact in a double; a span at or past it (or NaN) has no int64 length.
  if (std::isnan(span) || span >= 9223372036854775808.0)
    throw ValueError("[arange] the number of elements is not a valid length. Got start=" +
                     std::to_string(start) + ", stop=" + std::to_string(stop) +
                     ", step=" + std::to_string(step) +
                     "; expected finite bounds giving fewer than 2**63 elements.");
  int64_t n = span > 0 ? static_cast<int64_t>(span) : 0;
  if (start == 0 && step == 1) return make_iota(dtype, {n}, 0, where, "arange");
  // start + step * i, computed in the output dtype's precision class like jnp.arange.
  DType work =
      is_floating(dtype) ? (dtype == DType::Float64 ? DType::Float64 : DType::Float32) : dtype;
  Array i = make_iota(work, {n}, 0, where, "arange");
  return astype(add(multiply(i, step), start), dtype);
}
Array arange(float n, const Placement& where) { return arange(0, n, 1, float32, where); }
Array arange(int n, const Placement& where) { return arange(0, n, 1, int32, where); }

Array eye(int64_t n, int64_t m, int64_t k, DType dtype, const Placement& where) {
  if (m < 0) m = n;
  check_dtype(dtype, "eye");
  check_shape({n, m}, "eye", itemsize(dtype));
  Array r = broadcasted_iota(DType::Int32, {n, m}, 0, where);
  Array c = broadcasted_iota(DType::Int32, {n, m}, 1, where);
  return astype(equal(add(r, static_cast<int64_t>(k)), c), dtype);
}

Array linspace(double start, double stop, int64_t num, bool endpoint, DType dtype,
               const Placement& where) {
  check_dtype(dtype, "linspace");
  if (num < 0)
    throw ValueError("[linspace] Number of samples, " + std::to_string(num) +
                     ", must be non-negative. Pass num >= 0.");
  double div = endpoint ? static_cast<double>(num - 1) : static_cast<double>(num);
  double step = div > 0 ? (stop - start) / div : 0.0;
  DType work = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  Array i = broadcasted_iota(work, {num}, 0, where);
  Array r = add(multiply(i, step), start);
  if (endpoint && num > 1) {
    // The last sample is exactly `stop`, as NumPy guarantees.
    Array last =
        equal(broadcasted_iota(DType::Int32, {num}, 0, where), static_cast<int64_t>(num - 1));
    r = tsr::where(last, stop, r);
  }
  return astype(r, dtype);
}

Array zeros_like(const Array& x, std::optional<DType> dtype, const Placement& where) {
  return full_like(x, 0, dtype, where);
}
Array ones_like(const Array& x, std::optional<DType> dtype, const Placement& where) {
  return full_like(x, 1, dtype, where);
}
Array empty_like(const Array& x, std::optional<DType> dtype, const Placement& where) {
  return full_like(x, 0, dtype, where);
}
Array full_like(const Array& x, double value, std::optional<DType> dtype, const Placement& where) {
  DType dt = dtype ? *dtype : x.dtype();
  check_dtype(dt, "full_like");
  // Inside a shard_map body the result varies where x does, whatever its dtype or
  // placement (lax.full_like), so it can meet x and be a loop carry beside it.
  if (!std::holds_alternative<std::monostate>(where))
    return vary_like(full(x.shape(), value, dt, where), x);
  // Same shape: copy the type's sharding (spec §12.1); concrete devices when known.
  prim::Placed p;
  const NamedSharding& ts = x.type().sharding;
  if (!ts.mesh().empty()) {
    p.sharding = NamedSharding(ts.mesh(), PartitionSpec(ts.spec().entries()));
    if (!x.impl()->var && x.sharding().concrete_mesh()) p.mesh = *x.sharding().concrete_mesh();
  } else if (!x.impl()->var && x.sharding().concrete_mesh() &&
             x.sharding().concrete_mesh()->size() == 1) {
    // A mesh-less value on one device: the result goes there too. (One laid out on a
    // mesh, a process-local value placed for a program of many processes, stays
    // mesh-less, as the value is.)
    p.mesh = *x.sharding().concrete_mesh();
    p.sharding = NamedSharding(p.mesh->abstract_mesh(), P());
  }
  Array r = vary_like(bind1(std::make_shared<prim::Full>(x.shape(), dt, value, false, p), {}), x);
  // Auto axes are not in types, so the type above is replicated over them; a concrete
  // x's layout (jnp.zeros_like keeps x.sharding) is laid on with a local slice.
  if (!x.impl()->var && !r.impl()->var && !ts.mesh().empty() && x.sharding().concrete_mesh() &&
      !x.sharding().concrete_mesh()->abstract_mesh().auto_axes().empty())
    r = device_put(r, x.sharding());
  return r;
}

}  // namespace tsr
