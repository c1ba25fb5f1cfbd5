#pragma once
// JAX's check_grads for Tessera (jax._src.public_test_util): jvp against central
// finite differences, vjp against jvp by the dot-product identity
// <vjp(ct), v> == <ct, jvp(v)>, recursively to `order` (the derivative functions are
// checked the same way). Failures are gtest failures naming `what`.
#include <string>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/tsr.h"

namespace tsr::gradcheck {

/** Options of check_grads. */
struct GradCheck {
  int order = 2;           /**< 1: jvp and vjp; 2: also of the derivative functions */
  double eps = 1e-4;       /**< finite-difference step (inputs are float64) */
  double atol = 1e-5;      /**< absolute tolerance */
  double rtol = 1e-4;      /**< relative tolerance */
  bool fd = true;          /**< compare jvp with finite differences */
  bool rev = true;         /**< check vjp (needs transpose rules) */
  bool fwd = true;         /**< check jvp; false: vjp against finite differences only */
};

/** A deterministic pseudo-random array like x (same shape, dtype and sharding),
 *  values in [-1, 1]; `salt` varies it. */
Array direction_like(const Array& x, int salt);

/** Checks f's derivatives at args (float leaves are differentiated). */
void check_grads(const detail::FlatFn& f, const std::vector<Array>& args, const GradCheck& o,
                 const std::string& what);

/** The tangents of f at args along dirs (jvp), and its input cotangents for cts
 *  (vjp): what a sharded run compares with the one-device oracle. */
struct Derivatives {
  std::vector<Array> tangents;  /**< jvp outputs */
  std::vector<Array> cotangents; /**< vjp outputs, one per arg */
};
/** jvp along direction_like(args) (when fwd) and vjp of direction_like(outs) (when rev). */
Derivatives derivatives(const detail::FlatFn& f, const std::vector<Array>& args, bool rev,
                        bool fwd = true);

}  // namespace tsr::gradcheck
