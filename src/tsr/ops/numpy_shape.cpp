// NumPy shape front-ends built from existing primitives: roll (slices and a
// concatenate), tile (broadcast + reshape), repeat, flip, unstack, ravel,
// swapaxes, moveaxis, meshgrid. Sharding checks of spec §12.9/§12.12 run here,
// on types, so eager and jit raise the same errors.
#include <algorithm>
#include <numeric>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/shape_ops.h"

namespace tsr {
using namespace detail;

namespace {

int64_t py_mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

Array slice_axis(const Array& x, int axis, int64_t lo, int64_t hi) {
  Shape start(x.shape().size(), 0), limit = x.shape();
  start[axis] = lo;
  limit[axis] = hi;
  return slice(x, start, limit);
}

Array roll_one(const Array& a, int64_t shift, int axis) {
  if (!entries_of(a.type())[axis].is_none())
    throw ShardingTypeError(
        "[roll] `a` cannot be sharded on the axis being rolled over. Got arr type=" +
        a.type().str() + " and axis=" + std::to_string(axis) +
        ". Reshard the array to unsharded on that axis first.");
  int64_t n = a.shape()[axis];
  if (n == 0) return a;
  int64_t s = py_mod(shift, n);
  if (s == 0) return a;
  return concatenate({slice_axis(a, axis, n - s, n), slice_axis(a, axis, 0, n - s)}, axis);
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// Each element repeated r times along axis (axis unsharded): broadcast a new
// dim after axis, then merge the two.
Array repeat_uniform(const Array& a, int64_t r, int axis) {
  if (r == 1) return a;
  Shape bshape;
  std::vector<int> bd;
  for (int d = 0; d < a.ndim(); ++d) {
    bd.push_back(static_cast<int>(bshape.size()));
    bshape.push_back(a.shape()[d]);
    if (d == axis) bshape.push_back(r);
  }
  Shape out = a.shape();
  out[axis] *= r;
  return reshape(broadcast_in_dim(a, bshape, bd), out);
}

Array repeat_impl(const Array& a0, std::vector<int64_t> reps, std::optional<int> axis,
                  std::optional<int64_t> total) {
  Array a = axis ? a0 : ravel(a0);
  int ax = axis ? norm_axis(*axis, a0.ndim(), "repeat") : 0;
  int64_t n = a.shape()[ax];
  for (int64_t r : reps)
    if (r < 0)
      throw ValueError("[repeat] repeats must be non-negative. Got " + ints_str(reps) +
                       "; expected counts >= 0.");
  if (reps.size() == 1) reps.assign(static_cast<size_t>(n), reps[0]);
  if (static_cast<int64_t>(reps.size()) != n)
    throw ValueError("[repeat] repeats must have one entry per element along the axis. Got " +
                     std::to_string(reps.size()) + " repeats for axis " + std::to_string(ax) +
                     " of size " + std::to_string(n) + "; expected 1 or " + std::to_string(n) +
                     ".");
  // One piece per run of equal counts.
  std::vector<Array> pieces;
  int64_t length = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j < n && reps[j] == reps[i]) ++j;
    if (reps[i] > 0) {
      Array piece = (i == 0 && j == n) ? a : slice_axis(a, ax, i, j);
      pieces.push_back(repeat_uniform(piece, reps[i], ax));
      length += (j - i) * reps[i];
    }
    i = j;
  }
  Array r = pieces.empty()       ? slice_axis(a, ax, 0, 0)
            : pieces.size() == 1 ? pieces[0]
                                 : concatenate(pieces, ax);
  if (!total || *total == length) return r;
  if (*total < 0)
    throw ValueError("[repeat] total_repeat_length must be non-negative. Got " +
                     std::to_string(*total) + "; expected a length >= 0.");
  if (*total < length) return slice_axis(r, ax, 0, *total);
  if (length == 0)
    throw ValueError("[repeat] total_repeat_length " + std::to_string(*total) +
                     " needs a last value to pad with. Got no repeated elements; expected at "
                     "least one.");
  // Shorter than asked: the last value fills the rest (as jnp.repeat).
  Array last = repeat_uniform(slice_axis(r, ax, length - 1, length), *total - length, ax);
  return concatenate({r, last}, ax);
}

}  // namespace

Array ravel(const Array& x) { return reshape(x, {x.size()}); }
Array flatten(const Array& x) { return ravel(x); }

Array roll(const Array& a, int64_t shift, std::optional<int> axis) {
  if (!axis) return reshape(roll(ravel(a), shift, 0), a.shape());
  return roll_one(a, shift, norm_axis(*axis, a.ndim(), "roll"));
}

Array roll(const Array& a, const std::vector<int64_t>& shifts, const std::vector<int>& axes) {
  size_t n = std::max(shifts.size(), axes.size());
  if ((shifts.size() != n && shifts.size() != 1) || (axes.size() != n && axes.size() != 1))
    throw ValueError("[roll] shift and axis must broadcast against each other. Got " +
                     std::to_string(shifts.size()) + " shifts and " + std::to_string(axes.size()) +
                     " axes; expected equal lengths or length 1.");
  Array r = a;
  for (size_t i = 0; i < n; ++i)
    r = roll_one(r, shifts[shifts.size() == 1 ? 0 : i],
                 norm_axis(axes[axes.size() == 1 ? 0 : i], a.ndim(), "roll"));
  return r;
}

Array tile(const Array& x, const std::vector<int64_t>& reps0) {
  for (int64_t r : reps0)
    if (r < 0)
      throw ValueError("[tile] reps must be non-negative. Got " + ints_str(reps0) +
                       "; expected counts >= 0.");
  int rank = std::max<int>(x.ndim(), static_cast<int>(reps0.size()));
  std::vector<int64_t> reps(static_cast<size_t>(rank - reps0.size()), 1);
  reps.insert(reps.end(), reps0.begin(), reps0.end());
  Shape shape(static_cast<size_t>(rank - x.ndim()), 1);
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  Array a = reshape(x, shape);
  auto e = entries_of(a.type());
  for (int i = 0; i < rank; ++i)
    if (reps[i] != 1 && !e[i].is_none())
      throw ShardingTypeError("[tile] Operand cannot be sharded on dimension " + std::to_string(i) +
                              " when the tiling is non-trivial. Got input type: " + a.type().str() +
                              " with reps: " + ints_str(reps0) +
                              ". Reshard the operand to unsharded on that dimension first.");
  Shape bshape, out;
  std::vector<int> bd;
  for (int i = 0; i < rank; ++i) {
    if (reps[i] != 1) bshape.push_back(reps[i]);
    bd.push_back(static_cast<int>(bshape.size()));
    bshape.push_back(shape[i]);
    out.push_back(shape[i] * reps[i]);
  }
  if (bshape == shape) return a;
  return reshape(broadcast_in_dim(a, bshape, bd), out);
}

Array repeat(const Array& a, int64_t repeats, std::optional<int> axis,
             std::optional<int64_t> total_repeat_length, const ShardingArg& out_sharding) {
  return repeat(a, std::vector<int64_t>{repeats}, axis, total_repeat_length, out_sharding);
}

Array repeat(const Array& a, const std::vector<int64_t>& repeats, std::optional<int> axis,
             std::optional<int64_t> total_repeat_length, const ShardingArg& out_sharding) {
  if (repeats.empty())
    throw ValueError(
        "[repeat] repeats is empty. Got no counts; expected one count, or one per "
        "element along the axis.");
  auto s = canonicalize_sharding(out_sharding, "repeat");
  if (s) {
    // As auto_axes: compute replicated, then lay the result out as asked.
    Array r =
        repeat_impl(reshard(a, NamedSharding(s->mesh(), P())), repeats, axis, total_repeat_length);
    return reshard(r, *s);
  }
  // As jnp.repeat: no axis means the flattened array along axis 0.
  Array flat = axis ? a : ravel(a);
  int ax = axis ? norm_axis(*axis, a.ndim(), "repeat") : 0;
  const AbstractMesh& ctx = get_abstract_mesh();
  bool explicit_ctx = !ctx.empty() && ctx.are_all_axes_explicit();
  auto e = entries_of(flat.type());
  bool sharded = false;
  for (const auto& x : e) sharded = sharded || !x.is_none();
  if (explicit_ctx || sharded) {
    if (!e[ax].is_none())
      throw ValueError(
          "[repeat] Please pass sharding to `tsr::repeat` via `out_sharding` parameter. Got "
          "input type=" +
          a.type().str() + " and axis=" + (axis ? std::to_string(*axis) : "None") +
          "; without out_sharding the repeated axis (axis 0 of the flattened array when axis "
          "is None) must be unsharded. Pass tsr::repeat's out_sharding argument.");
  }
  return repeat_impl(flat, repeats, ax, total_repeat_length);
}

Array flip(const Array& x, const AxisArg& axis) {
  std::vector<int> dims;
  if (axis.all()) {
    for (int d = 0; d < x.ndim(); ++d) dims.push_back(d);
  } else {
    for (int a : axis.axes()) dims.push_back(norm_axis(a, x.ndim(), "flip"));
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  }
  if (dims.empty()) return x;
  return rev(x, dims);
}

std::vector<Array> unstack(const Array& x, int axis) {
  if (x.ndim() == 0)
    throw ValueError("[unstack] unstack requires an array of rank >= 1. Got " + x.type().str() +
                     "; expected at least one dimension.");
  int ax = norm_axis(axis, x.ndim(), "unstack");
  if (!entries_of(x.type())[ax].is_none())
    throw ShardingTypeError("[unstack] unstack operand cannot be sharded on the unstacking axis " +
                            std::to_string(ax) + ". Got operand type=" + x.type().str() +
                            ". Reshard the operand to unsharded on that axis first.");
  int64_t n = x.shape()[ax];
  std::vector<Array> out;
  if (n == 0) return out;
  for (const auto& p : split(x, n, ax)) out.push_back(squeeze(p, ax));
  return out;
}

Array swapaxes(const Array& x, int axis1, int axis2) {
  int a = norm_axis(axis1, x.ndim(), "swapaxes"), b = norm_axis(axis2, x.ndim(), "swapaxes");
  if (a == b) return x;
  std::vector<int> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[a], perm[b]);
  return transpose(x, perm);
}

Array moveaxis(const Array& x, int source, int destination) {
  return moveaxis(x, std::vector<int>{source}, std::vector<int>{destination});
}

Array moveaxis(const Array& x, const std::vector<int>& source,
               const std::vector<int>& destination) {
  if (source.size() != destination.size())
    throw ValueError("[moveaxis] source and destination must have the same number of axes. Got " +
                     std::to_string(source.size()) + " and " + std::to_string(destination.size()) +
                     "; expected equal counts.");
  std::vector<std::pair<int, int>> moves;
  std::vector<bool> moved(static_cast<size_t>(x.ndim()), false), taken = moved;
  for (size_t i = 0; i < source.size(); ++i) {
    int s = norm_axis(source[i], x.ndim(), "moveaxis");
    int d = norm_axis(destination[i], x.ndim(), "moveaxis");
    if (moved[s] || taken[d])
      throw ValueError(
          "[moveaxis] repeated axis in source or destination. Got a duplicate; "
          "expected distinct axes.");
    moved[s] = taken[d] = true;
    moves.emplace_back(d, s);
  }
  std::vector<int> perm;
  for (int d = 0; d < x.ndim(); ++d)
    if (!moved[d]) perm.push_back(d);
  std::sort(moves.begin(), moves.end());
  for (const auto& [d, s] : moves) perm.insert(perm.begin() + d, s);
  bool identity = true;
  for (int d = 0; d < x.ndim(); ++d) identity = identity && perm[d] == d;
  return identity ? x : transpose(x, perm);
}

std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing) {
  if (indexing != "xy" && indexing != "ij")
    throw ValueError("[meshgrid] Valid values for indexing are 'xy' and 'ij'. Got '" + indexing +
                     "'; expected one of those.");
  Shape shape;
  for (const auto& x : xs) {
    if (x.ndim() != 1)
      throw ValueError("[meshgrid] Arguments to meshgrid must be 1D. Got " + x.type().str() +
                       "; expected rank-1 arrays (ravel them first).");
    shape.push_back(x.shape()[0]);
  }
  bool xy = indexing == "xy" && xs.size() >= 2;
  if (xy) std::swap(shape[0], shape[1]);
  std::vector<Array> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    int d = static_cast<int>(i);
    if (xy && i < 2) d = 1 - d;
    out.push_back(broadcast_in_dim(xs[i], shape, {d}));
  }
  return out;
}

}  // namespace tsr
