#pragma once
/** The non-template core of automatic differentiation over flat lists of arrays;
 *  tsr/ad.h wraps it for functions of trees. Users call tsr/ad.h. */
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tsr/array.h"

namespace tsr::detail {

struct Program;

/** A function over flat leaves. */
using FlatFn = std::function<std::vector<Array>(const std::vector<Array>&)>;

/** Forward mode: f's outputs at `primals` and their tangents along `tangents` (one
 *  per primal; integer and bool primals take no tangent). Checks shapes and dtypes
 *  as jax.jvp does, and shardings (beyond JAX). */
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f,
                                                           const std::vector<Array>& primals,
                                                           const std::vector<Array>& tangents);

/** A linear map held as a Program whose residuals are captured constants: the
 *  linear part of linearize, or a transposed map. Callable and printable. */
class LinearMap {
 public:
  /** The program (inputs: the map's arguments), the types the arguments must have,
   *  the primal types they stand for (messages), and what the map is ("linearize"). */
  LinearMap(std::shared_ptr<const Program> prog, std::vector<ArrayType> in_types,
            std::vector<ArrayType> primal_types, std::vector<ArrayType> out_types,
            std::vector<bool> in_used, std::string api);
  /** Applies the map; one argument per in_types entry (an unused one may be any array). */
  std::vector<Array> operator()(const std::vector<Array>& args) const;
  /** The linear program, jaxpr style. */
  std::string str() const;
  /** The program. */
  const Program& program() const { return *prog_; }
  /** Argument types. */
  const std::vector<ArrayType>& in_types() const { return in_types_; }
  /** Result types. */
  const std::vector<ArrayType>& out_types() const { return out_types_; }

 private:
  std::shared_ptr<const Program> prog_;
  std::vector<ArrayType> in_types_, primal_types_, out_types_;
  std::vector<bool> in_used_;  // arguments the program takes (float ones)
  std::string api_;
};

/** linearize: f's outputs at `primals` and the linear map from input tangents to
 *  output tangents (jvp + partial_eval; the primal work is done once, here). */
std::pair<std::vector<Array>, std::shared_ptr<const LinearMap>> linearize_flat(
    const FlatFn& f, const std::vector<Array>& primals);

/** vjp: f's outputs at `primals` and the map from output cotangents to input
 *  cotangents. The last `num_aux()` outputs (asked once f has been traced) are
 *  auxiliary: returned, not differentiated, and not among the map's arguments. */
std::pair<std::vector<Array>, std::shared_ptr<const LinearMap>> vjp_flat(
    const FlatFn& f, const std::vector<Array>& primals,
    const std::function<size_t()>& num_aux = {});

/** linear_transpose: the transpose of a function linear in its inputs, traced at
 *  `in_types`; TypeError naming the first non-linear primitive otherwise. */
std::shared_ptr<const LinearMap> linear_transpose_flat(const FlatFn& f,
                                                       const std::vector<ArrayType>& in_types);
/** linear_transpose traced at the primals' types as the innermost trace sees them (an
 *  array a shard_map body closes over is an invariant block there). */
std::shared_ptr<const LinearMap> linear_transpose_flat(const FlatFn& f,
                                                       const std::vector<Array>& primals);

/** The ones that seed a gradient: the cotangent type of a scalar output. */
Array grad_seed(const Array& ans);

/** Jacobians of ff (one output) at `leaves`, one per leaf (shape out.shape +
 *  leaf.shape), by forward mode (vmap of the jvp over each input's basis) or reverse
 *  mode (vmap of the vjp over the output's basis). */
std::vector<Array> jacobian_flat(const FlatFn& ff, const std::vector<Array>& leaves, bool forward,
                                 const char* api);

/** stop_gradient of one array (a primitive with a zero tangent). */
Array stop_gradient_leaf(const Array& x);

/** Checks that `ans` can seed a gradient: a float scalar, or a complex one when
 *  holomorphic (JAX's texts). */
void check_grad_output(const Array& ans, const char* api, bool holomorphic = false);
/** Checks that a leaf can be differentiated (float or complex, integer/bool with
 *  allow_int; complex only when holomorphic). */
void check_grad_input(const Array& x, bool allow_int, const char* api, const std::string& path,
                      bool holomorphic = false);

/** custom_jvp: calls f through a custom_jvp_call primitive holding `rule`
 *  ((primals, tangents) -> outs ++ tangent outs). Outside a trace f runs directly. */
std::vector<Array> custom_jvp_call(
    const FlatFn& f,
    const std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>&
        rule,
    const std::vector<Array>& args, const std::string& name);

/** custom_vjp: calls f through a custom_vjp_call primitive with fwd (args -> outs ++
 *  residuals) and bwd ((residuals, cts) -> one ct per arg). `diff` marks the args
 *  differentiated (false for nondiff_argnums); `paths` names args in errors. */
std::vector<Array> custom_vjp_call(
    const FlatFn& f, const FlatFn& fwd,
    const std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>&
        bwd,
    const std::vector<Array>& args, const std::vector<bool>& diff,
    const std::vector<std::string>& paths, const std::string& name);

/** checkpoint: calls f through a checkpoint primitive (the backward pass recomputes
 *  its intermediates from its inputs). Outside a trace f runs directly. */
std::vector<Array> checkpoint_call(const FlatFn& f, const std::vector<Array>& args,
                                   const std::string& name);

}  // namespace tsr::detail
