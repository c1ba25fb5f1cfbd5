#pragma once
// One training run of tsr-train, from flags to the plotted loss curve.
#include <csignal>
#include <stdexcept>

#include "flags.h"

namespace train {

/** A bad flag combination found before any work starts (printed as one line). */
struct FlagError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** Runs the job; `interrupted` turns 1 on Ctrl-C (the run then checkpoints and
 *  returns). Returns the process exit code. */
int run(const Flags& f, volatile std::sig_atomic_t* interrupted);

}  // namespace train
