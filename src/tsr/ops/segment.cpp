// Scatter-based reductions: jnp.bincount and jax.ops.segment_* (an identity-filled
// operand with the data scattered in, as JAX). Their fully unreduced form lets each
// device reduce its own part of the data: a batched scatter over a leading dim
// that spans every mesh axis, then a sum that keeps that dim unreduced.
#include <limits>

#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/ops/ops_common.h"

namespace tsr {
using namespace tsr::detail;

namespace {

// True for JAX's is_replicated_or_unreduced: no partitions, no reduced axes, and
// unreduced over none or all of the mesh axes.
bool replicated_or_unreduced(const NamedSharding& s) {
  const PartitionSpec& p = s.spec();
  if (!p.partition_axes().empty() || !p.reduced().empty()) return false;
  const auto& names = s.mesh().axis_names();
  return p.unreduced().empty() ||
         p.unreduced() == std::set<std::string>(names.begin(), names.end());
}

bool fully_unreduced(const NamedSharding& s) {
  return replicated_or_unreduced(s) && !s.spec().unreduced().empty();
}

// sum over i of data[i] into row ids[i] of a [num, rest...] result, unreduced (kind
// sum) over every mesh axis of `out`: each device scatters only its block of data.
Array local_scatter_add(const Array& ids, const Array& data, int64_t num, const NamedSharding& out,
                        const char* op) {
  const AbstractMesh& mesh = out.mesh();
  Axes all(mesh.axis_names().begin(), mesh.axis_names().end());
  int64_t d = mesh.size(), n = ids.shape()[0];
  int64_t padded = (n + d - 1) / d * d;
  Array i = ids, v = data;
  if (padded != n) {  // pad ids with `num` (dropped) and data with zeros
    i = pad(i, num, {{0, padded - n, 0}});
    std::vector<std::tuple<int64_t, int64_t, int64_t>> cfg(static_cast<size_t>(v.ndim()));
    cfg[0] = {0, padded - n, 0};
    v = pad(v, v.dtype() == DType::Bool ? ArrayLike(false) : ArrayLike(0), cfg);
  }
  Shape rest(data.shape().begin() + 1, data.shape().end());
  std::vector<PartitionEntry> lead{PartitionEntry(all)};
  auto spec = [&](int rank) {
    std::vector<PartitionEntry> e = lead;
    e.resize(static_cast<size_t>(rank));
    return NamedSharding(mesh, PartitionSpec(e));
  };
  Shape is{d, padded / d}, vs{d, padded / d};
  vs.insert(vs.end(), rest.begin(), rest.end());
  i = reshape(reshard(i, spec(1)), is, spec(2));
  v = reshape(reshard(v, spec(v.ndim())), vs, spec(static_cast<int>(vs.size())));
  Shape os{d, num};
  os.insert(os.end(), rest.begin(), rest.end());
  Array acc = zeros(os, v.dtype(), spec(static_cast<int>(os.size())));
  ScatterDimensionNumbers dn;
  for (size_t k = 0; k < rest.size(); ++k) dn.update_window_dims.push_back(2 + static_cast<int>(k));
  dn.inserted_window_dims = {1};
  dn.scatter_dims_to_operand_dims = {1};
  dn.operand_batching_dims = {0};
  dn.scatter_indices_batching_dims = {0};
  Array parts = scatter(ScatterKind::Add, acc, expand_dims(i, -1), v, dn);
  (void)op;
  return sum(parts, 0, {.out_sharding = out, .dtype = v.dtype()});
}

[[noreturn]] void not_replicated_or_unreduced(const char* api, const NamedSharding& s) {
  throw ShardingTypeError(std::string("[") + api + "] out_sharding passed to `tsr::" + api +
                          "` can only be fully replicated or fully unreduced along all mesh "
                          "axes. Got " +
                          s.spec().repr() + "; expected P() or P(unreduced={every mesh axis}).");
}

// jax.ops' _get_identity, as an array (int64's largest value is not a double).
Array identity_of(ScatterKind k, DType t, const Shape& shape, const Placement& where) {
  double inf = std::numeric_limits<double>::infinity();
  auto lowest = [&]() -> double {
    switch (t) {
      case DType::Int8:
        return -128;
      case DType::Int32:
        return static_cast<double>(std::numeric_limits<int32_t>::min());
      case DType::Int64:
        return static_cast<double>(std::numeric_limits<int64_t>::min());
      default:
        return 0;  // unsigned
    }
  };
  auto highest = [&]() -> double {
    switch (t) {
      case DType::Int8:
        return 127;
      case DType::Int32:
        return static_cast<double>(std::numeric_limits<int32_t>::max());
      case DType::UInt8:
        return 255;
      default:
        return static_cast<double>(std::numeric_limits<uint32_t>::max());
    }
  };
  switch (k) {
    case ScatterKind::Mul:
      return full(shape, 1, t, where);
    case ScatterKind::Min:
      if (t == DType::Bool) return full(shape, 1, t, where);
      if (t == DType::Int64)  // -(lowest + 1) is the largest int64, exactly
        return neg(full(shape, lowest(), t, where) + 1);
      return full(shape, is_integer(t) ? highest() : inf, t, where);
    case ScatterKind::Max:
      if (t == DType::Bool) return full(shape, 0, t, where);
      return full(shape, is_integer(t) ? lowest() : -inf, t, where);
    default:
      return full(shape, 0, t, where);
  }
}

Array segment(const char* name, ScatterKind kind, const Array& data, const Array& ids, int64_t num,
              const SegmentOptions& o) {
  if (num < 0)
    throw ValueError(std::string("[") + name + "] num_segments must be non-negative. Got " +
                     std::to_string(num) + "; expected a count >= 0.");
  if (data.ndim() < 1 || ids.ndim() != 1 || ids.shape()[0] != data.shape()[0])
    throw ValueError(std::string("[") + name +
                     "] segment_ids must be 1-D with one id per leading element of data. Got "
                     "data " +
                     data.type().str() + " and segment_ids " + ids.type().str() +
                     "; expected segment_ids of shape (" +
                     (data.ndim() ? std::to_string(data.shape()[0]) : std::string("n")) + ",).");
  if (!is_integer(ids.dtype()))
    throw TypeError(std::string("[") + name + "] segment_ids must be integers. Got " +
                    ids.type().str() + "; expected an integer dtype.");
  auto out = canonicalize_sharding(o.out_sharding, name);
  if (out && !out->spec().unreduced().empty()) {
    if (kind != ScatterKind::Add)
      throw NotImplementedError(std::string("[") + name + "] unreduced for " +
                                (kind == ScatterKind::Mul   ? "prod"
                                 : kind == ScatterKind::Max ? "max"
                                                            : "min") +
                                " is not yet supported. Got out_sharding=" + out->spec().repr() +
                                "; expected a sharding without unreduced axes.");
    if (!fully_unreduced(*out))
      throw ShardingTypeError(std::string("[") + name +
                              "] an unreduced out_sharding must be unreduced over every mesh "
                              "axis and otherwise replicated. Got " +
                              out->spec().repr() + "; expected P(unreduced={every mesh axis}).");
    if (o.mode == IndexMode::Clip)
      return local_scatter_add(clamp(0, ids, num - 1), data, num, *out, name);
    return local_scatter_add(where(less(ids, 0), num, ids), data, num, *out, name);
  }
  Shape shape = data.shape();
  shape[0] = num;
  AbstractMesh mesh = data.type().sharding.mesh();
  if (mesh.empty()) mesh = ids.type().sharding.mesh();
  Placement place = mesh.empty() ? Placement() : Placement(NamedSharding(mesh, P()));
  Array base = identity_of(kind, data.dtype(), shape, place);
  UpdateOptions uo{.out_sharding = o.out_sharding,
                   .mode = o.mode,
                   .indices_are_sorted = o.indices_are_sorted,
                   .unique_indices = o.unique_indices};
  // Negative ids are out of range (JAX does not normalize them: they are dropped).
  Array i = o.mode == IndexMode::Clip ? clamp(0, ids, num - 1) : where(less(ids, 0), num, ids);
  At at = base.at(i);
  switch (kind) {
    case ScatterKind::Mul:
      return at.mul(data, uo);
    case ScatterKind::Max:
      return at.max(data, uo);
    case ScatterKind::Min:
      return at.min(data, uo);
    default:
      return at.add(data, uo);
  }
}

}  // namespace

Array segment_sum(const Array& data, const Array& segment_ids, int64_t num_segments,
                  const SegmentOptions& o) {
  return segment("segment_sum", ScatterKind::Add, data, segment_ids, num_segments, o);
}
Array segment_prod(const Array& data, const Array& segment_ids, int64_t num_segments,
                   const SegmentOptions& o) {
  return segment("segment_prod", ScatterKind::Mul, data, segment_ids, num_segments, o);
}
Array segment_max(const Array& data, const Array& segment_ids, int64_t num_segments,
                  const SegmentOptions& o) {
  return segment("segment_max", ScatterKind::Max, data, segment_ids, num_segments, o);
}
Array segment_min(const Array& data, const Array& segment_ids, int64_t num_segments,
                  const SegmentOptions& o) {
  return segment("segment_min", ScatterKind::Min, data, segment_ids, num_segments, o);
}

Array bincount(const Array& x, int64_t length, const std::optional<Array>& weights,
               const ShardingArg& out_sharding) {
  const char* op = "bincount";
  if (x.ndim() != 1 || !is_integer(x.dtype()))
    throw TypeError("[bincount] x must be a 1-D integer array. Got " + x.type().str() +
                    "; expected a 1-D integer array. Flatten with ravel and convert with astype.");
  if (length < 0)
    throw ValueError("[bincount] length must be non-negative. Got length=" +
                     std::to_string(length) + "; expected length >= 0.");
  if (weights && weights->shape() != x.shape())
    throw ValueError("[bincount] shape of weights must match shape of x. Got " +
                     weights->type().str() + " and " + x.type().str() + "; expected equal shapes.");
  auto out = canonicalize_sharding(out_sharding, op);
  if (out && !replicated_or_unreduced(*out)) not_replicated_or_unreduced(op, *out);
  Array w = weights ? *weights : ones_like(x, DType::Int32);
  // Negative values count in bin 0, as jnp.bincount (which clips at 0).
  Array xi = maximum(x, 0);
  if (out && fully_unreduced(*out)) return local_scatter_add(xi, w, length, *out, op);
  AbstractMesh mesh = x.type().sharding.mesh();
  UpdateOptions o;
  o.mode = IndexMode::FillOrDrop;
  if (!mesh.empty()) o.out_sharding = NamedSharding(mesh, P());
  Placement where = mesh.empty() ? Placement() : Placement(NamedSharding(mesh, P()));
  return zeros({length}, w.dtype(), where).at(xi).add(w, o);
}

}  // namespace tsr
