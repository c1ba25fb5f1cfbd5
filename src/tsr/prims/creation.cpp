// Rules of the creation primitives (spec §12.1): the given sharding, else
// replicated on the context mesh. Kernels write each device's block.
#include "tsr/prims/creation.h"

#include <cstdio>

#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const bool registered =
    register_primitive("iota") && register_primitive("full") &&
    declare_ad("iota", AdKind::NonDifferentiable, "no inputs: a constant") &&
    declare_ad("full", AdKind::NonDifferentiable, "no inputs: a constant");

ArrayType placed_type(const Shape& shape, DType dtype, bool weak, const Placed& where) {
  if (where.sharding) return make_type(shape, dtype, weak, *where.sharding);
  return make_type(shape, dtype, weak, get_abstract_mesh(), PartitionSpec());
}

// Creation kernels write full values; added unreduced axes get zeros by the
// reshard the lowering adds after them.
Lowering creation_lowering(const ArrayType& t) {
  const PartitionSpec& s = t.sharding.spec();
  // max/min-unreduced copies of one value are that value: write it everywhere.
  if (s.unreduced_kind() != UnreducedKind::Sum) return {{}, {s}};
  return {{}, {PartitionSpec(s.entries(), {}, s.reduced())}};
}

}  // namespace

std::vector<ArrayType> Iota::infer(const std::vector<ArrayType>&) const {
  if (dim_ < -1 || dim_ >= static_cast<int>(shape_.size()))
    throw ValueError("[iota] dimension " + std::to_string(dim_) + " is out of range. Got shape " +
                     shape_str(shape_) + "; expected a dimension in [0, " +
                     std::to_string(shape_.size()) + ").");
  return {placed_type(shape_, dtype_, false, where_)};
}

Lowering Iota::partition(const std::vector<ArrayType>&, const std::vector<ArrayType>& out) const {
  return creation_lowering(out[0]);
}

std::string Iota::params() const {
  return std::string("dtype=") + dtype_name(dtype_) + " shape=" + ints_tuple(shape_) +
         " dimension=" + std::to_string(dim_) + " sharding=" + p_sharding(where_.sharding);
}

std::vector<ArrayType> Full::infer(const std::vector<ArrayType>&) const {
  return {placed_type(shape_, dtype_, weak_, where_)};
}

Lowering Full::partition(const std::vector<ArrayType>&, const std::vector<ArrayType>& out) const {
  return creation_lowering(out[0]);
}

std::string Full::params() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value_);
  return std::string("shape=") + ints_tuple(shape_) + " dtype=" + dtype_name(dtype_) +
         " value=" + buf + (weak_ ? " weak_type=True" : "") +
         " sharding=" + p_sharding(where_.sharding);
}

}  // namespace tsr::prim
