#pragma once
// The higher-order primitives that partial eval and the backward pass split by
// recomputation (checkpoint, shard_map): the known side computes the known outputs
// from the known inputs, the unknown side takes every input and recomputes.
#include <vector>

#include "tsr/core/primitive.h"
#include "tsr/core/program.h"

namespace tsr::detail {

/** partial eval's split of one equation into a known and an unknown equation. The known
 *  one takes the known inputs (in order) and returns the known outputs then `num_res`
 *  residuals; the unknown one returns the unknown outputs. */
struct EqnSplit {
  PrimPtr known;                  /**< known inputs -> known outputs ++ residuals */
  PrimPtr unknown;                /**< its inputs per `unknown_ins` -> unknown outputs */
  std::vector<bool> unknown_outs; /**< which outputs the unknown side computes */
  size_t num_res = 0;             /**< residuals the known side returns */
  /** The known equation's inputs (original indices); empty: every known one in order. */
  std::vector<int> known_ins;
  /** Per input of the unknown equation: an input of the original (>= 0), or residual
   *  r as -(r + 1). */
  std::vector<int> unknown_ins;
};
/** The split of a control-flow equation (cond, while, scan), or false for others. */
bool split_control(const Primitive& p, const std::vector<bool>& unknown_ins, EqnSplit& out);
/** True when split_control's unknown part is linear in the flagged inputs (cond, scan);
 *  false for while, whose unknown part is the whole loop again. */
bool control_split_is_linear(const Primitive& p);
/** Which outputs of a control-flow equation depend on the flagged inputs, or false. */
bool control_unknown_outs(const Primitive& p, const std::vector<bool>& unknown_ins,
                          std::vector<bool>& out);

/** The body of a primitive that partial eval splits (checkpoint, shard_map), or null. */
const Program* split_body(const Primitive& p);
/** The same primitive over `body`, whose inputs are p's flagged in `ins` and whose
 *  outputs are those flagged in `outs` (shard_map's specs subset alike). */
PrimPtr with_split_body(const Primitive& p, Program body, const std::vector<bool>& ins,
                        const std::vector<bool>& outs);

}  // namespace tsr::detail
