#pragma once
// Nullary creation primitives: each device writes only its own block, computed
// from the block's global origin (KernelArgs::out_origin).
#include <optional>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** Where a created value goes: an abstract sharding for its type, plus the
 *  concrete mesh when the caller named devices (eager placement). */
struct Placed {
  std::optional<NamedSharding> sharding; /**< abstract; none: replicated on the context mesh */
  std::optional<Mesh> mesh;              /**< concrete devices, when given */
};

/** iota: element = its index along `dimension`; dimension -1 gives the row-major
 *  flat index (tsr::iota's test pattern). */
class Iota : public detail::Primitive {
 public:
  /** dtype, shape, dimension, placement. */
  Iota(DType dtype, Shape shape, int dimension, Placed where)
      : dtype_(dtype), shape_(std::move(shape)), dim_(dimension), where_(std::move(where)) {}
  /** Dimension (-1: flat index). */
  int dimension() const { return dim_; }
  /** Global shape. */
  const Shape& shape() const { return shape_; }
  const char* name() const override { return "iota"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  const Mesh* placement_mesh() const override { return where_.mesh ? &*where_.mesh : nullptr; }

 private:
  DType dtype_;
  Shape shape_;
  int dim_;
  Placed where_;
};

/** full: every element `value` (converted to dtype). */
class Full : public detail::Primitive {
 public:
  /** shape, dtype, value, weak flag, placement. */
  Full(Shape shape, DType dtype, double value, bool weak, Placed where)
      : shape_(std::move(shape)),
        dtype_(dtype),
        value_(value),
        weak_(weak),
        where_(std::move(where)) {}
  /** The value. */
  double value() const { return value_; }
  const char* name() const override { return "full"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;
  const Mesh* placement_mesh() const override { return where_.mesh ? &*where_.mesh : nullptr; }

 private:
  Shape shape_;
  DType dtype_;
  double value_;
  bool weak_;
  Placed where_;
};

}  // namespace tsr::prim
