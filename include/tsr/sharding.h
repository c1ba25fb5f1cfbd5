#pragma once
/** PartitionSpec and NamedSharding (spec/sharding.md §6–§8): which mesh axes split
 *  each array dimension, and the shard geometry that follows. */
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/mesh.h"
#include "tsr/shape.h"

namespace tsr {

/** Marker for a dimension the compiler may shard as it likes (Auto axes only). */
struct UnconstrainedT {};
/** P(UNCONSTRAINED, ...). */
inline constexpr UnconstrainedT UNCONSTRAINED{};

/** Several mesh axes on one dimension, major first: P(Axes{"x", "y"}). */
using Axes = std::vector<std::string>;

/** How unreduced per-device values combine into the logical value. */
enum class UnreducedKind : uint8_t { Sum, Max, Min };

/** P(..., Unreduced{{"x"}}): the logical value is the sum (max, min) over these axes. */
struct Unreduced {
  std::set<std::string> axes;              /**< mesh axes the value is unreduced over */
  UnreducedKind kind = UnreducedKind::Sum; /**< how the partial values combine */
};
/** P(..., Reduced{{"x"}}): replicated over these axes; cotangents come back unreduced. */
struct Reduced {
  std::set<std::string> axes; /**< mesh axes the value is reduced over */
};

class PartitionEntry;
namespace detail {
/** What P(...) accepts: entries (names, nullptr, Axes, UNCONSTRAINED) and sets. */
template <typename T>
concept SpecArg =
    std::is_convertible_v<T, const char*> || std::is_same_v<std::decay_t<T>, std::string> ||
    std::is_same_v<std::decay_t<T>, std::nullptr_t> || std::is_same_v<std::decay_t<T>, Axes> ||
    std::is_same_v<std::decay_t<T>, UnconstrainedT> ||
    std::is_same_v<std::decay_t<T>, PartitionEntry> || std::is_same_v<std::decay_t<T>, Unreduced> ||
    std::is_same_v<std::decay_t<T>, Reduced>;
}  // namespace detail

/** One dimension's entry: unsharded, one or more mesh axes, or unconstrained. */
class PartitionEntry {
 public:
  /** Unsharded. */
  PartitionEntry() = default;
  /** Unsharded (P(nullptr)). */
  PartitionEntry(std::nullptr_t) {}
  /** One axis; "" means unsharded. */
  PartitionEntry(const char* axis);
  /** One axis; "" means unsharded. */
  PartitionEntry(std::string axis);
  /** Several axes, major first; {} is unsharded and {"x"} is "x". */
  PartitionEntry(Axes axes);
  /** Unconstrained. */
  PartitionEntry(UnconstrainedT) : unconstrained_(true) {}
  /** The axes, major first (empty when unsharded or unconstrained). */
  const Axes& axes() const { return axes_; }
  /** True when the dimension is not sharded. */
  bool is_none() const { return axes_.empty() && !unconstrained_; }
  /** True for UNCONSTRAINED. */
  bool is_unconstrained() const { return unconstrained_; }
  /** "None", "'x'", "('x', 'y')", "P.UNCONSTRAINED". */
  std::string repr() const;
  /** Structural equality. */
  bool operator==(const PartitionEntry&) const = default;

 private:
  Axes axes_;
  bool unconstrained_ = false;
};

/** A partition spec: one entry per leading dimension, plus unreduced/reduced axes.
 *  Spelled P("x", nullptr), P(Axes{"x", "y"}), P("x", Unreduced{{"y"}}). */
class PartitionSpec {
 public:
  /** P(): replicated, fits any rank. */
  PartitionSpec() = default;
  /** Entries in order; Unreduced and Reduced arguments set those sets. */
  template <typename... Args>
  requires(sizeof...(Args) > 0 && (detail::SpecArg<Args> && ...)) PartitionSpec(Args&&... args) {
    (add(std::forward<Args>(args)), ...);
    check();
  }
  /** Builds from a list of entries and sets. */
  PartitionSpec(std::vector<PartitionEntry> entries, std::set<std::string> unreduced = {},
                std::set<std::string> reduced = {}, UnreducedKind kind = UnreducedKind::Sum);

  /** Number of entries. */
  int size() const { return static_cast<int>(entries_.size()); }
  /** The entries. */
  const std::vector<PartitionEntry>& entries() const { return entries_; }
  /** Entry i; ValueError when unreduced/reduced sets are non-empty (as JAX). */
  const PartitionEntry& operator[](int i) const;
  /** Axes the value is unreduced over. */
  const std::set<std::string>& unreduced() const { return unreduced_; }
  /** Axes the value is reduced over. */
  const std::set<std::string>& reduced() const { return reduced_; }
  /** How unreduced values combine (meaningful when unreduced() is non-empty). */
  UnreducedKind unreduced_kind() const { return kind_; }
  /** Every mesh axis named in an entry, in order of appearance (duplicates kept). */
  std::vector<std::string> partition_axes() const;
  /** Pads with unsharded entries to `rank` and replaces UNCONSTRAINED by unsharded. */
  PartitionSpec normalized(int rank) const;
  /** Same entries with other unreduced/reduced sets. */
  PartitionSpec with_sets(std::set<std::string> unreduced, std::set<std::string> reduced,
                          UnreducedKind kind = UnreducedKind::Sum) const;
  /** "P('x', None)", "P('x',)", "P()", "P(unreduced={'x'}, unreduced_kind=sum)". */
  std::string repr() const;
  /** Concatenation (JAX's P.__add__): entries of both, unions of their unreduced and
   *  reduced sets; TypeError when the unreduced kinds differ. */
  PartitionSpec operator+(const PartitionSpec& o) const;
  /** Appends entries (P + tuple); TypeError when this spec has unreduced/reduced axes. */
  PartitionSpec operator+(const std::vector<PartitionEntry>& entries) const;
  /** Appends entries in place: `p += {"y", nullptr};` (same rules as operator+). */
  PartitionSpec& operator+=(std::initializer_list<PartitionEntry> entries);
  /** Appends another spec in place (same rules as operator+). */
  PartitionSpec& operator+=(const PartitionSpec& o);
  /** Structural equality: P("x") != P("x", nullptr), as JAX. */
  bool operator==(const PartitionSpec&) const = default;
  /** Hash consistent with ==. */
  size_t hash() const;

 private:
  void add(PartitionEntry e) { entries_.push_back(std::move(e)); }
  void add(const char* a) { entries_.emplace_back(a); }
  void add(Unreduced u) {
    unreduced_.insert(u.axes.begin(), u.axes.end());
    kind_ = u.kind;
  }
  void add(Reduced r) { reduced_.insert(r.axes.begin(), r.axes.end()); }
  void check() const;

  std::vector<PartitionEntry> entries_;
  std::set<std::string> unreduced_;
  std::set<std::string> reduced_;
  UnreducedKind kind_ = UnreducedKind::Sum;
};

/** JAX's short spelling. */
using P = PartitionSpec;

/** Prepends entries (tuple + P, JAX's P.__radd__); TypeError when `p` has
 *  unreduced/reduced axes. */
PartitionSpec operator+(const std::vector<PartitionEntry>& entries, const PartitionSpec& p);

/** One dimension of a shard's index: [start, stop), or the whole dimension. */
struct ShardSlice {
  int64_t start = 0; /**< first index */
  int64_t stop = 0;  /**< one past the last index */
  bool full = true;  /**< the dimension is not split (printed ":") */
  /** Equality. */
  bool operator==(const ShardSlice&) const = default;
};
/** A shard's position in the global array: one ShardSlice per dimension. */
using ShardIndex = std::vector<ShardSlice>;
/** "(2:4, :)". */
std::string index_str(const ShardIndex& index);

/** A mesh plus a spec: how an array is laid out. Validated on construction
 *  (spec §7.1: duplicate axes, unknown axes, UNCONSTRAINED, unreduced axes). */
class NamedSharding {
 public:
  /** Replicated on the empty mesh ("no sharding"). */
  NamedSharding() = default;
  /** On concrete devices. */
  NamedSharding(const Mesh& mesh, PartitionSpec spec);
  /** On an abstract mesh (the form types carry). */
  NamedSharding(const AbstractMesh& mesh, PartitionSpec spec);

  /** The abstract mesh. */
  const AbstractMesh& mesh() const { return abstract_; }
  /** The concrete mesh, when this sharding has devices. */
  const std::optional<Mesh>& concrete_mesh() const { return mesh_; }
  /** The spec as given (not rank-normalized). */
  const PartitionSpec& spec() const { return spec_; }
  /** Number of devices (mesh size). */
  int num_devices() const { return abstract_.size(); }

  /** Raises ValueError (E21) if the spec has more entries than `rank`. */
  void check_rank(int rank) const;
  /** Per-dimension tiling factors for a value of this rank. */
  std::vector<int64_t> tiling(int rank) const;
  /** Shard shape; IndivisibleError (E22) when a dimension does not divide. */
  Shape shard_shape(const Shape& global_shape) const;
  /** Where device at flat mesh position i sits along each spec entry: chunk index per dim. */
  std::vector<int64_t> chunk_of(int flat_index, int rank) const;
  /** The index each device holds, in mesh row-major order (needs a concrete mesh). */
  std::vector<std::pair<Device, ShardIndex>> devices_indices_map(const Shape& global_shape) const;
  /** ShardIndex held by the device at flat position i. */
  ShardIndex index_of(int flat_index, const Shape& global_shape) const;
  /** Replica id of the device at flat position i (mixed radix over replicated axes). */
  int replica_id(int flat_index) const;
  /** Mesh axes not used by partitions, unreduced or reduced. */
  std::vector<std::string> replicated_axes() const;
  /** True if every device holds the whole logical value. */
  bool is_fully_replicated() const;
  /** True when every device is this process's (always in one process). */
  bool is_fully_addressable() const;
  /** This process's devices, in mesh order. */
  std::vector<Device> addressable_devices() const;
  /** True when some device is this process's. */
  bool has_addressable_devices() const;
  /** devices_indices_map restricted to this process's devices. */
  std::vector<std::pair<Device, ShardIndex>> addressable_devices_indices_map(
      const Shape& global_shape) const;
  /** Same mesh, spec normalized to `rank`. */
  NamedSharding normalized(int rank) const;
  /** Same mesh, other spec. */
  NamedSharding with_spec(PartitionSpec spec) const;

  /** "NamedSharding(mesh=Mesh('x': 2, axis_types=(Explicit,)), spec=P('x',))". */
  std::string str() const;
  /** Same mesh (concrete if either is), same spec, as JAX (not rank-normalized). */
  bool operator==(const NamedSharding& o) const;
  /** Compares rank-normalized tilings of the same devices (spec §7.3). */
  bool is_equivalent_to(const NamedSharding& o, int rank) const;
  /** Hash consistent with ==. */
  size_t hash() const;

 private:
  AbstractMesh abstract_;
  std::optional<Mesh> mesh_;
  PartitionSpec spec_;
};

/** JAX's SingleDeviceSharding(device): a NamedSharding on the one-device mesh with no
 *  axes (device_mesh(d)) and spec P(), the layout of every single-device array. Use it
 *  wherever a NamedSharding or Placement is taken. */
class SingleDeviceSharding : public NamedSharding {
 public:
  /** All of the value on device d. */
  explicit SingleDeviceSharding(const Device& d);
  /** The device. */
  const Device& device() const { return concrete_mesh()->devices()[0]; }
};

/** Prints NamedSharding::str(). */
std::ostream& operator<<(std::ostream& os, const NamedSharding& s);
/** Prints PartitionSpec::repr(). */
std::ostream& operator<<(std::ostream& os, const PartitionSpec& s);

}  // namespace tsr

/** Hashes a PartitionSpec (unordered containers keyed by spec). */
template <>
struct std::hash<tsr::PartitionSpec> {
  /** PartitionSpec::hash(). */
  size_t operator()(const tsr::PartitionSpec& p) const { return p.hash(); }
};
/** Hashes a NamedSharding (unordered containers keyed by sharding). */
template <>
struct std::hash<tsr::NamedSharding> {
  /** NamedSharding::hash(). */
  size_t operator()(const tsr::NamedSharding& s) const { return s.hash(); }
};
