// Rules of the random primitives: outputs are placed like creation ops (the
// given sharding, else replicated on the rule's mesh); the key is read replicated
// (a sharded key is gathered: it is 8 bytes).
#include "tsr/prims/random.h"

#include <cstdio>

#include "tsr/prims/common.h"
#include "tsr/prims/elementwise.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
constexpr const char* kKeyOnly = "its inputs are integer keys and counters: no tangents";
const bool registered = register_primitive("random_bits") && register_primitive("random_uniform") &&
                        register_primitive("random_randint") && register_primitive("threefry2x32") &&
                        declare_ad("random_bits", AdKind::NonDifferentiable, kKeyOnly) &&
                        declare_ad("random_uniform", AdKind::NonDifferentiable, kKeyOnly) &&
                        declare_ad("random_randint", AdKind::NonDifferentiable, kKeyOnly) &&
                        declare_ad("threefry2x32", AdKind::NonDifferentiable, kKeyOnly);

// Kernels write full values; unreduced axes of the type get zeros from the reshard
// after them (as the creation ops do).
Lowering placed_lowering(const ArrayType& t) {
  const PartitionSpec& s = t.sharding.spec();
  if (s.unreduced_kind() != UnreducedKind::Sum) return {{PartitionSpec()}, {s}};
  return {{PartitionSpec()}, {PartitionSpec(s.entries(), {}, s.reduced())}};
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

const char* RandomBits::name() const {
  switch (dist_) {
    case RandomDist::Bits:
      return "random_bits";
    case RandomDist::Uniform:
      return "random_uniform";
    case RandomDist::RandInt:
      return "random_randint";
  }
  return "random_bits";
}

std::vector<ArrayType> RandomBits::infer(const std::vector<ArrayType>& in) const {
  check_key(in.at(0), name());
  no_unreduced(name(), in);
  bool ok = dist_ == RandomDist::Bits      ? is_unsigned(dtype_)
            : dist_ == RandomDist::Uniform ? is_floating(dtype_)
                                           : is_integer(dtype_);
  if (!ok)
    throw TypeError(std::string("[") + name() + "] " + name() + " does not produce dtype " +
                    dtype_name(dtype_) + ". Got dtype=" + dtype_name(dtype_) + "; expected " +
                    (dist_ == RandomDist::Bits      ? "uint8, uint16, uint32 or uint64"
                     : dist_ == RandomDist::Uniform ? "a floating-point dtype"
                                                    : "an integer dtype") +
                    ". Pass a dtype of that kind.");
  if (where_.sharding) return {make_type(shape_, dtype_, false, *where_.sharding)};
  return {make_type(shape_, dtype_, false, rule_mesh(in), PartitionSpec())};
}

Lowering RandomBits::partition(const std::vector<ArrayType>&,
                               const std::vector<ArrayType>& out) const {
  return placed_lowering(out[0]);
}

std::string RandomBits::params() const {
  std::string s = std::string("shape=") + ints_tuple(shape_) + " dtype=" + dtype_name(dtype_);
  if (dist_ == RandomDist::Uniform) s += " minval=" + num(flo_) + " maxval=" + num(fhi_);
  if (dist_ == RandomDist::RandInt)
    s += " minval=" + std::to_string(ilo_) + " maxval=" + std::to_string(ihi_);
  return s + " sharding=" + p_sharding(where_.sharding);
}

std::vector<ArrayType> Threefry2x32::infer(const std::vector<ArrayType>& in) const {
  check_key(in.at(0), "threefry2x32");
  const ArrayType& x0 = in.at(1);
  const ArrayType& x1 = in.at(2);
  if (x0.dtype != DType::UInt32 || x1.dtype != DType::UInt32 || x0.shape != x1.shape)
    throw TypeError("[threefry2x32] the counters must be uint32 arrays of one shape. Got " +
                    x0.str() + " and " + x1.str() +
                    "; expected two uint32 arrays of equal shape. Convert with astype(uint32) "
                    "and broadcast_to one shape.");
  no_unreduced("threefry2x32", in);
  Shape shape;
  std::vector<PartitionEntry> e = broadcast_entries("threefry2x32", {x0, x1}, shape);
  ArrayType t = make_type(shape, DType::UInt32, false, rule_mesh(in), e);
  return {t, t};
}

Lowering Threefry2x32::partition(const std::vector<ArrayType>&,
                                 const std::vector<ArrayType>& out) const {
  const PartitionSpec& s = out[0].sharding.spec();
  return {{PartitionSpec(), s, s}, {s, s}};
}

// ---- Batching rules (vmap). A batch of keys draws one sample per key (the kernels
// take one key), so those loop over the batch; batched counters under one key are
// elementwise.

detail::Batched RandomBits::batch(const std::vector<Array>& args,
                                  const std::vector<int>& dims) const {
  return detail::batch_by_loop(*this, args, dims);
}

detail::Batched Threefry2x32::batch(const std::vector<Array>& args,
                                    const std::vector<int>& dims) const {
  if (dims[0] >= 0) return detail::batch_by_loop(*this, args, dims);
  Array x0 = dims[1] >= 0 ? detail::move_batch(args[1], dims[1], 0) : args[1];
  Array x1 = dims[2] >= 0 ? detail::move_batch(args[2], dims[2], 0) : args[2];
  ArrayType like = dims[1] >= 0 ? x0.type() : x1.type();
  x0 = detail::batch_full(x0, dims[1] >= 0 ? 0 : -1, like);
  x1 = detail::batch_full(x1, dims[2] >= 0 ? 0 : -1, like);
  std::vector<Array> outs = detail::bind(shared_from_this(), {args[0], x0, x1});
  return {outs, {0, 0}};
}

}  // namespace tsr::prim

namespace tsr::detail {
void check_key(const ArrayType& t, const char* api) {
  if (t.dtype != DType::UInt32 || t.shape != Shape{2})
    throw TypeError(std::string("[") + api + "] the key is not a raw threefry2x32 key. Got " +
                    t.str() +
                    "; expected a uint32 array of shape (2,). Make keys with "
                    "tsr::random::key(seed), split or fold_in.");
}
}  // namespace tsr::detail
