#include <algorithm>
#include <functional>

#include "tsr/error.h"
#include "tsr/sharding.h"
#include "tsr/sharding/format.h"

namespace tsr {
using detail::quoted_set;

namespace {

const char* kind_name(UnreducedKind k) {
  switch (k) {
    case UnreducedKind::Sum:
      return "sum";
    case UnreducedKind::Max:
      return "max";
    case UnreducedKind::Min:
      return "min";
  }
  return "sum";
}

}  // namespace

PartitionEntry::PartitionEntry(const char* axis) : PartitionEntry(std::string(axis ? axis : "")) {}

PartitionEntry::PartitionEntry(std::string axis) {
  if (!axis.empty()) axes_.push_back(std::move(axis));
}

PartitionEntry::PartitionEntry(Axes axes) : axes_(std::move(axes)) {
  for (const auto& a : axes_)
    if (a.empty())
      throw ValueError("[PartitionSpec] an axis tuple contains an empty name. Got (" +
                       std::to_string(axes_.size()) +
                       " axes); expected mesh axis names. Remove the empty entry.");
}

std::string PartitionEntry::repr() const {
  if (unconstrained_) return "P.UNCONSTRAINED";
  if (axes_.empty()) return "None";
  if (axes_.size() == 1) return "'" + axes_[0] + "'";
  std::string s = "(";
  for (size_t i = 0; i < axes_.size(); ++i) s += (i ? ", '" : "'") + axes_[i] + "'";
  return s + ")";
}

PartitionSpec::PartitionSpec(std::vector<PartitionEntry> entries, std::set<std::string> unreduced,
                             std::set<std::string> reduced, UnreducedKind kind)
    : entries_(std::move(entries)),
      unreduced_(std::move(unreduced)),
      reduced_(std::move(reduced)),
      kind_(kind) {
  check();
}

void PartitionSpec::check() const {
  for (const auto* set : {&unreduced_, &reduced_})
    if (set->count(""))
      throw ValueError(
          std::string("[PartitionSpec] ") + (set == &unreduced_ ? "unreduced" : "reduced") +
          " cannot contain an empty name. All elements in " +
          (set == &unreduced_ ? "unreduced" : "reduced") + " should refer to the mesh axes.");
  std::set<std::string> both;
  std::set_intersection(unreduced_.begin(), unreduced_.end(), reduced_.begin(), reduced_.end(),
                        std::inserter(both, both.begin()));
  if (!both.empty())
    throw ValueError(
        "[PartitionSpec] `unreduced` and `reduced` argument to PartitionSpec cannot overlap. Got "
        "unreduced: " +
        quoted_set(unreduced_) + " and reduced: " + quoted_set(reduced_) +
        ". Keep each axis in one set.");
  for (const auto& a : partition_axes()) {
    if (unreduced_.count(a))
      throw ValueError(
          "[PartitionSpec] partitions cannot overlap with unreduced axes passed to "
          "PartitionSpec. Got partitions: " +
          repr() + " and unreduced axes: " + quoted_set(unreduced_) +
          ". An axis either shards a dimension or holds partial sums, not both.");
    if (reduced_.count(a))
      throw ValueError(
          "[PartitionSpec] partitions cannot overlap with reduced axes passed to PartitionSpec. "
          "Got partitions: " +
          repr() + " and reduced axes: " + quoted_set(reduced_) + ".");
  }
}

const PartitionEntry& PartitionSpec::operator[](int i) const {
  if (!unreduced_.empty() || !reduced_.empty())
    throw ValueError(
        "[PartitionSpec] Using pspec[...] is dangerous when PartitionSpec has non-empty "
        "unreduced/reduced set. Please use spec.entries()[...]");
  if (i < 0 || i >= size())
    throw ValueError("[PartitionSpec] index out of range. Got " + std::to_string(i) +
                     "; expected 0 <= i < " + std::to_string(size()) + ".");
  return entries_[i];
}

std::vector<std::string> PartitionSpec::partition_axes() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.insert(out.end(), e.axes().begin(), e.axes().end());
  return out;
}

PartitionSpec PartitionSpec::normalized(int rank) const {
  PartitionSpec p = *this;
  for (auto& e : p.entries_)
    if (e.is_unconstrained()) e = PartitionEntry();
  while (p.size() < rank) p.entries_.emplace_back();
  return p;
}

PartitionSpec PartitionSpec::with_sets(std::set<std::string> unreduced,
                                       std::set<std::string> reduced, UnreducedKind kind) const {
  return PartitionSpec(entries_, std::move(unreduced), std::move(reduced), kind);
}

std::string PartitionSpec::repr() const {
  std::string s = "P(";
  for (size_t i = 0; i < entries_.size(); ++i) s += (i ? ", " : "") + entries_[i].repr();
  if (entries_.size() == 1) s += ",";
  std::string sets;
  if (!unreduced_.empty()) sets += "unreduced=" + quoted_set(unreduced_);
  if (!reduced_.empty())
    sets += (sets.empty() ? "" : ", ") + std::string("reduced=") + quoted_set(reduced_);
  if (!unreduced_.empty()) sets += std::string(", unreduced_kind=") + kind_name(kind_);
  if (!sets.empty()) s += (entries_.empty() ? "" : entries_.size() == 1 ? " " : ", ") + sets;
  return s + ")";
}

size_t PartitionSpec::hash() const {
  size_t h = std::hash<size_t>()(entries_.size());
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const auto& e : entries_) {
    mix(e.is_unconstrained() ? 1 : 2);
    for (const auto& a : e.axes()) mix(std::hash<std::string>()(a));
  }
  for (const auto& a : unreduced_) mix(std::hash<std::string>()(a) * 3);
  for (const auto& a : reduced_) mix(std::hash<std::string>()(a) * 5);
  mix(static_cast<size_t>(kind_));
  return h;
}

std::ostream& operator<<(std::ostream& os, const PartitionSpec& s) { return os << s.repr(); }

namespace {
void check_no_sets(const PartitionSpec& p, const std::vector<PartitionEntry>& other,
                   const char* op) {
  if (p.unreduced().empty() && p.reduced().empty()) return;
  std::string t = "(";
  for (size_t i = 0; i < other.size(); ++i) t += (i ? ", " : "") + other[i].repr();
  t += other.size() == 1 ? ",)" : ")";
  throw TypeError("[PartitionSpec] other " + t + " cannot be of instance `tuple` when self " +
                  p.repr() + " has " + (p.unreduced().empty() ? "reduced" : "unreduced") + " in `" +
                  op + "` of PartitionSpec. Add a PartitionSpec instead.");
}
}  // namespace

PartitionSpec PartitionSpec::operator+(const PartitionSpec& o) const {
  if (kind_ != o.kind_ && !unreduced_.empty() && !o.unreduced_.empty())
    throw TypeError(
        "[PartitionSpec] PartitionSpec can't be added if the unreduced_kind differs in self and "
        "other. Got self=" +
        repr() + " and other=" + o.repr() + ". Use one unreduced kind.");
  std::vector<PartitionEntry> e = entries_;
  e.insert(e.end(), o.entries_.begin(), o.entries_.end());
  std::set<std::string> u = unreduced_, r = reduced_;
  u.insert(o.unreduced_.begin(), o.unreduced_.end());
  r.insert(o.reduced_.begin(), o.reduced_.end());
  return PartitionSpec(std::move(e), std::move(u), std::move(r),
                       unreduced_.empty() ? o.kind_ : kind_);
}

PartitionSpec PartitionSpec::operator+(const std::vector<PartitionEntry>& entries) const {
  check_no_sets(*this, entries, "__add__");
  std::vector<PartitionEntry> e = entries_;
  e.insert(e.end(), entries.begin(), entries.end());
  return PartitionSpec(std::move(e));
}

PartitionSpec& PartitionSpec::operator+=(std::initializer_list<PartitionEntry> entries) {
  return *this = *this + std::vector<PartitionEntry>(entries);
}

PartitionSpec& PartitionSpec::operator+=(const PartitionSpec& o) { return *this = *this + o; }

PartitionSpec operator+(const std::vector<PartitionEntry>& entries, const PartitionSpec& p) {
  check_no_sets(p, entries, "__radd__");
  std::vector<PartitionEntry> e = entries;
  e.insert(e.end(), p.entries().begin(), p.entries().end());
  return PartitionSpec(std::move(e));
}

}  // namespace tsr
