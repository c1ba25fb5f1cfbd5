#pragma once
// Primitives that exist for autodiff: stop_gradient, and the higher-order ones that
// carry a user's function and its rules through tracing (custom_jvp_call,
// custom_vjp_call with custom_lin, checkpoint). Their sub-programs are inlined by
// the lowering, so evaluating them costs what the function costs.
#include <functional>
#include <memory>
#include <string>

#include "tsr/core/primitive.h"

namespace tsr::prim {

/** stop_gradient(x) = x, with a zero tangent. */
class StopGradient : public detail::Primitive {
 public:
  const char* name() const override { return "stop_gradient"; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  std::vector<Array> jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                         std::vector<Array>& outs) const override;
};

/** A user's jvp rule over flat leaves: (primals, tangents) -> outs ++ tangent outs. */
using CustomJvpRule =
    std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;

/** custom_jvp_call: what the function computes (its Program) and the user's rule for
 *  its jvp. Tangents are instantiated (zeros) before the rule sees them. */
class CustomJvpCall : public detail::Primitive {
 public:
  /** The function's program, the rule, and the function's name (for errors). */
  CustomJvpCall(std::shared_ptr<const detail::Program> fun, CustomJvpRule rule, std::string fn)
      : fun_(std::move(fun)), rule_(std::move(rule)), fn_(std::move(fn)) {}
  const char* name() const override { return "custom_jvp_call"; }
  /** Types vma by what it calls (manual-spmd §3.3 is for ordinary primitives). */
  bool custom_vma() const override { return true; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  std::string params() const override { return "name=" + fn_; }
  const detail::Program* subprogram() const override { return fun_.get(); }
  bool equals(const Primitive& o) const override { return this == &o; }
  bool jvp_makes_outputs() const override { return true; }
  std::vector<Array> jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                         std::vector<Array>& outs) const override;

 private:
  std::shared_ptr<const detail::Program> fun_;
  CustomJvpRule rule_;
  std::string fn_;
};

/** A custom_vjp forward rule over flat leaves: primals -> outs ++ residuals. */
using CustomFwd = std::function<std::vector<Array>(const std::vector<Array>&)>;
/** A custom_vjp backward rule: (residuals, output cotangents) -> one cotangent per
 *  primal input (invalid: zero). */
using CustomBwd =
    std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;

/** What custom_vjp_call and custom_lin share: the rules and names for errors. */
struct CustomVjpRules {
  CustomFwd fwd;                     /**< forward rule */
  CustomBwd bwd;                     /**< backward rule */
  std::string fn;                    /**< the function's name */
  std::vector<std::string> in_paths; /**< leaf paths of the inputs, for errors */
  std::vector<bool> diff;            /**< per input: differentiated (not nondiff_argnums) */
};

/** custom_vjp_call: the function's Program plus its fwd/bwd rules. Its jvp runs fwd
 *  and emits custom_lin, linear in the tangents, whose transpose calls bwd. */
class CustomVjpCall : public detail::Primitive {
 public:
  /** The function's program and its rules. */
  CustomVjpCall(std::shared_ptr<const detail::Program> fun,
                std::shared_ptr<const CustomVjpRules> rules)
      : fun_(std::move(fun)), rules_(std::move(rules)) {}
  const char* name() const override { return "custom_vjp_call"; }
  /** Types vma by what it calls (manual-spmd §3.3 is for ordinary primitives). */
  bool custom_vma() const override { return true; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  std::string params() const override { return "name=" + rules_->fn; }
  const detail::Program* subprogram() const override { return fun_.get(); }
  bool equals(const Primitive& o) const override { return this == &o; }
  bool jvp_makes_outputs() const override { return true; }
  std::vector<Array> jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                         std::vector<Array>& outs) const override;

 private:
  std::shared_ptr<const detail::Program> fun_;
  std::shared_ptr<const CustomVjpRules> rules_;
};

/** custom_lin(residuals..., tangents...): the linear map of a custom_vjp function.
 *  It cannot be evaluated (JAX: no forward mode through custom_vjp); its transpose
 *  calls the bwd rule and checks what it returns. */
class CustomLin : public detail::Primitive {
 public:
  /** The rules, residual count, the primal input types and the output types. */
  CustomLin(std::shared_ptr<const CustomVjpRules> rules, size_t num_res,
            std::vector<ArrayType> in_types, std::vector<ArrayType> out_types)
      : rules_(std::move(rules)),
        num_res_(num_res),
        in_types_(std::move(in_types)),
        out_types_(std::move(out_types)) {}
  const char* name() const override { return "custom_lin"; }
  /** Its tangents have the primal outputs' types, vma included. */
  bool custom_vma() const override { return true; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  std::string params() const override { return "name=" + rules_->fn; }
  bool equals(const Primitive& o) const override { return this == &o; }
  detail::Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const override;
  std::vector<Array> transpose(const std::vector<Array>& cts,
                               const std::vector<detail::LinearIn>& ins) const override;

 private:
  std::shared_ptr<const CustomVjpRules> rules_;
  size_t num_res_;
  std::vector<ArrayType> in_types_, out_types_;
};

/** checkpoint (remat): the function's Program, whose intermediates the backward pass
 *  recomputes from the inputs instead of saving them. */
class Checkpoint : public detail::Primitive {
 public:
  /** The program and the function's name. */
  Checkpoint(std::shared_ptr<const detail::Program> prog, std::string fn)
      : prog_(std::move(prog)), fn_(std::move(fn)) {}
  /** The program. */
  const detail::Program& program() const { return *prog_; }
  /** The same checkpoint around another program. */
  detail::PrimPtr with_program(detail::Program p) const;
  const char* name() const override { return "checkpoint"; }
  /** Types vma by what it calls (manual-spmd §3.3 is for ordinary primitives). */
  bool custom_vma() const override { return true; }
  std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const override;
  TSR_DEFINE_BATCH;
  std::string params() const override { return "name=" + fn_; }
  const detail::Program* subprogram() const override { return prog_.get(); }
  bool equals(const Primitive& o) const override;
  size_t hash() const override;
  bool jvp_makes_outputs() const override { return true; }
  std::vector<Array> jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                         std::vector<Array>& outs) const override;
  std::vector<Array> transpose(const std::vector<Array>& cts,
                               const std::vector<detail::LinearIn>& ins) const override;

 private:
  std::shared_ptr<const detail::Program> prog_;
  std::string fn_;
};

}  // namespace tsr::prim
