#pragma once
// reshard as a primitive (spec §13.2) and the nested-jit call primitive.
#include <optional>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** Refuses what no reshard can do to x's unreduced axes on the way to dst (a
 * change of kind), so ops that reshard to an out_sharding refuse in infer. */
void check_unreduced_move(const ArrayType& x, const NamedSharding& dst, const char* op);

/** reshard(x, dst): the type becomes exactly dst; data moves by the planner. */
class Reshard : public detail::Primitive {
 public:
  /** Destination: abstract sharding, plus concrete devices when given. */
  Reshard(NamedSharding dst, std::optional<Mesh> mesh)
      : dst_(std::move(dst)), mesh_(std::move(mesh)) {}
  /** The destination (abstract). */
  const NamedSharding& dst() const { return dst_; }
  const char* name() const override { return "reshard"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  std::string params() const override;
  /** Also compares the destination's mesh and devices, which params() does not print. */
  bool equals(const detail::Primitive& o) const override;
  /** Consistent with equals. */
  size_t hash() const override;
  const Mesh* placement_mesh() const override { return mesh_ ? &*mesh_ : nullptr; }
  /** reshard is how a value changes meshes: no context-mesh check. */
  bool checks_context_mesh() const override { return false; }

 private:
  NamedSharding dst_;
  std::optional<Mesh> mesh_;
};

/** with_sharding_constraint on Auto axes (spec §13.3): the type is unchanged; the Auto
 *  propagation pass makes the value's layout the type's Explicit entries with `spec`'s
 *  Auto axes appended (UNCONSTRAINED dims stay free), a hard constraint at this point. */
class ShardingConstraint : public detail::Primitive {
 public:
  /** The user's spec (Auto axes and UNCONSTRAINED only), on `mesh`. */
  ShardingConstraint(PartitionSpec spec, AbstractMesh mesh)
      : spec_(std::move(spec)), mesh_(std::move(mesh)) {}
  /** The constraint as given (not padded). */
  const PartitionSpec& spec() const { return spec_; }
  const char* name() const override { return "sharding_constraint"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  std::string params() const override { return "sharding=" + spec_.repr(); }
  /** The concrete layout of a value of type `t`: Explicit entries major, then the
   *  constraint's Auto axes; an UNCONSTRAINED dim keeps `free`'s Auto axes. */
  PartitionSpec merged(const ArrayType& t, const PartitionSpec& free) const;

 private:
  PartitionSpec spec_;
  AbstractMesh mesh_;
};

/** A call of a jitted function inside another trace (nested jit). */
class JitCall : public detail::Primitive {
 public:
  /** The traced program, the function's name, and forced output shardings. */
  JitCall(std::shared_ptr<const detail::Program> prog, std::string fn_name,
          std::vector<std::optional<NamedSharding>> out_shardings)
      : prog_(std::move(prog)), fn_name_(std::move(fn_name)), out_(std::move(out_shardings)) {}
  const char* name() const override { return "jit"; }
  /** Types vma by what it calls (manual-spmd §3.3 is for ordinary primitives). */
  bool custom_vma() const override { return true; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_BATCH;
  TSR_DEFINE_TRANSPOSE;
  bool jvp_makes_outputs() const override { return true; }
  std::string params() const override { return "name=" + fn_name_; }
  const detail::Program* subprogram() const override { return prog_.get(); }
  bool equals(const Primitive& o) const override { return this == &o; }

 private:
  std::shared_ptr<const detail::Program> prog_;
  std::string fn_name_;
  std::vector<std::optional<NamedSharding>> out_;
};

}  // namespace tsr::prim
