#pragma once
// A chain of elementwise kernel steps fused by jit's lowering (runtime/fusion.cpp)
// into one step whose kernel walks the data in cache-sized blocks, running every
// member's own kernel on each block: intermediates never leave the cache.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tsr/backends/kernel.h"
#include "tsr/core/primitive.h"

namespace tsr::detail {

/** The parameters of a fused elementwise step (KernelArgs::prim of its kernel). */
class FusedElementwise : public Primitive {
 public:
  /** Where a member's operand or result lives. */
  struct Ref {
    enum class Kind : uint8_t {
      In,
      Out,
      Tmp
    } kind = Kind::In;   /**< step input/output, or scratch */
    int index = 0;       /**< which input, output or scratch buffer */
    bool scalar = false; /**< one element, the same for every block */
    size_t itemsize = 0; /**< bytes per element */
  };
  /** One fused kernel step. */
  struct Member {
    KernelFn fn = nullptr;                    /**< the step's own kernel */
    PrimPtr prim;                             /**< its parameters */
    std::vector<Ref> ins, outs;               /**< its operands and results */
    std::vector<LocalType> blk_in, blk_out;   /**< local types of one full block */
    std::vector<LocalType> tail_in, tail_out; /**< local types of the last, short block */
  };

  std::vector<Member> members;   /**< in program order */
  std::vector<size_t> tmp_bytes; /**< per scratch buffer: bytes of one block */
  int64_t n = 0;                 /**< elements per device */
  int64_t block = 0;             /**< elements per block */

  const char* name() const override { return "fused_elementwise"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
};

}  // namespace tsr::detail
