#include <algorithm>

#include "tsr/array.h"
#include "tsr/error.h"

namespace tsr {
namespace {

std::string axes_label(const std::vector<std::string>& axes) {
  if (axes.size() == 1) return axes[0];
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + axes[i];
  return s + ")";
}

std::string set_label(const std::set<std::string>& s) {
  return axes_label(std::vector<std::string>(s.begin(), s.end()));
}

}  // namespace

std::string ArrayType::str() const {
  std::string s = weak ? "~" : "";
  s += dtype_short_name(dtype);
  s += "[";
  const auto& entries = sharding.spec().entries();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d) s += ",";
    s += std::to_string(shape[d]);
    if (d < entries.size() && !entries[d].axes().empty()) s += "@" + axes_label(entries[d].axes());
  }
  s += "]";
  std::vector<std::string> parts;
  if (!vma.empty()) parts.push_back("V:" + set_label(vma));
  const auto& spec = sharding.spec();
  // Manual axes' unreduced / reduced sets print with the mesh axes' (as JAX's).
  std::set<std::string> u = spec.unreduced(), r = spec.reduced();
  u.insert(munreduced.begin(), munreduced.end());
  r.insert(mreduced.begin(), mreduced.end());
  if (!u.empty()) {
    const char* k = spec.unreduced().empty() || spec.unreduced_kind() == UnreducedKind::Sum ? "U:"
                    : spec.unreduced_kind() == UnreducedKind::Max ? "U_max:"
                                                                  : "U_min:";
    parts.push_back(k + set_label(u));
  }
  if (!r.empty()) parts.push_back("R:" + set_label(r));
  if (!parts.empty()) {
    s += "{";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
    s += "}";
  }
  return s;
}

bool ArrayType::operator==(const ArrayType& o) const {
  if (shape != o.shape || dtype != o.dtype || vma != o.vma || munreduced != o.munreduced ||
      mreduced != o.mreduced)
    return false;
  const AbstractMesh &a = sharding.mesh(), &b = o.sharding.mesh();
  bool any_explicit = !a.explicit_axes().empty() || !b.explicit_axes().empty();
  if (any_explicit && !a.empty() && !b.empty()) return sharding == o.sharding;
  return true;
}

std::ostream& operator<<(std::ostream& os, const ArrayType& t) { return os << t.str(); }

NamedSharding type_sharding(const NamedSharding& s, const Shape& shape) {
  int rank = static_cast<int>(shape.size());
  const AbstractMesh& mesh = s.mesh();
  if (mesh.empty()) return NamedSharding(AbstractMesh(), PartitionSpec().normalized(rank));
  PartitionSpec spec = s.spec();
  // Only Explicit axes live in types (spec §10.2 step 2).
  if (!mesh.are_all_axes_explicit()) {
    auto keep = [&](const std::string& a) { return mesh.axis_type(a) == AxisType::Explicit; };
    std::vector<PartitionEntry> entries;
    for (const auto& e : spec.entries()) {
      if (e.is_unconstrained()) {
        entries.emplace_back();
        continue;
      }
      Axes kept;
      for (const auto& a : e.axes())
        if (keep(a)) kept.push_back(a);
      entries.emplace_back(kept);
    }
    std::set<std::string> u, r;
    for (const auto& a : spec.unreduced())
      if (keep(a)) u.insert(a);
    for (const auto& a : spec.reduced())
      if (keep(a)) r.insert(a);
    spec = PartitionSpec(entries, u, r, spec.unreduced_kind());
  }
  if (spec.size() > rank) {
    bool trivial_mesh = mesh.explicit_axes().empty();
    if (!trivial_mesh)
      throw ValueError("[type] Length of sharding.spec (" + std::to_string(spec.size()) +
                       ") must be equal to aval's ndim (" + std::to_string(rank) +
                       "). Got sharding.spec " + spec.repr() + ", aval.ndim " +
                       std::to_string(rank) + " and sharding " + s.str() +
                       ". Use a spec with at most one entry per dimension.");
    std::vector<PartitionEntry> entries(spec.entries().begin(), spec.entries().begin() + rank);
    spec = PartitionSpec(entries, spec.unreduced(), spec.reduced(), spec.unreduced_kind());
  }
  spec = spec.normalized(rank);
  NamedSharding out(mesh, spec);
  for (int d = 0; d < rank; ++d) {
    int64_t t = 1;
    for (const auto& a : spec.entries()[d].axes()) t *= mesh.axis_size(a);
    if (shape[d] % t != 0) {
      const auto& ax = spec.entries()[d].axes();
      std::string entry = "(";
      for (size_t i = 0; i < ax.size(); ++i) entry += (i ? ", '" : "'") + ax[i] + "'";
      entry += ax.size() == 1 ? ",)" : ")";
      std::string shp = shape_str(shape);
      // A ValueError, not IndivisibleError: JAX's type check (E23) vs shard_shape (E22).
      throw ValueError("[type] Sharding spec " + entry + " implies that array axis " +
                       std::to_string(d) + " is partitioned " + std::to_string(t) +
                       " times, but does not evenly divide the dimension size " +
                       std::to_string(shape[d]) + ". Got shape: " + shp + " and sharding " +
                       out.str() + ". Make the dimension a multiple of " + std::to_string(t) +
                       " or shard it over fewer devices.");
    }
  }
  return out;
}

}  // namespace tsr
