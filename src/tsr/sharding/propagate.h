#pragma once
// The Auto-axis propagation pass (docs/design/0013-auto-propagation.md): on a mesh with
// Auto axes it picks a layout for every value of a program before lowering. Types never
// change (Auto axes are not in types, spec §14); only concrete layouts do.
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tsr/core/program.h"

namespace tsr::detail {

/** What the pass chose: per kernel equation the layout types it is partitioned with
 *  (types on the program mesh with every axis Explicit, so the Explicit rules and
 *  partitioners apply to Auto axes too), and per value its layout. */
struct AutoLayouts {
  /** An equation's layout types. */
  struct EqnTypes {
    std::vector<ArrayType> in;  /**< per input */
    std::vector<ArrayType> out; /**< per output (never unreduced over an Auto axis) */
  };
  std::unordered_map<const Eqn*, EqnTypes> eqn;      /**< per kernel equation */
  std::unordered_map<const Var*, PartitionSpec> var; /**< per value, rank-normalized */
  int sweeps = 0;                                    /**< sweeps until nothing changed */
};

/** Chooses layouts for `p` on `mesh` when it has Auto axes (null otherwise). Seeds: the
 *  inputs' layouts, sharding constraints, `out_layouts` (jit out_shardings) and the
 *  Explicit parts of types, which it never changes. */
std::unique_ptr<AutoLayouts> propagate_auto(
    const Program& p, const AbstractMesh& mesh, const std::vector<NamedSharding>& in_layouts,
    const std::vector<std::optional<NamedSharding>>& out_layouts);

}  // namespace tsr::detail
