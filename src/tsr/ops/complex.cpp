// Complex-number front-ends (jnp.real / imag / conj / angle, lax.complex).
#include <numbers>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/complex.h"

namespace tsr {
using namespace tsr::detail;

namespace {
Array part(prim::PartKind k, const Array& x) {
  return bind1(std::make_shared<prim::ComplexPart>(k), {x});
}
}  // namespace

Array real(const Array& x) { return is_complex(x.dtype()) ? part(prim::PartKind::Real, x) : x; }
Array imag(const Array& x) {
  return is_complex(x.dtype()) ? part(prim::PartKind::Imag, x) : zeros_like(x);
}
Array conj(const Array& x) { return is_complex(x.dtype()) ? part(prim::PartKind::Conj, x) : x; }
Array conjugate(const Array& x) { return conj(x); }

Array complex(const ArrayLike& x, const ArrayLike& y) {
  std::vector<Array> v = promote({x, y}, "complex");
  if (is_complex(v[0].dtype()))
    throw TypeError(std::string("[complex] complex takes real parts. Got ") +
                    dtype_name(v[0].dtype()) +
                    "; expected real (integer or floating) x and y. Take tsr::real / tsr::imag "
                    "of a complex value first.");
  DType t = v[0].dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  for (auto& a : v) a = convert(a, t, a.type().weak);
  return bind1(std::make_shared<prim::MakeComplex>(), promote_ranks(v));
}

Array angle(const Array& z, bool deg) {
  Array a = is_complex(z.dtype()) ? atan2(imag(z), real(z)) : atan2(zeros_like(z), z);
  return deg ? multiply(a, 180.0 / std::numbers::pi) : a;
}

bool iscomplexobj(const Array& x) { return is_complex(x.dtype()); }

}  // namespace tsr
