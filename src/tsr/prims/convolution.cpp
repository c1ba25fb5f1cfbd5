// The rule of conv_general_dilated (lax/convolution.py): the shape rule with JAX's
// checks and messages, the dtype rule with preferred_element_type, spec §12.15's
// sharding rule (mapped through the dimension numbers instead of positionally, see
// design 0022), a kernel layout that keeps batch, output-feature and tiling spatial
// shardings, and JAX's bilinear transposes and batching rule.
#include "tsr/prims/convolution.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/windowed.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
bool register_all() {
  register_primitive("conv_general_dilated");
  declare_ad("conv_general_dilated", AdKind::Linear);
  return true;
}
const bool registered = register_all();

constexpr const char* kName = "conv_general_dilated";

std::string ints(const std::vector<int>& v) {
  return p_ints(std::vector<int64_t>(v.begin(), v.end()));
}

[[noreturn]] void value_error(const std::string& what, const std::string& fix) {
  throw ValueError(std::string("[conv_general_dilated] ") + what + ". " + fix);
}

bool is_perm(const std::vector<int>& v, size_t r) {
  std::vector<int> s = v;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != static_cast<int>(i)) return false;
  return s.size() == r;
}

// Spatial dims of a spec.
std::vector<int> sdims(const std::vector<int>& spec) { return {spec.begin() + 2, spec.end()}; }

// Transposed spec: (spec[1], spec[0], spatial...).
std::vector<int> spec_t(const std::vector<int>& s) {
  std::vector<int> r = s;
  std::swap(r[0], r[1]);
  return r;
}

Shape take(const Shape& s, const std::vector<int>& idx) {
  Shape r;
  for (int i : idx) r.push_back(s[static_cast<size_t>(i)]);
  return r;
}
}  // namespace

Shape ConvParams::out_shape(const Shape& ls, const Shape& rs) const {
  const ConvParams& p = *this;
  if (ls.size() != rs.size())
    value_error(
        "conv_general_dilated lhs and rhs must have the same number of dimensions, but "
        "got " +
            shape_str(ls) + " and " + shape_str(rs),
        "Give both operands rank n + 2 for n spatial dimensions.");
  const size_t r = ls.size();
  if (r < 2)
    value_error("conv_general_dilated needs operands of rank >= 2, got " + shape_str(ls),
                "Give (batch, feature, spatial...) operands.");
  for (const auto* spec : {&p.dn.lhs, &p.dn.rhs, &p.dn.out})
    if (!is_perm(*spec, r))
      throw TypeError(
          "[conv_general_dilated] convolution dimension_numbers must each be a "
          "permutation of the operand dimensions. Got lhs_spec=" +
          ints(p.dn.lhs) + ", rhs_spec=" + ints(p.dn.rhs) + ", out_spec=" + ints(p.dn.out) +
          " for rank " + std::to_string(r) + "; expected permutations of 0.." +
          std::to_string(r - 1) + ". Build them with conv_dimension_numbers.");
  if (p.feature_group_count <= 0)
    value_error("conv_general_dilated feature_group_count must be a positive integer, got " +
                    std::to_string(p.feature_group_count),
                "Pass 1 for an ungrouped convolution.");
  const int64_t lhs_features = ls[static_cast<size_t>(p.dn.lhs[1])];
  const int64_t rhs_in = rs[static_cast<size_t>(p.dn.rhs[1])];
  const int64_t rhs_out = rs[static_cast<size_t>(p.dn.rhs[0])];
  if (lhs_features % p.feature_group_count)
    value_error(
        "conv_general_dilated feature_group_count must divide lhs feature dimension "
        "size, but " +
            std::to_string(p.feature_group_count) + " does not divide " +
            std::to_string(lhs_features),
        "Pick a group count that divides the input features.");
  if (lhs_features / p.feature_group_count != rhs_in)
    value_error(
        "conv_general_dilated lhs feature dimension size divided by feature_group_count "
        "must equal the rhs input feature dimension size, but " +
            std::to_string(lhs_features) + " // " + std::to_string(p.feature_group_count) +
            " != " + std::to_string(rhs_in),
        "Give the kernel lhs_features / feature_group_count input features.");
  if (rhs_out % p.feature_group_count)
    value_error(
        "conv_general_dilated rhs output feature dimension size must be a multiple of "
        "feature_group_count, but " +
            std::to_string(rhs_out) + " is not a multiple of " +
            std::to_string(p.feature_group_count),
        "Give the kernel a multiple of the group count output features.");
  if (p.batch_group_count <= 0)
    value_error("conv_general_dilated batch_group_count must be a positive integer, got " +
                    std::to_string(p.batch_group_count),
                "Pass 1 for no batch grouping.");
  const int64_t lhs_batch = ls[static_cast<size_t>(p.dn.lhs[0])];
  if (p.batch_group_count > 1 && lhs_batch % p.batch_group_count)
    value_error(
        "conv_general_dilated batch_group_count must divide lhs batch dimension size, "
        "but " +
            std::to_string(p.batch_group_count) + " does not divide " + std::to_string(lhs_batch),
        "Pick a batch group count that divides the batch.");
  if (rhs_out % p.batch_group_count)
    value_error(
        "conv_general_dilated rhs output feature dimension size must be a multiple of "
        "batch_group_count, but " +
            std::to_string(rhs_out) + " is not a multiple of " +
            std::to_string(p.batch_group_count),
        "Give the kernel a multiple of the batch group count output features.");
  if (p.batch_group_count > 1 && p.feature_group_count > 1)
    value_error(
        "At most one of batch_group_count and feature_group_count may be > 1, got "
        "batch_group_count=" +
            std::to_string(p.batch_group_count) +
            " and feature_group_count=" + std::to_string(p.feature_group_count),
        "Set one of them to 1.");
  const size_t ns = r - 2;
  if (p.strides.size() != ns)
    value_error(
        "conv_general_dilated window and window_strides must have the same number of "
        "dimensions, but got " +
            std::to_string(ns) + " and " + std::to_string(p.strides.size()),
        "Give one stride per spatial dimension.");
  if (p.padding.size() != ns)
    throw TypeError(
        "[conv_general_dilated] Wrong number of explicit pads for convolution: "
        "expected " +
        std::to_string(ns) + ", got " + std::to_string(p.padding.size()) +
        ". Give one (lo, hi) pair per spatial dimension.");
  if (p.lhs_dilation.size() != ns || p.rhs_dilation.size() != ns)
    value_error(
        "conv_general_dilated lhs_dilation and rhs_dilation need one entry per spatial "
        "dimension, got " +
            p_ints(p.lhs_dilation) + " and " + p_ints(p.rhs_dilation) + " for " +
            std::to_string(ns) + " spatial dimensions",
        "Give one dilation per spatial dimension (1: none).");
  for (const auto* v : {&p.strides, &p.lhs_dilation, &p.rhs_dilation})
    for (int64_t e : *v)
      if (e <= 0)
        value_error("conv_general_dilated strides and dilations must be positive, got strides " +
                        p_ints(p.strides) + ", lhs_dilation " + p_ints(p.lhs_dilation) +
                        ", rhs_dilation " + p_ints(p.rhs_dilation),
                    "Use sizes >= 1.");
  Shape lt = take(ls, p.dn.lhs), rt = take(rs, p.dn.rhs);
  Shape ot(r);
  ot[0] = p.batch_group_count > 1 ? lt[0] / p.batch_group_count : lt[0];
  ot[1] = rt[0];
  for (size_t i = 0; i < ns; ++i) {
    const int64_t padded =
        dilated_size(lt[i + 2], p.lhs_dilation[i]) + p.padding[i].first + p.padding[i].second;
    if (padded < 0)
      value_error(
          "Negative padding is larger than the size of the corresponding dimension: got "
          "padding=" +
              p_ints({p.padding[i].first, p.padding[i].second}) + " for lhs spatial size " +
              std::to_string(lt[i + 2]),
          "Pad less negatively.");
    const int64_t win = dilated_size(rt[i + 2], p.rhs_dilation[i]);
    ot[i + 2] = padded < win ? 0 : (padded - win) / p.strides[i] + 1;
  }
  Shape out(r);
  for (size_t i = 0; i < r; ++i) out[static_cast<size_t>(p.dn.out[i])] = ot[i];
  return out;
}

std::vector<ArrayType> ConvGeneralDilated::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &l = in.at(0), &r = in.at(1);
  const Shape shape = p_.out_shape(l.shape, r.shape);
  if (l.dtype != r.dtype)
    throw TypeError(std::string("[conv_general_dilated] conv_general_dilated requires arguments "
                                "to have the same dtypes, got ") +
                    dtype_name(l.dtype) + ", " + dtype_name(r.dtype) +
                    ". Convert one with astype first.");
  if (l.dtype == DType::Bool)
    throw TypeError("[conv_general_dilated] conv_general_dilated does not accept dtype bool. Got " +
                    l.str() + "; expected a number. Convert with astype(int32) first.");
  const DType dt = preferred_.value_or(l.dtype);
  if (preferred_) check_preferred(kName, l.dtype, *preferred_);
  // One sum-unreduced operand (a cotangent) gives a sum-unreduced result.
  std::set<std::string> U = bilinear_unreduced(kName, l, r, dt, "convolved");
  auto with_partial = [&](ArrayType o) {
    if (U.empty()) return o;
    const PartitionSpec& sp = o.sharding.spec();
    o.sharding = NamedSharding(o.sharding.mesh(),
                               PartitionSpec(sp.entries(), U, sp.reduced(), UnreducedKind::Sum));
    return o;
  };
  const bool weak = l.weak && r.weak;
  if (out_sharding_) return {with_partial(make_type(shape, dt, weak, *out_sharding_))};
  auto le = entries_of(l), re = entries_of(r);
  const bool rhs_replicated =
      std::all_of(re.begin(), re.end(), [](const PartitionEntry& e) { return e.is_none(); });
  if (!rhs_replicated || !le[static_cast<size_t>(p_.dn.lhs[1])].is_none())
    throw ShardingTypeError(
        "[conv_general_dilated] Please specify the output sharding via `out_sharding` parameter "
        "of `conv_general_dilated`. Got lhs=" +
        l.str() + " and rhs=" + r.str() +
        "; expected a replicated rhs and an unsharded lhs feature dimension (lhs_spec[1]=" +
        std::to_string(p_.dn.lhs[1]) + "), or an out_sharding.");
  // The varying-out rule over lhs mapped into the output's layout: out dim out_spec[i]
  // takes lhs dim lhs_spec[i]'s entry (JAX maps positionally, which is the same when
  // lhs and out share a layout; design 0022).
  ArrayType mapped = l;
  Shape ms(shape.size());
  std::vector<PartitionEntry> me(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    ms[static_cast<size_t>(p_.dn.out[i])] = l.shape[static_cast<size_t>(p_.dn.lhs[i])];
    me[static_cast<size_t>(p_.dn.out[i])] = le[static_cast<size_t>(p_.dn.lhs[i])];
  }
  mapped.shape = ms;
  mapped.sharding = NamedSharding(l.sharding.mesh(), with_sets_of(me, l.sharding.spec()));
  if (l.sharding.mesh().empty() && !r.sharding.mesh().empty()) mapped.sharding = r.sharding;
  ArrayType o = varying_out(shape, mapped, "conv_general_dilated", kName);
  o.dtype = dt;
  o.weak = weak;
  return {with_partial(o)};
}

// The kernel computes any block of the batch and of the output features, and a spatial
// block where the windows tile it (no padding or dilation, window == stride). The lhs
// feature and rhs input-feature dims may stay sharded alike (ungrouped): each device
// then sums its slice of the contraction and the result is partial over those axes
// (a data-parallel filter gradient is a local convolution and one all-reduce).
Lowering ConvGeneralDilated::partition(const std::vector<ArrayType>& in,
                                       const std::vector<ArrayType>&) const {
  const ArrayType &l = in[0], &r = in[1];
  const size_t rank = l.shape.size();
  auto le = entries_of(l), re = entries_of(r);
  std::vector<PartitionEntry> li(rank), ri(rank), oi(rank);
  // An unreduced operand's axes stay partial in the result; no layout shards over them.
  std::set<std::string> partial = unreduced_of(l);
  partial.insert(unreduced_of(r).begin(), unreduced_of(r).end());
  std::set<std::string> used = partial;
  auto take_entry = [&](const PartitionEntry& e) {
    for (const auto& a : e.axes())
      if (used.count(a)) return false;
    for (const auto& a : e.axes()) used.insert(a);
    return true;
  };
  const AbstractMesh& mesh = l.sharding.mesh().empty() ? r.sharding.mesh() : l.sharding.mesh();
  const size_t lb = static_cast<size_t>(p_.dn.lhs[0]), lf = static_cast<size_t>(p_.dn.lhs[1]);
  const size_t ro = static_cast<size_t>(p_.dn.rhs[0]), rin = static_cast<size_t>(p_.dn.rhs[1]);
  if (p_.batch_group_count == 1 && !le[lb].is_none() && take_entry(le[lb]))
    li[lb] = oi[static_cast<size_t>(p_.dn.out[0])] = le[lb];
  for (size_t i = 2; i < rank; ++i) {
    const size_t d = static_cast<size_t>(p_.dn.lhs[i]), s = i - 2;
    if (le[d].is_none()) continue;
    const int64_t k = entry_size(le[d], mesh), n = l.shape[d];
    const int64_t w = r.shape[static_cast<size_t>(p_.dn.rhs[i])];
    const bool tiles = p_.padding[s] == std::pair<int64_t, int64_t>{0, 0} &&
                       p_.lhs_dilation[s] == 1 && p_.rhs_dilation[s] == 1 && w == p_.strides[s] &&
                       n % k == 0 && (n / k) % p_.strides[s] == 0;
    if (tiles && take_entry(le[d])) li[d] = oi[static_cast<size_t>(p_.dn.out[i])] = le[d];
  }
  const bool ungrouped = p_.feature_group_count == 1 && p_.batch_group_count == 1;
  if (ungrouped && !re[ro].is_none() && take_entry(re[ro]))
    ri[ro] = oi[static_cast<size_t>(p_.dn.out[1])] = re[ro];
  if (ungrouped && !le[lf].is_none() && le[lf] == re[rin] && take_entry(le[lf])) {
    li[lf] = ri[rin] = le[lf];
    for (const auto& a : le[lf].axes()) partial.insert(a);
  }
  Lowering low;
  low.in.push_back(layout_with_sets(li, l.sharding.spec()));
  low.in.push_back(layout_with_sets(ri, r.sharding.spec()));
  low.out.push_back(PartitionSpec(oi, partial, {}, UnreducedKind::Sum));
  return low;
}

std::string ConvGeneralDilated::params() const {
  std::string pads = "(";
  for (size_t i = 0; i < p_.padding.size(); ++i)
    pads += (i ? ", " : "") + p_ints({p_.padding[i].first, p_.padding[i].second});
  pads += p_.padding.size() == 1 ? ",)" : ")";
  return "window_strides=" + p_ints(p_.strides) + " padding=" + pads +
         " lhs_dilation=" + p_ints(p_.lhs_dilation) + " rhs_dilation=" + p_ints(p_.rhs_dilation) +
         " dimension_numbers=ConvDimensionNumbers(lhs_spec=" + ints(p_.dn.lhs) +
         ", rhs_spec=" + ints(p_.dn.rhs) + ", out_spec=" + ints(p_.dn.out) +
         ") feature_group_count=" + std::to_string(p_.feature_group_count) +
         " batch_group_count=" + std::to_string(p_.batch_group_count) +
         " precision=None preferred_element_type=" +
         (preferred_ ? std::string(dtype_name(*preferred_)) : std::string("None")) +
         " out_sharding=" + p_sharding(out_sharding_);
}

// ---- autodiff ------------------------------------------------------------------

std::vector<Array> ConvGeneralDilated::jvp(const std::vector<Array>& primals,
                                           const std::vector<Array>& tangents,
                                           std::vector<Array>&) const {
  return ad::bilinear_jvp(*this, primals, tangents);
}

namespace {

// A reshape whose sharding rule may refuse (merging into a sharded minor dim): then
// the operand is gathered first (same values).
Array reshape_or_gather(const Array& x, const Shape& s) {
  return ad::or_replicated([&](const Array& v) { return reshape(v, s); }, x);
}

// lax/convolution.py's _reshape_axis_into: axis src merged into dst (dst counted after
// src is removed), src major.
Array reshape_axis_into(int src, int dst, const Array& x) {
  std::vector<int> perm;
  for (int i = 0; i < x.ndim(); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Shape s;
  for (int i = 0; i < x.ndim(); ++i)
    if (i != src) s.push_back(x.shape()[static_cast<size_t>(i)]);
  s[static_cast<size_t>(dst)] *= x.shape()[static_cast<size_t>(src)];
  bool id = true;
  for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == static_cast<int>(i);
  return reshape_or_gather(id ? x : transpose(x, perm), s);
}

// _reshape_axis_out_of: axis src split into (size1, rest).
Array reshape_axis_out_of(int src, int64_t size1, const Array& x) {
  Shape s = x.shape();
  const int64_t n = s[static_cast<size_t>(src)];
  s[static_cast<size_t>(src)] = n / size1;
  s.insert(s.begin() + src, size1);
  return reshape_or_gather(x, s);
}

// The cotangent's declared sharding: the operand's (sets dropped: the convolution sums
// whole), or replicated on the context mesh for an off-mesh operand.
std::optional<NamedSharding> ct_sharding(const ArrayType& t) {
  ArrayType want = ct_type(t);
  if (!want.sharding.mesh().empty())
    return NamedSharding(want.sharding.mesh(), spec_of(entries_of(want)));
  if (!get_abstract_mesh().empty()) return NamedSharding(get_abstract_mesh(), PartitionSpec());
  return std::nullopt;
}

std::vector<std::pair<int64_t, int64_t>> vjp_lhs_padding(const Shape& in, const Shape& win,
                                                         const Shape& out, const ConvParams& p) {
  std::vector<std::pair<int64_t, int64_t>> r;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t ld = dilated_size(in[i], p.lhs_dilation[i]);
    const int64_t rd = dilated_size(win[i], p.rhs_dilation[i]);
    const int64_t od = dilated_size(out[i], p.strides[i]);
    const int64_t before = rd - p.padding[i].first - 1;
    r.emplace_back(before, ld + rd - 1 - od - before);
  }
  return r;
}

std::vector<std::pair<int64_t, int64_t>> vjp_rhs_padding(const Shape& in, const Shape& win,
                                                         const Shape& out, const ConvParams& p) {
  std::vector<std::pair<int64_t, int64_t>> r;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t ld = dilated_size(in[i], p.lhs_dilation[i]);
    const int64_t rd = dilated_size(win[i], p.rhs_dilation[i]);
    const int64_t od = dilated_size(out[i], p.strides[i]);
    const int64_t lo = p.padding[i].first;
    r.emplace_back(lo, (od - ld) + (rd - lo - 1));
  }
  return r;
}

Array conv(const Array& a, const Array& b, ConvParams p, std::optional<NamedSharding> os,
           std::optional<DType> pref) {
  return bind1(std::make_shared<ConvGeneralDilated>(std::move(p), std::move(os), pref), {a, b});
}

}  // namespace

std::vector<Array> ConvGeneralDilated::transpose(const std::vector<Array>& cts,
                                                 const std::vector<LinearIn>& ins) const {
  const LinearIn &x = ins[0], &y = ins[1];
  ad::check_bilinear_transpose(*this, ins, "a convolution");
  const Array& g = cts[0];
  const auto &ls = p_.dn.lhs, &rs = p_.dn.rhs, &os = p_.dn.out;
  if (x.linear()) {  // _conv_general_dilated_transpose_lhs
    Array rhs = y.value;
    const Shape rhs_shape = rhs.shape();
    int64_t fgc = p_.feature_group_count;
    const int64_t bgc = p_.batch_group_count;
    if (fgc > 1 || bgc > 1) {
      rhs = reshape_axis_out_of(rs[0], fgc > 1 ? fgc : bgc, rhs);
      rhs = reshape_axis_into(rs[0], rs[1], rhs);
      fgc = fgc > 1 ? fgc : bgc;
    }
    ConvParams t;
    t.dn = {os, spec_t(rs), ls};
    t.padding = vjp_lhs_padding(take(x.type.shape, sdims(ls)), take(rhs_shape, sdims(rs)),
                                take(g.shape(), sdims(os)), p_);
    t.strides = p_.lhs_dilation;
    t.lhs_dilation = p_.strides;
    t.rhs_dilation = p_.rhs_dilation;
    t.feature_group_count = fgc;
    Array w = rev(rhs, sdims(rs));
    if (w.dtype() != g.dtype()) w = astype(w, g.dtype());
    Array out = conv(g, w, t, bgc > 1 ? std::nullopt : ct_sharding(x.type), preferred_);
    if (bgc > 1)  // the groups move from the features back into the batch
      out = reshape_axis_into(ls[1], ls[0], reshape_axis_out_of(ls[1], bgc, out));
    return {ad::coerce(out, ct_type(x.type), name(), "cotangent"), Array()};
  }
  // _conv_general_dilated_transpose_rhs
  int64_t numel = 1;
  for (int64_t d : g.shape()) numel *= d;
  if (numel == 0) return {Array(), ad::zeros_ct(y, g)};
  ConvParams t;
  t.dn = {spec_t(ls), spec_t(os), spec_t(rs)};
  t.feature_group_count = p_.batch_group_count;
  t.batch_group_count = p_.feature_group_count;
  t.padding = vjp_rhs_padding(take(x.value.shape(), sdims(ls)), take(y.type.shape, sdims(rs)),
                              take(g.shape(), sdims(os)), p_);
  t.strides = p_.rhs_dilation;
  t.lhs_dilation = p_.lhs_dilation;
  t.rhs_dilation = p_.strides;
  Array lhs = x.value.dtype() != g.dtype() ? astype(x.value, g.dtype()) : x.value;
  Array out = conv(lhs, g, t, ct_sharding(y.type), preferred_);
  return {Array(), ad::coerce(out, ct_type(y.type), name(), "cotangent")};
}

// ---- batching (lax/convolution.py's _conv_general_dilated_batch_rule) -------------------

Batched ConvGeneralDilated::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  const Array &lhs = args[0], &rhs = args[1];
  const int lb = dims[0], rb = dims[1];
  const auto &ls = p_.dn.lhs, &rs = p_.dn.rhs, &os = p_.dn.out;
  ConvParams p = p_;
  // The result's dim D takes the batch (major): a sharded batch makes the merged operand
  // dims sharded, which the rule only accepts with an out_sharding, so one is given:
  // the per-example result's sharding with the batch's entry on D (JAX's
  // get_out_sharding when an out_sharding exists; JAX refuses otherwise).
  int out_dim = -1;
  auto with = [&](const Array& a, const Array& b, const ConvParams& q) {
    std::optional<NamedSharding> osh = out_sharding_;
    const Array& bx = lb >= 0 ? lhs : rhs;
    const PartitionEntry be = entries_of(bx.type())[static_cast<size_t>(lb >= 0 ? lb : rb)];
    if (!be.is_none()) {
      if (!osh) {
        ArrayType t = per_example_out(*this, args, dims)[0];
        if (!t.sharding.mesh().empty()) osh = t.sharding;
      }
      if (osh) {
        std::vector<PartitionEntry> e = osh->spec().entries();
        e.resize(static_cast<size_t>(a.ndim()));
        if (e[static_cast<size_t>(out_dim)].is_none()) {
          e[static_cast<size_t>(out_dim)] = be;
          osh = NamedSharding(osh->mesh(), with_sets_of(e, osh->spec()));
        }
      }
    }
    return conv(a, b, q, osh, preferred_);
  };
  const int64_t B =
      lb >= 0 ? lhs.shape()[static_cast<size_t>(lb)] : rhs.shape()[static_cast<size_t>(rb)];
  if (B == 0) {
    Shape l1 = lhs.shape(), r1 = rhs.shape();
    if (lb >= 0) l1.erase(l1.begin() + lb);
    if (rb >= 0) r1.erase(r1.begin() + rb);
    Shape s = p_.out_shape(l1, r1);
    s.insert(s.begin(), 0);
    return {{full(s, 0, preferred_.value_or(lhs.dtype()))}, {0}};
  }
  if (lb >= 0 && rb >= 0) {
    Array nl;
    if (p.batch_group_count > 1) {
      nl = reshape_axis_into(lb, ls[0], lhs);
      p.batch_group_count *= B;
    } else {
      nl = reshape_axis_into(lb, ls[1], lhs);
      p.feature_group_count *= B;
    }
    Array nr = reshape_axis_into(rb, rs[0], rhs);
    out_dim = os[1];
    Array out = reshape_axis_out_of(os[1], B, with(nl, nr, p));
    return {{out}, {os[1]}};
  }
  out_dim = lb >= 0 ? os[0] : os[1];
  if (lb >= 0) {
    if (p.batch_group_count == 1) {
      Array out = reshape_axis_out_of(os[0], B, with(reshape_axis_into(lb, ls[0], lhs), rhs, p));
      return {{out}, {os[0]}};
    }
    Array nl = reshape_axis_out_of(ls[0] + (lb <= ls[0] ? 1 : 0), p.batch_group_count, lhs);
    nl = reshape_axis_into(lb + (ls[0] < lb ? 1 : 0), ls[0] + 1, nl);
    nl = reshape_axis_into(ls[0], ls[0], nl);
    Array out = reshape_axis_out_of(os[0], B, with(nl, rhs, p));
    return {{out}, {os[0]}};
  }
  if (p.feature_group_count == 1 && p.batch_group_count == 1) {
    Array out = reshape_axis_out_of(os[1], B, with(lhs, reshape_axis_into(rb, rs[0], rhs), p));
    return {{out}, {os[1]}};
  }
  const int64_t G = p.feature_group_count > 1 ? p.feature_group_count : p.batch_group_count;
  Array nr = reshape_axis_out_of(rs[0] + (rb <= rs[0] ? 1 : 0), G, rhs);
  nr = reshape_axis_into(rb + (rs[0] < rb ? 1 : 0), rs[0] + 1, nr);
  nr = reshape_axis_into(rs[0], rs[0], nr);
  Array out = with(lhs, nr, p);
  out = reshape_axis_out_of(os[1], G, out);
  out = reshape_axis_out_of(os[1] + 1, B, out);
  out = reshape_axis_into(os[1], os[1] + 1, out);
  return {{out}, {os[1]}};
}

}  // namespace tsr::prim
