#pragma once
// The reshard planner (design 0001) as a reusable step: a Plan says, for every
// device of the union of source and destination devices, which boxes it copies
// locally, sends and receives. Executables run it inside their device tasks.
#include <memory>
#include <string>
#include <vector>

#include "tsr/core/box_copy.h"
#include "tsr/runtime/runtime.h"
#include "tsr/sharding.h"

namespace tsr::detail {

/** How a plan moves bytes between devices. */
enum class PlanKind : uint8_t {
  Exchange,      /**< local copies and one all_to_allv (any pair of shardings) */
  AllGather,     /**< all_gather of whole source blocks (the destination drops axes) */
  ReduceScatter, /**< reduce_scatter of unreduced partials (the destination shards by them) */
};

/** One device's part of a reshard. */
struct DevicePlan {
  int src_slot = -1;                        /**< flat position in the source mesh, or -1 */
  int dst_slot = -1;                        /**< flat position in the destination mesh, or -1 */
  bool zero = false;                        /**< holds zeros (added unreduced axis) */
  Shape src_origin, dst_origin;             /**< global positions of the local blocks */
  std::vector<Box> local;                   /**< global boxes copied src -> dst here */
  std::vector<std::vector<Box>> send, recv; /**< per peer rank in `ids` */
  std::vector<int64_t> send_counts, send_displs, recv_counts, recv_displs; /**< bytes */
  int64_t send_bytes = 0, recv_bytes = 0;                                  /**< totals */
  /** Where every peer's piece is one contiguous run of the block: byte offsets to send
   *  from the source block / receive into the destination block in place (else empty). */
  std::vector<int64_t> send_in_place, recv_in_place;
  std::vector<int> reduce_ids; /**< all_reduce group over reduced axes */
  int reduce_rank = 0;         /**< this device's rank in it */
  std::vector<int> coll_ids;   /**< AllGather / ReduceScatter: the group's device ids */
  int coll_rank = 0;           /**< this device's rank in it */
  /** Per group rank: where its block sits, relative to this device's destination block
   *  (AllGather: the rank's source block) or source block (ReduceScatter: its result). */
  std::vector<Shape> coll_at;
  bool direct = false; /**< the blocks sit in rank order: no pack / unpack copy */
};

/** A whole reshard: rank u of the exchange group is device ids[u]. */
struct Plan {
  std::vector<int> ids;               /**< union of devices */
  std::vector<DevicePlan> dev;        /**< per rank */
  PlanKind kind = PlanKind::Exchange; /**< the collective that moves the bytes */
  bool comm = false;                  /**< some bytes cross devices */
  bool reduce = false; /**< an all_reduce over reduce_ids: first, or after a ReduceScatter */
  ReduceOp reduce_op = ReduceOp::Sum;
  Shape src_local, dst_local;   /**< local block shapes */
  DType dtype = DType::Float32; /**< element type */
};

/** The cached plan for moving a (shape, dtype) value from src to dst (concrete). */
std::shared_ptr<const Plan> get_plan(const Shape& shape, DType dtype, const NamedSharding& src,
                                     const NamedSharding& dst);
/** The collectives a plan performs, in order, for `.local` ("all_reduce sum",
 *  "all_gather over 8 devices", ...; "local copy" when none). */
std::vector<std::string> plan_steps(const Plan& plan);
/** The collectives rank u calls, in order. */
std::vector<Group> plan_groups(const Plan& plan, int u);
/** Runs rank u's part: src/dst are its local blocks (null where it holds none). */
void run_plan(const Plan& plan, int u, const void* src, void* dst, GroupSequence& seq);

}  // namespace tsr::detail
