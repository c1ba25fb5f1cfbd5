#pragma once
// A rank's collective call as data: what every rank posts on arrival so that the
// ranks can check, before touching each other's memory, that they made the same call.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/dtype.h"

namespace tsr::detail {

/** What one rank passed to a collective; compared across ranks on arrival. */
struct CallDesc {
  std::string op;          /**< collective name (short: no allocation) */
  int64_t count = 0;       /**< element count (0 where the op has none) */
  int dtype = -1;          /**< DType as int; -1 where the op has none */
  int reduce = -1;         /**< ReduceOp as int; -1 where the op has none */
  int root = -1;           /**< broadcast root; -1 where the op has none */
  uint64_t pairs_hash = 0; /**< permute pairs, hashed */
  /** permute pairs (the caller's, alive during the call), printed in messages. */
  const std::vector<std::pair<int, int>>* pairs = nullptr;
  const void* in = nullptr; /**< input buffer, read by peers */
  void* out = nullptr;      /**< output buffer */
  /** all_to_allv byte counts and offsets (the caller's, alive during the call). */
  const std::vector<int64_t>* send_counts = nullptr;
  const std::vector<int64_t>* send_displs = nullptr; /**< see send_counts */
  const std::vector<int64_t>* recv_counts = nullptr; /**< see send_counts */
  const std::vector<int64_t>* recv_displs = nullptr; /**< see send_counts */
  /** Non-empty when this rank cannot take part: fail()'s reason or a bad argument. */
  std::string error;
  bool failed = false; /**< true: error came from fail(); false: from argument checks */
};

/** all_reduce, all_gather, all_to_all: flags a negative count or a null buffer. */
CallDesc describe_call(const char* op, const void* in, void* out, int64_t count, DType dt);
/** all_reduce, reduce_scatter. */
CallDesc describe_reduce(const char* op, const void* in, void* out, int64_t count, DType dt,
                         ReduceOp reduce);
/** broadcast: also flags a root outside [0, size); only the root needs `in`. */
CallDesc describe_broadcast(int rank, int size, const void* in, void* out, int64_t count, DType dt,
                            int root);
/** permute: also flags pairs naming a missing rank or a rank twice as source/destination. */
CallDesc describe_permute(int rank, int size, const void* in, void* out, int64_t count, DType dt,
                          const std::vector<std::pair<int, int>>& pairs);
/** all_to_allv: flags vectors of the wrong length, negative entries, null buffers. */
CallDesc describe_all_to_allv(int size, const void* send, const std::vector<int64_t>& send_counts,
                              const std::vector<int64_t>& send_displs, void* recv,
                              const std::vector<int64_t>& recv_counts,
                              const std::vector<int64_t>& recv_displs);
/** barrier: nothing to compare but the op. */
CallDesc describe_barrier();
/** A rank that calls fail() instead of `op`. */
CallDesc describe_failure(const std::string& op, const std::string& reason);

/** "rank 3" or "ranks 0-2,5" for messages. */
std::string rank_list(const std::vector<int>& ranks);
/** "" when every rank's call agrees, else the CommError text that every rank raises.
 *  calls[i] is rank ranks[i]'s (rank i's when `ranks` is empty: the whole group). */
std::string check_calls(const std::vector<CallDesc>& calls, const std::vector<int>& ranks = {});

}  // namespace tsr::detail
