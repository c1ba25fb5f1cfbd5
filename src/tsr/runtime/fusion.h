#pragma once
// jit's fusion pass: consecutive elementwise kernel steps over the same local size
// become one fused step (backends/fused.h) that runs block by block.
namespace tsr::detail {

class Executable;

/** Fuses runs of elementwise steps of `ex` in place (before scheduling). TSR_FUSION=0
 *  turns it off. */
void fuse_elementwise(Executable& ex);

}  // namespace tsr::detail
