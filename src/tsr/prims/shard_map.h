#pragma once
// shard_map and the collectives of its body (manual-spmd.md). A shard_map equation
// carries its body Program, traced at block types on the mesh with the manual axes
// typed Manual; the lowering inlines the body so that each device runs it on its own
// block (docs/design/0011-shard-map.md). Its collectives: prims/collectives.h.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/core/primitive.h"
#include "tsr/prims/collectives.h"

namespace tsr::prim {

/** shard_map(f) over a full-manual mesh: inputs laid out as `in_specs`, outputs as
 *  `out_specs`, the body on each device's blocks. */
class ShardMap : public detail::Primitive {
 public:
  /** The body, the concrete mesh, the manual axes, the specs and check_vma. */
  ShardMap(std::shared_ptr<const detail::Program> body, Mesh mesh, std::vector<std::string> manual,
           std::vector<PartitionSpec> in_specs, std::vector<PartitionSpec> out_specs,
           bool check_vma, std::string fn)
      : body_(std::move(body)),
        mesh_(std::move(mesh)),
        manual_(std::move(manual)),
        in_specs_(std::move(in_specs)),
        out_specs_(std::move(out_specs)),
        check_vma_(check_vma),
        fn_(std::move(fn)) {}
  /** The body (block types; its inputs are the equation's, in order). */
  const detail::Program& body() const { return *body_; }
  /** The mesh. */
  const Mesh& mesh() const { return mesh_; }
  /** The manual axes. */
  const std::vector<std::string>& manual() const { return manual_; }
  /** Input specs, one per input. */
  const std::vector<PartitionSpec>& in_specs() const { return in_specs_; }
  /** Output specs, one per output. */
  const std::vector<PartitionSpec>& out_specs() const { return out_specs_; }
  const char* name() const override { return "shard_map"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  const detail::Program* subprogram() const override { return body_.get(); }
  const Mesh* placement_mesh() const override { return &mesh_; }
  /** Same mesh (devices), axes, specs, check_vma and an equal body (same_program): a
   *  re-traced eager shard_map hits the eager cache instead of lowering again. */
  bool equals(const Primitive& o) const override;
  bool custom_vma() const override { return true; }
  /** check_vma. */
  bool check_vma() const { return check_vma_; }
  /** The layout outside of a value whose block (type `block`, on the inner mesh) has
   *  manual spec `spec`: per dimension the manual axes, then the block's own (partial
   *  manual keeps the other axes' sharding inside the body, manual-spmd §2.4). */
  static PartitionSpec outer_spec(const PartitionSpec& spec, const ArrayType& block);
  /** The body's context: the mesh with the manual axes typed Manual. */
  AbstractMesh inner_mesh() const;
  /** The same shard_map over `body`, whose inputs are the flagged ones and outputs the
   *  flagged ones (specs subset alike): partial eval's split (transforms/split.h). */
  detail::PrimPtr with_split_body(detail::Program body, const std::vector<bool>& ins,
                                  const std::vector<bool>& outs) const;
  /** partial eval's split of a shard_map (manual-spmd §5.3). */
  struct Split {
    detail::PrimPtr known;          /**< known inputs -> known outputs ++ residuals */
    detail::PrimPtr unknown;        /**< residuals ++ unknown inputs -> unknown outputs */
    std::vector<bool> unknown_outs; /**< which outputs the unknown side computes */
    size_t num_res = 0;             /**< residual count */
    /** Per residual: the known input of the shard_map it is (passed as is), or -1 for
     *  one the known side returns (after its known outputs, in order). */
    std::vector<int> res_input;
  };
  /** Splits this shard_map for inputs flagged unknown, saving residuals: a body value
   *  stacked on a new leading dim laid out over the axes it varies over (all manual axes
   *  without check_vma), or a known input forwarded with its spec. */
  Split split_residuals(const std::vector<bool>& unknown_ins) const;
  bool jvp_makes_outputs() const override { return true; }
  bool uses_axis_name(const std::string& n) const override;
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;

 private:
  // A body traced by fn at block types in the body's context; arrays it captures are
  // returned in `consts` (they become leading P() inputs).
  detail::Program trace_body(const detail::FlatFn& fn, const std::vector<ArrayType>& in,
                             std::vector<Array>& consts) const;
  // Binds a shard_map like this one over `body` (from trace_body) to consts ++ args.
  std::vector<Array> call(detail::Program body, const std::vector<Array>& consts,
                          const std::vector<Array>& args, std::vector<PartitionSpec> in_specs,
                          std::vector<PartitionSpec> out_specs) const;

  std::shared_ptr<const detail::Program> body_;
  Mesh mesh_;
  std::vector<std::string> manual_;
  std::vector<PartitionSpec> in_specs_, out_specs_;
  bool check_vma_;
  std::string fn_;
};

}  // namespace tsr::prim
