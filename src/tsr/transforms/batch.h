#pragma once
// vmap as a Program -> Program pass (DESIGN §1, docs/design/0010-vmap.md): an
// interpreter binds each equation's batching rule with the values' batch dimensions,
// into whatever context is current (a trace records, eager runs). The helpers below
// make the common rules one line in the family files.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/array.h"
#include "tsr/core/primitive.h"
#include "tsr/core/program.h"

namespace tsr::detail {

/** The vmap whose body is being batched: its size and the mesh axes its dimension is
 *  sharded over (spec §12.16: the vmap's explicit mesh axis; unsharded when none). */
struct BatchAxis {
  int64_t size = 0;     /**< the batch size */
  PartitionEntry entry; /**< the batch dimension's sharding entry */
  AbstractMesh mesh;    /**< the mesh `entry` names axes of (empty when unsharded) */
  std::string name;     /**< axis_name (collectives over the vmapped axis); "" when none */
  Axes spmd_axes;       /**< spmd_axis_name (Auto axes stay out of `entry`: types lack them) */
};

/** The innermost vmap being batched (ValueError outside of one: a rule called bare). */
const BatchAxis& batch_axis();

/** Makes `a` the current batch axis while alive (batch_eval sets it). */
class BatchAxisScope {
 public:
  /** Pushes a. */
  explicit BatchAxisScope(BatchAxis a);
  /** Pops it. */
  ~BatchAxisScope();
  BatchAxisScope(const BatchAxisScope&) = delete;
  BatchAxisScope& operator=(const BatchAxisScope&) = delete;

 private:
  const BatchAxis* prev_;
  BatchAxis axis_;
};

/** t with the batch dimension inserted at `d` (size and sharding entry of batch_axis()). */
ArrayType batched_type(const ArrayType& t, int d);
/** t with the batch dimension `d` removed (shape and sharding entry): one example. */
ArrayType unbatched_type(const ArrayType& t, int d);
/** A per-example out_sharding with the batch entry inserted at `d` (nullopt stays). */
std::optional<NamedSharding> batched_sharding(const std::optional<NamedSharding>& s, int d,
                                              const char* op);

/** The per-example output types of `prim` for these operands (batch dims removed). */
std::vector<ArrayType> per_example_out(const Primitive& prim, const std::vector<Array>& args,
                                       const std::vector<int>& dims);
/** Output j's sharding with the batch at `at`: the per-example output's sharding with
 *  the batch entry inserted (nullopt off the mesh). For rules whose batched form would
 *  leave the result's layout ambiguous (a gather whose batch comes from the indices). */
std::optional<NamedSharding> batched_out_sharding(const Primitive& prim,
                                                  const std::vector<Array>& args,
                                                  const std::vector<int>& dims, size_t j, int at);

/** x with its batch dimension `from` moved to `to` (no op when equal). */
Array move_batch(const Array& x, int from, int to);
/** x with a batch dimension at 0: moved there, or for an unbatched x (from == -1)
 *  broadcast along a new leading dimension laid out as batch_axis() says. */
Array batch_at_front(const Array& x, int from);
/** `a` (batch dimension `d`, -1: unbatched) as an array of exactly type `like` (a
 *  batched type, batch at 0): moved, or broadcast along the batch and any per-example
 *  dimensions it lacks (a per-example scalar). For operands that must match a case. */
Array batch_full(const Array& a, int d, const ArrayType& like);
/** Rule for elementwise primitives: batched operands get their batch dimension at 0
 *  (per-example scalars become [B, 1, ...]); unbatched operands of rank >= 1 get a
 *  leading size-1 dimension; the primitive broadcasts. Output batch dimension 0. */
Batched batch_elementwise(const Primitive& prim, const std::vector<Array>& args,
                          const std::vector<int>& dims);
/** Rule for a primitive of one input whose parameters only name dimensions: moves the
 *  batch to 0 and binds `shifted` (the primitive with its dimension parameters + 1 and
 *  any out_sharding batched). Output batch dimensions 0. */
Batched batch_unary_front(const PrimPtr& shifted, const Array& x, int dim);

/** Dimension numbers shifted past a batch dimension inserted at 0. */
std::vector<int> shifted(std::vector<int> dims, int by = 1);

/** The rule of last resort: the primitive bound once per example and the results
 *  stacked (batch at 0). For operands no kernel takes batched (a random key). */
Batched batch_by_loop(const Primitive& prim, const std::vector<Array>& args,
                      const std::vector<int>& dims);

/** The result of batching a Program. */
struct BatchResult {
  std::vector<Array> outs; /**< the outputs */
  std::vector<int> dims;   /**< each output's batch dimension, or -1 */
};

/** Binds p's equations to `args`, whose batch dimensions are `dims` (-1: unbatched),
 *  asking each equation with a batched input for its batching rule; each rule's
 *  outputs are checked against p's types (batch dimension inserted). Uses the
 *  current batch_axis(). */
BatchResult batch_eval(const Program& p, const std::vector<Array>& args,
                       const std::vector<int>& dims);

/** p batched as a Program (for the sub-programs of jit, checkpoint, custom rules):
 *  its inputs are p's with the batch dimension at `in_dims` (-1: unbatched); fills
 *  `out_dims` with where each output carries it. When `force_front`, every output is
 *  batched at 0 (unbatched ones broadcast). */
Program batch_program(const Program& p, const std::vector<int>& in_dims, std::vector<int>& out_dims,
                      bool force_front = false);

/** f (a function of one example) applied to a batch: traced at the per-example types
 *  of `args` (batch dimensions `dims`), batched under `axis`, every output with the
 *  batch at 0 (unbatched ones broadcast). For the user rules of custom_jvp/custom_vjp. */
std::vector<Array> batch_fn_front(const FlatFn& f, const std::vector<Array>& args,
                                  const std::vector<int>& dims, const BatchAxis& axis);

/** Records which rules ran (`batch:sin`) for the coverage test (ad.h's RuleLog). */
void note_batch_rule(const char* prim);

}  // namespace tsr::detail
