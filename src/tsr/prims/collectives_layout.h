#pragma once
// The collectives that move blocks between the devices of a group (manual-spmd §4.3-
// §4.6, §4.9): all_gather, psum_scatter (reduce_scatter), ppermute, all_to_all and
// pbroadcast. Each keeps its user-facing parameters (printed as JAX prints them) and
// lowers to one Group call per device, with a local block permutation before or after
// where the named dimension is not the leading one.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** A block-moving collective over the named manual axes of the enclosing shard_map. */
class LayoutCollective : public detail::Primitive {
 public:
  /** What the collective does. */
  enum class Kind : uint8_t {
    AllGather,     /**< blocks stacked (or concatenated: tiled) at `dim` */
    ReduceScatter, /**< psum_scatter: the sum's part `rank` along `dim` */
    Ppermute,      /**< each (src, dst) pair sends src's block to dst; others get 0 */
    AllToAll,      /**< chunk j of `dim` to rank j, received chunks joined at `dim2` */
    Pbroadcast,    /**< every rank gets `source`'s block */
  };
  /** Parameters; dims are normalised (non-negative). */
  struct Params {
    Kind kind = Kind::AllGather;
    std::vector<std::string> axes;              /**< the named axes, row-major order */
    int dim = 0;                                /**< gather/scatter/split dimension */
    int dim2 = 0;                               /**< all_to_all's concat dimension */
    bool tiled = false;                         /**< concatenate/split instead of stack */
    bool invariant = false;                     /**< all_gather to='invarying' */
    std::vector<std::pair<int, int>> perm = {}; /**< ppermute's (src, dst) pairs */
    int source = 0;                             /**< pbroadcast's source index */
    bool check_vma = true;                      /**< type vma (shard_map's check_vma) */
    /** axis_index_groups (all_gather, reduce_scatter, all_to_all); empty: one group. */
    std::vector<std::vector<int>> groups = {};
  };
  /** A collective with these parameters; which axes a vmap binds is read here, when
   *  the collective is bound. */
  explicit LayoutCollective(Params p);
  /** The parameters. */
  const Params& p() const { return p_; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  bool custom_vma() const override { return true; }
  bool uses_axis_name(const std::string& n) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  Params p_;
  std::set<std::string> vmap_axes_;  // the axes a vmap's axis_name bound: never typed
};

/** How a device runs a layout collective on its block: the shapes of the block
 *  permutations around the Group call (each [a, b, c] -> [b, a, c]; a or b == 1: none)
 *  and the element count each Group call moves per rank. */
struct CollectiveRun {
  int64_t pre[3] = {1, 1, 1};  /**< before the call (psum_scatter, all_to_all) */
  int64_t post[3] = {1, 1, 1}; /**< after the call (all_gather, all_to_all) */
  int64_t count = 0;           /**< elements per rank chunk */
};
/** The run plan of `c` for an input block shape (n: the group size, which is the axis
 *  size without axis_index_groups). */
CollectiveRun collective_run(const LayoutCollective& c, const Shape& in_block, int64_t n);
/** dst[b][a][c] = src[a][b][c] for an [a, b, c] array of `item`-byte elements. */
void swap_leading(const void* src, void* dst, const int64_t abc[3], size_t item);

}  // namespace tsr::prim
