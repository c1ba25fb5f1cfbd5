#pragma once
// The typed IR: a Program (our jaxpr) is equations `outs = prim[params](ins)` over
// typed variables. A Var's identity is its address; names (a, b, ...) are given
// when printing. Captured arrays (closure constants) are Program inputs too.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tsr/array.h"

namespace tsr::detail {

class Primitive;
using PrimPtr = std::shared_ptr<const Primitive>;

/** A typed variable of a Program. */
struct Var {
  ArrayType type; /**< global type */
};
using VarPtr = std::shared_ptr<Var>;

/** One equation: outs = prim(ins). */
struct Eqn {
  PrimPtr prim;             /**< the primitive with its parameters */
  std::vector<VarPtr> ins;  /**< operands */
  std::vector<VarPtr> outs; /**< results */
  AbstractMesh ctx;         /**< the context abstract mesh it was traced under */
};

/** Re-enters an equation's context abstract mesh while a transform replays it (JAX's
 *  eqn.ctx.mesh), so an auto_axes / use_abstract_mesh region differentiates and
 *  batches under the mesh it was traced under. No-op when it is already current. */
class EqnMeshScope {
 public:
  /** Enters `e.ctx` when it is non-empty and not the current abstract mesh. */
  explicit EqnMeshScope(const Eqn& e);
  /** Same for a value's mesh (cotangents accumulated between equations). */
  explicit EqnMeshScope(const AbstractMesh& m);

 private:
  std::optional<AbstractMeshScope> scope_;
};

/** A traced function: inputs, captured constants, equations, outputs. */
struct Program {
  std::vector<VarPtr> in_vars;    /**< explicit inputs */
  std::vector<VarPtr> const_vars; /**< implicit inputs: captured arrays */
  std::vector<Array> consts;      /**< values of const_vars (concrete or outer-traced) */
  std::vector<Eqn> eqns;          /**< in order */
  std::vector<VarPtr> out_vars;   /**< results (may repeat or be inputs) */

  /** Jaxpr-style text: { lambda c:f32[] ; a:f32[8@X]. let b:f32[8@X] = sin a in (b) }. */
  std::string str() const;
  /** Input types (const_vars first, then in_vars). */
  std::vector<ArrayType> in_types() const;
  /** Output types. */
  std::vector<ArrayType> out_types() const;
};

/** p with its captured constants turned into leading explicit inputs (closure
 *  conversion): the inputs of an equation that calls it are consts ++ args. */
Program lift_consts(const Program& p);
/** Drops equations whose results are unused (keeps every output). */
Program dce(const Program& p);
/** True when a and b compute the same thing: equal input types, and equation by
 *  equation equal primitives (Primitive::equals) on the same operands, with the same
 *  outputs. No captured constants (false when either has some). */
bool same_program(const Program& a, const Program& b);
/** Merges equations with equal primitives (equals/hash) and the same inputs. */
Program cse(const Program& p);
/** Re-infers every equation; TypeError naming the first equation whose recorded
 *  output types differ from what its rule gives now. */
void typecheck(const Program& p);

}  // namespace tsr::detail
