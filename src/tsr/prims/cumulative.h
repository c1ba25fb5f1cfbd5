#pragma once
// Cumulative (scan) primitives along one axis: cumsum, cumprod, cummax, cummin,
// cumlogsumexp (spec §12.12). The scanned axis must be unsharded (E14).
#include "tsr/core/primitive.h"
#include "tsr/prims/op_codes.h"

namespace tsr::prim {
/** "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp". */
const char* cum_name(CumKind k);

/** Inclusive scan of `axis`, from the end when `reverse`; output type = input type. */
class Cumulative : public detail::Primitive {
 public:
  /** Kind, the (non-negative) axis and the direction. */
  Cumulative(CumKind kind, int axis, bool reverse) : kind_(kind), axis_(axis), reverse_(reverse) {}
  /** Kind. */
  CumKind kind() const { return kind_; }
  /** The scanned axis. */
  int axis() const { return axis_; }
  /** Scans from the last element to the first. */
  bool reverse() const { return reverse_; }
  const char* name() const override { return cum_name(kind_); }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  CumKind kind_;
  int axis_;
  bool reverse_;
};

}  // namespace tsr::prim
