// dot_general's rule (spec §12.10) and partition: operands are laid out so each
// device multiplies its blocks; contracting dims sharded identically on both
// sides stay sharded and give partial sums (unreduced, reduced afterwards unless
// the type keeps them unreduced).
#include "tsr/prims/linalg.h"

#include <algorithm>
#include <set>

#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered = register_primitive("dot_general");

std::vector<int> free_dims(int rank, const std::vector<int>& contract,
                           const std::vector<int>& batch) {
  std::vector<int> f;
  for (int d = 0; d < rank; ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      f.push_back(d);
  return f;
}

std::string entries_at(const std::vector<PartitionEntry>& e, const std::vector<int>& dims) {
  std::vector<PartitionEntry> sel;
  for (int d : dims) sel.push_back(e[d]);
  return entries_tuple(sel);
}

std::string ints(const std::vector<int>& v) { return ints_tuple(v); }

}  // namespace

std::vector<ArrayType> DotGeneral::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &l = in.at(0), &r = in.at(1);
  const auto& d = dims_;
  auto check_dims = [&](const std::vector<int>& v, int rank, const char* what) {
    std::set<int> seen;
    for (int x : v)
      if (x < 0 || x >= rank || !seen.insert(x).second)
        throw TypeError(std::string("[dot_general] ") + what + " dimensions " + ints(v) +
                        " are out of range or repeated. Got rank " + std::to_string(rank) +
                        "; expected distinct dims in [0, " + std::to_string(rank) + ").");
  };
  check_dims(d.lhs_contract, l.ndim(), "lhs contracting");
  check_dims(d.rhs_contract, r.ndim(), "rhs contracting");
  check_dims(d.lhs_batch, l.ndim(), "lhs batch");
  check_dims(d.rhs_batch, r.ndim(), "rhs batch");
  if (d.lhs_contract.size() != d.rhs_contract.size() || d.lhs_batch.size() != d.rhs_batch.size())
    throw TypeError(
        "[dot_general] dot_general requires equal numbers of lhs and rhs contracting "
        "and batch dimensions. Got contracting " +
        ints(d.lhs_contract) + " and " + ints(d.rhs_contract) + ", batch " + ints(d.lhs_batch) +
        " and " + ints(d.rhs_batch) + "; expected pairs.");
  for (size_t i = 0; i < d.lhs_contract.size(); ++i)
    if (l.shape[d.lhs_contract[i]] != r.shape[d.rhs_contract[i]])
      throw TypeError(
          "[dot_general] dot_general requires contracting dimensions to have the same "
          "shape, got " +
          shape_str(l.shape) + " and " + shape_str(r.shape) + " contracting " +
          ints(d.lhs_contract) + " with " + ints(d.rhs_contract) +
          ". Transpose or reshape an operand so the contracted sizes agree.");
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.shape[d.lhs_batch[i]] != r.shape[d.rhs_batch[i]])
      throw TypeError(
          "[dot_general] dot_general requires lhs batch dimensions and rhs batch "
          "dimensions to have the same shape, got " +
          shape_str(l.shape) + " and " + shape_str(r.shape) + ". Make the batch sizes agree.");
  if (l.dtype != r.dtype)
    throw TypeError(std::string("[dot_general] dot_general requires operands of the same dtype. "
                                "Got ") +
                    dtype_name(l.dtype) + " and " + dtype_name(r.dtype) +
                    "; expected equal dtypes. The tsr::matmul front-end promotes for you.");
  if (!unreduced_of(l).empty() || !unreduced_of(r).empty())
    throw ShardingTypeError(
        "[dot_general] lhs or rhs passed to dot_general cannot be unreduced. "
        "Got lhs=" +
        l.str() + " and rhs=" + r.str() + ". Reduce them with reshard first.");
  std::vector<int> lf = free_dims(l.ndim(), d.lhs_contract, d.lhs_batch);
  std::vector<int> rf = free_dims(r.ndim(), d.rhs_contract, d.rhs_batch);
  Shape shape;
  for (int x : d.lhs_batch) shape.push_back(l.shape[x]);
  for (int x : lf) shape.push_back(l.shape[x]);
  for (int x : rf) shape.push_back(r.shape[x]);
  auto le = entries_of(l), re = entries_of(r);
  bool weak = l.weak && r.weak;
  if (out_sharding_) {
    const auto& U = out_sharding_->spec().unreduced();
    if (!U.empty()) {
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
      std::set<std::string> caxes;
      for (int x : d.lhs_contract)
        for (const auto& a : le[x].axes()) caxes.insert(a);
      if (caxes != U)
        throw ShardingTypeError(
            "[dot_general] out_sharding's unreduced axes should be equal to "
            "the contracting specs. Got unreduced axes=" +
            quoted_set(U) + " and contracting spec=" + ls + ". Name exactly those axes.");
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
  PartitionSpec sets({}, {}, !reduced_of(l).empty() ? reduced_of(l) : reduced_of(r));
  return {make_type(shape, out_dtype_, weak, mesh, oe, sets)};
}

Lowering DotGeneral::partition(const std::vector<ArrayType>& in,
                               const std::vector<ArrayType>& out) const {
  const ArrayType &l = in[0], &r = in[1];
  const auto& d = dims_;
  std::vector<int> lf = free_dims(l.ndim(), d.lhs_contract, d.lhs_batch);
  std::vector<int> rf = free_dims(r.ndim(), d.rhs_contract, d.rhs_batch);
  auto oe = entries_of(out[0]);
  auto le = entries_of(l), re = entries_of(r);
  std::set<std::string> used;
  for (const auto& e : oe)
    for (const auto& a : e.axes()) used.insert(a);
  std::vector<PartitionEntry> li(static_cast<size_t>(l.ndim())), ri(static_cast<size_t>(r.ndim()));
  size_t k = 0;
  for (size_t i = 0; i < d.lhs_batch.size(); ++i, ++k)
    li[d.lhs_batch[i]] = ri[d.rhs_batch[i]] = oe[k];
  for (int x : lf) li[x] = oe[k++];
  for (int x : rf) ri[x] = oe[k++];
  std::set<std::string> partial;
  for (size_t i = 0; i < d.lhs_contract.size(); ++i) {
    const auto& a = le[d.lhs_contract[i]];
    bool keep = !a.is_none() && a == re[d.rhs_contract[i]];
    for (const auto& n : a.axes()) keep = keep && !used.count(n) && !partial.count(n);
    if (!keep) continue;
    li[d.lhs_contract[i]] = ri[d.rhs_contract[i]] = a;
    for (const auto& n : a.axes()) partial.insert(n);
  }
  Lowering low;
  low.in.push_back(PartitionSpec(li, {}, reduced_of(l)));
  low.in.push_back(PartitionSpec(ri, {}, reduced_of(r)));
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

}  // namespace tsr::prim
