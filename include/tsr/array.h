#pragma once
/** The sharded Array value handle, its type, and the calls that create, place,
 *  read and re-lay-out arrays. */
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "tsr/device.h"
#include "tsr/dtype.h"
#include "tsr/shape.h"
#include "tsr/sharding.h"

namespace tsr {

/** An array's type: shape, dtype (+weak flag), sharding on an abstract mesh with the
 *  spec normalized to the rank, and the manual axes it varies over. Prints like
 *  `f32[8@X,4@Y]`, `~f32[]`, `f32[8]{U:x}`, `f32[4]{V:x}`. */
struct ArrayType {
  Shape shape;                  /**< global shape */
  DType dtype = DType::Float32; /**< element type */
  bool weak = false;            /**< weak type (came from a C++ scalar) */
  NamedSharding sharding;       /**< abstract mesh + rank-normalized spec */
  std::set<std::string> vma;    /**< manual mesh axes the value varies over */
  /** Manual axes the value is unreduced over (tsr::pcast to Unreduced in a shard_map
   *  body: each device holds a partial sum; printed with the spec's {U:...}). */
  std::set<std::string> munreduced;
  /** Manual axes the value is reduced over (pcast to Reduced: the same on every device,
   *  its cotangent unreduced; printed with the spec's {R:...}). */
  std::set<std::string> mreduced;

  /** Rank. */
  int ndim() const { return static_cast<int>(shape.size()); }
  /** "f32[8@X,4@Y]". */
  std::string str() const;
  /** Same shape, dtype, vma and (when either mesh has an Explicit axis) sharding. */
  bool operator==(const ArrayType& o) const;
};
/** Prints ArrayType::str(). */
std::ostream& operator<<(std::ostream& os, const ArrayType& t);

/** Builds the type-level sharding for a value of `shape` (spec §10.2): drops
 *  non-Explicit axes, pads the spec to the rank, checks its length (E24) and
 *  divisibility (E23). */
NamedSharding type_sharding(const NamedSharding& s, const Shape& shape);

/** Where to put an array: a NamedSharding, a PartitionSpec (against the context
 *  mesh) or one Device. Default: replicated on the context mesh, else device 0. */
using Placement = std::variant<std::monostate, NamedSharding, PartitionSpec, Device>;

class Array;

/** One device's piece of an array. */
struct Shard {
  Device device;      /**< where it lives */
  ShardIndex index;   /**< which part of the global array it holds */
  int replica_id = 0; /**< 0 for the first copy of this index */
  /** The piece itself, as an array on `device` (shares the buffer). */
  std::shared_ptr<Array> data;
};

namespace detail {
struct ArrayImpl;
}
class Index;
class At;

/** A sharded, immutable n-d array: a cheap handle. Operations are dispatched
 *  asynchronously; reading data waits for them. */
class Array {
 public:
  /** An invalid handle; most calls raise ValueError on it. */
  Array() = default;
  /** Wraps an implementation (internal). */
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}

  /** True when this handle refers to an array. */
  bool valid() const { return impl_ != nullptr; }
  /** The type. */
  const ArrayType& type() const;
  /** Global shape. */
  const Shape& shape() const { return type().shape; }
  /** Element type. */
  DType dtype() const { return type().dtype; }
  /** Rank. */
  int ndim() const { return type().ndim(); }
  /** Number of elements. */
  int64_t size() const { return numel(shape()); }
  /** Bytes of the logical value. */
  int64_t nbytes() const { return size() * itemsize(dtype()); }
  /** The concrete sharding, with devices. */
  const NamedSharding& sharding() const;
  /** Waits until every shard is computed; rethrows an error raised while computing. */
  const Array& block_until_ready() const;
  /** One shard per device of this process, in mesh row-major order. */
  std::vector<Shard> addressable_shards() const;
  /** True when every device of the sharding is this process's (always in one process). */
  bool is_fully_addressable() const;
  /** One shard per device of the sharding, in mesh order; another process's shards
   *  have no data (null). */
  std::vector<Shard> global_shards() const;
  /** The data of addressable shard i (addressable_shards()[i].data). */
  Array addressable_data(int i) const;
  /** True when every device holds the whole value (the sharding's, as JAX). */
  bool is_fully_replicated() const;

  /** The logical value, row-major, converted to T. Reduces unreduced axes. Across
   *  processes, RuntimeError unless this process holds a copy of every block. */
  template <typename T>
  std::vector<T> to_vector() const {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(static_cast<size_t>(size()));
      copy_to_host(bytes.data(), DType::Bool);
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<size_t>(size()));
      copy_to_host(out.data(), dtype_v<T>);
      return out;
    }
  }
  /** The value of a one-element array, converted to T. */
  template <typename T>
  T item() const {
    check_item();
    return to_vector<T>()[0];
  }

  /** The truth value of a one-element concrete array (`if (all(equal(x, y)))`). A traced
   *  array raises TracerBoolConversionError (use cond / where); more than one
   *  element raises ValueError, as NumPy. */
  explicit operator bool() const;

  /** Row-major reshape (one size may be -1); see tsr::reshape. */
  Array reshape(const Shape& new_shape) const;
  /** The same values converted to dtype; see tsr::astype. */
  Array astype(DType dtype) const;
  /** jnp's arr.view(dtype): the same bits as dtype, the last dim scaled by the width
   *  ratio (bool viewed through uint8); see tsr::bitcast_convert_type. */
  Array view(DType dtype) const;
  /** x[i] with NumPy semantics (tsr/indexing.h). */
  Array operator[](const Index& i) const;
  /** x[i, j, ...]: `x[{all, 1}]`. */
  Array operator[](std::initializer_list<Index> idx) const;
  /** x.at[i, j, ...]: functional updates and reads with options (tsr/indexing.h). */
  template <typename... I>
  At at(const I&... idx) const;

  /** Internal implementation. */
  const std::shared_ptr<detail::ArrayImpl>& impl() const { return impl_; }

 private:
  friend Array device_put(const Array& x, const Placement& where);
  void copy_to_host(void* dst, DType as) const;
  void check_item() const;
  std::shared_ptr<detail::ArrayImpl> impl_;
};

#if !defined(__GNUC__) || defined(__STRICT_ANSI__) /** jax.typeof; GNU C++ mode: x.type() */
const ArrayType& typeof(const Array& x);
#endif
/** Copies host data of `shape` onto a placement; `data` must hold numel(shape)
 *  elements (prefer array() or the counted overload, which check that). */
Array from_host(const void* data, DType dtype, const Shape& shape, const Placement& where = {});
/** Copies `count` host elements of `dtype` into an array of `shape`; ValueError
 *  naming `api` when count != numel(shape) or the shape is invalid. */
Array from_host(const void* data, size_t count, DType dtype, const Shape& shape,
                const Placement& where, const char* api);
namespace detail {
/** array()/device_put() of a vector: shape {-1} means 1-D of data's length. */
template <typename T>
Array host_array(const std::vector<T>& data, const Shape& shape, const Placement& where,
                 const char* api) {
  Shape s =
      (shape.size() == 1 && shape[0] == -1) ? Shape{static_cast<int64_t>(data.size())} : shape;
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return from_host(bytes.data(), bytes.size(), dtype_v<T>, s, where, api);
  } else {
    return from_host(data.data(), data.size(), dtype_v<T>, s, where, api);
  }
}
}  // namespace detail
/** An array from a vector; shape defaults to 1-D. ValueError unless the vector
 *  holds exactly numel(shape) elements. */
template <typename T>
Array array(const std::vector<T>& data, const Shape& shape = {-1}, const Placement& where = {}) {
  return detail::host_array(data, shape, where, "array");
}
/** An array from a braced list: array({1.f, 2.f}). */
template <typename T>
Array array(std::initializer_list<T> data, const Shape& shape = {-1}, const Placement& where = {}) {
  return array(std::vector<T>(data), shape, where);
}
/** A rank-0 array holding v (a strong type; see weak scalars in ops). */
template <typename T>
Array scalar(T v, const Placement& where = {}) {
  return array(std::vector<T>{v}, Shape{}, where);
}

/** Zeros of shape and dtype. */
Array zeros(const Shape& shape, DType dtype = float32, const Placement& where = {});
/** Ones of shape and dtype. */
Array ones(const Shape& shape, DType dtype = float32, const Placement& where = {});
/** Every element `value` (converted to dtype). */
Array full(const Shape& shape, double value, DType dtype = float32, const Placement& where = {});
/** start, start+step, ... below stop, as a 1-D array. */
Array arange(double start, double stop, double step = 1, DType dtype = float32,
             const Placement& where = {});
/** 0, 1, ..., n-1 as float32 (arange(32.f)) or int32 (arange(32)). */
Array arange(float n, const Placement& where = {});
/** 0, 1, ..., n-1 as int32. */
Array arange(int n, const Placement& where = {});
/** Row-major positions 0..numel-1 laid out in `shape` (a quick test pattern). */
Array iota(const Shape& shape, DType dtype = float32, const Placement& where = {});

/** Copies an array (or moves it between device sets) to a placement. */
Array device_put(const Array& x, const Placement& where);
/** Puts host data (1-D, or of `shape`: exactly numel(shape) elements) on a placement:
 *  device_put(vec, P("x")). (A std::vector<Array> is a tree: see tsr/shard.h.) */
template <typename T>
requires(std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t> ||
         std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) Array
    device_put(const std::vector<T>& data, const Placement& where, const Shape& shape = {-1}) {
  return detail::host_array(data, shape, where, "device_put");
}
/** jax.make_array_from_callback: an array of `shape` and `dtype` laid out on `sharding`
 *  whose block at each device's index is callback(index) (full dimensions span 0..size),
 *  an Array of the block's shape and dtype on any device; a block already on the device
 *  that holds the index is used without a copy. Called once per distinct index, in mesh
 *  order; replicas get copies. Never builds the whole array on one device. */
Array make_array_from_callback(const Shape& shape, DType dtype, const Placement& sharding,
                               const std::function<Array(const ShardIndex& index)>& callback);
/** jax.make_array_from_process_local_data: a global array from this process's piece.
 *  Each dimension of local_data is either the global extent (the same data on every
 *  process, indexed globally) or exactly the blocks this process's devices hold,
 *  packed in order of their offsets. global_shape is inferred when the sharding is
 *  uniform over processes; ValueError (JAX's texts) otherwise. In one process:
 *  device_put(local_data, sharding). */
Array make_array_from_process_local_data(const NamedSharding& sharding, const Array& local_data,
                                         const std::optional<Shape>& global_shape = {});
/** jax.make_array_from_single_device_arrays: a global array of `shape` from one array
 *  per addressable device of `sharding` (any order), each of the block's shape; no
 *  copy. ValueError with JAX's texts for missing, extra or duplicate devices and for a
 *  block of the wrong shape or dtype; `dtype` is needed when this process holds none. */
Array make_array_from_single_device_arrays(const Shape& shape, const NamedSharding& sharding,
                                           const std::vector<Array>& arrays,
                                           std::optional<DType> dtype = {});
/** Changes an array's sharding with collectives on device data (never via the
 *  host). Same devices or not; replicated<->sharded<->unreduced. */
Array reshard(const Array& x, const Placement& where);

/** A terminal box diagram of which device holds which block, for any rank, plus
 *  the per-device shard shape and bytes. On a traced array (inside jit) it draws the
 *  type's layout, by mesh coordinates unless the context mesh names the devices; in
 *  a shard_map body, the block type (with vma) and the devices holding each block. */
std::string visualize(const Array& x);
/** Same diagram for a type laid out on a sharding (concrete, or abstract: coordinates). */
std::string visualize(const Shape& shape, DType dtype, const NamedSharding& sharding);

/** Resolves a placement to a concrete sharding for a value of `shape` (internal to
 *  creation calls; `api` names the caller in errors). */
NamedSharding resolve_placement(const Placement& where, const Shape& shape, const char* api);

}  // namespace tsr
