#pragma once
// pcast's casts between the manual-axis states of a shard_map body (manual-spmd §3.5,
// §3.6): invariant -> reduced (preduced), varying -> unreduced (vary_unreduced_cast),
// reduced -> varying (reduced_vary_cast), and the psum of an unreduced value
// (unreduced_psum). The casts are free (the lowering aliases the buffer, as pvary);
// unreduced_psum is psum's all-reduce. They derive from Collective so that the
// executable lowers them as pvary / psum.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tsr/prims/collectives.h"

namespace tsr::prim {

/** A free cast of the manual-axis state of a value. */
class ManualCast : public Collective {
 public:
  /** Which cast. */
  enum class Cast : uint8_t {
    InvariantToReduced, /**< preduced: transposes to unreduced_psum */
    VaryingToUnreduced, /**< vary_unreduced_cast: transposes to reduced_vary_cast */
    ReducedToVarying,   /**< reduced_vary_cast: transposes to vary_unreduced_cast */
  };
  /** The cast over `axes` (manual axes of the enclosing shard_map). */
  ManualCast(Cast cast, std::vector<std::string> axes)
      : Collective(Kind::Pvary, std::move(axes), detail::ReduceOp::Sum, true), cast_(cast) {}
  /** The cast. */
  Cast cast() const { return cast_; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  Cast cast_;
};

/** psum of a value unreduced over the axes: the all-reduce of the devices' partial
 *  values, unreduced -> invariant (JAX's unreduced_psum); transposes to preduced. */
class UnreducedPsum : public Collective {
 public:
  /** The psum over `axes`. */
  explicit UnreducedPsum(std::vector<std::string> axes)
      : Collective(Kind::Psum, std::move(axes), detail::ReduceOp::Sum, true) {}
  const char* name() const override { return "unreduced_psum"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;
};

/** Binds a cast / unreduced_psum over `axes` to x. */
Array manual_cast(ManualCast::Cast cast, const Array& x, const std::vector<std::string>& axes);
/** Binds unreduced_psum over `axes` to x. */
Array unreduced_psum(const Array& x, const std::vector<std::string>& axes);

/** The unreduced / reduced sets over manual axes of an ordinary primitive's results
 *  (sharding §9's rules, as JAX applies them to a shard_map body's values): sets
 *  `out`'s munreduced / mreduced, or raises the rule's error. Called by the rule
 *  driver when an operand has either set. */
void manual_unreduced_rule(const detail::Primitive& prim, const std::vector<ArrayType>& in,
                           std::vector<ArrayType>& out);

}  // namespace tsr::prim

namespace tsr::detail {
/** psum's dispatch (manual-spmd §3.6): unreduced_psum when x is unreduced over the
 *  axes, nullopt when it is over none of them, ValueError when over some only. */
std::optional<Array> psum_of_unreduced(const Array& x, const std::vector<std::string>& axes);
}  // namespace tsr::detail
