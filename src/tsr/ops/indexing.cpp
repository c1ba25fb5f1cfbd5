// NumPy indexing (spec §12.13–§12.14): static indices become slice/rev/squeeze,
// scalar index arrays dynamic_slice, anything else one gather; `.at(...)` updates
// become one scatter. The index-to-gather translation follows jnp's
// `index_to_gather` so dimension placement matches NumPy's advanced indexing.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/gather_scatter.h"
#include "tsr/sharding/format.h"

namespace tsr {
using namespace tsr::detail;

namespace {

enum class Kind { Int, Slc, New, Arr };

struct Entry {
  Kind kind = Kind::Slc;
  int64_t i = 0;
  Slice s;
  Array a;
};

// A canonical slice of a dim of size n: first element, step, count.
struct Canon {
  int64_t start, step, size;
};

Canon canon(const Slice& s, int64_t n, const char* op) {
  if (s.step == 0)
    throw ValueError(std::string("[") + op + "] slice step cannot be zero. Got step=0; expected " +
                     "a non-zero step.");
  int64_t step = s.step, start, stop;
  if (step > 0) {
    start =
        s.start ? (*s.start < 0 ? std::max<int64_t>(*s.start + n, 0) : std::min(*s.start, n)) : 0;
    stop = s.stop ? (*s.stop < 0 ? std::max<int64_t>(*s.stop + n, 0) : std::min(*s.stop, n)) : n;
  } else {
    start = s.start
                ? (*s.start < 0 ? std::max<int64_t>(*s.start + n, -1) : std::min(*s.start, n - 1))
                : n - 1;
    stop =
        s.stop ? (*s.stop < 0 ? std::max<int64_t>(*s.stop + n, -1) : std::min(*s.stop, n - 1)) : -1;
  }
  int64_t size = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                          : (start > stop ? (start - stop - step - 1) / (-step) : 0);
  return {start, step, size};
}

// `spec` on mesh m, with the devices of `like` when it is a concrete value on m:
// a value with no mesh moved there must learn which devices m names.
Placement on_mesh_of(const Array& like, const AbstractMesh& m, const PartitionSpec& spec) {
  if (like.valid() && !like.impl()->var && like.sharding().concrete_mesh() &&
      like.type().sharding.mesh() == m)
    return NamedSharding(*like.sharding().concrete_mesh(), spec);
  return NamedSharding(m, spec);
}

// Replicated on x's mesh (or the default placement when x has none).
Placement replicated_like(const Array& x) {
  const AbstractMesh& m = x.type().sharding.mesh();
  return m.empty() ? Placement() : on_mesh_of(x, m, P());
}

// Validates the entries and expands the ellipsis; also reports whether the
// advanced indices (ints and arrays, when any array is present) are contiguous
// in the index as written (NumPy decides before expanding `...`).
std::vector<Entry> expand(const Array& x, const std::vector<Index>& idx, bool* contiguous,
                          const char* op) {
  int consumed = 0, ellipses = 0;
  bool any_array = false;
  for (const auto& e : idx) {
    const auto& v = e.value();
    if (std::holds_alternative<Ellipsis>(v)) {
      ++ellipses;
    } else if (!std::holds_alternative<NewAxis>(v)) {
      ++consumed;
    }
    if (const auto* a = std::get_if<Array>(&v)) {
      if (!a->valid())
        throw ValueError(std::string("[") + op +
                         "] an index array is invalid (a default-"
                         "constructed Array). Got an empty handle; expected an integer array.");
      if (a->dtype() == DType::Bool)
        throw IndexError(std::string("[") + op +
                         "] boolean mask indexing is not supported: its result shape depends on "
                         "the mask's values. Got a bool index of type " +
                         a->type().str() +
                         "; expected integer indices. Use where(mask, x, other) to select, or "
                         "sum(where(mask, x, 0)) to reduce over the masked elements.");
      if (!is_integer(a->dtype()))
        throw IndexError(std::string("[") + op + "] indexer must have integer type. Got " +
                         a->type().str() +
                         "; expected an integer array. Convert with astype(int32).");
      any_array = true;
    }
  }
  if (ellipses > 1)
    throw IndexError(std::string("[") + op + "] an index can only have a single ellipsis. Got " +
                     std::to_string(ellipses) + "; expected at most one.");
  const int rank = x.ndim();
  if (consumed > rank)
    throw IndexError(std::string("[") + op + "] too many indices for array: array is " +
                     std::to_string(rank) + "-dimensional, but " + std::to_string(consumed) +
                     " were indexed. Got " + std::to_string(consumed) +
                     " indices; expected at most " + std::to_string(rank) + ".");
  std::vector<int> adv;
  for (size_t p = 0; p < idx.size(); ++p) {
    const auto& v = idx[p].value();
    if (any_array && (std::holds_alternative<int64_t>(v) || std::holds_alternative<Array>(v)))
      adv.push_back(static_cast<int>(p));
  }
  *contiguous = true;
  for (size_t k = 1; k < adv.size(); ++k) *contiguous = *contiguous && adv[k] == adv[k - 1] + 1;
  std::vector<Entry> out;
  auto fill_all = [&](int n) {
    for (int k = 0; k < n; ++k) out.push_back(Entry{});
  };
  for (const auto& e : idx) {
    const auto& v = e.value();
    Entry en;
    if (const auto* i = std::get_if<int64_t>(&v)) {
      en.kind = Kind::Int;
      en.i = *i;
    } else if (const auto* s = std::get_if<Slice>(&v)) {
      en.s = *s;
    } else if (std::holds_alternative<NewAxis>(v)) {
      en.kind = Kind::New;
    } else if (std::holds_alternative<Ellipsis>(v)) {
      fill_all(rank - consumed);
      continue;
    } else {
      en.kind = Kind::Arr;
      en.a = std::get<Array>(v);
    }
    out.push_back(std::move(en));
  }
  if (!ellipses) fill_all(rank - consumed);
  return out;
}

int64_t static_index(int64_t i, int64_t n, int axis, const char* op) {
  if (i < -n || i >= n)
    throw IndexError(std::string("[") + op + "] index " + std::to_string(i) +
                     " is out of bounds for axis " + std::to_string(axis) + " with size " +
                     std::to_string(n) + ". Got " + std::to_string(i) + "; expected -" +
                     std::to_string(n) + " <= index < " + std::to_string(n) + ".");
  return i < 0 ? i + n : i;
}

// x with dims in `dims` unsharded (so a slice there cannot hit the divisibility
// rule when the caller gave an out_sharding).
Array unshard_dims(const Array& x, const std::vector<bool>& dims) {
  auto e = entries_of(x.type());
  bool any = false;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] && !e[d].axes().empty()) {
      e[d] = PartitionEntry();
      any = true;
    }
  if (!any) return x;
  return reshard(x, Placement(NamedSharding(x.type().sharding.mesh(), PartitionSpec(e))));
}

Array finish(const Array& y, const std::optional<NamedSharding>& out) {
  if (!out) return y;
  const NamedSharding& have = y.type().sharding;
  if (have.mesh() == out->mesh() && have.spec() == out->spec().normalized(y.ndim())) return y;
  return reshard(y, Placement(*out));
}

// Static ints / slices / newaxis: slice + rev + squeeze + expand_dims (§12.8).
Array static_take(const Array& x0, const std::vector<Entry>& ent,
                  const std::optional<NamedSharding>& out, const char* op) {
  const int rank = x0.ndim();
  Shape start(rank), limit(rank), strides(rank, 1);
  std::vector<int> revs, ints;
  std::vector<bool> changed(rank, false);
  std::vector<int> newaxes;
  int d = 0, y = 0;
  for (const auto& e : ent) {
    if (e.kind == Kind::New) {
      newaxes.push_back(y++);
      continue;
    }
    const int64_t n = x0.shape()[d];
    if (e.kind == Kind::Int) {
      start[d] = static_index(e.i, n, d, op);
      limit[d] = start[d] + 1;
      ints.push_back(d);
      changed[d] = true;
    } else {
      Canon c = canon(e.s, n, op);
      int64_t st = c.step;
      if (st < 0) {
        // Reverse the dim, then walk it forwards from the mirrored start.
        revs.push_back(d);
        c.start = n - 1 - c.start;
        st = -st;
      }
      start[d] = c.size ? c.start : 0;
      limit[d] = c.size ? c.start + (c.size - 1) * st + 1 : 0;
      strides[d] = st;
      changed[d] = c.size != n;
      ++y;
    }
    ++d;
  }
  Array x = out ? unshard_dims(x0, changed) : x0;
  if (!revs.empty()) x = rev(x, revs);
  bool trivial = true;
  for (int k = 0; k < rank; ++k)
    trivial = trivial && start[k] == 0 && limit[k] == x.shape()[k] && strides[k] == 1;
  if (!trivial) x = slice(x, start, limit, strides);
  if (!ints.empty()) x = squeeze(x, AxisArg(ints));
  if (!newaxes.empty()) x = expand_dims(x, AxisArg(newaxes));
  return finish(x, out);
}

// A scalar index array made non-negative: where(i < 0, i + n, i).
Array normalize(const Array& i, int64_t n) {
  if (is_unsigned(i.dtype())) return i;
  return where(less(i, 0), add(i, static_cast<int64_t>(n)), i);
}

// Ints, unit-step slices and rank-0 index arrays: dynamic_slice + squeeze.
Array dynamic_take(const Array& x0, const std::vector<Entry>& ent,
                   const std::optional<NamedSharding>& out, const char* op) {
  const int rank = x0.ndim();
  std::vector<ArrayLike> starts;
  Shape sizes(rank);
  std::vector<int> ints, newaxes;
  std::vector<bool> changed(rank, false);
  int d = 0, y = 0;
  for (const auto& e : ent) {
    if (e.kind == Kind::New) {
      newaxes.push_back(y++);
      continue;
    }
    const int64_t n = x0.shape()[d];
    if (e.kind == Kind::Int) {
      starts.emplace_back(static_index(e.i, n, d, op));
      sizes[d] = 1;
      ints.push_back(d);
      changed[d] = true;
    } else if (e.kind == Kind::Arr) {
      starts.emplace_back(normalize(e.a, n));
      sizes[d] = 1;
      ints.push_back(d);
      changed[d] = true;
    } else {
      Canon c = canon(e.s, n, op);
      starts.emplace_back(c.size ? c.start : int64_t{0});
      sizes[d] = c.size;
      changed[d] = c.size != n;
      ++y;
    }
    ++d;
  }
  Array x = out ? unshard_dims(x0, changed) : x0;
  x = dynamic_slice(x, starts, sizes);
  // An out_sharding of the slice's rank (the squeezed integer dims included, as older
  // JAX applied it to the dynamic_slice) lays out the slice; then the squeeze keeps it.
  // Inside vmap, `x.at(j).get({.out_sharding = typeof(x).sharding})` is that case.
  const int result_rank = rank - static_cast<int>(ints.size()) + static_cast<int>(newaxes.size());
  bool slice_layout =
      out && !ints.empty() && out->spec().size() == rank && out->spec().size() > result_rank;
  for (int d2 : ints)
    slice_layout = slice_layout && out->spec().entries()[static_cast<size_t>(d2)].is_none();
  if (slice_layout) x = finish(x, out);
  if (!ints.empty()) x = squeeze(x, AxisArg(ints));
  if (!newaxes.empty()) x = expand_dims(x, AxisArg(newaxes));
  return slice_layout ? x : finish(x, out);
}

// jnp's index_to_gather result.
struct Indexer {
  Array indices;  // int32 [..., k]
  GatherDimensionNumbers dnums;
  Shape gather_slice_shape;
  Shape slice_shape;  // the result's shape (with newaxis dims)
  std::vector<int> newaxis_dims;
  bool empty = false;  // the result has no elements
};

Indexer to_gather(const Array& x, const std::vector<Entry>& ent, bool contiguous, const char* op) {
  const Shape& xs = x.shape();
  // Advanced entries: every Int and Arr, when any Arr is present.
  std::vector<Array> adv;
  std::vector<int> adv_pos, adv_axes;
  {
    int d = 0;
    for (size_t p = 0; p < ent.size(); ++p) {
      const auto& e = ent[p];
      if (e.kind == Kind::New) continue;
      if (e.kind == Kind::Int) {
        adv.push_back(scalar_array(static_cast<double>(static_index(e.i, xs[d], d, op)),
                                   DType::Int32, false, &x));
      } else if (e.kind == Kind::Arr) {
        adv.push_back(normalize(e.a, xs[d]));
      }
      if (e.kind == Kind::Int || e.kind == Kind::Arr) {
        adv_pos.push_back(static_cast<int>(p));
        adv_axes.push_back(d);
      }
      ++d;
    }
  }
  // Broadcast the advanced arrays together (NumPy rules, sharding consensus).
  Shape bshape;
  for (const auto& a : adv) {
    const Shape& s = a.shape();
    Shape r(std::max(bshape.size(), s.size()), 1);
    for (size_t k = 0; k < r.size(); ++k) {
      int64_t u = k < r.size() - bshape.size() ? 1 : bshape[k - (r.size() - bshape.size())];
      int64_t v = k < r.size() - s.size() ? 1 : s[k - (r.size() - s.size())];
      if (u != v && u != 1 && v != 1)
        throw IndexError(
            std::string("[") + op + "] index arrays could not be broadcast together. Got shapes " +
            shape_str(bshape) + " and " + shape_str(s) + "; expected broadcast-compatible shapes.");
      r[k] = std::max(u, v);
    }
    bshape = r;
  }
  std::vector<Array> bcast;
  if (!adv.empty()) {
    for (auto& a : adv) bcast.push_back(convert(broadcast_to(a, bshape), DType::Int32));
  }
  Indexer r;
  std::vector<std::pair<Array, int>> pieces;  // (array, first dim in gather_indices_shape)
  Shape gshape;
  int x_axis = 0, y_axis = 0, cy = 0;
  for (size_t p = 0; p < ent.size(); ++p) {
    const auto& e = ent[p];
    if (!adv.empty() &&
        ((contiguous && static_cast<int>(p) == adv_pos[0]) || (!contiguous && p == 0))) {
      int sd = static_cast<int>(gshape.size());
      for (auto& a : bcast) pieces.emplace_back(a, sd);
      gshape.insert(gshape.end(), bshape.begin(), bshape.end());
      for (int ax : adv_axes) {
        r.dnums.start_index_map.push_back(ax);
        r.dnums.collapsed_slice_dims.push_back(ax);
      }
      r.slice_shape.insert(r.slice_shape.end(), bshape.begin(), bshape.end());
      y_axis += static_cast<int>(bshape.size());
      cy += static_cast<int>(bshape.size());
    }
    if (std::find(adv_pos.begin(), adv_pos.end(), static_cast<int>(p)) != adv_pos.end()) {
      ++x_axis;
      r.gather_slice_shape.push_back(1);
      continue;
    }
    if (e.kind == Kind::Int) {  // a basic int (no index arrays): `.at(1).set(v)`
      int64_t i = static_index(e.i, xs[x_axis], x_axis, op);
      pieces.emplace_back(scalar_array(static_cast<double>(i), DType::Int32, false, &x),
                          static_cast<int>(gshape.size()));
      r.dnums.collapsed_slice_dims.push_back(x_axis);
      r.gather_slice_shape.push_back(1);
      r.dnums.start_index_map.push_back(x_axis);
      ++x_axis;
    } else if (e.kind == Kind::New) {
      r.slice_shape.push_back(1);
      r.newaxis_dims.push_back(y_axis++);
    } else {
      Canon c = canon(e.s, xs[x_axis], op);
      r.slice_shape.push_back(c.size);
      if (c.step == 1) {
        if (c.size != xs[x_axis]) {
          pieces.emplace_back(
              scalar_array(static_cast<double>(c.size ? c.start : 0), DType::Int32, false, &x),
              static_cast<int>(gshape.size()));
          r.dnums.start_index_map.push_back(x_axis);
        }
        r.gather_slice_shape.push_back(c.size);
        r.dnums.offset_dims.push_back(cy);
      } else {
        // A strided slice is an index array start + step * iota.
        Array io = add(multiply(iota({c.size}, DType::Int32, replicated_like(x)), c.step), c.start);
        r.gather_slice_shape.push_back(1);
        pieces.emplace_back(io, static_cast<int>(gshape.size()));
        r.dnums.start_index_map.push_back(x_axis);
        gshape.push_back(c.size);
        r.dnums.collapsed_slice_dims.push_back(x_axis);
      }
      ++cy;
      ++y_axis;
      ++x_axis;
    }
  }
  std::sort(r.dnums.collapsed_slice_dims.begin(), r.dnums.collapsed_slice_dims.end());
  for (int64_t s : r.slice_shape) r.empty = r.empty || s == 0;
  // One indices array: each piece broadcast to gshape + [1] with a common sharding,
  // then concatenated along the index-vector dim.
  Shape full = gshape;
  full.push_back(1);
  std::vector<PartitionEntry> common(full.size());
  for (const auto& [a, sd] : pieces) {
    auto e = entries_of(a.type());
    for (size_t k = 0; k < e.size(); ++k)
      if (common[sd + k].axes().empty()) common[sd + k] = e[k];
  }
  AbstractMesh mesh = x.type().sharding.mesh();
  const Array* holder = &x;  // the value whose devices `mesh` names
  for (const auto& [a, sd] : pieces)
    if (mesh.empty()) mesh = a.type().sharding.mesh(), holder = &a;
  std::vector<Array> parts;
  for (const auto& [a, sd] : pieces) {
    std::vector<int> bd;
    for (int k = 0; k < a.ndim(); ++k) bd.push_back(sd + k);
    ShardingArg s;
    if (!mesh.empty()) s = NamedSharding(mesh, PartitionSpec(common));
    Array src = a;
    if (!mesh.empty()) {
      // Align the piece's own dims with the common spec first.
      std::vector<PartitionEntry> own;
      for (int k = 0; k < a.ndim(); ++k) own.push_back(common[sd + k]);
      if (!(entries_of(a.type()) == own) || a.type().sharding.mesh().empty())
        src = reshard(a, on_mesh_of(*holder, mesh, PartitionSpec(own)));
    }
    parts.push_back(broadcast_in_dim(src, full, bd, s));
  }
  if (parts.empty()) {
    r.indices = Array();
  } else {
    r.indices = parts.size() == 1 ? parts[0] : concatenate(parts, static_cast<int>(gshape.size()));
  }
  return r;
}

double default_fill(DType t) {
  if (is_inexact(t)) return std::numeric_limits<double>::quiet_NaN();
  switch (t) {
    case DType::Bool:
      return 1;
    case DType::Int8:
      return -128;
    case DType::Int16:
      return -32768;
    case DType::Int32:
      return static_cast<double>(std::numeric_limits<int32_t>::min());
    case DType::Int64:
      return static_cast<double>(std::numeric_limits<int64_t>::min());
    case DType::UInt8:
      return 255;
    case DType::UInt16:
      return 65535;
    case DType::UInt64:  // 2^64 - 1 rounds to 2^64 as a double; the fill saturates back
      return static_cast<double>(std::numeric_limits<uint64_t>::max());
    case DType::UInt32:
      return static_cast<double>(std::numeric_limits<uint32_t>::max());
    default:
      return 0;
  }
}

bool has_array(const std::vector<Entry>& ent) {
  for (const auto& e : ent)
    if (e.kind == Kind::Arr) return true;
  return false;
}

Array gather_take(const Array& x, const std::vector<Entry>& ent, bool contiguous,
                  const GetOptions& o, const std::optional<NamedSharding>& out, const char* op) {
  Indexer ix = to_gather(x, ent, contiguous, op);
  if (ix.empty) return zeros(ix.slice_shape, x.dtype(), out ? Placement(*out) : Placement());
  std::optional<NamedSharding> gs;
  if (out) {
    // The gather itself produces out's entries minus the newaxis dims.
    auto e = out->spec().normalized(static_cast<int>(ix.slice_shape.size())).entries();
    e.resize(ix.slice_shape.size());
    for (auto it = ix.newaxis_dims.rbegin(); it != ix.newaxis_dims.rend(); ++it)
      e.erase(e.begin() + *it);
    gs = NamedSharding(out->mesh(), PartitionSpec(e));
  }
  double fill = o.fill_value.value_or(default_fill(x.dtype()));
  Array y = bind1(std::make_shared<prim::Gather>(ix.dnums, ix.gather_slice_shape,
                                                 o.mode.value_or(IndexMode::FillOrDrop), fill,
                                                 o.indices_are_sorted, o.unique_indices, gs),
                  {x, ix.indices});
  if (!ix.newaxis_dims.empty()) y = expand_dims(y, AxisArg(ix.newaxis_dims));
  return finish(y, out);
}

}  // namespace

Array index(const Array& x, const std::vector<Index>& idx, const GetOptions& o) {
  const char* op = "index";
  auto out = canonicalize_sharding(o.out_sharding, "get");
  bool contiguous = true;
  std::vector<Entry> ent = expand(x, idx, &contiguous, op);
  if (!has_array(ent)) return static_take(x, ent, out, op);
  bool scalars = true;
  for (const auto& e : ent) {
    if (e.kind == Kind::Arr) scalars = scalars && e.a.ndim() == 0;
    if (e.kind == Kind::Slc) scalars = scalars && (e.s.step == 1);
  }
  // JAX: scalar index arrays use dynamic_slice (clamping) unless the caller asked
  // for fill semantics explicitly.
  if (scalars && o.mode != IndexMode::FillOrDrop) return dynamic_take(x, ent, out, op);
  return gather_take(x, ent, contiguous, o, out, op);
}

Array Array::operator[](const Index& i) const { return index(*this, {i}); }

Array Array::operator[](std::initializer_list<Index> idx) const {
  return index(*this, std::vector<Index>(idx));
}

Array At::get(const GetOptions& o) const { return index(x_, idx_, o); }

namespace {

Array update(const Array& x, const std::vector<Index>& idx, ScatterKind kind, const ArrayLike& v,
             const UpdateOptions& o, const char* op) {
  bool contiguous = true;
  std::vector<Entry> ent = expand(x, idx, &contiguous, op);
  auto out = canonicalize_sharding(o.out_sharding, op);
  // Every update is a scatter, static indices included (as jnp's _scatter_update).
  Indexer ix = to_gather(x, ent, contiguous, op);
  Array y = promote({v, x}, op)[0];
  y = convert(y, x.dtype(), x.type().weak);
  if (ix.empty) return out ? reshard(x, Placement(*out)) : x;
  if (y.shape() != ix.slice_shape) y = broadcast_to(y, ix.slice_shape);
  if (!ix.newaxis_dims.empty()) y = squeeze(y, AxisArg(ix.newaxis_dims));
  Array indices = ix.indices;
  if (!indices.valid()) {
    // Only full slices: the update covers x; scatter with an empty index vector.
    indices = zeros({0}, DType::Int32, replicated_like(x));
  }
  ScatterDimensionNumbers dn;
  dn.update_window_dims = ix.dnums.offset_dims;
  dn.inserted_window_dims = ix.dnums.collapsed_slice_dims;
  dn.scatter_dims_to_operand_dims = ix.dnums.start_index_map;
  return bind1(std::make_shared<prim::Scatter>(kind, dn, o.mode, o.indices_are_sorted,
                                               o.unique_indices, out),
               {x, indices, y});
}

}  // namespace

Array At::set(const ArrayLike& v, const UpdateOptions& o) const {
  return update(x_, idx_, ScatterKind::Set, v, o, "set");
}
Array At::add(const ArrayLike& v, const UpdateOptions& o) const {
  return update(x_, idx_, ScatterKind::Add, v, o, "add");
}
Array At::subtract(const ArrayLike& v, const UpdateOptions& o) const {
  return update(x_, idx_, ScatterKind::Sub, v, o, "subtract");
}
Array At::mul(const ArrayLike& v, const UpdateOptions& o) const {
  return update(x_, idx_, ScatterKind::Mul, v, o, "mul");
}
Array At::min(const ArrayLike& v, const UpdateOptions& o) const {
  return update(x_, idx_, ScatterKind::Min, v, o, "min");
}
Array At::max(const ArrayLike& v, const UpdateOptions& o) const {
  return update(x_, idx_, ScatterKind::Max, v, o, "max");
}

Array At::divide(const ArrayLike& v, const UpdateOptions& o) const {
  return tsr::divide(x_, update(ones_like(x_), idx_, ScatterKind::Mul, v, o, "divide"));
}
Array At::power(const ArrayLike& v, const UpdateOptions& o) const {
  return tsr::power(x_, update(ones_like(x_), idx_, ScatterKind::Mul, v, o, "power"));
}

Array At::apply(const std::function<Array(const Array&)>& f, const UpdateOptions& o) const {
  // f runs elementwise over x; a mask picks the indexed elements. Unlike JAX,
  // a duplicated index applies f once (documented in docs/design/0005).
  Array mask = update(zeros_like(x_, DType::Bool), idx_, ScatterKind::Set, true, o, "apply");
  Array fx = f(x_);
  if (fx.shape() != x_.shape() || fx.dtype() != x_.dtype())
    throw TypeError("[apply] the function must be elementwise and keep the dtype. Got " +
                    fx.type().str() + " for x " + x_.type().str() +
                    "; expected the same shape and dtype. Convert inside the function.");
  return where(mask, fx, x_);
}

Array gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dims,
             const Shape& slice_sizes, const GetOptions& o) {
  auto out = canonicalize_sharding(o.out_sharding, "gather");
  double fill = o.fill_value.value_or(default_fill(operand.dtype()));
  return bind1(
      std::make_shared<prim::Gather>(dims, slice_sizes, o.mode.value_or(IndexMode::FillOrDrop),
                                     fill, o.indices_are_sorted, o.unique_indices, out),
      {operand, indices});
}

Array scatter(ScatterKind kind, const Array& operand, const Array& indices, const Array& updates,
              const ScatterDimensionNumbers& dims, const UpdateOptions& o) {
  auto out = canonicalize_sharding(o.out_sharding, "scatter");
  return bind1(std::make_shared<prim::Scatter>(kind, dims, o.mode, o.indices_are_sorted,
                                               o.unique_indices, out),
               {operand, indices, updates});
}

Array take(const Array& a0, const Array& indices, std::optional<int> axis, const GetOptions& o) {
  const char* op = "take";
  if (!is_integer(indices.dtype()))
    throw TypeError(std::string("[take] indices must be integers. Got ") + indices.type().str() +
                    "; expected an integer array. Convert with astype(int32).");
  Array a = axis ? a0 : reshape(a0, {-1});
  int ax = axis ? norm_axis(*axis, a.ndim(), op) : 0;
  IndexMode mode = o.mode.value_or(IndexMode::FillOrDrop);
  Array ind = mode == IndexMode::FillOrDrop ? normalize(indices, a.shape()[ax]) : indices;
  const int id = indices.ndim();
  GatherDimensionNumbers dn;
  for (int d = 0; d < ax; ++d) dn.offset_dims.push_back(d);
  for (int d = ax + id; d < a.ndim() + id - 1; ++d) dn.offset_dims.push_back(d);
  dn.collapsed_slice_dims = {ax};
  dn.start_index_map = {ax};
  Shape ss = a.shape();
  ss[ax] = 1;
  GetOptions g = o;
  g.mode = mode;
  return gather(a, expand_dims(convert(ind, DType::Int32), -1), dn, ss, g);
}

Array take_along_axis(const Array& arr, const Array& indices, int axis, const GetOptions& o) {
  const char* op = "take_along_axis";
  if (!is_integer(indices.dtype()))
    throw TypeError(std::string("[take_along_axis] indices must be integers. Got ") +
                    indices.type().str() +
                    "; expected an integer array. Convert with astype(int32).");
  const int rank = arr.ndim();
  if (indices.ndim() != rank)
    throw ValueError(std::string("[take_along_axis] indices and arr must have the same number of "
                                 "dimensions. Got ") +
                     std::to_string(indices.ndim()) + " vs. " + std::to_string(rank) +
                     "; expected equal ranks. Use expand_dims on the indices.");
  const int ax = norm_axis(axis, rank, op);
  const Shape& is = indices.shape();
  Shape as = arr.shape();
  as[ax] = 1;
  Shape out_shape(rank);
  for (int d = 0; d < rank; ++d) {
    if (is[d] != as[d] && is[d] != 1 && as[d] != 1)
      throw ValueError(std::string("[take_along_axis] indices and arr are not broadcast-compatible "
                                   "outside the axis. Got indices ") +
                       shape_str(is) + " and arr " + shape_str(arr.shape()) + " with axis=" +
                       std::to_string(ax) + "; expected equal sizes or 1 on the other dims.");
    out_shape[d] = std::max(is[d], as[d]);
  }
  IndexMode mode = o.mode.value_or(IndexMode::FillOrDrop);
  Array ind =
      convert(mode == IndexMode::PromiseInBounds ? indices : normalize(indices, arr.shape()[ax]),
              DType::Int32);
  GatherDimensionNumbers dn;
  Shape slice_sizes;
  std::vector<int> squeeze_dims, keep_index_dims;
  int new_i = 0, j = 0;
  for (int i = 0; i < rank; ++i) {
    if (i == ax) {
      keep_index_dims.push_back(i);
      slice_sizes.push_back(1);
      dn.start_index_map.push_back(new_i);
      dn.collapsed_slice_dims.push_back(new_i);
      ++new_i;
      ++j;
    } else if (is[i] == 1) {
      dn.offset_dims.push_back(i);
      slice_sizes.push_back(as[i]);
      ++new_i;
    } else if (as[i] == 1) {
      squeeze_dims.push_back(i);
      keep_index_dims.push_back(i);
      ++j;
    } else {
      keep_index_dims.push_back(i);
      slice_sizes.push_back(1);
      dn.operand_batching_dims.push_back(new_i);
      dn.start_indices_batching_dims.push_back(j);
      ++new_i;
      ++j;
    }
  }
  Array a = squeeze_dims.empty() ? arr : squeeze(arr, AxisArg(squeeze_dims));
  // The indices keep only the dims that index (drop their size-1 broadcast dims).
  std::vector<int> drop;
  for (int i = 0; i < rank; ++i)
    if (std::find(keep_index_dims.begin(), keep_index_dims.end(), i) == keep_index_dims.end())
      drop.push_back(i);
  Array gi = drop.empty() ? ind : squeeze(ind, AxisArg(drop));
  GetOptions g = o;
  g.mode = mode;
  return gather(a, expand_dims(gi, -1), dn, slice_sizes, g);
}

Array one_hot(const Array& x, int64_t n, DType dtype, int axis, const ShardingArg& out_sharding) {
  const char* op = "one_hot";
  check_dtype(dtype, op);
  const int rank = x.ndim() + 1;
  const int ax = norm_axis(axis, rank, op);
  auto out = canonicalize_sharding(out_sharding, op);
  Shape is(rank, 1);
  is[ax] = n;
  PartitionEntry hot;
  if (out) {
    auto e = out->spec().normalized(rank).entries();
    e.resize(rank);
    auto xe = entries_of(x.type());
    std::vector<PartitionEntry> rest = e;
    rest.erase(rest.begin() + ax);
    if (!(rest == xe))
      throw ShardingTypeError(
          "The input part of spec in out_sharding should match the spec of `x`. "
          "Got out_sharding=" +
          out->spec().repr() + " and x type=" + x.type().str());
    hot = e[ax];
  }
  Placement where;
  AbstractMesh mesh = x.type().sharding.mesh();
  if (!mesh.empty()) {
    std::vector<PartitionEntry> ie(rank);
    ie[ax] = hot;
    where = NamedSharding(mesh, PartitionSpec(ie));
  }
  Array io = broadcasted_iota(is_integer(x.dtype()) ? x.dtype() : DType::Int32, is, ax, where);
  return equal(expand_dims(x, ax), io).astype(dtype);
}

}  // namespace tsr
