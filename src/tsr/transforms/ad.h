#pragma once
// Autodiff as Program -> Program passes (DESIGN §1, docs/design/0007-autodiff.md):
// jvp, partial_eval (so linearize = jvp + partial_eval) and transpose (so vjp =
// linearize + transpose). Each pass is an interpreter that binds ops into whatever
// context is current (a trace records them, eager runs them), wrapped by a trace
// when a Program is wanted. Symbolic zeros are invalid Arrays throughout.
#include <functional>
#include <string>
#include <vector>

#include "tsr/ad_core.h"
#include "tsr/array.h"
#include "tsr/core/program.h"
#include "tsr/prims/creation.h"

namespace tsr::detail {

/** Traces fn at `in_types` in a fresh trace: the Program (captured arrays become
 *  const inputs), after cse and dce. */
Program trace_program(const FlatFn& fn, const std::vector<ArrayType>& in_types,
                      const std::function<ArrayType(const ArrayType&)>& capture_type = {});

/** Binds every equation of p to `args` (one per in_var; const inputs come from
 *  p.consts): records into the current trace, or runs eagerly. */
std::vector<Array> eval_program(const Program& p, const std::vector<Array>& args);

/** True for dtypes that have tangents (floating point). */
bool has_tangent_space(DType t);
/** The cotangent type of a value (spec §9): unreduced and reduced sets swapped. */
ArrayType ct_type(const ArrayType& t);

/** Where a value of type t made inside a rule goes: t's sharding, and eagerly `like`'s
 *  devices (or the context mesh's). */
prim::Placed placed_like(const ArrayType& t, const Array& like);
/** Zeros of exactly type t. `like` (any array of the computation) gives the concrete
 *  devices when the zeros are made eagerly. */
Array zeros_of(const ArrayType& t, const Array& like);

/** Forward mode over p: `tangents` has one entry per in_var (invalid: zero). Fills
 *  `outs` and `out_tangents` (invalid: zero) for p's outputs. */
void jvp_eval(const Program& p, const std::vector<Array>& primals,
              const std::vector<Array>& tangents, std::vector<Array>& outs,
              std::vector<Array>& out_tangents);

/** The JVP program of p: inputs (p's inputs, tangents of the inputs flagged in
 *  `with_tangent`), outputs (p's outputs, one tangent per output; zero tangents are
 *  instantiated, float outputs only: others get none). */
Program jvp_program(const Program& p, const std::vector<bool>& with_tangent);

/** A Program split into what is computable from the known inputs and the rest. */
struct PartialEval {
  Program known;   /**< known inputs -> (known outputs, residuals) */
  Program unknown; /**< (residuals, unknown inputs) -> unknown outputs */
  size_t num_res = 0;
};
/** Splits p: `unknown_ins` flags in_vars; `unknown_outs` flags the outputs the
 *  unknown program returns (a known value asked for there is forwarded as a
 *  residual); the others must be known and go to the known program. Checkpointed
 *  equations save only their inputs and recompute the rest in the unknown program. */
PartialEval partial_eval(const Program& p, const std::vector<bool>& unknown_ins,
                         const std::vector<bool>& unknown_outs);

/** Which outputs of p depend on the flagged inputs, looking into checkpoints (the jvp
 *  of a checkpoint is one checkpoint whose primal outputs do not read the tangents);
 *  a checkpoint with every input flagged counts whole, as partial_eval splits it. */
std::vector<bool> unknown_outputs(const Program& p, const std::vector<bool>& unknown_ins);
/** The part of p computing its known outputs (unknown_outs false) from its known
 *  inputs only: inputs p's unflagged in_vars, outputs those outputs. */
Program known_outputs_program(const Program& p, const std::vector<bool>& unknown_ins,
                              const std::vector<bool>& unknown_outs);

/** Reverse sweep over p, linear in the in_vars whose `args` entry is invalid: given
 *  one cotangent per output (invalid: zero), returns one cotangent per in_var
 *  (invalid: zero, or not linear). Equations with no linear input are evaluated
 *  forward first. `api` names the caller in errors. */
std::vector<Array> backward_pass(const Program& p, const std::vector<Array>& args,
                                 const std::vector<Array>& cts, const char* api);

/** The transpose of p with respect to the flagged in_vars: inputs (the other
 *  in_vars, one cotangent per output), outputs (one cotangent per flagged input,
 *  zeros instantiated). */
Program transpose_program(const Program& p, const std::vector<bool>& linear_ins, const char* api);

/** Records which rules ran (`jvp:sin`, `transpose:mul`) while a RuleLog is alive on
 *  this thread; the coverage test uses it. */
class RuleLog {
 public:
  RuleLog();
  ~RuleLog();
  RuleLog(const RuleLog&) = delete;
  RuleLog& operator=(const RuleLog&) = delete;
  /** The rules seen so far. */
  const std::vector<std::string>& seen() const { return seen_; }
  /** Notes a rule use in the innermost live log. */
  static void note(const char* kind, const char* prim);

 private:
  std::vector<std::string> seen_;
  RuleLog* prev_;
};

}  // namespace tsr::detail
