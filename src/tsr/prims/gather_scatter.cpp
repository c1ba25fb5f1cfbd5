// Rules of gather (spec §12.13) and scatter (§12.14). The partitioners derive every
// input layout from the output layout, so the kernels (which work in global
// coordinates) find what they read on the device; see docs/design/0005.
#include "tsr/prims/gather_scatter.h"

#include <algorithm>
#include <set>

#include "tsr/core/trace.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {

const bool registered = [] {
  for (const char* n : {"gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul",
                        "scatter_min", "scatter_max"})
    register_primitive(n);
  // Linear: gather in the operand, scatter/add/sub in (operand, updates) jointly,
  // scatter_mul in the operand (its jvp in the updates is exact, see below).
  for (const char* n : {"gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul"})
    declare_ad(n, AdKind::Linear);
  declare_ad("scatter_min", AdKind::Differentiable);
  declare_ad("scatter_max", AdKind::Differentiable);
  return true;
}();

[[noreturn]] void bad(const char* op, const std::string& what, const std::string& got,
                      const std::string& fix) {
  throw TypeError(std::string("[") + op + "] " + what + ". Got " + got + "; expected " + fix);
}

std::string ints(const std::vector<int>& v) {
  return ints_tuple(std::vector<int64_t>(v.begin(), v.end()));
}

// Distinct, in [0, n).
void check_dims(const char* op, const char* what, const std::vector<int>& v, int n) {
  std::set<int> seen;
  for (int d : v)
    if (d < 0 || d >= n || !seen.insert(d).second)
      bad(op, std::string(what) + " must be distinct dims in range",
          what + std::string("=") + ints(v), "distinct values in [0, " + std::to_string(n) + ").");
}

bool none(const PartitionEntry& e) { return e.axes().empty(); }

std::set<std::string> axes_in(const std::vector<PartitionEntry>& e) {
  std::set<std::string> s;
  for (const auto& x : e)
    for (const auto& a : x.axes()) s.insert(a);
  return s;
}

bool all_none(const std::vector<std::vector<PartitionEntry>>& es) {
  for (const auto& e : es)
    for (const auto& x : e)
      if (!none(x)) return false;
  return true;
}

std::vector<PartitionEntry> nones(int n) { return std::vector<PartitionEntry>(n); }

const char* mode_name(IndexMode m) {
  switch (m) {
    case IndexMode::Clip:
      return "clip";
    case IndexMode::FillOrDrop:
      return "fill_or_drop";
    case IndexMode::PromiseInBounds:
      return "promise_in_bounds";
  }
  return "?";
}

}  // namespace

bool has_dim(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int> dims_except(int rank, const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  for (int d = 0; d < rank; ++d)
    if (!has_dim(a, d) && !has_dim(b, d)) out.push_back(d);
  return out;
}

// ---- gather

std::vector<ArrayType> Gather::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& O = in.at(0);
  const ArrayType& I = in.at(1);
  const auto& dn = dims_;
  const int orank = O.ndim(), irank = I.ndim();
  if (!is_integer(I.dtype)) bad("gather", "indices must be integers", I.str(), "an integer dtype.");
  if (irank < 1 || I.shape.back() != static_cast<int64_t>(dn.start_index_map.size()))
    bad("gather",
        "the last indices dim is the index vector and must have one entry per start_index_map dim",
        "indices " + I.str() + " with start_index_map=" + ints(dn.start_index_map),
        "indices of shape (..., " + std::to_string(dn.start_index_map.size()) + ").");
  if (static_cast<int>(slice_sizes_.size()) != orank)
    bad("gather", "slice_sizes needs one size per operand dim",
        "slice_sizes=" + ints_tuple(slice_sizes_) + " for " + O.str(),
        std::to_string(orank) + " sizes.");
  for (int d = 0; d < orank; ++d)
    if (slice_sizes_[d] < 0 || slice_sizes_[d] > O.shape[d])
      bad("gather", "slice sizes must lie in [0, operand dim]",
          "slice_sizes=" + ints_tuple(slice_sizes_) + " for " + O.str(), "sizes within the shape.");
  check_dims("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, orank);
  check_dims("gather", "operand_batching_dims", dn.operand_batching_dims, orank);
  check_dims("gather", "start_index_map", dn.start_index_map, orank);
  check_dims("gather", "start_indices_batching_dims", dn.start_indices_batching_dims, irank - 1);
  for (int d : dn.collapsed_slice_dims)
    if (slice_sizes_[d] > 1 || has_dim(dn.operand_batching_dims, d))
      bad("gather", "collapsed dims need slice size 1 and may not be batching dims",
          "collapsed_slice_dims=" + ints(dn.collapsed_slice_dims), "slice size 1.");
  for (int d : dn.operand_batching_dims)
    if (slice_sizes_[d] > 1 || has_dim(dn.start_index_map, d))
      bad("gather", "operand batching dims need slice size 1 and may not be indexed",
          "operand_batching_dims=" + ints(dn.operand_batching_dims), "slice size 1.");
  if (dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size())
    bad("gather", "operand and indices batching dims must pair up",
        ints(dn.operand_batching_dims) + " and " + ints(dn.start_indices_batching_dims),
        "lists of equal length.");
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
    if (O.shape[dn.operand_batching_dims[i]] != I.shape[dn.start_indices_batching_dims[i]])
      bad("gather", "paired batching dims must have equal sizes", O.str() + " and " + I.str(),
          "equal sizes.");
  std::vector<int> wd = dims_except(orank, dn.collapsed_slice_dims, dn.operand_batching_dims);
  const int out_rank = static_cast<int>(dn.offset_dims.size()) + irank - 1;
  check_dims("gather", "offset_dims", dn.offset_dims, out_rank);
  if (!std::is_sorted(dn.offset_dims.begin(), dn.offset_dims.end()) ||
      dn.offset_dims.size() != wd.size())
    bad("gather",
        "offset_dims must be sorted with one entry per operand dim that is not collapsed or "
        "batching",
        "offset_dims=" + ints(dn.offset_dims), std::to_string(wd.size()) + " sorted dims.");
  Shape shape(out_rank);
  size_t w = 0, b = 0;
  for (int i = 0; i < out_rank; ++i)
    shape[i] = has_dim(dn.offset_dims, i) ? slice_sizes_[wd[w++]] : I.shape[b++];
  if (out_sharding_) {
    check_unreduced_move(O, *out_sharding_, "gather");
    return {make_type(shape, O.dtype, O.weak, *out_sharding_)};
  }

  no_unreduced("gather", in);
  AbstractMesh mesh = rule_mesh(in);
  auto eo = entries_of(O), ei = entries_of(I);
  if (all_none({eo, ei})) return {make_type(shape, O.dtype, O.weak, mesh, nones(out_rank))};
  bool ok = true;
  for (int k : dn.start_index_map) ok = ok && (slice_sizes_[k] == O.shape[k] || none(eo[k]));
  const auto& ob = dn.operand_batching_dims;
  const auto& ib = dn.start_indices_batching_dims;
  for (size_t i = 0; i < ob.size(); ++i)
    ok = ok && (ei[ib[i]] == eo[ob[i]] || none(ei[ib[i]]) || none(eo[ob[i]]));
  for (int d = 0; d < irank; ++d) ok = ok && (has_dim(ib, d) || none(ei[d]));
  if (!ok)
    throw ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        "collectives on inputs). Got operand=" +
        O.str() + ", indices=" + I.str());
  for (size_t i = 0; i < ob.size(); ++i)
    if (none(ei[ib[i]])) ei[ib[i]] = eo[ob[i]];
  std::vector<PartitionEntry> out;
  w = 0;
  b = 0;
  for (int i = 0; i < out_rank; ++i)
    out.push_back(has_dim(dn.offset_dims, i) ? eo[wd[w++]] : ei[b++]);
  return {make_type(shape, O.dtype, O.weak, mesh, out)};
}

Lowering Gather::partition(const std::vector<ArrayType>& in,
                           const std::vector<ArrayType>& out) const {
  const ArrayType& O = in[0];
  const ArrayType& I = in[1];
  const auto& dn = dims_;
  auto L = entries_of(out[0]);
  auto eo = nones(O.ndim()), ei = nones(I.ndim());
  std::vector<int> wd = dims_except(O.ndim(), dn.collapsed_slice_dims, dn.operand_batching_dims);
  size_t w = 0;
  int b = 0;
  for (int i = 0; i < out[0].ndim(); ++i) {
    if (has_dim(dn.offset_dims, i)) {
      int d = wd[w++];
      // A full slice starts at 0 whatever the index: the block is local.
      if (slice_sizes_[d] == O.shape[d]) eo[d] = L[i];
    } else {
      ei[b++] = L[i];
    }
  }
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
    eo[dn.operand_batching_dims[i]] = ei[dn.start_indices_batching_dims[i]];
  return {{spec_of(eo), spec_of(ei)}, {spec_of(L)}};
}

std::string Gather::params() const {
  const auto& d = dims_;
  return "dimension_numbers=GatherDimensionNumbers(offset_dims=" + ints(d.offset_dims) +
         ", collapsed_slice_dims=" + ints(d.collapsed_slice_dims) +
         ", start_index_map=" + ints(d.start_index_map) +
         ", operand_batching_dims=" + ints(d.operand_batching_dims) +
         ", start_indices_batching_dims=" + ints(d.start_indices_batching_dims) +
         ") slice_sizes=" + ints_tuple(slice_sizes_) + " mode=" + mode_name(mode_) +
         (mode_ == IndexMode::FillOrDrop ? " fill_value=" + std::to_string(fill_) : "") +
         " indices_are_sorted=" + (sorted_ ? "True" : "False") +
         " unique_indices=" + (unique_ ? "True" : "False") +
         " out_sharding=" + p_sharding(out_sharding_);
}

// ---- scatter

namespace {
// Scatter is linear in (operand, updates) jointly: partial operands and partial
// updates combine by the scatter's own kind (set: any; add/sub: sum; max/min:
// their kind; mul: none). Indices must be whole.
PartitionSpec scatter_sets(ScatterKind kind, const char* op, const ArrayType& O, const ArrayType& I,
                           const ArrayType& U) {
  no_unreduced(op, {I});
  if (unreduced_of(O).empty() && unreduced_of(U).empty()) return {};
  const PartitionSpec &so = O.sharding.spec(), &su = U.sharding.spec();
  UnreducedKind k = so.unreduced_kind();
  bool kind_ok =
      kind == ScatterKind::Set ||
      ((kind == ScatterKind::Add || kind == ScatterKind::Sub) && k == UnreducedKind::Sum) ||
      (kind == ScatterKind::Max && k == UnreducedKind::Max) ||
      (kind == ScatterKind::Min && k == UnreducedKind::Min);
  if (so.unreduced() != su.unreduced() || su.unreduced_kind() != k || !kind_ok)
    throw ShardingTypeError(
        std::string("[") + op +
        "] operand and updates must be unreduced over the same axes, of a kind the scatter "
        "combines. Got operand " +
        O.str() + " and updates " + U.str() +
        "; expected equal unreduced sets (scatter: any kind; scatter_add/sub: sum; "
        "scatter_max/min: their kind; scatter_mul: none). Reduce them first with "
        "reshard(x, P(...)), or pass out_sharding.");
  return PartitionSpec({}, so.unreduced(), {}, k);
}
}  // namespace

const char* Scatter::name() const {
  switch (kind_) {
    case ScatterKind::Set:
      return "scatter";
    case ScatterKind::Add:
      return "scatter_add";
    case ScatterKind::Sub:
      return "scatter_sub";
    case ScatterKind::Mul:
      return "scatter_mul";
    case ScatterKind::Min:
      return "scatter_min";
    case ScatterKind::Max:
      return "scatter_max";
  }
  return "scatter";
}

std::vector<ArrayType> Scatter::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& O = in.at(0);
  const ArrayType& I = in.at(1);
  const ArrayType& U = in.at(2);
  const char* op = name();
  const auto& dn = dims_;
  const int orank = O.ndim(), irank = I.ndim(), urank = U.ndim();
  if (!is_integer(I.dtype)) bad(op, "indices must be integers", I.str(), "an integer dtype.");
  if (U.dtype != O.dtype)
    bad(op, "updates must have the operand's dtype",
        "operand " + O.str() + " and updates " + U.str(),
        "equal dtypes. Convert the updates with astype.");
  if (irank < 1 || I.shape.back() != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()))
    bad(op,
        "the last indices dim is the index vector and must have one entry per "
        "scatter_dims_to_operand_dims dim",
        "indices " + I.str(),
        "indices of shape (..., " + std::to_string(dn.scatter_dims_to_operand_dims.size()) + ").");
  check_dims(op, "update_window_dims", dn.update_window_dims, urank);
  check_dims(op, "inserted_window_dims", dn.inserted_window_dims, orank);
  check_dims(op, "operand_batching_dims", dn.operand_batching_dims, orank);
  check_dims(op, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims, orank);
  check_dims(op, "scatter_indices_batching_dims", dn.scatter_indices_batching_dims, irank - 1);
  for (int d : dn.inserted_window_dims)
    if (has_dim(dn.operand_batching_dims, d))
      bad(op, "a dim cannot be both inserted and batching",
          "inserted_window_dims=" + ints(dn.inserted_window_dims), "disjoint lists.");
  for (int d : dn.scatter_dims_to_operand_dims)
    if (has_dim(dn.operand_batching_dims, d))
      bad(op, "batching dims cannot be scattered into",
          "scatter_dims_to_operand_dims=" + ints(dn.scatter_dims_to_operand_dims),
          "dims outside operand_batching_dims.");
  std::vector<int> ow = dims_except(orank, dn.inserted_window_dims, dn.operand_batching_dims);
  if (!std::is_sorted(dn.update_window_dims.begin(), dn.update_window_dims.end()) ||
      ow.size() != dn.update_window_dims.size() ||
      urank != static_cast<int>(dn.update_window_dims.size()) + irank - 1)
    bad(op,
        "updates must have one window dim per operand dim that is not inserted or batching, plus "
        "the indices' batch dims",
        "updates " + U.str() + " with update_window_dims=" + ints(dn.update_window_dims) +
            " for operand " + O.str() + " and indices " + I.str(),
        std::to_string(ow.size()) + " sorted window dims and rank " +
            std::to_string(ow.size() + irank - 1) + ".");
  for (size_t j = 0; j < ow.size(); ++j)
    if (U.shape[dn.update_window_dims[j]] > O.shape[ow[j]])
      bad(op, "an update window is larger than the operand", U.str() + " into " + O.str(),
          "window sizes within the operand shape.");
  std::vector<int> us = dims_except(urank, dn.update_window_dims, {});
  for (int k = 0; k < irank - 1; ++k)
    if (U.shape[us[k]] != I.shape[k])
      bad(op, "update scatter dims must match the indices' batch dims", U.str() + " and " + I.str(),
          "equal sizes.");
  if (dn.operand_batching_dims.size() != dn.scatter_indices_batching_dims.size())
    bad(op, "operand and indices batching dims must pair up",
        ints(dn.operand_batching_dims) + " and " + ints(dn.scatter_indices_batching_dims),
        "lists of equal length.");
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i)
    if (O.shape[dn.operand_batching_dims[i]] != I.shape[dn.scatter_indices_batching_dims[i]])
      bad(op, "paired batching dims must have equal sizes", O.str() + " and " + I.str(),
          "equal sizes.");
  if (out_sharding_) {
    check_unreduced_move(O, *out_sharding_, op);
    return {make_type(O.shape, O.dtype, O.weak, *out_sharding_)};
  }

  const PartitionSpec sets = scatter_sets(kind_, op, O, I, U);
  AbstractMesh mesh = rule_mesh(in);
  auto eo = entries_of(O), ei = entries_of(I), eu = entries_of(U);
  if (all_none({eo, ei, eu}))
    return {make_type(O.shape, O.dtype, O.weak, mesh, nones(orank), sets)};
  const auto& ob = dn.operand_batching_dims;
  const auto& ib = dn.scatter_indices_batching_dims;
  const auto& uw = dn.update_window_dims;
  std::vector<int> ub;
  for (int k : ib) ub.push_back(us[k]);
  bool ok = true;
  for (size_t i = 0; i < ob.size(); ++i) {
    std::set<Axes> distinct;
    for (const auto* e : {&eo[ob[i]], &ei[ib[i]], &eu[ub[i]]})
      if (!none(*e)) distinct.insert(e->axes());
    ok = ok && distinct.size() <= 1;
  }
  for (size_t j = 0; j < uw.size(); ++j)
    ok = ok && ((U.shape[uw[j]] == O.shape[ow[j]] && eu[uw[j]] == eo[ow[j]]) ||
                (none(eu[uw[j]]) && none(eo[ow[j]])));
  for (int d : dn.inserted_window_dims) ok = ok && none(eo[d]);
  for (int d = 0; d < urank; ++d) ok = ok && (has_dim(uw, d) || has_dim(ub, d) || none(eu[d]));
  for (int d = 0; d < irank; ++d) ok = ok && (has_dim(ib, d) || none(ei[d]));
  if (ok) {
    auto out = eo;
    for (size_t i = 0; i < ob.size(); ++i)
      if (none(out[ob[i]])) out[ob[i]] = none(ei[ib[i]]) ? eu[ub[i]] : ei[ib[i]];
    for (size_t j = 0; j < uw.size(); ++j)
      if (none(out[ow[j]])) out[ow[j]] = eu[uw[j]];
    return {make_type(O.shape, O.dtype, O.weak, mesh, out, sets)};
  }
  // Tessera: when every axis sharding the indices and updates also shards the
  // operand, the operand's sharding is the only candidate (design 0005).
  std::set<std::string> oa = axes_in(eo), iu = axes_in(ei);
  for (const auto& a : axes_in(eu)) iu.insert(a);
  if (std::includes(oa.begin(), oa.end(), iu.begin(), iu.end()))
    return {make_type(O.shape, O.dtype, O.weak, mesh, eo, sets)};
  throw ShardingTypeError(
      "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for the "
      "scatter update as out sharding could not be resolved unambiguously (or would require "
      "collectives on inputs). Got operand=" +
      O.str() + ", indices=" + I.str() + ", updates=" + U.str());
}

Lowering Scatter::partition(const std::vector<ArrayType>& in,
                            const std::vector<ArrayType>& out) const {
  const ArrayType& O = in[0];
  const ArrayType& I = in[1];
  const ArrayType& U = in[2];
  const auto& dn = dims_;
  auto L = entries_of(out[0]);
  auto ei = nones(I.ndim()), eu = nones(U.ndim());
  std::vector<int> us = dims_except(U.ndim(), dn.update_window_dims, {});
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
    int k = dn.scatter_indices_batching_dims[i];
    ei[k] = eu[us[k]] = L[dn.operand_batching_dims[i]];
  }
  std::vector<int> ow = dims_except(O.ndim(), dn.inserted_window_dims, dn.operand_batching_dims);
  for (size_t j = 0; j < ow.size(); ++j) {
    int u = dn.update_window_dims[j];
    // A full window starts at 0: its block lands in the same device's block.
    if (U.shape[u] == O.shape[ow[j]]) eu[u] = L[ow[j]];
  }
  // Updates elsewhere are replicated; each device applies those that land in its block.
  // Unreduced operand and updates stay partial (scatter_sets checked they combine).
  const PartitionSpec& os = out_sharding_ ? PartitionSpec() : O.sharding.spec();
  return {{with_sets_of(L, os), spec_of(ei), with_sets_of(eu, os)}, {with_sets_of(L, os)}};
}

std::string Scatter::params() const {
  const auto& d = dims_;
  return "dimension_numbers=ScatterDimensionNumbers(update_window_dims=" +
         ints(d.update_window_dims) + ", inserted_window_dims=" + ints(d.inserted_window_dims) +
         ", scatter_dims_to_operand_dims=" + ints(d.scatter_dims_to_operand_dims) +
         ", operand_batching_dims=" + ints(d.operand_batching_dims) +
         ", scatter_indices_batching_dims=" + ints(d.scatter_indices_batching_dims) +
         ") mode=" + mode_name(mode_) + " indices_are_sorted=" + (sorted_ ? "True" : "False") +
         " unique_indices=" + (unique_ ? "True" : "False") +
         " out_sharding=" + p_sharding(out_sharding_);
}

// ---- autodiff rules ----------------------------------------------------------------
// lax's rules (slicing.py), with Tessera's deterministic scatter: gather is linear in
// the operand (transpose: scatter_add into zeros); scatter, scatter_add and
// scatter_sub are linear in (operand, updates) jointly; scatter_mul is linear in the
// operand and has an exact jvp in the updates; scatter_min/max split ties evenly
// (_scatter_extremal_jvp). Indices never have tangents. Every helper gather and
// scatter is typed through out_sharding, so no rule depends on a layout guess.

namespace {

// out_sharding for a value of type t: its entries, without unreduced/reduced sets.
// A type off-mesh gets P() on like's mesh: values on a mesh and off it mix (one
// device), and a helper gather/scatter must be typed on one.
std::optional<NamedSharding> plain_os(const ArrayType& t, const Array& like) {
  if (!t.sharding.mesh().empty()) return NamedSharding(t.sharding.mesh(), spec_of(entries_of(t)));
  const AbstractMesh& m = like.type().sharding.mesh();
  if (m.empty()) return std::nullopt;
  return NamedSharding(m, P());
}

// t with its plain sharding (see plain_os) and dtype d.
ArrayType plain_type(const ArrayType& t, DType d, const Array& like) {
  ArrayType r = t;
  r.dtype = d;
  r.weak = false;
  if (auto os = plain_os(t, like)) r.sharding = *os;
  return r;
}

// JAX's map between a scatter's dimension numbers and the gather reading back what
// it writes (_gather_transpose_rule, _scatter_add_transpose_rule).
GatherDimensionNumbers gather_dims_of(const ScatterDimensionNumbers& d) {
  return {d.update_window_dims, d.inserted_window_dims, d.scatter_dims_to_operand_dims,
          d.operand_batching_dims, d.scatter_indices_batching_dims};
}
ScatterDimensionNumbers scatter_dims_of(const GatherDimensionNumbers& d) {
  return {d.offset_dims, d.collapsed_slice_dims, d.start_index_map, d.operand_batching_dims,
          d.start_indices_batching_dims};
}

// The gather slice sizes of a scatter's windows: 1 on inserted and batching dims.
Shape window_sizes(const ScatterDimensionNumbers& d, int orank, const Shape& updates) {
  Shape s;
  size_t pos = 0;
  for (int i = 0; i < orank; ++i)
    s.push_back(has_dim(d.inserted_window_dims, i) || has_dim(d.operand_batching_dims, i)
                    ? 1
                    : updates[static_cast<size_t>(d.update_window_dims[pos++])]);
  return s;
}

// x (operand-shaped) read at the elements scatter `s` writes each update element to:
// updates-shaped, typed like `upd` (0 where an update is dropped out of bounds).
Array read_back(const Scatter& s, const Array& x, const Array& idx, const ArrayType& upd) {
  // An empty operand: no update lands (and a window may be wider than a size-0 dim,
  // which a gather refuses): what reads back is zeros.
  if (x.size() == 0) return zeros_of(plain_type(upd, x.dtype(), x), x);
  auto g = std::make_shared<Gather>(gather_dims_of(s.dims()),
                                    window_sizes(s.dims(), x.ndim(), upd.shape), s.mode(), 0.0,
                                    s.sorted(), s.unique(), plain_os(upd, x));
  return bind1(g, {x, idx});
}

// A scatter of kind k with s's dimension numbers and mode, typed like `out`.
Array scatter_as(const Scatter& s, ScatterKind k, const Array& operand, const Array& idx,
                 const Array& updates, const ArrayType& out) {
  return bind1(std::make_shared<Scatter>(k, s.dims(), s.mode(), s.sorted(), s.unique(),
                                         plain_os(out, operand)),
               {operand, idx, updates});
}

// A replicated int32 iota along dim of `shape` on like's mesh (its devices eagerly).
Array iota_on(const Shape& shape, int dim, const Array& like) {
  const AbstractMesh& m = like.type().sharding.mesh();
  if (m.empty()) return broadcasted_iota(DType::Int32, shape, dim);
  if (!current_trace() && like.sharding().concrete_mesh())
    return broadcasted_iota(DType::Int32, shape, dim,
                            NamedSharding(*like.sharding().concrete_mesh(), P()));
  return broadcasted_iota(DType::Int32, shape, dim, NamedSharding(m, P()));
}

// 1 + the number of each update window, shared by the window's elements (JAX's
// update_ids of _scatter_jvp): updates-shaped int32 typed like `upd`.
Array update_ids(const ScatterDimensionNumbers& d, const ArrayType& upd, const Array& like) {
  Shape ids = upd.shape;
  for (int w : d.update_window_dims) ids[static_cast<size_t>(w)] = 1;
  Array flat = iota_on({numel(ids)}, 0, like);
  std::vector<int> dims;
  for (int i = 0; i < upd.ndim(); ++i) dims.push_back(i);
  auto os = plain_os(upd, like);
  Array r =
      broadcast_in_dim(reshape(flat, ids), upd.shape, dims, os ? ShardingArg(*os) : ShardingArg());
  return r + 1;
}

}  // namespace

Array gather_along(const Array& x, const Array& idx, int dim, const ArrayType& out) {
  // An empty x (a size-0 dim, which a slice of size 1 would exceed): so is the result.
  if (x.size() == 0) return zeros_of(plain_type(out, x.dtype(), x), x);
  GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = {dim};
  dn.start_index_map = {dim};
  for (int d = 0; d < x.ndim(); ++d)
    if (d != dim) {
      dn.operand_batching_dims.push_back(d);
      dn.start_indices_batching_dims.push_back(d);
    }
  Shape ones(static_cast<size_t>(x.ndim()), 1);
  return bind1(std::make_shared<Gather>(dn, ones, IndexMode::PromiseInBounds, 0.0, false, false,
                                        plain_os(out, x)),
               {x, expand_dims(idx, -1)});
}

std::vector<Array> Gather::jvp(const std::vector<Array>& primals,
                               const std::vector<Array>& tangents, std::vector<Array>&) const {
  if (!tangents[0].valid()) return {Array()};
  // Out-of-bounds slices are a constant fill: their tangent is 0.
  auto g =
      std::make_shared<Gather>(dims_, slice_sizes_, mode_, 0.0, sorted_, unique_, out_sharding_);
  return {bind1(g, {tangents[0], primals[1]})};
}

std::vector<Array> Gather::transpose(const std::vector<Array>& cts,
                                     const std::vector<LinearIn>& ins) const {
  if (!ins[0].linear()) return {Array(), Array()};
  // lax's _gather_transpose_rule: scatter_add the cotangent (in its own dtype) into
  // zeros, in the same mode, so clipped reads add to the clipped element and
  // filled ones are dropped.
  const Array& ct = cts[0];
  ArrayType want = plain_type(ct_type(ins[0].type), ct.dtype(), ct);
  auto s = std::make_shared<Scatter>(ScatterKind::Add, scatter_dims_of(dims_), mode_, sorted_,
                                     unique_, plain_os(want, ct));
  return {bind1(s, {zeros_of(want, ct), ins[1].value, ct}), Array()};
}

std::vector<Array> Scatter::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents,
                                std::vector<Array>& outs) const {
  const Array &x = primals[0], &idx = primals[1], &u = primals[2], &out = outs[0];
  Array like = ad::first_valid(tangents);
  auto back = [&](const Array& a) { return read_back(*this, a, idx, u.type()); };
  auto zeros_out = [&]() { return zeros_of(plain_type(out.type(), out.dtype(), out), out); };
  switch (kind_) {
    case ScatterKind::Add:
    case ScatterKind::Sub:
      if (!tangents[2].valid()) return {tangents[0]};  // adding constants: dx passes
      [[fallthrough]];
    case ScatterKind::Set:
      // Linear in (operand, updates) for fixed indices; a set picks the same winners
      // for the tangents as for the primal (the last update wins, deterministically).
      return ad::rebind(*this, {ad::instantiate(tangents[0], x.type(), like), idx,
                                ad::instantiate(tangents[2], u.type(), like)});
    case ScatterKind::Mul: {
      // out = x * P with P = prod of the updates at each element. JAX needs
      // unique_indices; here dP = sum_k g_k * E_k with E_k the product of the other
      // updates at k's element (docs/design/0009): P / u_k when u_k != 0; when u_k
      // is a zero, the product of the non-zero ones times that of the other zeros:
      // 1 if there are none, the other zero (as sum of zeros - u_k) if one, else 0.
      // Each form's own derivatives are E_k's, so the rule is exact to order 2
      // everywhere (beyond, unless three or more zero updates meet).
      Array ones = zeros_out() + 1.0;
      auto add_back = [&](const Array& v) {
        return back(scatter_as(*this, ScatterKind::Add, zeros_out(), idx, v, out.type()));
      };
      // In the operand it is linear: JAX's rule, scatter_mul of the tangent.
      Array tx = tangents[0].valid() ? ad::rebind(*this, {tangents[0], idx, u})[0] : Array();
      if (!tangents[2].valid()) return {tx};
      Array P = scatter_as(*this, ScatterKind::Mul, ones, idx, u, out.type());
      Array is0 = equal(u, 0.0), zero = zeros_like(u);
      Array safe_u = where(is0, ones_like(u), u);
      Array num_zeros = add_back(where(is0, ones_like(u), zero));
      Array other_zero = add_back(where(is0, u, zero)) - u;
      Array nonzero_prod = back(scatter_as(*this, ScatterKind::Mul, ones, idx, safe_u, out.type()));
      Array E0 = where(equal(num_zeros, 1.0), nonzero_prod,
                       where(equal(num_zeros, 2.0), nonzero_prod * other_zero, zero));
      Array E = where(is0, E0, back(P) / safe_u);
      Array dP = scatter_as(*this, ScatterKind::Add, zeros_out(), idx, ad::scale(tangents[2], E),
                            out.type());
      // x laid out as the output (an out_sharding may differ from x's layout).
      return {ad::add(tx, ad::scale(dP, ad::coerce(x, plain_type(out.type(), x.dtype(), out),
                                                   "scatter_mul", "tangent")))};
    }
    case ScatterKind::Min:
    case ScatterKind::Max: {
      // lax's _scatter_extremal_jvp: the updates reaching the extremum, and the
      // operand when it keeps it, share the tangent evenly. Helper arrays use this
      // scatter's mode (JAX's use the default fill mode).
      Array gx = ad::instantiate(tangents[0], x.type(), like);
      Array gu = ad::instantiate(tangents[2], u.type(), like);
      Array target = back(out);
      Array won = equal(u, target), kept = equal(back(x), target);
      auto count = [&](const Array& v) {
        return back(scatter_as(*this, ScatterKind::Add, zeros_out(), idx, v, out.type()));
      };
      Array num_updates = count(where(won, ones_like(u), zeros_like(u)));
      Array num_refs = count(ones_like(u));
      Array share = 1.0 / (num_updates + 1.0);
      Array upd_coef = where(won, where(kept, share, 1.0 / num_updates), zeros_like(u));
      // num_refs is 0 only for dropped updates; the guard keeps their (dropped) value finite.
      Array op_coef = (where(kept, share, zeros_like(u)) - 1.0) / maximum(num_refs, 1.0);
      Array tu = ad::add(ad::scale(back(gx), op_coef), ad::scale(gu, upd_coef));
      auto s = std::make_shared<Scatter>(ScatterKind::Add, dims_, mode_, sorted_, unique_,
                                         plain_os(out.type(), out));
      return {bind1(s, {gx, idx, tu})};
    }
  }
  return {Array()};
}

std::vector<Array> Scatter::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  const ArrayType& ut = ins[2].type;
  std::vector<Array> out(3);
  auto back = [&](const Array& a) { return read_back(*this, a, ins[1].value, ut); };
  switch (kind_) {
    case ScatterKind::Add:
    case ScatterKind::Sub:
      if (ins[0].linear()) out[0] = ct;
      if (ins[2].linear()) out[2] = kind_ == ScatterKind::Sub ? ad::negate(back(ct)) : back(ct);
      return out;
    case ScatterKind::Set: {
      // The operand's elements that some update overwrote get no cotangent; of the
      // updates landing on one element only the winner (the last) gets one, found as
      // JAX's _scatter_jvp does: scatter window ids, read them back, compare.
      if (ins[0].linear())
        out[0] = scatter_as(*this, ScatterKind::Set, ct, ins[1].value,
                            zeros_of(plain_type(ut, ct.dtype(), ct), ct), ct_type(ins[0].type));
      if (ins[2].linear()) {
        Array ids = update_ids(dims_, ut, ct);
        Array scattered = scatter_as(*this, ScatterKind::Set,
                                     zeros_of(plain_type(ins[0].type, DType::Int32, ct), ct),
                                     ins[1].value, ids, ins[0].type);
        Array g = back(ct);
        out[2] = where(equal(back(scattered), ids), g, zeros_like(g));
      }
      return out;
    }
    case ScatterKind::Mul:
      // Linear in the operand only: x * P transposes to ct * P.
      if (ins[2].linear()) return Primitive::transpose(cts, ins);
      if (ins[0].linear()) {
        Array u = ins[2].value;
        if (u.dtype() != ct.dtype()) u = astype(u, ct.dtype());
        out[0] = scatter_as(*this, ScatterKind::Mul, ct, ins[1].value, u, ct_type(ins[0].type));
      }
      return out;
    default:
      return Primitive::transpose(cts, ins);
  }
}

// ---- Batching rules (vmap): the batch becomes a batching dimension of the dimension
// numbers when operand and indices are both batched; a full window dimension of the
// operand when only it is; a leading batch dimension of the indices when only they
// are. Every case puts the output's batch at 0 and takes any out_sharding batched.

namespace {
std::vector<int> front0(const std::vector<int>& v) {
  std::vector<int> r = detail::shifted(v);
  r.insert(r.begin(), 0);
  return r;
}
}  // namespace

detail::Batched Gather::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  const bool ob = dims[0] >= 0, ib = dims[1] >= 0;
  Array op = ob ? detail::move_batch(args[0], dims[0], 0) : args[0];
  Array idx = ib ? detail::move_batch(args[1], dims[1], 0) : args[1];
  GatherDimensionNumbers d = dims_;
  Shape ss = slice_sizes_;
  if (ob) {
    d.collapsed_slice_dims = detail::shifted(d.collapsed_slice_dims);
    d.start_index_map = detail::shifted(d.start_index_map);
    d.operand_batching_dims = detail::shifted(d.operand_batching_dims);
  }
  if (ib) d.start_indices_batching_dims = detail::shifted(d.start_indices_batching_dims);
  if (ob && ib) {
    d.operand_batching_dims.insert(d.operand_batching_dims.begin(), 0);
    d.start_indices_batching_dims.insert(d.start_indices_batching_dims.begin(), 0);
    d.offset_dims = detail::shifted(d.offset_dims);
    ss.insert(ss.begin(), 1);
  } else if (ob) {
    d.offset_dims = front0(d.offset_dims);  // the batch: operand's first window dim
    ss.insert(ss.begin(), detail::batch_axis().size);
  } else {
    d.offset_dims = detail::shifted(d.offset_dims);  // output dim 0: indices' dim 0
  }
  auto p = std::make_shared<Gather>(
      d, ss, mode_, fill_, sorted_, unique_,
      out_sharding_ ? detail::batched_sharding(out_sharding_, 0, name())
                    : detail::batched_out_sharding(*this, args, dims, 0, 0));
  return {{detail::bind1(p, {op, idx})}, {0}};
}

detail::Batched Scatter::batch(const std::vector<Array>& args,
                               const std::vector<int>& dims) const {
  Array op = detail::batch_at_front(args[0], dims[0]);
  Array upd = detail::batch_at_front(args[2], dims[2]);
  const bool ib = dims[1] >= 0;
  Array idx = ib ? detail::move_batch(args[1], dims[1], 0) : args[1];
  ScatterDimensionNumbers d = dims_;
  d.inserted_window_dims = detail::shifted(d.inserted_window_dims);
  d.scatter_dims_to_operand_dims = detail::shifted(d.scatter_dims_to_operand_dims);
  if (ib) {
    d.operand_batching_dims = front0(d.operand_batching_dims);
    d.scatter_indices_batching_dims = front0(d.scatter_indices_batching_dims);
    d.update_window_dims = detail::shifted(d.update_window_dims);  // updates' dim 0: indices'
  } else {
    d.operand_batching_dims = detail::shifted(d.operand_batching_dims);
    d.update_window_dims = front0(d.update_window_dims);  // a full window over the batch
  }
  auto p = std::make_shared<Scatter>(
      kind_, d, mode_, sorted_, unique_,
      out_sharding_ ? detail::batched_sharding(out_sharding_, 0, name())
                    : detail::batched_out_sharding(*this, args, dims, 0, 0));
  return {{detail::bind1(p, {op, idx, upd})}, {0}};
}

}  // namespace tsr::prim
