#pragma once
// Helpers the sharding rules share: building output types on the rule's mesh,
// reading normalized spec entries, rendering specs as the spec's error texts do.
#include <optional>
#include <string>
#include <vector>

#include "tsr/array.h"
#include "tsr/core/primitive.h"
#include "tsr/error.h"

namespace tsr::detail {

/** A rule proposed a spec that uses a mesh axis twice; the driver turns it into
 *  the "illegally sharded result" error (E2) for single-output primitives. */
class IllegalResult : public DuplicateSpecError {
 public:
  /** `rendered` is the proposed type, e.g. i32[4@X,4@X]. */
  explicit IllegalResult(std::string rendered);
  /** The proposed type. */
  const std::string& rendered() const { return rendered_; }

 private:
  std::string rendered_;
};

/** Entries of a type's spec, one per dimension. */
std::vector<PartitionEntry> entries_of(const ArrayType& t);
/** The rule's mesh: the first non-empty input mesh, else the context abstract mesh. */
AbstractMesh rule_mesh(const std::vector<ArrayType>& in);
/** A type on `mesh` with `spec` (validated: rank E24, divisibility E23). */
ArrayType make_type(const Shape& shape, DType dtype, bool weak, const AbstractMesh& mesh,
                    const PartitionSpec& spec);
/** Same, from entries plus the unreduced/reduced sets of `sets`. */
ArrayType make_type(const Shape& shape, DType dtype, bool weak, const AbstractMesh& mesh,
                    const std::vector<PartitionEntry>& entries, const PartitionSpec& sets = {});
/** A type whose sharding is `s` (already abstract), validated. */
ArrayType make_type(const Shape& shape, DType dtype, bool weak, const NamedSharding& s);
/** Spec of `entries` with no sets. */
PartitionSpec spec_of(const std::vector<PartitionEntry>& entries);
/** A spec with the same entries and other sets. */
PartitionSpec with_sets_of(const std::vector<PartitionEntry>& entries, const PartitionSpec& sets);
/** Entries rendered as a Python tuple: ('x', None). */
std::string entries_tuple(const std::vector<PartitionEntry>& e);
/** Short dtype + shape + sharding: f32[8@X,4]. */
std::string short_type(const ArrayType& t);
/** The product of the sizes of an entry's axes on `mesh`. */
int64_t entry_size(const PartitionEntry& e, const AbstractMesh& mesh);
/** Normalizes a possibly negative axis; ValueError naming `op` when out of range. */
int norm_axis(int64_t axis, int rank, const char* op);
/** Parameter rendering helpers: (1, 2) / ('x',) / None. */
std::string p_ints(const std::vector<int64_t>& v);
/** A sharding parameter: None or the spec. */
std::string p_sharding(const std::optional<NamedSharding>& s);
/** The unreduced set of a type (empty for none). */
inline const std::set<std::string>& unreduced_of(const ArrayType& t) {
  return t.sharding.spec().unreduced();
}
/** The reduced set of a type. */
inline const std::set<std::string>& reduced_of(const ArrayType& t) {
  return t.sharding.spec().reduced();
}
/** True when `t` holds the same value on every device along `axes`: no entry and
 *  no unreduced set names them (a reduced set may). */
bool replicated_over(const ArrayType& t, const std::set<std::string>& axes);
/** Spec §9's n-ary reduced rule: the reduced set the inputs share (ShardingTypeError
 *  when two differ), no input sharded or varying over it. Replicated inputs are let
 *  through (JAX refuses them): the forward value is the same, and the backward pass
 *  reduces their unreduced cotangent. */
std::set<std::string> nary_reduced(const char* name, const std::vector<ArrayType>& in);
/** A kernel layout: `entries` with the sets of `sets`, less the reduced axes the entries
 *  shard (a slice of a reduced value is a slice of a replicated one). */
PartitionSpec layout_with_sets(const std::vector<PartitionEntry>& entries,
                               const PartitionSpec& sets);
/** Raises NotImplementedError "unreduced rule for {name} is not implemented" when
 *  any input is unreduced (the default ur rule of spec §9). */
void no_unreduced(const char* name, const std::vector<ArrayType>& in);

/** Spec §12.8's "varying out shape" rule of slice, pad, reduce_window, ...: the
 *  operand's sharding, or P() when every output dim is 1; a changed sharded dim must
 *  stay divisible (E9, raised naming `name` and `prim`). */
ArrayType varying_out(const Shape& out, const ArrayType& x, const char* name, const char* prim);
/** The operand's entries (and sets) with the `changed` dims unsharded: the layout a
 *  windowed kernel needs. */
PartitionSpec unshard_dims(const ArrayType& x, const std::vector<bool>& changed);

/** lax._validate_preferred_element_type for `prim`: the combinations JAX accepts
 *  (TypeError naming the input dtype and preferred_element_type otherwise). */
void check_preferred(const char* prim, DType in, DType out);

/** The unreduced axes of a bilinear primitive's result (dot_general, convolution):
 *  linear in each operand, so one sum-unreduced operand against one replicated over its
 *  axes gives a partial result, in the operand's own dtype `out` (ShardingTypeError
 *  otherwise; `verb` says what the product does: "multiplied", "convolved"). */
std::set<std::string> bilinear_unreduced(const char* prim, const ArrayType& l, const ArrayType& r,
                                         DType out, const char* verb);

}  // namespace tsr::detail
