// lax.associative_scan: a port of JAX's recursion (control_flow/loops.py), step for
// step, so the tree of combines (and with it how max/min split ties in derivatives,
// and the roundings) is JAX's. The jvps of cumprod/cummax/cummin/cumlogsumexp scan
// (primal, tangent) pairs with it, as JAX's _cumulative_jvp_rule does.
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"

namespace tsr {
using namespace detail;

namespace {

// lax.slice_in_dim(x, start, limit, stride, axis) with limit <= n.
Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride, int axis) {
  Shape lo(static_cast<size_t>(x.ndim()), 0), hi = x.shape(), st(lo.size(), 1);
  lo[static_cast<size_t>(axis)] = start;
  hi[static_cast<size_t>(axis)] = limit;
  st[static_cast<size_t>(axis)] = stride;
  return slice(x, lo, hi, st);
}

// JAX's _interleave: a's elements at the even positions, b's at the odd ones.
Array interleave(const Array& a, const Array& b, int axis) {
  bool same = a.shape()[static_cast<size_t>(axis)] == b.shape()[static_cast<size_t>(axis)];
  std::vector<std::tuple<int64_t, int64_t, int64_t>> ap(static_cast<size_t>(a.ndim())), bp = ap;
  ap[static_cast<size_t>(axis)] = {0, same ? 1 : 0, 1};
  bp[static_cast<size_t>(axis)] = {1, same ? 0 : 1, 1};
  if (a.dtype() == DType::Bool) return logical_or(pad(a, false, ap), pad(b, false, bp));
  return pad(a, 0, ap) + pad(b, 0, bp);
}

std::vector<Array> combine(const ScanFn& fn, const std::vector<Array>& a,
                           const std::vector<Array>& b) {
  std::vector<Array> c = fn(a, b);
  if (c.size() != a.size())
    throw ValueError("[associative_scan] fn returned " + std::to_string(c.size()) + " arrays for " +
                     std::to_string(a.size()) +
                     " elems. Got a result of another structure; expected one array per elem.");
  for (size_t i = 0; i < c.size(); ++i)
    if (!c[i].valid() || c[i].shape() != a[i].shape())
      throw ValueError("[associative_scan] fn must keep each array's shape. Got " +
                       (c[i].valid() ? c[i].type().str() : std::string("an empty Array")) +
                       " for " + a[i].type().str() +
                       "; expected the same shape (fn is applied elementwise over the axis).");
  return c;
}

std::vector<Array> scan(const ScanFn& fn, const std::vector<Array>& elems, int axis) {
  int64_t n = elems[0].shape()[static_cast<size_t>(axis)];
  if (n < 2) return elems;
  std::vector<Array> lhs, rhs;
  for (const auto& e : elems) {
    lhs.push_back(slice_in_dim(e, 0, n - 1, 2, axis));
    rhs.push_back(slice_in_dim(e, 1, n, 2, axis));
  }
  // Pairs combined, then scanned by recursion: the odd positions of the result.
  std::vector<Array> odd = scan(fn, combine(fn, lhs, rhs), axis);
  std::vector<Array> prev, next;
  for (size_t i = 0; i < elems.size(); ++i) {
    int64_t m = odd[i].shape()[static_cast<size_t>(axis)];
    prev.push_back(n % 2 == 0 ? slice_in_dim(odd[i], 0, m - 1, 1, axis) : odd[i]);
    next.push_back(slice_in_dim(elems[i], 2, n, 2, axis));
  }
  // The even positions: each odd result combined with the next element.
  std::vector<Array> even = combine(fn, prev, next);
  std::vector<Array> out;
  for (size_t i = 0; i < elems.size(); ++i) {
    Array first = slice_in_dim(elems[i], 0, 1, 1, axis);
    // A slice whose dims are all 1 comes back replicated (as JAX's varying-out rule):
    // laid out as the rest, so the concatenation takes it.
    const ArrayType& et = even[i].type();
    if (!et.sharding.mesh().empty() && !(first.type().sharding == et.sharding))
      first = bind1(std::make_shared<prim::Reshard>(et.sharding.normalized(et.ndim()), std::nullopt),
                    {first});
    Array e = concatenate({first, even[i]}, axis);
    out.push_back(interleave(e, odd[i], axis));
  }
  return out;
}

}  // namespace

std::vector<Array> associative_scan(const ScanFn& fn, const std::vector<Array>& elems, bool reverse,
                                    int axis) {
  if (!fn)
    throw TypeError(
        "[associative_scan] fn argument should be callable. Got an empty function; expected "
        "an associative binary operation.");
  if (elems.empty()) return {};
  for (const auto& e : elems)
    if (!e.valid() || e.ndim() == 0)
      throw ValueError("[associative_scan] every elem must be an array of rank >= 1. Got " +
                       (e.valid() ? e.type().str() : std::string("an empty Array")) +
                       "; expected arrays with an axis to scan.");
  int ax = norm_axis(axis, elems[0].ndim(), "associative_scan");
  int64_t n = elems[0].shape()[static_cast<size_t>(ax)];
  for (const auto& e : elems)
    if (e.ndim() <= ax || e.shape()[static_cast<size_t>(ax)] != n)
      throw ValueError(
          "[associative_scan] Array inputs to associative_scan must have the same first "
          "dimension. Got " +
          elems[0].type().str() + " and " + e.type().str() + " along axis " + std::to_string(ax) +
          "; expected equal sizes.");
  std::vector<Array> xs = elems;
  if (reverse)
    for (auto& x : xs) x = rev(x, {ax});
  std::vector<Array> r = scan(fn, xs, ax);
  if (reverse)
    for (auto& x : r) x = rev(x, {ax});
  return r;
}

Array associative_scan(const std::function<Array(const Array&, const Array&)>& fn,
                       const Array& elems, bool reverse, int axis) {
  if (!fn)
    throw TypeError(
        "[associative_scan] fn argument should be callable. Got an empty function; expected "
        "an associative binary operation.");
  ScanFn f = [&fn](const std::vector<Array>& a, const std::vector<Array>& b) {
    return std::vector<Array>{fn(a[0], b[0])};
  };
  return associative_scan(f, std::vector<Array>{elems}, reverse, axis)[0];
}

}  // namespace tsr
