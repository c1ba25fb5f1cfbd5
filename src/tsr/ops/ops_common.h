#pragma once
// Shared front-end steps: out_sharding canonicalization (spec §11.3), scalars to
// weak arrays, dtype promotion, NumPy rank promotion.
#include <optional>

#include "tsr/core/primitive.h"
#include "tsr/ops.h"
#include "tsr/prims/creation.h"

namespace tsr::detail {

/** Spec §11.3: none / NamedSharding / PartitionSpec -> abstract NamedSharding (E25–E27). */
std::optional<NamedSharding> canonicalize_sharding(const ShardingArg& s, const char* api,
                                                   bool check_mesh = true);
/** A Placement for creation ops: abstract sharding (+ concrete devices when known). */
prim::Placed resolve_placed(const Placement& where, const Shape& shape, const char* api);
/** A rank-0 array holding v (dtype, weak), placed on like's mesh when given. */
Array scalar_array(double v, DType dtype, bool weak, const Array* like);
/** The TypedDType of an ArrayLike (scalars: weak int32/float32, bool). */
TypedDType typed_dtype(const ArrayLike& a);
/** Turns ArrayLikes into arrays of one promoted dtype (scalars become weak rank-0
 *  arrays placed like the first array operand). */
std::vector<Array> promote(const std::vector<ArrayLike>& args, const char* op);
/** NumPy rank promotion: prepends size-1 (unsharded) dims; rank-0 arrays stay. */
std::vector<Array> promote_ranks(std::vector<Array> xs);
/** Converts x to dtype (no-op when equal). */
Array convert(const Array& x, DType dtype, bool weak = false);
/** jnp's _promote_integer_dtype for sums and products: bool and signed integers
 *  narrower than int32 accumulate in int32, unsigned narrower than uint32 in uint32
 *  (Tessera's default integer widths, as JAX without x64); others unchanged. */
DType promote_integer_dtype(DType t);
/** v varying over every manual axis `like` varies over (lax.full_like's pvary): the
 *  *_like creators inside a shard_map body. */
Array vary_like(const Array& v, const Array& like);

}  // namespace tsr::detail
