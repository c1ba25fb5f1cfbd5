#pragma once
// The collectives of a shard_map body (manual-spmd §4): primitives over named manual
// axes whose rules type vma; they lower to comm steps over the devices that differ
// only along the named axes (one Group call per device).
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tsr/collectives.h"
#include "tsr/comm/group.h"
#include "tsr/core/primitive.h"

namespace tsr::detail {

/** check_vma of the shard_map whose body is being traced (true outside any). */
bool current_check_vma();
/** Sets current_check_vma() for a scope (tracing or re-tracing a body). */
struct CheckVmaScope {
  bool prev; /**< the value restored on exit */
  /** Enters check_vma = v. */
  explicit CheckVmaScope(bool v);
  ~CheckVmaScope();
  CheckVmaScope(const CheckVmaScope&) = delete;
  CheckVmaScope& operator=(const CheckVmaScope&) = delete;
};
/** Binds a vmap's axis_name (of the vmap's size) for the collectives of the function
 *  being traced (manual-spmd §6.2). */
struct VmapNameScope {
  /** Binds `name` with `size`; an empty name binds nothing. */
  VmapNameScope(std::string name, int64_t size);
  ~VmapNameScope();
  VmapNameScope(const VmapNameScope&) = delete;
  VmapNameScope& operator=(const VmapNameScope&) = delete;

 private:
  bool pushed_;
};
/** The size of a vmap-bound axis name, innermost binding first; 0 when not bound. */
int64_t vmap_axis_size(const std::string& name);
/** What a trace's collectives read from the context besides the types: check_vma and
 *  the vmap-bound names with their sizes ("" for none of either); part of jit's cache key. */
std::string axis_env_key();
/** The size of a bound axis: a vmap axis name, else a manual axis of the context mesh. */
int64_t bound_axis_size(const std::string& name);
/** Raises the unbound-axis NameError of manual-spmd §4 unless every name is a
 *  vmap-bound axis name or a manual axis of the context mesh. */
void check_axes_bound(const std::vector<std::string>& axes, const char* op);

}  // namespace tsr::detail

namespace tsr::prim {

/** Mesh axis names as a Python tuple: ('x',), ('x', 'y'). */
std::string axis_names_tuple(const std::vector<std::string>& axes);
/** A set of axis names as JAX prints it in messages: {x,y}. */
std::string axis_set_str(const std::set<std::string>& axes);
/** axis_index_groups as JAX prints them: ((0, 1), (2, 3)). */
std::string groups_str(const AxisIndexGroups& g);
/** The group size of axis_index_groups `g` over a combined axis of size n (n when `g`
 *  is empty), after checking that they cover 0..n-1 exactly once and are of equal
 *  size (ValueError naming `op`). */
int64_t check_axis_index_groups(const AxisIndexGroups& g, int64_t n, const char* op,
                                const std::vector<std::string>& axes);
/** Raises NotImplementedError for axis_index_groups over a vmap's axis_name (manual-spmd
 *  §6.2), naming `op` and the axis. */
[[noreturn]] void refuse_vmap_groups(const char* op, const std::string& axis,
                                     const AxisIndexGroups& g);
/** Calls refuse_vmap_groups when `g` is non-empty and an axis is a vmap-bound name. */
void check_no_vmap_groups(const char* op, const std::vector<std::string>& axes,
                          const AxisIndexGroups& g);
/** The checks of a reduction's (psum, pmax, pmin) axis_index_groups: none over a vmap's
 *  axis_name, none with vma checking (NotImplementedError, as JAX's psum_invariant),
 *  then check_axis_index_groups. Nothing when `g` is empty. */
void check_reduce_groups(const char* op, const std::vector<std::string>& axes,
                         const AxisIndexGroups& g, bool check_vma);
/** For each combined index 0..n-1: its group and its position in it (one group of all
 *  when `g` is empty). */
std::vector<std::pair<int, int>> group_positions(const AxisIndexGroups& g, int64_t n);

/** A collective over the named manual axes of the enclosing shard_map. */
class Collective : public detail::Primitive {
 public:
  /** What the collective does. */
  enum class Kind : uint8_t {
    Psum,      /**< all-reduce (sum/max/min): varying -> invariant over the axes */
    Pvary,     /**< invariant -> varying: a type cast, no data moves */
    AxisIndex, /**< the device's row-major index over the axes: i32[] varying */
  };
  /** Kind, axes (row-major in this order), reduction, whether vma is checked and the
   *  axis_index_groups of a legacy (check_vma=false) reduction. Which axes a vmap binds
   *  (untyped ones) is read here, when the collective is bound. */
  Collective(Kind kind, std::vector<std::string> axes, detail::ReduceOp op, bool check_vma,
             AxisIndexGroups groups = {});
  /** The kind. */
  Kind kind() const { return kind_; }
  /** The named axes. */
  const std::vector<std::string>& axes() const { return axes_; }
  /** The reduction (Psum). */
  detail::ReduceOp op() const { return op_; }
  /** The axis_index_groups (Psum; empty: one group). */
  const AxisIndexGroups& groups() const { return groups_; }
  /** Whether it moves data between devices: pvary is a type cast and axis_index a
   *  per-device constant (design 0011), so only the reductions do. */
  bool communicates() const { return kind_ == Kind::Psum; }
  const char* name() const override;
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  bool custom_vma() const override { return true; }
  bool uses_axis_name(const std::string& n) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  Kind kind_;
  std::vector<std::string> axes_;
  detail::ReduceOp op_;
  bool check_vma_;
  AxisIndexGroups groups_;
  std::set<std::string> vmap_axes_;  // the axes a vmap's axis_name bound: never typed
};

}  // namespace tsr::prim
