#pragma once
// The tests' check_grads: tsr::check_grads (include/tsr/check_grads.h) with the suites'
// options, a failure reported as a gtest failure naming `what`; and the derivatives
// a sharded run compares with the one-device oracle.
#include <string>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/check_grads.h"
#include "tsr/tsr.h"

namespace tsr::gradcheck {

/** The suites' options of check_grads (mapped onto CheckGradsOptions). */
struct GradCheck {
  int order = 2;      /**< 1: jvp and vjp; 2: also of the derivative functions */
  double eps = 1e-4;  /**< finite-difference step (inputs are float64) */
  double atol = 1e-5; /**< absolute tolerance */
  double rtol = 1e-4; /**< relative tolerance */
  bool fd = true;     /**< compare jvp with finite differences */
  bool rev = true;    /**< check vjp (GradMode::Rev) */
  bool fwd = true;    /**< check jvp (GradMode::Fwd); false: vjp against differences */
};

/** A deterministic pseudo-random array like x (tsr::detail::direction_like). */
inline Array direction_like(const Array& x, int salt) { return detail::direction_like(x, salt); }

/** Checks f's derivatives at args with tsr::check_grads; a mismatch is a gtest failure. */
void check_grads(const detail::FlatFn& f, const std::vector<Array>& args, const GradCheck& o,
                 const std::string& what);

/** The tangents of f at args along dirs (jvp), and its input cotangents for cts
 *  (vjp): what a sharded run compares with the one-device oracle. */
struct Derivatives {
  std::vector<Array> tangents;   /**< jvp outputs */
  std::vector<Array> cotangents; /**< vjp outputs, one per arg */
};
/** jvp along direction_like(args) (when fwd) and vjp of direction_like(outs) (when rev). */
Derivatives derivatives(const detail::FlatFn& f, const std::vector<Array>& args, bool rev,
                        bool fwd = true);

}  // namespace tsr::gradcheck
