// Rules of gather (spec §12.13) and scatter (§12.14). The partitioners derive every
// input layout from the output layout, so the kernels (which work in global
// coordinates) find what they read on the device; see docs/design/0005.
#include "tsr/prims/gather_scatter.h"

#include <algorithm>
#include <set>

#include "tsr/prims/common.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/sharding/format.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {

const bool registered = [] {
  for (const char* n : {"gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul",
                        "scatter_min", "scatter_max"})
    register_primitive(n);
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

}  // namespace tsr::prim
