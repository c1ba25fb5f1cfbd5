#pragma once
// Control flow (spec §12.16, manual-spmd §3.4): cond/switch, while_loop and scan, each
// an equation holding closed sub-programs (captured arrays are leading operands). The
// lowering runs their bodies on the devices (executable.cpp: loop and branch steps),
// never returning to the host per iteration. fori_loop and map are scans (or a while
// loop for traced bounds) built by the API (transforms/control_flow_api.cpp).
#include <memory>
#include <string>
#include <vector>

#include "tsr/core/primitive.h"
#include "tsr/transforms/split.h"

namespace tsr::prim {

using ProgramPtr = std::shared_ptr<const detail::Program>;

/** switch(index, operands): branch `index` (clamped) applied to the operands; cond is
 *  switch over (false_fn, true_fn). Every branch takes every operand. */
class Cond : public detail::Primitive {
 public:
  /** The branches (closed programs with equal input and output types). */
  explicit Cond(std::vector<ProgramPtr> branches) : branches_(std::move(branches)) {}
  /** The branches. */
  const std::vector<ProgramPtr>& branches() const { return branches_; }
  const char* name() const override { return "cond"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  std::vector<std::pair<std::string, const detail::Program*>> bodies() const override;
  bool equals(const Primitive& o) const override;
  size_t hash() const override;
  bool custom_vma() const override { return true; }
  bool uses_axis_name(const std::string& n) const override;
  bool jvp_makes_outputs() const override { return true; }
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;
  /** partial eval's split: a known cond computing the known outputs and residuals
   *  (each branch fills the others' with zeros), an unknown one from them. */
  detail::EqnSplit split(const std::vector<bool>& unknown_ins) const;
  /** Which outputs depend on the flagged inputs (any branch). */
  std::vector<bool> unknown_outs(const std::vector<bool>& unknown_ins) const;

 private:
  std::vector<ProgramPtr> branches_;
};

/** while_loop: operands (cond consts, body consts, carry); runs body while cond. */
class While : public detail::Primitive {
 public:
  /** cond: (cond consts, carry) -> bool[]; body: (body consts, carry) -> carry. */
  While(ProgramPtr cond, ProgramPtr body, size_t n_cond_consts, size_t n_body_consts)
      : cond_(std::move(cond)), body_(std::move(body)), ncc_(n_cond_consts), nbc_(n_body_consts) {}
  /** The predicate program. */
  const detail::Program& cond() const { return *cond_; }
  /** The body program. */
  const detail::Program& body() const { return *body_; }
  /** Leading operands that are the predicate's constants. */
  size_t n_cond_consts() const { return ncc_; }
  /** Operands after those that are the body's constants. */
  size_t n_body_consts() const { return nbc_; }
  const char* name() const override { return "while"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  std::vector<std::pair<std::string, const detail::Program*>> bodies() const override;
  bool equals(const Primitive& o) const override;
  size_t hash() const override;
  bool custom_vma() const override { return true; }
  bool uses_axis_name(const std::string& n) const override;
  bool jvp_makes_outputs() const override { return true; }
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;
  /** partial eval's split: a known loop over the known carries, and the whole loop on
   *  the unknown side (JAX's: forward mode recomputes the primal; no reverse mode). */
  detail::EqnSplit split(const std::vector<bool>& unknown_ins) const;
  /** Carries (outputs) that depend on the flagged inputs, to a fixed point. */
  std::vector<bool> unknown_outs(const std::vector<bool>& unknown_ins) const;

 private:
  ProgramPtr cond_, body_;
  size_t ncc_, nbc_;
};

/** scan: operands (consts, carry, xs); outputs (carry, ys). The body maps (consts,
 *  carry, x) to (carry, y), x a slice of xs along dim 0, ys stacked along dim 0. */
class Scan : public detail::Primitive {
 public:
  /** The body, operand counts, trip count, direction and unroll factor. */
  Scan(ProgramPtr body, size_t n_consts, size_t n_carry, int64_t length, bool reverse, int unroll)
      : body_(std::move(body)),
        nc_(n_consts),
        nk_(n_carry),
        length_(length),
        reverse_(reverse),
        unroll_(unroll) {}
  /** The body. */
  const detail::Program& body() const { return *body_; }
  /** Constant operands (leading). */
  size_t n_consts() const { return nc_; }
  /** Carry operands (after the constants). */
  size_t n_carry() const { return nk_; }
  /** The trip count. */
  int64_t length() const { return length_; }
  /** True: iterates from the last slice to the first. */
  bool reverse() const { return reverse_; }
  const char* name() const override { return "scan"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override;
  std::vector<std::pair<std::string, const detail::Program*>> bodies() const override;
  bool equals(const Primitive& o) const override;
  size_t hash() const override;
  bool custom_vma() const override { return true; }
  bool uses_axis_name(const std::string& n) const override;
  bool jvp_makes_outputs() const override { return true; }
  TSR_DEFINE_JVP;
  TSR_DEFINE_TRANSPOSE;
  TSR_DEFINE_BATCH;
  /** partial eval's split: a known scan returning the known carries and ys plus the
   *  body's residuals stacked as extra ys; an unknown scan reading them as xs. */
  detail::EqnSplit split(const std::vector<bool>& unknown_ins) const;
  /** Outputs that depend on the flagged inputs (carries to a fixed point). */
  std::vector<bool> unknown_outs(const std::vector<bool>& unknown_ins) const;
  /** A scan like this one over another body and counts. */
  detail::PrimPtr with(ProgramPtr body, size_t n_consts, size_t n_carry, bool reverse) const;

 private:
  ProgramPtr body_;
  size_t nc_, nk_;
  int64_t length_;
  bool reverse_;
  int unroll_;
};

/** Refuses xs sharded along dim 0 (spec §12.16's ValueError). */
void check_xs_unsharded(const std::vector<ArrayType>& xs);
/** The type of one slice along dim 0 of t (the dim must be unsharded). */
ArrayType slice_type(const ArrayType& t);
/** t stacked `length` times along a new unsharded leading dim. */
ArrayType stacked_type(const ArrayType& t, int64_t length);

}  // namespace tsr::prim
