#pragma once
// Shape primitives. Kernels see local blocks: the partition rules leave every
// dimension whose size or order an op changes unsharded on the device, except
// where a local computation is exact (reshape's major-dim cases, transpose).
#include <optional>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** reshape to new_sizes (row-major). */
class Reshape : public detail::Primitive {
 public:
  /** New sizes and optional out_sharding (abstract). */
  Reshape(Shape new_sizes, std::optional<NamedSharding> out_sharding)
      : sizes_(std::move(new_sizes)), out_sharding_(std::move(out_sharding)) {}
  /** New sizes. */
  const Shape& new_sizes() const { return sizes_; }
  const char* name() const override { return "reshape"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  Shape sizes_;
  std::optional<NamedSharding> out_sharding_;
};

/** transpose: out dim i = in dim perm[i]. */
class Transpose : public detail::Primitive {
 public:
  /** The permutation. */
  explicit Transpose(std::vector<int> perm) : perm_(std::move(perm)) {}
  /** The permutation. */
  const std::vector<int>& perm() const { return perm_; }
  const char* name() const override { return "transpose"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  std::vector<int> perm_;
};

/** squeeze: removes the listed size-1 dims. */
class Squeeze : public detail::Primitive {
 public:
  /** Sorted dims to remove. */
  explicit Squeeze(std::vector<int> dims) : dims_(std::move(dims)) {}
  /** Removed dims. */
  const std::vector<int>& dims() const { return dims_; }
  const char* name() const override { return "squeeze"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  std::vector<int> dims_;
};

/** broadcast_in_dim: operand dim i becomes output dim bdims[i] (size equal or 1). */
class BroadcastInDim : public detail::Primitive {
 public:
  /** Target shape, dimension map, optional out_sharding (abstract). */
  BroadcastInDim(Shape shape, std::vector<int> bdims, std::optional<NamedSharding> out_sharding)
      : shape_(std::move(shape)),
        bdims_(std::move(bdims)),
        out_sharding_(std::move(out_sharding)) {}
  /** Target shape. */
  const Shape& shape() const { return shape_; }
  /** Operand dim -> output dim. */
  const std::vector<int>& bdims() const { return bdims_; }
  const char* name() const override { return "broadcast_in_dim"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  Shape shape_;
  std::vector<int> bdims_;
  std::optional<NamedSharding> out_sharding_;
};

/** slice [start, limit) with strides. */
class Slice : public detail::Primitive {
 public:
  /** Bounds per dim. */
  Slice(Shape start, Shape limit, Shape strides)
      : start_(std::move(start)), limit_(std::move(limit)), strides_(std::move(strides)) {}
  /** Starts. */
  const Shape& start() const { return start_; }
  /** Limits. */
  const Shape& limit() const { return limit_; }
  /** Strides. */
  const Shape& strides() const { return strides_; }
  const char* name() const override { return "slice"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  Shape start_, limit_, strides_;
};

/** dynamic_slice(operand, *starts) of static sizes; starts are clamped into range. */
class DynamicSlice : public detail::Primitive {
 public:
  /** Slice sizes. */
  explicit DynamicSlice(Shape sizes) : sizes_(std::move(sizes)) {}
  /** Slice sizes. */
  const Shape& sizes() const { return sizes_; }
  const char* name() const override { return "dynamic_slice"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  Shape sizes_;
};

/** dynamic_update_slice(operand, update, *starts); starts are clamped into range. */
class DynamicUpdateSlice : public detail::Primitive {
 public:
  const char* name() const override { return "dynamic_update_slice"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
};

/** pad(operand, value) with (lo, hi, interior) per dim; lo/hi may be negative. */
class Pad : public detail::Primitive {
 public:
  /** Padding config. */
  Pad(Shape lo, Shape hi, Shape interior)
      : lo_(std::move(lo)), hi_(std::move(hi)), interior_(std::move(interior)) {}
  /** Low padding. */
  const Shape& lo() const { return lo_; }
  /** High padding. */
  const Shape& hi() const { return hi_; }
  /** Interior padding. */
  const Shape& interior() const { return interior_; }
  const char* name() const override { return "pad"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  Shape lo_, hi_, interior_;
};

/** concatenate along dim. */
class Concatenate : public detail::Primitive {
 public:
  /** The dimension. */
  explicit Concatenate(int dim) : dim_(dim) {}
  /** The dimension. */
  int dim() const { return dim_; }
  const char* name() const override { return "concatenate"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  int dim_;
};

/** split along axis into pieces of `sizes` (one output each). */
class Split : public detail::Primitive {
 public:
  /** Piece sizes and axis. */
  Split(Shape sizes, int axis) : sizes_(std::move(sizes)), axis_(axis) {}
  /** Piece sizes. */
  const Shape& sizes() const { return sizes_; }
  /** Axis. */
  int axis() const { return axis_; }
  const char* name() const override { return "split"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  Shape sizes_;
  int axis_;
};

/** rev: reverses the listed dims. */
class Rev : public detail::Primitive {
 public:
  /** Reversed dims. */
  explicit Rev(std::vector<int> dims) : dims_(std::move(dims)) {}
  /** Reversed dims. */
  const std::vector<int>& dims() const { return dims_; }
  const char* name() const override { return "rev"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::string params() const override;

 private:
  std::vector<int> dims_;
};

}  // namespace tsr::prim
