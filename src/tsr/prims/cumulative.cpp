// Rules of the cumulative primitives (spec §12.12): the scanned axis must be
// unsharded (E14); the output keeps the operand's sharding, and the kernel scans
// whole lines locally.
#include "tsr/prims/cumulative.h"

#include <limits>

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const char* const kNames[] = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"};
bool register_all() {
  for (const char* n : kNames) register_primitive(n);
  declare_ad("cumsum", AdKind::Linear);
  for (const char* n : {"cumprod", "cummax", "cummin", "cumlogsumexp"})
    declare_ad(n, AdKind::Differentiable);
  return true;
}
const bool registered = register_all();
}  // namespace

const char* cum_name(CumKind k) { return kNames[static_cast<int>(k)]; }

std::vector<ArrayType> Cumulative::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (axis_ < 0 || axis_ >= x.ndim())
    throw ValueError(std::string("[") + name() + "] axis " + std::to_string(axis_) +
                     " is out of range. Got " + x.str() + "; expected an axis in [0, " +
                     std::to_string(x.ndim()) + ").");
  bool minmax = kind_ == CumKind::Max || kind_ == CumKind::Min;
  if (x.dtype == DType::Bool && !minmax)
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept bool. Got " +
                    x.str() + "; expected a numeric array. Convert with astype(int32).");
  if (kind_ == CumKind::LogSumExp && !is_floating(x.dtype))
    throw TypeError(std::string("[cumlogsumexp] cumlogsumexp needs a floating operand. Got ") +
                    x.str() + "; expected a float dtype. Convert with astype(float32).");
  if (!unreduced_of(x).empty()) {
    // Scans commute with combining partial values of their own kind.
    UnreducedKind k = x.sharding.spec().unreduced_kind();
    bool ok = (kind_ == CumKind::Sum && k == UnreducedKind::Sum) ||
              (kind_ == CumKind::Max && k == UnreducedKind::Max) ||
              (kind_ == CumKind::Min && k == UnreducedKind::Min);
    if (!ok)
      throw ShardingTypeError(std::string("[") + name() + "] " + name() +
                              " cannot scan a value that is unreduced of kind " +
                              unreduced_kind_name(k) +
                              ": the partial scans would not combine to the scan. Got " + x.str() +
                              "; expected no unreduced axes (cumsum/cummax/cummin accept their "
                              "own kind). Reduce it first with reshard(x, P(...)).");
  }
  auto e = entries_of(x);
  if (!e[axis_].is_none())
    throw ShardingTypeError(std::string("[") + name() +
                            "] Input should be unsharded over the axis being reduced. Got input "
                            "type=" +
                            x.str() + " and axis=" + std::to_string(axis_) +
                            ". Reshard the input to unsharded on that axis first.");
  return {make_type(x.shape, x.dtype, x.weak, rule_mesh(in), e, x.sharding.spec())};
}

Lowering Cumulative::partition(const std::vector<ArrayType>& in,
                               const std::vector<ArrayType>& out) const {
  return {{in[0].sharding.spec()}, {out[0].sharding.spec()}};
}

std::string Cumulative::params() const {
  return "axis=" + std::to_string(axis_) + " reverse=" + (reverse_ ? "True" : "False");
}

// ---- autodiff rules ----------------------------------------------------------------
// cumsum is linear (transpose: cumsum the other way). The others follow JAX's
// _cumulative_jvp_rule, the jvp of associative_scan with the combine function: here
// an associative_scan of (primal, tangent) pairs whose combine is the combine's jvp,
// which is that jvp term for term (the scan's slices, pads and concatenations are
// linear), so cummax/cummin ties split exactly as JAX's tree splits them.

namespace {

// v, shaped and typed exactly as z: full_like drops a Reduced set, and select_n wants
// its cases laid out alike.
Array const_like(const Array& z, double v) {
  Array c = full_like(z, v);
  return c.type() == z.type() ? c : ad::coerce(c, z.type(), "cumulative", "value");
}

// lax.max's jvp weight: 1 where x == z, halved where y == z too.
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  Array one = const_like(z, 1), zero = const_like(z, 0);
  return where(equal(x, z), one, zero) / where(equal(y, z), const_like(z, 2), one);
}

// JAX's _replace_inf: +inf -> 0 (the logaddexp jvp stays finite at +inf).
Array replace_inf(const Array& x) {
  return where(equal(x, std::numeric_limits<double>::infinity()), const_like(x, 0), x);
}

// logaddexp as amax + log1p(exp(amin - amax)): with max/min splitting ties evenly
// its derivative is exact at a == b too (JAX's form via |a - b| gives 0 there, which
// JAX's custom_jvp hides; here the formula's own derivative is used at order 2).
Array logaddexp(const Array& a, const Array& b) {
  Array hi = maximum(a, b), lo = minimum(a, b);
  Array d = a - b;
  // NaNs, or infinities of one sign: a + b (as JAX).
  return where(not_equal(d, d), a + b, hi + log1p(exp(lo - hi)));
}

}  // namespace

std::vector<Array> Cumulative::jvp(const std::vector<Array>& primals,
                                   const std::vector<Array>& tangents, std::vector<Array>&) const {
  if (kind_ == CumKind::Sum) return ad::linear_jvp(*this, primals, tangents);
  const CumKind kind = kind_;
  ScanFn pair = [kind](const std::vector<Array>& a, const std::vector<Array>& b) {
    const Array &x = a[0], &tx = a[1], &y = b[0], &ty = b[1];
    switch (kind) {
      case CumKind::Prod:
        return std::vector<Array>{x * y, tx * y + ty * x};
      case CumKind::Max:
      case CumKind::Min: {
        Array z = kind == CumKind::Max ? maximum(x, y) : minimum(x, y);
        return std::vector<Array>{z, tx * balanced_eq(x, z, y) + ty * balanced_eq(y, z, x)};
      }
      default: {
        Array z = logaddexp(x, y), rz = replace_inf(z);
        return std::vector<Array>{z, tx * exp(replace_inf(x) - rz) + ty * exp(replace_inf(y) - rz)};
      }
    }
  };
  return {associative_scan(pair, {primals[0], tangents[0]}, reverse_, axis_)[1]};
}

std::vector<Array> Cumulative::transpose(const std::vector<Array>& cts,
                                         const std::vector<LinearIn>& ins) const {
  if (kind_ != CumKind::Sum) return Primitive::transpose(cts, ins);
  return {bind1(std::make_shared<Cumulative>(CumKind::Sum, axis_, !reverse_), {cts[0]})};
}

// ---- Batching rule (vmap): the batch at 0, the scanned axis shifted past it.

detail::Batched Cumulative::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  return detail::batch_unary_front(std::make_shared<Cumulative>(kind_, axis_ + 1, reverse_),
                                   args[0], dims[0]);
}

}  // namespace tsr::prim
