// The tree-level checks of the public AD API (tsr/ad.h).
#include "tsr/ad.h"
#include "tsr/error.h"

namespace tsr::detail {

void check_structure(const tree::Structure& want, const tree::Structure& got, const char* api,
                     const char* what) {
  if (want == got) return;
  std::string a = api;
  if (a == "jvp")
    throw TypeError(
        "[jvp] primal and tangent arguments to tsr::jvp must have the same tree structure; "
        "primals have tree structure " +
        want.str() + " whereas tangents have tree structure " + got.str() +
        ". Pass tangents shaped like the primals.");
  if (a == "custom_jvp")
    throw TypeError("[custom_jvp] Custom JVP rule must produce primal and tangent outputs with "
                    "equal container (pytree) structures, but got " +
                    want.str() + " and " + got.str() + " respectively (" + what +
                    "). Return (primal_out, tangent_out) shaped like the function's result.");
  if (a == "custom_vjp")
    throw TypeError("[custom_vjp] Custom VJP fwd rule must produce a pair (list or tuple of "
                    "length two) where the first element represents the primal output (equal to "
                    "the output of the custom_vjp-decorated function), but instead the fwd rule "
                    "output's first element had container/pytree structure:\n    " +
                    got.str() + "\nwhile the custom_vjp-decorated function had output "
                    "container/pytree structure:\n    " +
                    want.str() + ".");
  throw TypeError("[" + a + "] unexpected tree structure of the " + what +
                  " passed to the function " + a + " returned. Got " + got.str() +
                  "; expected " + want.str() + ". Pass a value shaped like the " +
                  (a == "linearize" ? "primal arguments" : "function's output") + ".");
}

void bwd_structure_error(const std::string& fn, const std::string& got, size_t want_leaves) {
  throw TypeError(
      "[custom_vjp] Custom VJP bwd rule must produce an output with the same container "
      "(pytree) structure as the args tuple of the primal function, and in particular must "
      "produce a tuple of length equal to the number of arguments to the primal function, but "
      "got bwd output structure " +
      got + " for primal input structure with " + std::to_string(want_leaves) +
      " differentiated leaves (function " + fn + ").");
}

}  // namespace tsr::detail
