#pragma once
// Timeline events for the steps an executable runs (recorded only while tracing).
#include <cstdint>

#include "tsr/runtime/executable.h"

namespace tsr::detail {

/** Records step `step` of `ex`, run at flat position `pos` on device `dev` over
 *  [t0, t1): a kernel (op, local shapes, bytes), a collective or reshard (kind, group,
 *  bytes, time spent waiting for peers, cause) or a loop / branch, formatted when the
 *  file is written. Aliases and axis indices (no work) are skipped. */
void trace_step(const Executable& ex, int step, int pos, int dev, int64_t t0, int64_t t1);

}  // namespace tsr::detail
