#pragma once
// lax's complex-number primitives: real, imag, conj (one class, ComplexPart) and
// complex(x, y). All are linear, with lax's transposes (docs/design/0023).
#include <cstdint>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** Which part a ComplexPart primitive takes. */
enum class PartKind : uint8_t {
  Real, /**< lax.real: the real part (a real result) */
  Imag, /**< lax.imag: the imaginary part (a real result) */
  Conj, /**< lax.conj of a complex operand: the complex conjugate */
};

/** real(z), imag(z) or conj(z) of a complex z; sharding and unreduced sets kept. */
class ComplexPart : public detail::Primitive {
 public:
  /** The part. */
  explicit ComplexPart(PartKind kind) : kind_(kind) {}
  /** Which part. */
  PartKind kind() const { return kind_; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  PartKind kind_;
};

/** lax.complex(x, y) = x + i y for float32 / float64 x and y of one dtype (size-1 dims
 *  and rank 0 broadcast, as every binary op); a complex64 / complex128 result. */
class MakeComplex : public detail::Primitive {
 public:
  const char* name() const override { return "complex"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;
};

}  // namespace tsr::prim
