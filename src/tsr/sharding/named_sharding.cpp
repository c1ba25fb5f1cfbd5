#include <algorithm>
#include <functional>
#include <map>

#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/sharding.h"
#include "tsr/sharding/format.h"

namespace tsr {
using detail::ints_tuple;
using detail::names_tuple;
using detail::types_tuple;

namespace {

// spec §7.1 check_pspec.
void check_pspec(const AbstractMesh& mesh, const PartitionSpec& spec) {
  std::map<std::string, int> count;
  for (const auto& a : spec.partition_axes()) ++count[a];
  std::string dups;
  for (const auto& [a, n] : count)
    if (n > 1) dups += (dups.empty() ? "`" : ", `") + a + "`";
  if (!dups.empty())
    throw DuplicateSpecError(
        "[NamedSharding] A single NamedSharding spec specification can map every mesh axis to at "
        "most one positional dimension, but " +
        spec.repr() + " has duplicate entries for " + dups +
        ". Use each mesh axis on at most one dimension.");
  for (const auto& e : spec.entries())
    for (const auto& a : e.axes())
      if (mesh.axis_index(a) < 0)
        throw ValueError("[NamedSharding] Resource axis: " + a + " of " + spec.repr() +
                         " is not found in mesh: " + names_tuple(mesh.axis_names()) +
                         ". Use one of the mesh's axis names.");
  bool any_unconstrained =
      std::any_of(spec.entries().begin(), spec.entries().end(),
                  [](const PartitionEntry& e) { return e.is_unconstrained(); });
  if (any_unconstrained && mesh.auto_axes().empty())
    throw ValueError("[NamedSharding] " + spec.repr() +
                     " cannot contain `P.UNCONSTRAINED` when no mesh axis_types are `Auto`. Got "
                     "mesh axis_types: " +
                     types_tuple(mesh.axis_types()) +
                     ". Make an axis Auto or name the sharding explicitly.");
  for (const auto* set : {&spec.unreduced(), &spec.reduced()}) {
    const char* what = set == &spec.unreduced() ? "Unreduced" : "Reduced";
    for (const auto& a : *set) {
      if (mesh.axis_index(a) < 0)
        throw ValueError(std::string("[NamedSharding] ") + what + " axes " + a +
                         " is not found in mesh.axis_names=" + names_tuple(mesh.axis_names()) +
                         ". Got pspec=" + spec.repr());
      if (mesh.axis_type(a) != AxisType::Explicit)
        throw ValueError(std::string("[NamedSharding] ") + what +
                         " axes can only refer to mesh axes that is of type `Explicit`. Got " +
                         (set == &spec.unreduced() ? "unreduced" : "reduced") + " axes: " + a +
                         " and mesh: " + mesh.str());
    }
  }
}

}  // namespace

std::string index_str(const ShardIndex& index) {
  std::string s = "(";
  for (size_t i = 0; i < index.size(); ++i) {
    if (i) s += ", ";
    s += index[i].full ? ":" : std::to_string(index[i].start) + ":" + std::to_string(index[i].stop);
  }
  if (index.size() == 1) s += ",";
  return s + ")";
}

NamedSharding::NamedSharding(const Mesh& mesh, PartitionSpec spec)
    : abstract_(mesh.abstract_mesh()), mesh_(mesh), spec_(std::move(spec)) {
  check_pspec(abstract_, spec_);
}

NamedSharding::NamedSharding(const AbstractMesh& mesh, PartitionSpec spec)
    : abstract_(mesh), spec_(std::move(spec)) {
  check_pspec(abstract_, spec_);
}

void NamedSharding::check_rank(int rank) const {
  if (spec_.size() > rank)
    throw ValueError("[NamedSharding] Sharding " + str() +
                     " is only valid for values of rank at least " + std::to_string(spec_.size()) +
                     ", but was applied to a value of rank " + std::to_string(rank) + "." +
                     (rank == 0 ? " For scalars the PartitionSpec should be P()" : ""));
}

std::vector<int64_t> NamedSharding::tiling(int rank) const {
  std::vector<int64_t> t(static_cast<size_t>(rank), 1);
  for (int d = 0; d < std::min(rank, spec_.size()); ++d)
    for (const auto& a : spec_.entries()[d].axes()) t[d] *= abstract_.axis_size(a);
  return t;
}

Shape NamedSharding::shard_shape(const Shape& global_shape) const {
  int rank = static_cast<int>(global_shape.size());
  check_rank(rank);
  auto t = tiling(rank);
  Shape out(global_shape);
  for (int d = 0; d < rank; ++d) {
    if (global_shape[d] % t[d] != 0)
      throw IndivisibleError(
          "[NamedSharding] " + str() + " implies that array axis " + std::to_string(d) +
          " is partitioned " + std::to_string(t[d]) + " times, but the dimension size is " +
          std::to_string(global_shape[d]) + " (full shape: " + ints_tuple(global_shape) +
          ", per-dimension tiling factors: " + ints_tuple(t) +
          " should evenly divide the shape). Pad the dimension to a multiple "
          "of " +
          std::to_string(t[d]) + " or shard it over fewer devices.");
    out[d] = global_shape[d] / t[d];
  }
  return out;
}

std::vector<int64_t> NamedSharding::chunk_of(int flat_index, int rank) const {
  // Mesh coordinates by mixed radix over the abstract sizes (row-major).
  const auto& sizes = abstract_.axis_sizes();
  std::vector<int> c(sizes.size());
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    c[i] = flat_index % sizes[i];
    flat_index /= sizes[i];
  }
  std::vector<int64_t> q(static_cast<size_t>(rank), 0);
  for (int d = 0; d < std::min(rank, spec_.size()); ++d)
    for (const auto& a : spec_.entries()[d].axes()) {
      int i = abstract_.axis_index(a);
      q[d] = q[d] * sizes[i] + c[i];
    }
  return q;
}

ShardIndex NamedSharding::index_of(int flat_index, const Shape& global_shape) const {
  int rank = static_cast<int>(global_shape.size());
  Shape local = shard_shape(global_shape);
  auto t = tiling(rank);
  auto q = chunk_of(flat_index, rank);
  ShardIndex idx(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    if (t[d] == 1)
      idx[d] = ShardSlice{0, global_shape[d], true};
    else
      idx[d] = ShardSlice{q[d] * local[d], (q[d] + 1) * local[d], false};
  }
  return idx;
}

std::vector<std::pair<Device, ShardIndex>> NamedSharding::devices_indices_map(
    const Shape& global_shape) const {
  if (!mesh_)
    throw ValueError("[devices_indices_map] the sharding has no devices. Got " + str() +
                     "; expected a NamedSharding on a concrete Mesh. Build it from a Mesh.");
  if (!spec_.unreduced().empty())
    throw NotImplementedError(
        "[devices_indices_map] device_indices_map doesn't work with unreduced. Got " + str() +
        "; every device holds a full-shape partial value along the unreduced axes.");
  std::vector<std::pair<Device, ShardIndex>> out;
  for (int i = 0; i < mesh_->size(); ++i)
    out.emplace_back(mesh_->devices()[i], index_of(i, global_shape));
  return out;
}

std::vector<std::string> NamedSharding::replicated_axes() const {
  std::vector<std::string> used = spec_.partition_axes();
  std::vector<std::string> out;
  for (const auto& a : abstract_.axis_names())
    if (std::find(used.begin(), used.end(), a) == used.end() && !spec_.unreduced().count(a) &&
        !spec_.reduced().count(a))
      out.push_back(a);
  return out;
}

int NamedSharding::replica_id(int flat_index) const {
  const auto& sizes = abstract_.axis_sizes();
  std::vector<int> c(sizes.size());
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    c[i] = flat_index % sizes[i];
    flat_index /= sizes[i];
  }
  std::vector<std::string> used = spec_.partition_axes();
  int id = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto& a = abstract_.axis_names()[i];
    if (std::find(used.begin(), used.end(), a) == used.end() && !spec_.unreduced().count(a))
      id = id * sizes[i] + c[i];
  }
  return id;
}

bool NamedSharding::is_fully_replicated() const {
  if (abstract_.size() <= 1) return true;
  if (!spec_.unreduced().empty()) return false;
  int64_t prod = 1;
  for (const auto& a : spec_.partition_axes()) prod *= abstract_.axis_size(a);
  return prod == 1;
}

NamedSharding NamedSharding::normalized(int rank) const {
  return with_spec(spec_.normalized(rank));
}

NamedSharding NamedSharding::with_spec(PartitionSpec spec) const {
  return mesh_ ? NamedSharding(*mesh_, std::move(spec)) : NamedSharding(abstract_, std::move(spec));
}

std::string NamedSharding::str() const {
  return "NamedSharding(mesh=" + (mesh_ ? mesh_->str() : abstract_.str()) +
         ", spec=" + spec_.repr() + ")";
}

bool NamedSharding::operator==(const NamedSharding& o) const {
  if (!(abstract_ == o.abstract_) || !(spec_ == o.spec_)) return false;
  if (mesh_.has_value() != o.mesh_.has_value()) return false;
  return !mesh_ || *mesh_ == *o.mesh_;
}

bool NamedSharding::is_equivalent_to(const NamedSharding& o, int rank) const {
  if (mesh_.has_value() != o.mesh_.has_value()) return false;
  auto ta = tiling(rank), tb = o.tiling(rank);
  // A shape every tiling divides, so both index maps exist.
  Shape probe(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) probe[d] = ta[d] * tb[d];
  auto dropped = [](const NamedSharding& s) {
    std::set<std::string> u;
    for (const auto& a : s.spec().unreduced())
      if (s.mesh().axis_size(a) > 1) u.insert(a);
    return u;
  };
  if (dropped(*this) != dropped(o)) return false;
  if (!mesh_)
    return abstract_ == o.abstract_ && ta == tb &&
           spec_.normalized(rank) == o.spec_.normalized(rank);
  std::map<int, ShardIndex> a, b;
  auto explicit_index = [&](const NamedSharding& s, int i) {
    ShardIndex idx = s.index_of(i, probe);
    for (auto& sl : idx) sl.full = false;
    return idx;
  };
  for (int i = 0; i < mesh_->size(); ++i)
    a[detail::slot(mesh_->devices()[i])] = explicit_index(*this, i);
  for (int i = 0; i < o.mesh_->size(); ++i)
    b[detail::slot(o.mesh_->devices()[i])] = explicit_index(o, i);
  return a == b;
}

size_t NamedSharding::hash() const {
  size_t h = mesh_ ? mesh_->hash() : abstract_.hash();
  return h ^ (spec_.hash() + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

std::ostream& operator<<(std::ostream& os, const NamedSharding& s) { return os << s.str(); }

SingleDeviceSharding::SingleDeviceSharding(const Device& d)
    : NamedSharding(device_mesh(d), PartitionSpec()) {}

}  // namespace tsr
