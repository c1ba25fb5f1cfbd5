#pragma once
// Sorting primitives: multi-operand sort, top_k and searchsorted (spec §12.12).
// Floats order as JAX's sort comparator: -0.0 == 0.0 and NaN after everything.
#include "tsr/core/primitive.h"

namespace tsr::prim {

/** lax.sort: sorts every operand along `dimension` by the first `num_keys`
 *  operands (lexicographically); the others are permuted alongside. */
class Sort : public detail::Primitive {
 public:
  /** Dimension (non-negative), stability and key count. */
  Sort(int dimension, bool is_stable, int num_keys)
      : dimension_(dimension), is_stable_(is_stable), num_keys_(num_keys) {}
  /** The sorted dimension. */
  int dimension() const { return dimension_; }
  /** Equal keys keep their order. */
  bool is_stable() const { return is_stable_; }
  /** How many leading operands are keys. */
  int num_keys() const { return num_keys_; }
  const char* name() const override { return "sort"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  bool jvp_makes_outputs() const override { return true; }
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  int dimension_;
  bool is_stable_;
  int num_keys_;
};

/** lax.top_k over the last axis: the k largest values (descending; NaN largest,
 *  ties by lower index) and their int32 indices. */
class TopK : public detail::Primitive {
 public:
  /** The number of values kept. */
  explicit TopK(int64_t k) : k_(k) {}
  /** k. */
  int64_t k() const { return k_; }
  const char* name() const override { return "top_k"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  int64_t k_;
};

/** searchsorted(sorted, v): int32 insertion indices of v into the 1-D `sorted`.
 *  The output is sharded like v; the kernel needs `sorted` whole, so a sharded
 *  `sorted` is gathered (replicated) before it runs. */
class SearchSorted : public detail::Primitive {
 public:
  /** right=false: first index i with !(sorted[i] < v); right: first with v < sorted[i]. */
  explicit SearchSorted(bool right) : right_(right) {}
  /** side == "right". */
  bool right() const { return right_; }
  const char* name() const override { return "searchsorted"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  bool right_;
};

}  // namespace tsr::prim
