#pragma once
// Helpers the jvp and transpose rules share, so that most primitives' rules are a
// line or two in their family file (DESIGN §3). Symbolic zeros are invalid Arrays.
#include <functional>
#include <string>
#include <vector>

#include "tsr/array.h"
#include "tsr/core/primitive.h"

namespace tsr::detail::ad {

/** t itself, or zeros of `type` when t is a symbolic zero (`like` gives devices). */
Array instantiate(const Array& t, const ArrayType& type, const Array& like);
/** a + b where either may be a symbolic zero (then the other is returned). */
Array add(const Array& a, const Array& b);
/** a - b where either may be a symbolic zero. */
Array sub(const Array& a, const Array& b);
/** t * f (f broadcast as the binary rule allows); a symbolic zero stays zero. */
Array scale(const Array& t, const Array& f);
/** -t; a symbolic zero stays zero. */
Array negate(const Array& t);
/** x given exactly type `want`: weak flag and dtype converted, sharding resharded.
 *  A shape difference is a bug in the rule of `prim` (TypeError saying so); `what`
 *  is "tangent" or "cotangent". */
Array coerce(const Array& x, const ArrayType& want, const char* prim, const char* what);
/** The cotangent of a binary operand that broadcast (size-1 dims, or rank 0): ct
 *  summed over the broadcast dims, in the operand's cotangent type. */
Array unbroadcast(const Array& ct, const ArrayType& operand);
/** The jvp of a primitive linear in every input: the primitive applied to the
 *  tangents (zeros instantiated). */
std::vector<Array> linear_jvp(const Primitive& p, const std::vector<Array>& primals,
                              const std::vector<Array>& tangents);
/** The jvp of a primitive bilinear in its two inputs (dot_general, convolution):
 *  p(tx, y) + p(x, ty), symbolic zeros skipped. */
std::vector<Array> bilinear_jvp(const Primitive& p, const std::vector<Array>& primals,
                                const std::vector<Array>& tangents);
/** A bilinear primitive's transpose refusal when both operands are linear
 *  (NotImplementedError naming `what`, e.g. "a product"). */
void check_bilinear_transpose(const Primitive& p, const std::vector<LinearIn>& ins,
                              const char* what);
/** Binds the primitive `p` itself (its own parameters) to `in`. */
std::vector<Array> rebind(const Primitive& p, const std::vector<Array>& in);
/** A sum of ct over `axes` with the result typed exactly `want` (sharding included). */
Array sum_to(const Array& ct, const std::vector<int>& axes, const ArrayType& want);
/** A broadcast_in_dim of x to type `want`, operand dim i -> output dim dims[i]. */
Array broadcast_to_type(const Array& x, const ArrayType& want, const std::vector<int>& dims);
/** f(x); when f's rule refuses x's layout, f of x resharded to replicated (keeping
 *  unreduced/reduced sets): transposes of shape ops use it where the primal's sharding
 *  does not carry over to the cotangent's shape. */
Array or_replicated(const std::function<Array(const Array&)>& f, const Array& x);
/** Zeros of `shape` with like's dtype and sharding (replicated when that sharding
 *  does not divide the shape). */
Array zeros_shaped(const Shape& shape, const Array& like);
/** Zeros of exactly the cotangent type of an input. */
Array zeros_ct(const LinearIn& in, const Array& like);
/** "" when `got` may stand for `want` (weak flags ignored), else JAX's tail naming
 *  what differs: ", so the shapes do not match" (dtypes, shardings, varying axes). */
std::string mismatch(const ArrayType& want, const ArrayType& got);
/** "[f32[3], i32[]]". */
std::string types_str(const std::vector<ArrayType>& ts);
/** The first valid array of a list (a template for `like` arguments). */
Array first_valid(const std::vector<Array>& xs);

}  // namespace tsr::detail::ad
