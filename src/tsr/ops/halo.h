#pragma once
// Halo exchange for windows over a sharded dimension (design 0021): inside a
// shard_map each device takes the window's overlap from its neighbours by ppermute and
// computes on its grown block. Shared by reduce_window / pooling and convolution.
#include <optional>
#include <string>
#include <vector>

#include "tsr/array.h"
#include "tsr/mesh.h"

namespace tsr::detail {

/** One exchanged dimension: `lo` elements from the left neighbour, `hi` from the right
 *  one, over mesh axes `axes` (k devices). */
struct Halo {
  int dim;                       /**< the operand dimension */
  std::vector<std::string> axes; /**< its mesh axes */
  int64_t k;                     /**< devices along it */
  int64_t lo, hi;                /**< overlap taken from each side */
};

/** What a windowed dimension needs on a mesh: nothing (unsharded, or windows that tile
 *  each block), a halo, or a gather (the window does not fit the exchange). */
struct HaloNeed {
  bool gather = false;      /**< the exchange cannot serve this dimension */
  std::optional<Halo> halo; /**< the exchange, when one is needed */
};

/** The need of dimension `dim` of size n sharded over `e`: outputs `out` of windows of
 *  dilated size `window` with `stride`, `pad_lo` low padding and no base dilation. A
 *  device's outputs must be the windows starting in its own block. */
HaloNeed halo_need(int dim, const PartitionEntry& e, const AbstractMesh& mesh, int64_t n,
                   int64_t out, int64_t window, int64_t stride, int64_t pad_lo);

/** True when x lies on a mesh whose axes are all Explicit, with no unreduced / reduced
 *  sets: where the exchange runs (Auto axes leave layouts to the partitioner). */
bool halo_applies(const ArrayType& x);

/** The mesh to run the exchange on: x's concrete mesh when eager, or under a trace the
 *  context mesh when it is x's; nullopt otherwise (or on a one-device mesh). */
std::optional<Mesh> halo_mesh(const Array& x);

/** Inside a shard_map body: block b grown by each halo in turn (corners come with the
 *  second exchange); the mesh's ends receive `fill` (the padding value). */
Array grow_halos(const Array& b, const std::vector<Halo>& hs, double fill);

}  // namespace tsr::detail
