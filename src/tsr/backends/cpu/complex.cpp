// Kernels for complex64 / complex128 (docs/design/0023): real / imag / conj /
// complex, the unary ops lax defines on complex numbers, integer_pow and the sum /
// product reductions. Plain loops over std::complex: the rules keep every other
// primitive's kernel away from complex values (declare_complex).
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/complex.h"
#include "tsr/prims/cumulative.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/reduction.h"

namespace tsr::detail::cpu {
namespace {

using prim::UnaryOp;

// log(1 + z) without the cancellation of 1 + z for small z: the real part is
// 0.5 log((1 + x)^2 + y^2) = 0.5 log1p(x (2 + x) + y^2).
template <typename R>
std::complex<R> log1p_c(std::complex<R> z) {
  R x = z.real(), y = z.imag();
  if (std::abs(x) > R(0.5) || std::abs(y) > R(0.5)) return std::log(R(1) + z);
  return {R(0.5) * std::log1p(x * (R(2) + x) + y * y), std::atan2(y, R(1) + x)};
}

// exp(z) - 1 = (expm1(x) cos y - 2 sin^2(y / 2)) + i exp(x) sin y.
template <typename R>
std::complex<R> expm1_c(std::complex<R> z) {
  R x = z.real(), y = z.imag();
  R s = std::sin(y / R(2));
  return {std::expm1(x) * std::cos(y) - R(2) * s * s, std::exp(x) * std::sin(y)};
}

template <typename Z>
Z unary_op(UnaryOp op, Z z) {
  using R = typename Z::value_type;
  switch (op) {
    case UnaryOp::Neg:
      return -z;
    case UnaryOp::Sign:
      return z == Z(0) ? Z(0) : z / std::abs(z);
    case UnaryOp::Exp:
      return std::exp(z);
    case UnaryOp::Exp2:
      return std::exp(z * static_cast<R>(0.69314718055994530942));
    case UnaryOp::Log:
      return std::log(z);
    case UnaryOp::Log1p:
      return log1p_c(z);
    case UnaryOp::Expm1:
      return expm1_c(z);
    case UnaryOp::Sqrt:
      return std::sqrt(z);
    case UnaryOp::Rsqrt:
      return Z(1) / std::sqrt(z);
    case UnaryOp::Square:
      return z * z;
    case UnaryOp::Sin:
      return std::sin(z);
    case UnaryOp::Cos:
      return std::cos(z);
    case UnaryOp::Tan:
      return std::tan(z);
    case UnaryOp::Tanh:
      return std::tanh(z);
    case UnaryOp::Logistic:
      return Z(1) / (Z(1) + std::exp(-z));
    default:  // the rule accepts complex for no other op
      return z;
  }
}

// x ** y for integer y by squaring (a negative y inverts the result, as lax).
template <typename Z>
Z ipow(Z x, int y) {
  Z r(1), b = x;
  for (unsigned e = static_cast<unsigned>(y < 0 ? -static_cast<int64_t>(y) : y); e; e >>= 1) {
    if (e & 1u) r *= b;
    b *= b;
  }
  return y < 0 ? Z(1) / r : r;
}

// Sum or product over `axes`, accumulated in complex<double>, walking the input in
// memory order (each element's output position from the kept dims' strides).
template <typename Z>
void reduce_typed(const Z* x, Z* out, const Shape& s, const std::vector<int>& axes, bool prod,
                  int64_t nout) {
  using A = std::complex<double>;
  std::vector<A> acc(static_cast<size_t>(nout), A(prod ? 1 : 0));
  const int r = static_cast<int>(s.size());
  std::vector<int64_t> ost(r, 0), ctr(r, 0);
  int64_t st = 1;
  for (int d = r - 1; d >= 0; --d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      ost[d] = st;
      st *= s[d];
    }
  const int64_t n = numel(s);
  int64_t oi = 0;
  for (int64_t i = 0; i < n; ++i) {
    A v(x[i]);
    acc[oi] = prod ? acc[oi] * v : acc[oi] + v;
    for (int d = r - 1; d >= 0; --d) {
      oi += ost[d];
      if (++ctr[d] < s[d]) break;
      oi -= ost[d] * s[d];
      ctr[d] = 0;
    }
  }
  for (int64_t o = 0; o < nout; ++o) out[o] = Z(acc[o]);
}

}  // namespace

void complex_part(const KernelArgs& a) {
  auto kind = static_cast<const prim::ComplexPart&>(*a.prim).kind();
  int64_t n = numel((*a.in)[0].shape);
  dispatch_complex((*a.in)[0].dtype, [&](auto tag) {
    using Z = decltype(tag);
    using R = typename Z::value_type;
    const Z* z = a.i<Z>(0);
    if (kind == prim::PartKind::Conj) {
      for (int64_t i = 0; i < n; ++i) a.o<Z>(0)[i] = std::conj(z[i]);
    } else {
      R* o = a.o<R>(0);
      bool re = kind == prim::PartKind::Real;
      for (int64_t i = 0; i < n; ++i) o[i] = re ? z[i].real() : z[i].imag();
    }
  });
}

void make_complex(const KernelArgs& a) {
  // The parts broadcast as a binary op's operands: walk the output with each
  // operand's strides (0 along a broadcast dim).
  const Shape& os = (*a.out)[0].shape;
  int64_t n = numel(os);
  if (n == 0) return;
  const int r = static_cast<int>(os.size());
  auto strides = [&](const Shape& sh) {
    std::vector<int64_t> st(r, 0);
    if (sh.empty()) return st;
    int64_t p = 1;
    for (int d = r - 1; d >= 0; --d) {
      st[d] = sh[d] == 1 ? 0 : p;
      p *= sh[d];
    }
    return st;
  };
  std::vector<int64_t> sx = strides((*a.in)[0].shape), sy = strides((*a.in)[1].shape), ctr(r, 0);
  dispatch_complex((*a.out)[0].dtype, [&](auto tag) {
    using Z = decltype(tag);
    using R = typename Z::value_type;
    const R* x = a.i<R>(0);
    const R* y = a.i<R>(1);
    Z* o = a.o<Z>(0);
    int64_t ix = 0, iy = 0;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = Z(x[ix], y[iy]);
      for (int d = r - 1; d >= 0; --d) {
        ix += sx[d];
        iy += sy[d];
        if (++ctr[d] < os[d]) break;
        ix -= sx[d] * os[d];
        iy -= sy[d] * os[d];
        ctr[d] = 0;
      }
    }
  });
}

void unary_complex(const KernelArgs& a) {
  auto op = static_cast<const prim::Unary&>(*a.prim).op();
  int64_t n = numel((*a.in)[0].shape);
  dispatch_complex((*a.in)[0].dtype, [&](auto tag) {
    using Z = decltype(tag);
    using R = typename Z::value_type;
    const Z* z = a.i<Z>(0);
    if (op == UnaryOp::Abs) {  // |z|: a real result
      R* o = a.o<R>(0);
      for (int64_t i = 0; i < n; ++i) o[i] = std::abs(z[i]);
      return;
    }
    Z* o = a.o<Z>(0);
    for (int64_t i = 0; i < n; ++i) o[i] = unary_op(op, z[i]);
  });
}

void integer_pow_complex(const KernelArgs& a) {
  int y = static_cast<const prim::IntegerPow&>(*a.prim).y();
  int64_t n = numel((*a.in)[0].shape);
  dispatch_complex((*a.in)[0].dtype, [&](auto tag) {
    using Z = decltype(tag);
    const Z* x = a.i<Z>(0);
    Z* o = a.o<Z>(0);
    for (int64_t i = 0; i < n; ++i) o[i] = ipow(x[i], y);
  });
}

void reduce_complex(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Reduce&>(*a.prim);
  bool prod = p.kind() == prim::ReduceKind::Prod;
  if (!prod && p.kind() != prim::ReduceKind::Sum)
    unsupported_dtype(p.name(), (*a.in)[0].dtype, "a real dtype (complex sums and products only)");
  dispatch_complex((*a.in)[0].dtype, [&](auto tag) {
    using Z = decltype(tag);
    reduce_typed(a.i<Z>(0), a.o<Z>(0), (*a.in)[0].shape, p.axes(), prod, numel((*a.out)[0].shape));
  });
}

void cumulative_complex(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Cumulative&>(*a.prim);
  const bool prod = p.kind() == prim::CumKind::Prod;
  if (!prod && p.kind() != prim::CumKind::Sum)
    unsupported_dtype(p.name(), (*a.in)[0].dtype, "a real dtype (complex cumsum / cumprod only)");
  const Shape& s = (*a.in)[0].shape;
  const int axis = p.axis();
  const int64_t len = s.empty() ? 1 : s[axis];
  int64_t stride = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) stride *= s[d];
  const int64_t lines = len == 0 ? 0 : numel(s) / len;
  dispatch_complex((*a.in)[0].dtype, [&](auto tag) {
    using Z = decltype(tag);
    const Z* x = a.i<Z>(0);
    Z* o = a.o<Z>(0);
    for (int64_t l = 0; l < lines; ++l) {
      const int64_t base = (l / stride) * len * stride + l % stride;
      std::complex<double> acc(prod ? 1 : 0);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t i = base + (p.reverse() ? len - 1 - j : j) * stride;
        acc = prod ? acc * std::complex<double>(x[i]) : acc + std::complex<double>(x[i]);
        o[i] = Z(acc);
      }
    }
  });
}

}  // namespace tsr::detail::cpu
