#pragma once
/** The collectives of a shard_map body (manual-spmd §4): each combines the blocks of
 *  the devices that differ only along the named manual axes, and types its result's
 *  vma. Called outside a shard_map body they raise NameError. */
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
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

/** axis_index_groups: a partition of the combined (row-major) index over the named
 *  axes into groups of equal size, `{{0, 1}, {2, 3}}`; a device's index in its group
 *  is its position in the group's list. Empty: one group of every index. */
using AxisIndexGroups = std::vector<std::vector<int>>;

/** The keywords of psum, pmean, pmax and pmin. */
struct PsumOptions {
  /** Reduce within each group only (check_vma=false only: inside pmap or
   *  shard_map(check_vma=false); with vma checking JAX raises NotImplementedError). */
  AxisIndexGroups axis_index_groups = {};
};

/** jax.lax.psum: the sum over the named axes of every device's block (varying ->
 *  invariant over them); an operand not varying over an axis is pvary'd first, so
 *  it is multiplied by the axis size (JAX). */
Array psum(const Array& x, const AxisNames& axes);
/** jax.lax.psum(x, axes, axis_index_groups=...): the sum within each group. */
Array psum(const Array& x, const AxisNames& axes, const PsumOptions& o);
/** jax.lax.pmean: psum divided by the number of devices in the group. */
Array pmean(const Array& x, const AxisNames& axes);
/** jax.lax.pmean with axis_index_groups: divided by the group size. */
Array pmean(const Array& x, const AxisNames& axes, const PsumOptions& o);
/** jax.lax.pmax: the elementwise maximum over the named axes. */
Array pmax(const Array& x, const AxisNames& axes);
/** jax.lax.pmax with axis_index_groups: the maximum within each group. */
Array pmax(const Array& x, const AxisNames& axes, const PsumOptions& o);
/** jax.lax.pmin: the elementwise minimum over the named axes. */
Array pmin(const Array& x, const AxisNames& axes);
/** jax.lax.pmin with axis_index_groups: the minimum within each group. */
Array pmin(const Array& x, const AxisNames& axes, const PsumOptions& o);
/** jax.lax.pcast(x, axes, to='varying') / pvary: an invariant value typed varying
 *  over the axes (no data moves). */
Array pvary(const Array& x, const AxisNames& axes);
/** The state jax.lax.pcast casts to (its `to=`). */
enum class PcastTo {
  Varying,   /**< 'varying': from invariant (pvary) or from reduced */
  Unreduced, /**< 'unreduced': from varying (each device's value is a partial sum) */
  Reduced    /**< 'reduced': from invariant (its cotangent is unreduced) */
};
/** jax.lax.pcast(x, axes, to=...): a free cast of x's state over the manual axes
 *  (manual-spmd §3.5, §3.6): invariant -> varying (= pvary), invariant -> reduced,
 *  varying -> unreduced, reduced -> varying; any other pair is a ValueError. An
 *  unreduced value is summed by psum (to invariant); reduced values combine with
 *  varying ones by an implicit cast to varying. A no-op with check_vma=false. */
Array pcast(const Array& x, const AxisNames& axes, PcastTo to);
/** jax.lax.axis_index: this device's row-major index over the named axes, i32[]. */
Array axis_index(const AxisNames& axes);
/** jax.lax.axis_size: the product of the named manual axes' sizes. */
int64_t axis_size(const AxisNames& axes);

/** all_gather's options (jax.lax.all_gather's keywords). */
struct AllGatherOptions {
  /** Where the gathered dimension goes (in the result's rank; negative counts from
   *  the end). */
  int axis = 0;
  /** Concatenate the blocks along `axis` instead of stacking them in a new one. */
  bool tiled = false;
  /** to='invarying': type the result invariant over the axes (every device holds the
   *  same data); its transpose is this device's slice instead of a psum_scatter. */
  bool invariant = false;
  /** Gather within each group only (its size replaces the axis size); not with
   *  `.invariant` nor over a vmap's axis_name (NotImplementedError, as JAX). */
  AxisIndexGroups axis_index_groups = {};
};
/** jax.lax.all_gather: every device gets the blocks of its group, stacked (or
 *  concatenated) in index order; the result stays varying unless `.invariant`. */
Array all_gather(const Array& x, const AxisNames& axes, const AllGatherOptions& o = {});

/** psum_scatter's options (jax.lax.psum_scatter's keywords). */
struct PsumScatterOptions {
  /** The dimension split among the group (negative counts from the end). */
  int scatter_dimension = 0;
  /** Keep the dimension, divided by the group size, instead of removing it (its size
   *  must then equal the group size). */
  bool tiled = false;
  /** Reduce and scatter within each group only (its size replaces the axis size). */
  AxisIndexGroups axis_index_groups = {};
};
/** jax.lax.psum_scatter: the psum over the axes, of which the device with group index
 *  k keeps part k along the scatter dimension. */
Array psum_scatter(const Array& x, const AxisNames& axes, const PsumScatterOptions& o = {});

/** jax.lax.ppermute: each (source, destination) pair of group indices sends the
 *  source's block to the destination; a device no pair targets gets zeros. */
Array ppermute(const Array& x, const AxisNames& axes, const std::vector<std::pair<int, int>>& perm);
/** jax.lax.pshuffle: device i gets the block of device perm[i] (a permutation). */
Array pshuffle(const Array& x, const AxisNames& axes, const std::vector<int>& perm);

/** jax.lax.all_to_all: the block is split along `split_axis` in one chunk per device
 *  of the group; chunk j goes to device j, which joins what it receives along
 *  `concat_axis` in sender order. Untiled, the split dimension must equal the group
 *  size and moves to `concat_axis` (indexed after its removal). */
Array all_to_all(const Array& x, const AxisNames& axes, int split_axis, int concat_axis,
                 bool tiled = false);
/** all_to_all's keywords (jax.lax.all_to_all's). */
struct AllToAllOptions {
  /** Split `split_axis` in parts and concatenate along `concat_axis`, keeping the rank. */
  bool tiled = false;
  /** Exchange within each group only (its size replaces the axis size). */
  AxisIndexGroups axis_index_groups = {};
};
/** jax.lax.all_to_all with its keywords. */
Array all_to_all(const Array& x, const AxisNames& axes, int split_axis, int concat_axis,
                 const AllToAllOptions& o);
/** jax.lax.pswapaxes: all_to_all(x, axes, axis, axis) (within each group when given). */
Array pswapaxes(const Array& x, const AxisNames& axes, int axis,
                const AxisIndexGroups& axis_index_groups = {});

/** jax.lax.pbroadcast: every device of the group gets the block of group index
 *  `source`. The operand must already vary over the axes (no implicit pvary). */
Array pbroadcast(const Array& x, const AxisNames& axes, int source);

}  // namespace tsr
