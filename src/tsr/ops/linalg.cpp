// Contraction front-ends: dot_general and NumPy matmul/dot (einsum: einsum.cpp).
#include <algorithm>
#include <map>
#include <numeric>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/linalg.h"

namespace tsr {
using namespace detail;

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims,
                  const DotOptions& o) {
  if (o.preferred_element_type) check_dtype(*o.preferred_element_type, "dot_general");
  std::vector<Array> v = promote({lhs, rhs}, "dot_general");
  auto s = canonicalize_sharding(o.out_sharding, "dot_general");
  DType out = o.preferred_element_type ? *o.preferred_element_type : v[0].dtype();
  prim::DotDims d{dims.lhs_contracting, dims.rhs_contracting, dims.lhs_batch, dims.rhs_batch};
  return bind1(std::make_shared<prim::DotGeneral>(d, s, out), v);
}

Array matmul(const Array& a0, const Array& b0, const DotOptions& o) {
  if (a0.ndim() == 0 || b0.ndim() == 0)
    throw ValueError("[matmul] matmul does not accept scalars. Got shapes " +
                     shape_str(a0.shape()) + " and " + shape_str(b0.shape()) +
                     "; expected arrays of rank >= 1. Use multiply for scalars.");
  Array a = a0, b = b0;
  bool va = a.ndim() == 1, vb = b.ndim() == 1;
  if (va) a = reshape(a, {1, a.shape()[0]});
  if (vb) b = reshape(b, {b.shape()[0], 1});
  int ra = a.ndim(), rb = b.ndim();
  int nb = std::max(ra, rb) - 2;
  // Broadcast batch dims: prepend size-1 dims, then expand size-1 batch dims.
  Shape batch(static_cast<size_t>(nb), 1);
  for (int i = 0; i < nb; ++i) {
    int ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
    int64_t sa = ia >= 0 ? a.shape()[ia] : 1, sb = ib >= 0 ? b.shape()[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      throw ValueError("[matmul] matmul batch dims are not broadcast compatible. Got shapes " +
                       shape_str(a0.shape()) + " and " + shape_str(b0.shape()) +
                       "; expected equal batch sizes or 1.");
    batch[i] = std::max(sa, sb);
  }
  auto expand = [&](const Array& x) {
    Shape shape = batch;
    shape.push_back(x.shape()[x.ndim() - 2]);
    shape.push_back(x.shape()[x.ndim() - 1]);
    if (shape == x.shape()) return x;
    return broadcast_to(x, shape);
  };
  a = expand(a);
  b = expand(b);
  std::vector<int> bd(static_cast<size_t>(nb));
  std::iota(bd.begin(), bd.end(), 0);
  Array r = dot_general(a, b, {{nb + 1}, {nb}, bd, bd}, o);
  if (va || vb) {
    Shape shape = batch;
    if (!va) shape.push_back(r.shape()[nb]);
    if (!vb) shape.push_back(r.shape()[r.ndim() - 1]);
    r = reshape(r, shape);
  }
  return r;
}

Array dot(const Array& a, const Array& b, const DotOptions& o) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b);
  if (b.ndim() == 1) return dot_general(a, b, {{a.ndim() - 1}, {0}}, o);
  return dot_general(a, b, {{a.ndim() - 1}, {b.ndim() - 2}}, o);
}

}  // namespace tsr
