#pragma once
// lax.fft: the FFT primitive (docs/design/0023-complex-and-fft.md §6).
#include <cstdint>

#include "tsr/core/primitive.h"
#include "tsr/fft.h"

namespace tsr::prim {

/** lax.fft_p: a 1-, 2- or 3-D transform over the trailing dims. FFT / IFFT: complex in
 *  and out (IFFT scaled by 1/N); RFFT: real in, the last dim n becomes n / 2 + 1;
 *  IRFFT: the inverse of RFFT. The kernel needs the transformed dims whole: their mesh
 *  axes move onto a batch dim for the kernel (an all-to-all each way), or are gathered
 *  when no batch dim can take them. */
class Fft : public detail::Primitive {
 public:
  /** The transform and its lengths (the trailing dims of the real side). */
  Fft(fft::FftType type, Shape lengths) : type_(type), lengths_(std::move(lengths)) {}
  /** The transform. */
  fft::FftType type() const { return type_; }
  /** fft_lengths. */
  const Shape& lengths() const { return lengths_; }
  const char* name() const override { return "fft"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;
  std::string params() const override;

 private:
  fft::FftType type_;
  Shape lengths_;
};

}  // namespace tsr::prim
