#include "tsr/prims/shard_map.h"

#include <algorithm>
#include <set>

#include "tsr/error.h"
#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("shard_map") &&
    declare_ad("shard_map", AdKind::NonDifferentiable,
               "AD through shard_map arrives with issue 12 item 4");

// The product of the sizes of a spec entry's axes.
int64_t entry_prod(const PartitionEntry& e, const AbstractMesh& m) {
  int64_t p = 1;
  for (const auto& a : e.axes()) p *= m.axis_size(a);
  return p;
}
}  // namespace

std::vector<ArrayType> ShardMap::infer(const std::vector<ArrayType>& in) const {
  const AbstractMesh& am = mesh_.abstract_mesh();
  std::vector<ArrayType> want = body_->in_types();
  if (in.size() != want.size())
    throw TypeError("[shard_map] the call has " + std::to_string(in.size()) +
                    " inputs. Got that; expected " + std::to_string(want.size()) + ".");
  std::vector<ArrayType> out;
  std::vector<ArrayType> body_out = body_->out_types();
  for (size_t j = 0; j < body_out.size(); ++j) {
    const ArrayType& b = body_out[j];
    const PartitionSpec& s = out_specs_[j];
    Shape shape = b.shape;
    std::vector<PartitionEntry> e = s.normalized(b.ndim()).entries();
    for (int d = 0; d < b.ndim(); ++d) shape[d] *= entry_prod(e[d], am);
    ArrayType t;
    t.shape = shape;
    t.dtype = b.dtype;
    t.weak = b.weak;
    t.sharding = type_sharding(NamedSharding(am, PartitionSpec(e)), shape);
    out.push_back(t);
  }
  return out;
}

std::string ShardMap::params() const {
  std::string s = "name=" + fn_ + " mesh=" + mesh_.abstract_mesh().str() + " in_specs=(";
  for (size_t i = 0; i < in_specs_.size(); ++i) s += (i ? ", " : "") + in_specs_[i].repr();
  s += ") out_specs=(";
  for (size_t i = 0; i < out_specs_.size(); ++i) s += (i ? ", " : "") + out_specs_[i].repr();
  return s + ") manual_axes=" + axis_names_tuple(manual_) +
         " check_vma=" + (check_vma_ ? "True" : "False");
}

}  // namespace tsr::prim
