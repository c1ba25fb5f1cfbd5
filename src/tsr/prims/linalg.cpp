// dot_general's rule (spec §12.10) and partition: operands are laid out so each
// device multiplies its blocks; contracting dims sharded identically on both
// sides stay sharded and give partial sums (unreduced, reduced afterwards unless
// the type keeps them unreduced).
#include "tsr/prims/linalg.h"

#include <algorithm>
#include <set>

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/shape_ops.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("dot_general") && declare_ad("dot_general", AdKind::Linear);

std::string entries_at(const std::vector<PartitionEntry>& e, const std::vector<int>& dims) {
  std::vector<PartitionEntry> sel;
  for (int d : dims) sel.push_back(e[d]);
  return entries_tuple(sel);
}

std::string ints(const std::vector<int>& v) { return ints_tuple(v); }

// JAX's _dot_general_shape_rule checks, in its order and with its texts.
void check_dot_dims(const DotDims& d, const Shape& ls, const Shape& rs) {
  auto bad = [](const std::string& jax, const std::string& fix) {
    throw TypeError("[dot_general] " + jax + ". " + fix);
  };
  auto in_range = [](const std::vector<int>& v, size_t rank) {
    for (int x : v)
      if (x < 0 || x >= static_cast<int>(rank)) return false;
    return true;
  };
  if (!in_range(d.lhs_contract, ls.size()) || !in_range(d.lhs_batch, ls.size()))
    bad("dot_general requires lhs dimension numbers to be nonnegative and less than the number "
        "of axes of the lhs value, got lhs_batch of " +
            ints(d.lhs_batch) + " and lhs_contracting of " + ints(d.lhs_contract) +
            " for lhs of rank " + std::to_string(ls.size()),
        "Expected dims in [0, " + std::to_string(ls.size()) + ").");
  if (!in_range(d.rhs_contract, rs.size()) || !in_range(d.rhs_batch, rs.size()))
    bad("dot_general requires rhs dimension numbers to be nonnegative and less than the number "
        "of axes of the rhs value, got rhs_batch of " +
            ints(d.rhs_batch) + " and rhs_contracting of " + ints(d.rhs_contract) +
            " for rhs of rank " + std::to_string(rs.size()),
        "Expected dims in [0, " + std::to_string(rs.size()) + ").");
  if (d.lhs_batch.size() != d.rhs_batch.size())
    bad("dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch " +
            ints(d.lhs_batch) + " and rhs_batch " + ints(d.rhs_batch),
        "Pair every lhs batch dim with one rhs batch dim.");
  if (d.lhs_contract.size() != d.rhs_contract.size())
    bad("dot_general requires equal numbers of lhs and rhs contracting dimensions, got "
        "lhs_contracting " +
            ints(d.lhs_contract) + " and rhs_contracting " + ints(d.rhs_contract),
        "Pair every lhs contracting dim with one rhs contracting dim.");
  auto distinct = [](const std::vector<int>& v) {
    return std::set<int>(v.begin(), v.end()).size() == v.size();
  };
  const char* fix = "Name each dimension once.";
  if (!distinct(d.lhs_batch))
    bad("dot_general requires lhs batch dimensions to be distinct, got lhs_batch " +
            ints(d.lhs_batch),
        fix);
  if (!distinct(d.rhs_batch))
    bad("dot_general requires rhs batch dimensions to be distinct, got rhs_batch " +
            ints(d.rhs_batch),
        fix);
  if (!distinct(d.lhs_contract))
    bad("dot_general requires lhs contracting dimensions to be distinct, got lhs_contracting " +
            ints(d.lhs_contract),
        fix);
  if (!distinct(d.rhs_contract))
    bad("dot_general requires rhs contracting dimensions to be distinct, got rhs_contracting " +
            ints(d.rhs_contract),
        fix);
  auto overlap = [](const std::vector<int>& a, const std::vector<int>& b) {
    for (int x : a)
      if (std::find(b.begin(), b.end(), x) != b.end()) return true;
    return false;
  };
  const char* fix2 = "A dimension is either batched or contracted, not both.";
  if (overlap(d.lhs_contract, d.lhs_batch))
    bad("dot_general requires lhs batch dimensions to be disjoint from contracting dimensions, "
        "got lhs_batch " +
            ints(d.lhs_batch) + " and lhs_contracting " + ints(d.lhs_contract),
        fix2);
  if (overlap(d.rhs_contract, d.rhs_batch))
    bad("dot_general requires rhs batch dimensions to be disjoint from contracting dimensions, "
        "got rhs_batch " +
            ints(d.rhs_batch) + " and rhs_contracting " + ints(d.rhs_contract),
        fix2);
  Shape lb, rb, lc, rc;
  for (int x : d.lhs_batch) lb.push_back(ls[x]);
  for (int x : d.rhs_batch) rb.push_back(rs[x]);
  for (int x : d.lhs_contract) lc.push_back(ls[x]);
  for (int x : d.rhs_contract) rc.push_back(rs[x]);
  if (lb != rb)
    bad("dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
        "shape, got " +
            shape_str(lb) + " and " + shape_str(rb),
        "Make the batch sizes agree.");
  if (lc != rc)
    bad("dot_general requires contracting dimensions to have the same shape, got " + shape_str(lc) +
            " and " + shape_str(rc),
        "Transpose or reshape an operand so the contracted sizes agree.");
}

}  // namespace

std::vector<ArrayType> DotGeneral::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &l = in.at(0), &r = in.at(1);
  const auto& d = dims_;
  check_dot_dims(d, l.shape, r.shape);
  if (l.dtype != r.dtype)
    throw TypeError(std::string("[dot_general] dot_general requires operands of the same dtype. "
                                "Got ") +
                    dtype_name(l.dtype) + " and " + dtype_name(r.dtype) +
                    "; expected equal dtypes. The tsr::matmul front-end promotes for you.");
  check_preferred("dot_general", l.dtype, out_dtype_);
  // One sum-unreduced operand gives a sum-unreduced product (JAX refuses any).
  std::set<std::string> U = bilinear_unreduced("dot_general", l, r, out_dtype_, "multiplied");
  std::vector<int> lf = dot_free_dims(l.ndim(), d.lhs_contract, d.lhs_batch);
  std::vector<int> rf = dot_free_dims(r.ndim(), d.rhs_contract, d.rhs_batch);
  Shape shape;
  for (int x : d.lhs_batch) shape.push_back(l.shape[x]);
  for (int x : lf) shape.push_back(l.shape[x]);
  for (int x : rf) shape.push_back(r.shape[x]);
  auto le = entries_of(l), re = entries_of(r);
  bool weak = l.weak && r.weak;
  if (out_sharding_) {
    const auto& OU = out_sharding_->spec().unreduced();
    if (!OU.empty()) {
      if (out_sharding_->spec().unreduced_kind() != UnreducedKind::Sum)
        throw ValueError(
            "[dot_general] `out_sharding` passed to `dot_general` can only contain "
            "unreduced of kind `sum`. Got " +
            out_sharding_->spec().repr() + "; expected unreduced_kind=sum.");
      std::string ls = entries_at(le, d.lhs_contract), rs = entries_at(re, d.rhs_contract);
      if (ls != rs)
        throw ShardingTypeError(
            "[dot_general] lhs and rhs contracting dims should be sharded "
            "identically when out_sharding provided to dot_general mentions "
            "unreduced_axes. Got lhs_contracting_spec=" +
            ls + ", rhs_contracting_spec=" + rs + ". Reshard one operand.");
      std::set<std::string> caxes = U;  // an unreduced operand's axes stay partial too
      for (int x : d.lhs_contract)
        for (const auto& a : le[x].axes()) caxes.insert(a);
      if (caxes != OU)
        throw ShardingTypeError(
            "[dot_general] out_sharding's unreduced axes should be equal to "
            "the contracting specs. Got unreduced axes=" +
            quoted_set(OU) + " and contracting spec=" + ls +
            (U.empty() ? "" : " (plus the operand's unreduced axes " + quoted_set(U) + ")") +
            ". Name exactly those axes.");
    }
    return {make_type(shape, out_dtype_, weak, *out_sharding_)};
  }
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (!(le[d.lhs_batch[i]] == re[d.rhs_batch[i]]))
      throw ShardingTypeError(
          "[dot_general] dot_general requires lhs batch dimensions and rhs "
          "batch dimensions to have the same sharding, got " +
          entries_at(le, d.lhs_batch) + " and " + entries_at(re, d.rhs_batch) +
          ". Reshard one operand so the batch dims match.");
  for (size_t i = 0; i < d.lhs_contract.size(); ++i)
    if (!le[d.lhs_contract[i]].is_none() && !re[d.rhs_contract[i]].is_none())
      throw ShardingTypeError(
          "[dot_general] Contracting dimensions are sharded and it is ambiguous how the output "
          "should be sharded. Please specify the output sharding via the `out_sharding` "
          "parameter. Got lhs_contracting_spec=" +
          entries_at(le, d.lhs_contract) +
          " and rhs_contracting_spec=" + entries_at(re, d.rhs_contract));
  std::vector<PartitionEntry> oe;
  for (int x : d.lhs_batch) oe.push_back(le[x]);
  for (int x : lf) oe.push_back(le[x]);
  for (int x : rf) oe.push_back(re[x]);
  AbstractMesh mesh = l.sharding.mesh().empty() ? r.sharding.mesh() : l.sharding.mesh();
  if (mesh.empty()) mesh = get_abstract_mesh();
  // As JAX's _dot_general_ur_rule: reduced operands give no reduced result.
  PartitionSpec sets({}, U, {});
  return {make_type(shape, out_dtype_, weak, mesh, oe, sets)};
}

Lowering DotGeneral::partition(const std::vector<ArrayType>& in,
                               const std::vector<ArrayType>& out) const {
  const ArrayType &l = in[0], &r = in[1];
  const auto& d = dims_;
  std::vector<int> lf = dot_free_dims(l.ndim(), d.lhs_contract, d.lhs_batch);
  std::vector<int> rf = dot_free_dims(r.ndim(), d.rhs_contract, d.rhs_batch);
  auto oe = entries_of(out[0]);
  auto le = entries_of(l), re = entries_of(r);
  // An unreduced operand's axes stay partial in the kernel's result, so no
  // kernel layout may shard over them.
  std::set<std::string> partial = unreduced_of(l);
  partial.insert(unreduced_of(r).begin(), unreduced_of(r).end());
  for (auto& e : oe)
    if (std::any_of(e.axes().begin(), e.axes().end(),
                    [&](const auto& a) { return partial.count(a); }))
      e = PartitionEntry();
  std::set<std::string> used;
  for (const auto& e : oe)
    for (const auto& a : e.axes()) used.insert(a);
  std::vector<PartitionEntry> li(static_cast<size_t>(l.ndim())), ri(static_cast<size_t>(r.ndim()));
  size_t k = 0;
  for (size_t i = 0; i < d.lhs_batch.size(); ++i, ++k)
    li[d.lhs_batch[i]] = ri[d.rhs_batch[i]] = oe[k];
  for (int x : lf) li[x] = oe[k++];
  for (int x : rf) ri[x] = oe[k++];
  for (size_t i = 0; i < d.lhs_contract.size(); ++i) {
    const auto& a = le[d.lhs_contract[i]];
    bool keep = !a.is_none() && a == re[d.rhs_contract[i]];
    for (const auto& n : a.axes()) keep = keep && !used.count(n) && !partial.count(n);
    if (!keep) continue;
    li[d.lhs_contract[i]] = ri[d.rhs_contract[i]] = a;
    for (const auto& n : a.axes()) partial.insert(n);
  }
  Lowering low;
  low.in.push_back(layout_with_sets(li, l.sharding.spec()));
  low.in.push_back(layout_with_sets(ri, r.sharding.spec()));
  low.out.push_back(PartitionSpec(oe, partial, {}, UnreducedKind::Sum));
  return low;
}

std::string DotGeneral::params() const {
  auto t = [](const std::vector<int>& v) { return ints_tuple(v); };
  return "dimension_numbers=((" + t(dims_.lhs_contract) + ", " + t(dims_.rhs_contract) + "), (" +
         t(dims_.lhs_batch) + ", " + t(dims_.rhs_batch) +
         ")) out_sharding=" + p_sharding(out_sharding_) +
         " preferred_element_type=" + dtype_name(out_dtype_);
}

// ---- autodiff rules ----------------------------------------------------------------

std::vector<Array> DotGeneral::jvp(const std::vector<Array>& primals,
                                   const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::bilinear_jvp(*this, primals, tangents);
}

namespace {

// lax's _dot_general_transpose_lhs: the cotangent of x is g contracted with y over
// y's free dims (and batched over the batch dims), then permuted to x's layout. The
// dot's out_sharding is x's cotangent sharding in that order, so the partitioner adds
// whatever reduction a sharded batch needs and the result has x's sharding. The dot
// takes (g, y) or (y, g), whichever order leaves the result in x's layout, so a
// weight's gradient (contracted over the batch) needs no transpose afterwards.
Array transpose_lhs(const Array& g0, const ArrayType& x, const Array& y,
                    const std::vector<int>& x_contract, const std::vector<int>& y_contract,
                    const std::vector<int>& x_batch, const std::vector<int>& y_batch,
                    bool swap_ans) {
  std::vector<int> x_kept = dot_free_dims(x.ndim(), x_contract, x_batch);
  std::vector<int> y_kept = dot_free_dims(y.ndim(), y_contract, y_batch);
  int nb = static_cast<int>(x_batch.size());
  std::vector<int> ans_batch, ans_y;
  for (int i = 0; i < nb; ++i) ans_batch.push_back(i);
  int y_start = swap_ans ? nb : nb + static_cast<int>(x_kept.size());
  for (size_t i = 0; i < y_kept.size(); ++i) ans_y.push_back(y_start + static_cast<int>(i));
  // x_contract sorted by y_contract: the order y's free dims come out in.
  std::vector<size_t> order(y_contract.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return y_contract[a] < y_contract[b]; });
  std::vector<int> x_csorted;
  for (size_t i : order) x_csorted.push_back(x_contract[i]);
  // dot(g, y) gives (batch, x_kept, x_csorted); dot(y, g) gives (batch, x_csorted, x_kept).
  std::vector<int> gy = x_batch, yg = x_batch;
  gy.insert(gy.end(), x_kept.begin(), x_kept.end());
  gy.insert(gy.end(), x_csorted.begin(), x_csorted.end());
  yg.insert(yg.end(), x_csorted.begin(), x_csorted.end());
  yg.insert(yg.end(), x_kept.begin(), x_kept.end());
  auto identity = [](const std::vector<int>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != static_cast<int>(i)) return false;
    return true;
  };
  bool swap = !identity(gy) && identity(yg);
  const std::vector<int>& unsorted = swap ? yg : gy;
  std::vector<int> out_axes(unsorted.size());
  for (size_t i = 0; i < unsorted.size(); ++i)
    out_axes[static_cast<size_t>(unsorted[i])] = static_cast<int>(i);
  ArrayType want = ct_type(x);
  Array g = g0.dtype() == y.dtype() ? g0 : astype(g0, y.dtype());
  DotDims dims = swap ? DotDims{y_kept, ans_y, y_batch, ans_batch}
                      : DotDims{ans_y, y_kept, ans_batch, y_batch};
  std::vector<Array> ops = swap ? std::vector<Array>{y, g} : std::vector<Array>{g, y};
  std::optional<NamedSharding> os;
  if (!want.sharding.mesh().empty()) {
    auto xe = entries_of(want);
    std::vector<PartitionEntry> inv;
    for (int o : unsorted) inv.push_back(xe[o]);
    os = NamedSharding(want.sharding.mesh(), with_sets_of(inv, want.sharding.spec()));
  } else if (!get_abstract_mesh().empty()) {
    // As JAX: an off-mesh operand's cotangent is replicated on the context mesh.
    os = NamedSharding(get_abstract_mesh(), PartitionSpec());
  }
  Array r;
  try {
    r = bind1(std::make_shared<DotGeneral>(dims, os, y.dtype()), ops);
  } catch (const Error&) {
    // An unreduced cotangent the contraction cannot produce directly: compute it
    // replicated on those axes; the pass reshards it to its type.
    std::optional<NamedSharding> plain;
    if (os) plain = NamedSharding(os->mesh(), PartitionSpec(os->spec().entries()));
    try {
      r = bind1(std::make_shared<DotGeneral>(dims, plain, y.dtype()), ops);
    } catch (const Error&) {
      // An unreduced operand the dot cannot take beside the other (g, the cotangent of a
      // Reduced value, or y, an unreduced primal, against an operand sharded over those
      // axes or unreduced too): reduce it first.
      if (unreduced_of(g.type()).empty() && unreduced_of(y.type()).empty()) throw;
      auto reduced = [](const Array& a) {
        if (unreduced_of(a.type()).empty()) return a;
        ArrayType t = a.type();
        t.sharding = NamedSharding(t.sharding.mesh(), spec_of(entries_of(t)));
        return ad::coerce(a, t, "dot_general", "cotangent");
      };
      r = bind1(std::make_shared<DotGeneral>(dims, plain, y.dtype()),
                {reduced(ops[0]), reduced(ops[1])});
    }
  }
  if (identity(out_axes)) return r;
  return bind1(std::make_shared<Transpose>(out_axes), {r});
}

}  // namespace

std::vector<Array> DotGeneral::transpose(const std::vector<Array>& cts,
                                         const std::vector<LinearIn>& ins) const {
  const LinearIn &x = ins[0], &y = ins[1];
  ad::check_bilinear_transpose(*this, ins, "a product");
  const auto& d = dims_;
  if (x.linear())
    return {transpose_lhs(cts[0], x.type, y.value, d.lhs_contract, d.rhs_contract, d.lhs_batch,
                          d.rhs_batch, false),
            Array()};
  return {Array(), transpose_lhs(cts[0], y.type, x.value, d.rhs_contract, d.lhs_contract,
                                 d.rhs_batch, d.lhs_batch, true)};
}

// ---- Batching rule (vmap). Both operands batched: the batch becomes a new leading
// batch pair. One batched: its batch dimension becomes a free dimension of that
// operand (moved to its front), so the whole vmap is one GEMM; the output carries it
// where dot_general puts that operand's first free dimension.
detail::Batched DotGeneral::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  Array l = dims[0] >= 0 ? detail::move_batch(args[0], dims[0], 0) : args[0];
  Array r = dims[1] >= 0 ? detail::move_batch(args[1], dims[1], 0) : args[1];
  DotDims d = dims_;
  int out_dim;
  auto shift = [](std::vector<int>& v) { v = detail::shifted(v); };
  if (dims[0] >= 0) {
    shift(d.lhs_contract);
    shift(d.lhs_batch);
  }
  if (dims[1] >= 0) {
    shift(d.rhs_contract);
    shift(d.rhs_batch);
  }
  const int nb = static_cast<int>(dims_.lhs_batch.size());
  if (dims[0] >= 0 && dims[1] >= 0) {
    d.lhs_batch.insert(d.lhs_batch.begin(), 0);
    d.rhs_batch.insert(d.rhs_batch.begin(), 0);
    out_dim = 0;
  } else if (dims[0] >= 0) {
    out_dim = nb;
  } else {
    int lhs_free = args[0].ndim() - nb - static_cast<int>(dims_.lhs_contract.size());
    out_dim = nb + lhs_free;
  }
  auto p = std::make_shared<DotGeneral>(d, detail::batched_sharding(out_sharding_, out_dim, name()),
                                        out_dtype_);
  return {{detail::bind1(p, {l, r})}, {out_dim}};
}

std::vector<int> dot_free_dims(int rank, const std::vector<int>& contract,
                               const std::vector<int>& batch) {
  std::vector<int> f;
  for (int d = 0; d < rank; ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      f.push_back(d);
  return f;
}

}  // namespace tsr::prim
