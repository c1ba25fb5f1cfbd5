// Rules of real, imag, conj and complex (jax/_src/lax/lax.py: unop(_complex_basetype,
// _complex, ...) and naryop(_complex_dtype, [_complex_elem_types] * 2, 'complex')),
// and the list of primitives whose kernels take complex operands.
#include "tsr/prims/complex.h"

#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/elementwise.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
bool register_all() {
  for (const char* n : {"real", "imag", "conj", "complex"}) {
    register_primitive(n);
    declare_ad(n, AdKind::Linear);
  }
  // Every primitive whose rule and CPU kernel take complex operands or results; the
  // rule driver refuses complex for any other primitive with a kernel (design 0023 §2).
  // clang-format off
  for (const char* n :
       {"real", "imag", "conj", "complex", "convert_element_type", "neg", "abs", "sign", "exp",
        "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh",
        "logistic", "integer_pow", "add", "sub", "mul", "div", "pow", "max", "min", "eq", "ne",
        "select_n", "reduce_sum", "reduce_prod", "dot_general", "broadcast_in_dim", "reshape",
        "squeeze", "transpose", "slice", "dynamic_slice", "dynamic_update_slice", "concatenate",
        "pad", "split", "rev", "gather", "full", "iota", "reshard", "stop_gradient", "cumsum",
        "cumprod", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
        "scatter_max"})
    // clang-format on
    declare_complex(n);
  return true;
}
const bool registered = register_all();

const char* kPartNames[] = {"real", "imag", "conj"};
}  // namespace

const char* ComplexPart::name() const { return kPartNames[static_cast<int>(kind_)]; }

std::vector<ArrayType> ComplexPart::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& z = in.at(0);
  if (!is_complex(z.dtype))
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept dtype " +
                    dtype_name(z.dtype) +
                    ". Accepted dtypes are subtypes of complexfloating. Got " + z.str() +
                    "; expected complex64 or complex128. tsr::" + name() +
                    " of a real array returns it (or zeros, for imag) without this primitive.");
  // Linear: each device's part of its partial value is a partial of the part.
  ArrayType t = z;
  if (kind_ != PartKind::Conj) t.dtype = real_dtype(z.dtype);
  return {t};
}

std::vector<Array> ComplexPart::jvp(const std::vector<Array>& primals,
                                    const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

// lax's transposes (plain transposes, not adjoints): real -> complex(ct, 0),
// imag -> complex(0, -ct), conj -> conj(ct).
std::vector<Array> ComplexPart::transpose(const std::vector<Array>& cts,
                                          const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  switch (kind_) {
    case PartKind::Real:
      return {convert(ct, ins[0].type.dtype)};
    case PartKind::Imag:
      return {bind1(std::make_shared<MakeComplex>(), {zeros_of(ct.type(), ct), ad::negate(ct)})};
    case PartKind::Conj:
      break;
  }
  return {bind1(std::make_shared<ComplexPart>(PartKind::Conj), {ct})};
}

Batched ComplexPart::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_elementwise(*this, args, dims);
}

std::vector<ArrayType> MakeComplex::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &x = in.at(0), &y = in.at(1);
  if (x.dtype != y.dtype)
    throw TypeError("[complex] complex requires arguments to have the same dtypes, got " +
                    std::string(dtype_name(x.dtype)) + ", " + dtype_name(y.dtype) +
                    ". Convert one with astype (tsr::complex promotes for you).");
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    throw TypeError("[complex] complex does not accept dtype " + std::string(dtype_name(x.dtype)) +
                    ". Accepted dtypes are float32 and float64. Got " + x.str() +
                    "; expected float32 or float64 parts. Convert with astype(float32).");
  Shape shape;
  std::vector<PartitionEntry> e = broadcast_entries("complex", in, shape);
  // x + i y: the parts combine as add's operands do.
  PartitionSpec sets = binary_unreduced_sets("complex", BinaryOp::Add, in);
  return {make_type(shape, complex_dtype(x.dtype), x.weak && y.weak, rule_mesh(in), e, sets)};
}

std::vector<Array> MakeComplex::jvp(const std::vector<Array>& primals,
                                    const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

std::vector<Array> MakeComplex::transpose(const std::vector<Array>& cts,
                                          const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  std::vector<Array> out(2);
  if (ins[0].linear())
    out[0] =
        ad::unbroadcast(bind1(std::make_shared<ComplexPart>(PartKind::Real), {ct}), ins[0].type);
  if (ins[1].linear())
    out[1] = ad::unbroadcast(ad::negate(bind1(std::make_shared<ComplexPart>(PartKind::Imag), {ct})),
                             ins[1].type);
  return out;
}

Batched MakeComplex::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_elementwise(*this, args, dims);
}

}  // namespace tsr::prim
