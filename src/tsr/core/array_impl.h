#pragma once
// What an Array handle points at: its type, its concrete sharding (normalized to
// the rank) and one buffer per device of the sharding's mesh, in row-major order.
#include <memory>
#include <optional>
#include <vector>

#include "tsr/array.h"
#include "tsr/core/program.h"
#include "tsr/runtime/runtime.h"

namespace tsr::detail {

/** An array's type and concrete sharding, shared (immutable) between arrays: an
 *  executable makes one per output, so an op's result copies no shape or spec. */
struct ArrayMeta {
  ArrayType type;         /**< the type */
  NamedSharding sharding; /**< concrete; the type's sharding when traced */
};

struct ArrayImpl {
  std::shared_ptr<const ArrayMeta> meta;
  /** The type. */
  const ArrayType& type() const { return meta->type; }
  /** The concrete sharding (the type's when traced). */
  const NamedSharding& sharding() const { return meta->sharding; }
  std::vector<BufferPtr> buffers;  // one per device of sharding's mesh; empty when traced
  VarPtr var;                      // set when this is a value of a trace
  uint64_t trace_id = 0;           // which trace `var` belongs to
  bool deleted = false;            // donated to a jit call
  bool abstract = false;           // a type without data (shape_dtype_struct, eval_shape)
  // The sharding as the caller wrote it (device_put, jit out_shardings), when its spec
  // is shorter than the rank: Array::sharding() shows it, as JAX's x.sharding does.
  std::shared_ptr<const NamedSharding> given;
};

/** x with `given` as the sharding Array::sharding() shows (its layout stays the
 *  rank-normalized one); x itself when nothing changes. */
Array with_given_sharding(const Array& x, const NamedSharding& given);
/** The sharding a NamedSharding or PartitionSpec placement names, as written (on
 *  `resolved`'s concrete mesh for a spec); nullopt for the other placements. */
std::optional<NamedSharding> given_sharding(const Placement& where, const NamedSharding& resolved);

/** A traced (symbolic) array of trace `trace_id`. */
Array make_traced(const VarPtr& var, uint64_t trace_id);
/** Raises ValueError when x is traced or deleted (`api` names the caller). */
void check_concrete(const Array& x, const char* api);

/** Makes an array from its parts; derives the type from the sharding. */
Array make_array(const Shape& shape, DType dtype, const NamedSharding& sharding,
                 std::vector<BufferPtr> buffers, bool weak = false);
/** Moves x to `dst` (concrete, rank-normalized, validated) with collectives. */
Array reshard_to(const Array& x, const NamedSharding& dst);

}  // namespace tsr::detail
