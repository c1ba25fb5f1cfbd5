#pragma once
// reshape's sharding rule, shared by the primitive's infer and partition.
#include "tsr/array.h"

namespace tsr::detail {

/** The rule's result: ok=false means "This reshape is not supported" (E8). */
struct ReshapePlan {
  bool ok = false;
  std::vector<PartitionEntry> out;       /**< the output entries (the type) */
  std::vector<PartitionEntry> in_local;  /**< operand layout the kernel reshapes */
  std::vector<PartitionEntry> out_local; /**< layout the kernel produces */
};

/** Applies spec §12.7 steps 1–5 to operand type x and new sizes. */
ReshapePlan plan_reshape(const ArrayType& x, const Shape& sizes);

}  // namespace tsr::detail
