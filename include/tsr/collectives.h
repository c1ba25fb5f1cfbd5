#pragma once
/** The collectives of a shard_map body (manual-spmd §4): each combines the blocks of
 *  the devices that differ only along the named manual axes, and types its result's
 *  vma. Called outside a shard_map body they raise NameError. */
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tsr/array.h"

namespace tsr {

/** Mesh axes named by a collective: one name or several (row-major in this order):
 *  `"x"`, `{"x", "y"}`. */
struct AxisNames {
  std::vector<std::string> names; /**< the axes, in order */
  /** One axis. */
  AxisNames(const char* a) : names{a} {}
  /** One axis. */
  AxisNames(std::string a) : names{std::move(a)} {}
  /** Several axes. */
  AxisNames(std::initializer_list<std::string> l) : names(l) {}
  /** Several axes. */
  AxisNames(std::vector<std::string> v) : names(std::move(v)) {}
};

/** jax.lax.psum: the sum over the named axes of every device's block (varying ->
 *  invariant over them); an operand not varying over an axis is pvary'd first, so
 *  it is multiplied by the axis size (JAX). */
Array psum(const Array& x, const AxisNames& axes);
/** jax.lax.pmean: psum divided by the number of devices in the group. */
Array pmean(const Array& x, const AxisNames& axes);
/** jax.lax.pmax: the elementwise maximum over the named axes. */
Array pmax(const Array& x, const AxisNames& axes);
/** jax.lax.pmin: the elementwise minimum over the named axes. */
Array pmin(const Array& x, const AxisNames& axes);
/** jax.lax.pcast(x, axes, to='varying') / pvary: an invariant value typed varying
 *  over the axes (no data moves). */
Array pvary(const Array& x, const AxisNames& axes);
/** jax.lax.axis_index: this device's row-major index over the named axes, i32[]. */
Array axis_index(const AxisNames& axes);
/** jax.lax.axis_size: the product of the named manual axes' sizes. */
int64_t axis_size(const AxisNames& axes);

}  // namespace tsr
