#pragma once
// The higher-order primitives that partial eval and the backward pass split by
// recomputation (checkpoint, shard_map): the known side computes the known outputs
// from the known inputs, the unknown side takes every input and recomputes.
#include <vector>

#include "tsr/core/primitive.h"
#include "tsr/core/program.h"

namespace tsr::detail {

/** The body of a primitive that partial eval splits (checkpoint, shard_map), or null. */
const Program* split_body(const Primitive& p);
/** The same primitive over `body`, whose inputs are p's flagged in `ins` and whose
 *  outputs are those flagged in `outs` (shard_map's specs subset alike). */
PrimPtr with_split_body(const Primitive& p, Program body, const std::vector<bool>& ins,
                        const std::vector<bool>& outs);

}  // namespace tsr::detail
