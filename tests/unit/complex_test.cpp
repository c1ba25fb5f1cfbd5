// complex64 / complex128: conversions, the elementwise ops lax defines on complex
// numbers against std::complex, reductions, dot_general, sharded runs against the one-
// device run, psum, AD with JAX's convention (values printed by JAX 0.10.2), vmap, jit
// and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <vector>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

namespace {

const std::vector<c128> kZ = {{0.5, -1.25}, {-2.0, 0.75}, {1.5, 2.0},   {-0.25, -0.5},
                              {3.0, 0.0},   {0.0, 1.0},   {-1.0, -2.5}, {0.125, 0.25}};

Array carr(const std::vector<c128>& v, DType dt, const Shape& s = {-1}) {
  return astype(array(v, s), dt);
}

std::vector<c128> values(const Array& a) { return a.to_vector<c128>(); }

void expect_near(const std::vector<c128>& got, const std::vector<c128>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = std::max(1.0, std::abs(want[i]));
    EXPECT_NEAR(got[i].real(), want[i].real(), tol * scale) << what << " [" << i << "]";
    EXPECT_NEAR(got[i].imag(), want[i].imag(), tol * scale) << what << " [" << i << "]";
  }
}

struct UnaryCase {
  const char* name;
  std::function<Array(const Array&)> op;
  std::function<c128(c128)> ref;
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Array& x) { return neg(x); }, [](c128 z) { return -z; }},
      {"sign", [](const Array& x) { return sign(x); },
       [](c128 z) { return z == 0.0 ? c128(0) : z / std::abs(z); }},
      {"exp", [](const Array& x) { return exp(x); }, [](c128 z) { return std::exp(z); }},
      {"exp2", [](const Array& x) { return exp2(x); },
       [](c128 z) { return std::pow(c128(2.0), z); }},
      {"log", [](const Array& x) { return log(x); }, [](c128 z) { return std::log(z); }},
      {"log1p", [](const Array& x) { return log1p(x); }, [](c128 z) { return std::log(1.0 + z); }},
      {"expm1", [](const Array& x) { return expm1(x); }, [](c128 z) { return std::exp(z) - 1.0; }},
      {"sqrt", [](const Array& x) { return sqrt(x); }, [](c128 z) { return std::sqrt(z); }},
      {"rsqrt", [](const Array& x) { return rsqrt(x); }, [](c128 z) { return 1.0 / std::sqrt(z); }},
      {"square", [](const Array& x) { return square(x); }, [](c128 z) { return z * z; }},
      {"sin", [](const Array& x) { return sin(x); }, [](c128 z) { return std::sin(z); }},
      {"cos", [](const Array& x) { return cos(x); }, [](c128 z) { return std::cos(z); }},
      {"tan", [](const Array& x) { return tan(x); }, [](c128 z) { return std::tan(z); }},
      {"tanh", [](const Array& x) { return tanh(x); }, [](c128 z) { return std::tanh(z); }},
      {"logistic", [](const Array& x) { return logistic(x); },
       [](c128 z) { return 1.0 / (1.0 + std::exp(-z)); }},
      {"integer_pow3", [](const Array& x) { return integer_pow(x, 3); },
       [](c128 z) { return z * z * z; }},
      {"integer_pow-2", [](const Array& x) { return integer_pow(x, -2); },
       [](c128 z) { return 1.0 / (z * z); }},
      {"conj", [](const Array& x) { return conj(x); }, [](c128 z) { return std::conj(z); }},
  };
}

}  // namespace

TEST(Complex, ConstructionAndConversions) {
  Array re = array({1.5f, -2.f, 0.f}), im = array({0.5f, 0.f, -3.f});
  Array z = complex(re, im);
  EXPECT_EQ(z.dtype(), complex64);
  expect_near(values(z), {{1.5, 0.5}, {-2, 0}, {0, -3}}, 0, "complex");
  EXPECT_EQ(complex(astype(re, float64), im).dtype(), complex128);  // promoted to f64
  EXPECT_EQ(complex(array({1, 2}), array({3, 4})).dtype(), complex64);
  EXPECT_EQ(real(z).dtype(), float32);
  EXPECT_EQ(real(z).to_vector<float>(), (std::vector<float>{1.5f, -2.f, 0.f}));
  EXPECT_EQ(imag(z).to_vector<float>(), (std::vector<float>{0.5f, 0.f, -3.f}));
  // Real -> complex: imaginary part 0; complex -> real: the real part (lax); -> bool: z != 0.
  expect_near(values(astype(re, complex128)), {{1.5, 0}, {-2, 0}, {0, 0}}, 0, "astype");
  Array w = carr({{2.7, 3}, {-1.5, 1}, {0, 0}}, complex128);
  EXPECT_EQ(astype(w, int32).to_vector<int32_t>(), (std::vector<int32_t>{2, -1, 0}));
  EXPECT_EQ(astype(w, bool_).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(astype(w, complex64).dtype(), complex64);
  // Host round trip of both widths, and jnp's helpers on real arrays.
  std::vector<c64> h = {{1, 2}, {3, -4}};
  EXPECT_EQ(array(h).to_vector<c64>(), h);
  EXPECT_TRUE(iscomplexobj(z));
  EXPECT_FALSE(iscomplexobj(re));
  EXPECT_EQ(real(re).to_vector<float>(), re.to_vector<float>());
  EXPECT_EQ(imag(re).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(conj(re).dtype(), float32);
  // Promotion through the ops: float64 + complex64 = complex128 (JAX's lattice).
  EXPECT_EQ(add(astype(re, float64), z).dtype(), complex128);
  EXPECT_EQ(multiply(z, 2.0).dtype(), complex64);
}

TEST(Complex, UnaryOpsMatchStdComplex) {
  for (DType dt : {complex64, complex128}) {
    double tol = dt == complex64 ? 2e-6 : 1e-13;
    Array x = carr(kZ, dt);
    for (const auto& c : unary_cases()) {
      std::vector<c128> want;
      for (c128 z : kZ) want.push_back(c.ref(z));
      Array y = c.op(x);
      EXPECT_EQ(y.dtype(), dt) << c.name;
      expect_near(values(y), want, tol, std::string(c.name) + " " + dtype_name(dt));
    }
    std::vector<double> mags;
    for (c128 z : kZ) mags.push_back(std::abs(z));
    Array m = abs(x);
    EXPECT_EQ(m.dtype(), real_dtype(dt));
    std::vector<double> got = m.to_vector<double>();
    for (size_t i = 0; i < mags.size(); ++i) EXPECT_NEAR(got[i], mags[i], tol * 4) << i;
    std::vector<double> ang = angle(x).to_vector<double>();
    for (size_t i = 0; i < kZ.size(); ++i) EXPECT_NEAR(ang[i], std::arg(kZ[i]), tol * 4) << i;
  }
  // Accurate near zero (JAX: expm1(1e-8+1e-8j) = 1e-8+1.00000001e-8j, log1p = 1e-8+1e-8j).
  Array tiny = carr({{1e-8, 1e-8}}, complex128);
  expect_near(values(expm1(tiny)), {{1e-8, 1.00000001e-8}}, 1e-15, "expm1");
  EXPECT_NEAR(values(log1p(tiny))[0].imag(), 9.9999999e-09, 1e-16);
  EXPECT_NEAR(values(log1p(tiny))[0].real(), 1e-8, 1e-16);
}

TEST(Complex, BinaryOpsWithBroadcasting) {
  Array a = carr({{1, 2}, {1, 1}, {3, 0}, {0, 0}}, complex64, {2, 2});
  Array b = carr({{1, 1}, {1, 2}}, complex64, {1, 2});
  auto av = values(a), bv = values(b);
  std::vector<c128> s, p, q;
  for (int i = 0; i < 4; ++i) {
    c128 x = av[i], y = bv[i % 2];
    s.push_back(x - y);
    p.push_back(x * y);
    q.push_back(x / y);
  }
  expect_near(values(subtract(a, b)), s, 1e-6, "sub");
  expect_near(values(multiply(a, b)), p, 1e-6, "mul");
  expect_near(values(divide(a, b)), q, 1e-6, "div");
  EXPECT_EQ(equal(a, a).to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(not_equal(a, b).to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  // Lexicographic max / min (lax); NaN compares false and gives the second operand
  // (JAX: max(nan+0j, 1+0j) = 1+0j).
  Array x = carr({{1, 2}, {1, 1}, {3, 0}, {NAN, 0}}, complex64);
  Array y = carr({{1, 1}, {1, 2}, {2, 5}, {1, 0}}, complex64);
  expect_near(values(maximum(x, y)), {{1, 2}, {1, 2}, {3, 0}, {1, 0}}, 0, "max");
  expect_near(values(minimum(x, y)), {{1, 1}, {1, 1}, {2, 5}, {1, 0}}, 0, "min");
  // pow: 0 ** 0 = 1, 0 ** 2 = 0, 0 ** -1 = nan (as JAX).
  Array z0 = carr({{0, 0}, {0, 0}, {0, 0}, {1, 2}}, complex64);
  Array e = carr({{0, 0}, {2, 0}, {-1, 0}, {0.5, 0.5}}, complex64);
  auto pw = values(power(z0, e));
  EXPECT_EQ(pw[0], c128(1));
  EXPECT_EQ(pw[1], c128(0));
  EXPECT_TRUE(std::isnan(pw[2].real()));
  EXPECT_NEAR(pw[3].real(), 0.4958933, 1e-6);
  EXPECT_NEAR(pw[3].imag(), 0.7022181, 1e-6);
}

TEST(Complex, ReductionsAndDot) {
  Array x = carr(kZ, complex128, {2, 4});
  c128 total = 0, prod0 = 1;
  std::vector<c128> rows(2, 0.0);
  for (int i = 0; i < 8; ++i) total += kZ[i], rows[i / 4] += kZ[i];
  for (int i = 0; i < 4; ++i) prod0 *= kZ[i];
  expect_near(values(sum(x)), {total}, 1e-14, "sum");
  expect_near(values(sum(x, 1)), rows, 1e-14, "row sums");
  expect_near({values(prod(x, 1))[0]}, {prod0}, 1e-14, "prod");
  expect_near(values(mean(x)), {total / 8.0}, 1e-14, "mean");
  // var of complex: the mean of |x - mean|^2, a real result (JAX: 1.3333 for these three).
  Array v = var(carr({{1, 1}, {2, -1}, {3, 0}}, complex128));
  EXPECT_EQ(v.dtype(), float64);
  EXPECT_NEAR(v.item<double>(), 4.0 / 3.0, 1e-14);
  // matmul through zgemm / cgemm against the loop.
  Array a = carr(kZ, complex64, {2, 4}), b = carr(kZ, complex64, {4, 2});
  std::vector<c128> want(4, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 4; ++k) want[i * 2 + j] += kZ[i * 4 + k] * kZ[k * 2 + j];
  expect_near(values(matmul(a, b)), want, 1e-5, "matmul c64");
  expect_near(values(matmul(astype(a, complex128), astype(b, complex128))), want, 1e-13,
              "matmul c128");
}

TEST(Complex, CumulativeSumsAndProducts) {
  Array x = carr(kZ, complex128, {2, 4});
  std::vector<c128> cs, cp, rs;
  for (int i = 0; i < 2; ++i) {
    c128 s = 0, p = 1, r = 0;
    for (int j = 0; j < 4; ++j) {
      s += kZ[i * 4 + j];
      p *= kZ[i * 4 + j];
      cs.push_back(s);
      cp.push_back(p);
    }
    for (int j = 3; j >= 0; --j) {
      r += kZ[i * 4 + j];
      rs.insert(rs.begin() + i * 4, r);
    }
  }
  expect_near(values(cumsum(x, 1)), cs, 1e-14, "cumsum");
  expect_near(values(cumprod(x, 1)), cp, 1e-14, "cumprod");
  expect_near(values(cumsum(x, 1, {.reverse = true})), rs, 1e-14, "reverse cumsum");
  // The gradient of a real function through cumsum (its transpose is a reverse cumsum).
  Array g = grad([](const Array& w) { return real(sum(multiply(cumsum(w, 1), conj(w)))); })(x);
  EXPECT_EQ(g.dtype(), complex128);
}

TEST(Complex, GatherAndScatter) {
  Array x = carr(kZ, complex64);
  Array u = carr({{1, -1}, {0.5, 2}}, complex64);
  Array idx = array({1, 6});
  std::vector<c128> set = kZ, add = kZ;
  set[1] = {1, -1};
  set[6] = {0.5, 2};
  add[1] += c128(1, -1);
  add[6] += c128(0.5, 2);
  expect_near(values(x.at(idx).set(u)), set, 1e-6, "set");
  expect_near(values(x.at(idx).add(u)), add, 1e-6, "add");
  expect_near(values(x.at(idx).get()), {kZ[1], kZ[6]}, 1e-6, "get");
}

TEST(Complex, ShardedRunsEqualTheOneDeviceRun) {
  Array x = carr(kZ, complex128, {4, 2});
  auto f = [](const Array& z) {
    Array y = multiply(exp(z), conj(z)) + complex(real(z), square(imag(z)));
    return sum(y * y, 1);
  };
  std::vector<c128> want = values(f(x));
  Mesh m = make_mesh({4}, {"x"});
  Array xs = device_put(x, NamedSharding(m, P("x")));
  expect_near(values(f(xs)), want, 1e-13, "eager sharded");
  expect_near(values(jit(f)(xs)), want, 1e-13, "jit sharded");
  // psum of complex inside shard_map: each device's block summed over the axis.
  MeshScope scope(m);
  auto body = [](const Array& b) { return psum(b, {"x"}); };
  Array s = shard_map(body, {.in_specs = P("x"), .out_specs = P()})(xs);
  std::vector<c128> col(2, 0.0);
  for (int i = 0; i < 8; ++i) col[i % 2] += kZ[i];
  expect_near(values(s), col, 1e-14, "psum");
  EXPECT_HAS(error_of<NotImplementedError>([&] {
               shard_map([](const Array& b) { return pmax(b, {"x"}); },
                         {.in_specs = P("x"), .out_specs = P()})(xs);
             }),
             "complex numbers have no order");
}

TEST(Complex, GradFollowsJaxConvention) {
  // JAX 0.10.2: grad(lambda z: (z * conj(z)).real)(3+4j) = 6-8j; grad(abs)(3+4j) = 0.6-0.8j.
  Array z = carr({{3, 4}}, complex128, {});
  Array g = grad([](const Array& w) { return real(multiply(w, conj(w))); })(z);
  EXPECT_EQ(g.dtype(), complex128);
  expect_near(values(g), {{6, -8}}, 1e-14, "grad |z|^2");
  expect_near(values(grad([](const Array& w) { return abs(w); })(z)), {{0.6, -0.8}}, 1e-14,
              "grad abs");
  // JAX returns the conjugate of the usual gradient: grad(real(exp(z))) = exp(z).
  c128 e = std::exp(c128(3, 4));
  expect_near(values(grad([](const Array& w) { return real(exp(w)); })(z)), {e}, 1e-12,
              "grad real(exp)");
  // vjp of a complex-valued function with a complex cotangent: ct * f'(z) (no conj).
  auto [y, pull] = vjp([](const Array& w) { return square(w); }, z);
  Array ct = carr({{1, 1}}, complex128, {});
  expect_near(values(std::get<0>(pull(ct))), {c128(1, 1) * 2.0 * c128(3, 4)}, 1e-14, "vjp");
  // jvp: the tangent of a holomorphic function is f'(z) t.
  auto [o, t] = jvp([](const Array& w) { return sin(w); }, z, ct);
  expect_near(values(t), {std::cos(c128(3, 4)) * c128(1, 1)}, 1e-12, "jvp");
  // Real -> complex -> real: d/dx real(complex(x, 2x) * (1 - i)) = 1 + 2 = 3.
  Array xr = scalar(0.5);
  auto h = [](const Array& x) {
    return real(multiply(complex(x, multiply(x, 2.0)), carr({{1, -1}}, complex128, {})));
  };
  EXPECT_NEAR(grad(h)(xr).item<double>(), 3.0, 1e-14);
  EXPECT_NEAR(grad([](const Array& x) { return imag(complex(x, square(x))); })(xr).item<double>(),
              1.0, 1e-14);
  // holomorphic: f'(z) (JAX: grad(lambda z: z * z * sin(z), holomorphic=True)).
  auto f = [](const Array& w) { return multiply(square(w), sin(w)); };
  c128 w0(3, 4);
  c128 want = 2.0 * w0 * std::sin(w0) + w0 * w0 * std::cos(w0);
  expect_near(values(grad(f, holomorphic)(z)), {want}, 1e-12, "holomorphic");
  EXPECT_HAS(error_of<TypeError>([&] { grad(f, holomorphic)(scalar(1.0)); }),
             "holomorphic=True requires inputs with complex dtype");
  EXPECT_HAS(
      error_of<TypeError>([&] { grad([](const Array& w) { return abs(w); }, holomorphic)(z); }),
      "holomorphic=True requires outputs with complex dtype");
}

TEST(Complex, VmapAndJitOfComplexFunctions) {
  Array x = carr(kZ, complex64, {4, 2});
  auto f = [](const Array& z) { return sum(multiply(z, conj(z))); };
  Array batched = vmap(f)(x);
  std::vector<c128> want;
  for (int i = 0; i < 4; ++i) want.push_back(std::norm(kZ[2 * i]) + std::norm(kZ[2 * i + 1]));
  expect_near(values(batched), want, 1e-6, "vmap");
  expect_near(values(jit(f)(x)), {want[0] + want[1] + want[2] + want[3]}, 1e-5, "jit");
}

TEST(Complex, Refusals) {
  Array z = carr(kZ, complex64);
  EXPECT_HAS(error_of<TypeError>([&] { floor(z); }),
             "floor does not accept dtype complex64. Accepted dtypes are subtypes of floating");
  EXPECT_HAS(error_of<TypeError>([&] { less(z, z); }), "complex numbers have no order");
  EXPECT_HAS(error_of<TypeError>([&] { complex(z, z); }), "complex takes real parts");
  // A primitive whose kernel has no complex case refuses in its rule, eagerly and in jit.
  EXPECT_HAS(error_of<NotImplementedError>([&] { sort(z); }),
             "complex64 is not supported by sort yet");
  EXPECT_HAS(
      error_of<NotImplementedError>([&] { jit([](const Array& a) { return cummax(a); })(z); }),
      "not supported by cummax yet");
  EXPECT_HAS(error_of<TypeError>([&] { grad([](const Array& a) { return sum(a); })(z); }),
             "For holomorphic differentiation, pass holomorphic");
  EXPECT_HAS(error_of<TypeError>([&] { bitcast_convert_type(z, float32); }),
             "does not support bool or complex values");
}
