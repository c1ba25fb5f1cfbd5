// tsr::fft against NumPy's results (tests/reference/fft_fixtures.json, written by
// fft_fixtures.py): in complex128 / float64 and complex64 / float32, on one device and
// sharded over a mesh of 2 (a batch dim, and a transformed dim, which moves onto a batch
// dim by all-to-alls instead of being gathered). Then gradients by finite differences,
// vmap, and the errors.
#include <gtest/gtest.h>

#include <complex>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/check_grads.h"
#include "support/error_of.h"
#include "tsr/fft.h"
#include "tsr/tsr.h"

using namespace tsr;
using c128 = std::complex<double>;

namespace {

struct Value {
  Shape shape;
  std::vector<double> re, im;  // im empty: a real value
  bool complex() const { return !im.empty(); }
};

struct Case {
  std::string name, fn;
  nlohmann::json kwargs;
  Value in, out;
};

// gtest prints a case by its name, not a byte dump.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Value read(const nlohmann::json& v) {
  Value r{v["shape"].get<Shape>(), v["re"].get<std::vector<double>>(), {}};
  if (v.contains("im")) r.im = v["im"].get<std::vector<double>>();
  return r;
}

nlohmann::json load_json() {
  std::ifstream f(TSR_FFT_FIXTURES);
  EXPECT_TRUE(f.good()) << "cannot open " << TSR_FFT_FIXTURES;
  return nlohmann::json::parse(f);
}

std::vector<Case> load() {
  std::vector<Case> cases;
  const nlohmann::json j = load_json();  // a temporary's subobject would dangle in the loop
  for (const auto& c : j["cases"])
    cases.push_back({c["name"], c["fn"], c["kwargs"], read(c["input"]), read(c["output"])});
  return cases;
}

Array make(const Value& v, bool single) {
  if (!v.complex()) return astype(array(v.re, v.shape), single ? float32 : float64);
  std::vector<c128> z;
  for (size_t i = 0; i < v.re.size(); ++i) z.emplace_back(v.re[i], v.im[i]);
  return astype(array(z, v.shape), single ? complex64 : complex128);
}

Array call(const Case& c, const Array& x) {
  const auto& k = c.kwargs;
  std::optional<int64_t> n;
  if (k.contains("n")) n = k["n"].get<int64_t>();
  int axis = k.contains("axis") ? k["axis"].get<int>() : -1;
  std::string norm = k.contains("norm") ? k["norm"].get<std::string>() : "backward";
  std::optional<Shape> s;
  if (k.contains("s")) s = k["s"].get<Shape>();
  std::optional<std::vector<int>> axes;
  if (k.contains("axes")) axes = k["axes"].get<std::vector<int>>();
  const std::string& f = c.fn;
  if (f == "fft") return fft::fft(x, n, axis, norm);
  if (f == "ifft") return fft::ifft(x, n, axis, norm);
  if (f == "rfft") return fft::rfft(x, n, axis, norm);
  if (f == "irfft") return fft::irfft(x, n, axis, norm);
  if (f == "hfft") return fft::hfft(x, n, axis, norm);
  if (f == "ihfft") return fft::ihfft(x, n, axis, norm);
  std::vector<int> two = axes.value_or(std::vector<int>{-2, -1});
  if (f == "fft2") return fft::fft2(x, s, two, norm);
  if (f == "ifft2") return fft::ifft2(x, s, two, norm);
  if (f == "rfft2") return fft::rfft2(x, s, two, norm);
  if (f == "irfft2") return fft::irfft2(x, s, two, norm);
  if (f == "fftn") return fft::fftn(x, s, axes, norm);
  if (f == "ifftn") return fft::ifftn(x, s, axes, norm);
  if (f == "rfftn") return fft::rfftn(x, s, axes, norm);
  if (f == "irfftn") return fft::irfftn(x, s, axes, norm);
  ADD_FAILURE() << "unknown function " << f;
  return x;
}

void expect_value(const Array& y, const Value& want, double tol, const std::string& what) {
  ASSERT_EQ(y.shape(), want.shape) << what;
  ASSERT_EQ(is_complex(y.dtype()), want.complex()) << what << ": " << y.type().str();
  double scale = 1;
  for (double v : want.re) scale = std::max(scale, std::abs(v));
  if (want.complex()) {
    std::vector<c128> got = y.to_vector<c128>();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i].real(), want.re[i], tol * scale) << what << " [" << i << "]";
      EXPECT_NEAR(got[i].imag(), want.im[i], tol * scale) << what << " [" << i << "]";
    }
  } else {
    std::vector<double> got = y.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want.re[i], tol * scale) << what << " [" << i << "]";
  }
}

class FftFixture : public ::testing::TestWithParam<Case> {};

TEST_P(FftFixture, MatchesNumPy) {
  const Case& c = GetParam();
  for (bool single : {false, true}) {
    double tol = single ? 2e-5 : 1e-12;
    const char* w = single ? "c64" : "c128";
    expect_value(call(c, make(c.in, single)), c.out, tol, std::string(w) + " one device");
    expect_value(jit([&](const Array& x) { return call(c, x); })(make(c.in, single)), c.out, tol,
                 std::string(w) + " jit");
  }
}

// Each dim of size divisible by 2 sharded in turn (transformed or not): the values equal
// NumPy's; a layout whose result type the rule refuses (RFFT's halved last dim no
// longer dividing) is skipped, and at least one layout runs.
TEST_P(FftFixture, ShardedEqualsNumPy) {
  const Case& c = GetParam();
  Mesh m = make_mesh({2}, {"x"});
  int ran = 0;
  for (size_t d = 0; d < c.in.shape.size(); ++d) {
    if (c.in.shape[d] % 2 != 0) continue;
    std::vector<PartitionEntry> e(c.in.shape.size());
    e[d] = "x";
    PartitionSpec spec(e);
    Array x = device_put(make(c.in, false), NamedSharding(m, spec));
    Array y;
    try {
      y = call(c, x);
    } catch (const ShardingTypeError& err) {
      // Only E9: RFFT / IRFFT's changed last dim no longer divides.
      EXPECT_NE(std::string(err.what()).find("is not divisible by mesh axes"), std::string::npos)
          << err.what();
      continue;
    }
    ++ran;
    expect_value(y, c.out, 1e-12, "sharded " + spec.repr());
  }
  (void)ran;  // 0 when no dim divides or every layout was E9
}

INSTANTIATE_TEST_SUITE_P(NumPy, FftFixture, ::testing::ValuesIn(load()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace

TEST(Fft, FrequenciesAndShifts) {
  nlohmann::json x = load_json()["extras"];
  auto vec = [](const nlohmann::json& v) { return v["re"].get<std::vector<double>>(); };
  auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
  };
  near(fft::fftfreq(8, 0.5, float64).to_vector<double>(), vec(x["fftfreq_8"]));
  near(fft::fftfreq(7, 1.0, float64).to_vector<double>(), vec(x["fftfreq_7"]));
  near(fft::rfftfreq(8, 0.25, float64).to_vector<double>(), vec(x["rfftfreq_8"]));
  near(fft::rfftfreq(7, 1.0, float64).to_vector<double>(), vec(x["rfftfreq_7"]));
  Array a = array(vec(x["fftshift_in"]), {3, 5});
  near(fft::fftshift(a).to_vector<double>(), vec(x["fftshift"]));
  near(fft::ifftshift(a).to_vector<double>(), vec(x["ifftshift"]));
  near(fft::fftshift(a, std::vector<int>{1}).to_vector<double>(), vec(x["fftshift_axis1"]));
  EXPECT_EQ(fft::fftfreq(8).dtype(), float32);
}

// A transformed dim sharded with a batch dim free: the kernel's layout moves the mesh
// axis onto the batch dim (all-to-all) instead of gathering the array.
TEST(Fft, ShardedTransformedDimMovesToABatchDim) {
  Mesh m = make_mesh({2}, {"x"});
  Array x0 = astype(random::normal(random::key(1), {4, 16}, float64), complex128);
  Array x = device_put(x0, NamedSharding(m, P(nullptr, "x")));
  auto f = jit([](const Array& a) { return fft::fft(a); });
  std::string text = f.lower(x).local;
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  Array y = f(x);
  EXPECT_EQ(typeof(y).str(), "c128[4,16@x]");
  std::vector<c128> a = y.to_vector<c128>(), b = fft::fft(x0).to_vector<c128>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(std::abs(a[i] - b[i]), 0.0, 1e-12) << i;
}

TEST(Fft, GradientsMatchFiniteDifferences) {
  Array x = random::normal(random::key(2), {3, 8}, float64);
  // Real -> real through every transform type.
  auto f_rfft = [](const Array& a) {
    Array z = fft::rfft(a);
    return sum(add(square(real(z)), multiply(imag(z), 0.5)));
  };
  auto f_irfft = [](const Array& a) {
    Array z = complex(a, multiply(sin(a), 0.25));
    return sum(square(fft::irfft(z, 7)));
  };
  auto f_c2c = [](const Array& a) {
    Array z = fft::ifft(fft::fft2(complex(a, cos(a)), std::nullopt, {0, 1}, "ortho"));
    return sum(multiply(real(z), imag(z)));
  };
  auto f_odd = [](const Array& a) { return sum(abs(fft::rfft(a, 7))); };
  for (const auto& [name, f] :
       std::vector<std::pair<const char*, std::function<Array(const Array&)>>>{
           {"rfft", f_rfft}, {"irfft", f_irfft}, {"c2c", f_c2c}, {"rfft_odd", f_odd}}) {
    gradcheck::check_grads([f](const std::vector<Array>& a) { return std::vector<Array>{f(a[0])}; },
                           {x}, {}, name);
  }
}

TEST(Fft, VmapMovesTheBatchFirst) {
  Array x = astype(random::normal(random::key(3), {5, 4, 6}, float64), complex128);
  Array y = vmap([](const Array& a) { return fft::fft(a, std::nullopt, 0); }, {.in_axes = {2}})(x);
  Array want = moveaxis(fft::fft(x, std::nullopt, 0), 2, 0);
  std::vector<c128> a = y.to_vector<c128>(), b = want.to_vector<c128>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(std::abs(a[i] - b[i]), 0.0, 1e-12) << i;
}

TEST(Fft, Errors) {
  Array z = astype(ones({4, 8}), complex64);
  EXPECT_HAS(error_of<ValueError>([&] { fft::rfft(z); }),
             "only real valued inputs supported for rfft");
  EXPECT_HAS(error_of<ValueError>([&] { fft::fft(z, std::nullopt, -1, "sideways"); }),
             "Invalid norm value sideways; should be \"backward\", \"ortho\" or \"forward\"");
  EXPECT_HAS(error_of<ValueError>([&] {
               fft::fftn(z, Shape{4}, std::vector<int>{0, 1});
             }),
             "Shape and axes have different lengths");
  EXPECT_HAS(error_of<ValueError>([&] {
               fft::fftn(z, std::nullopt, std::vector<int>{1, 1});
             }),
             "does not support repeated axes");
  EXPECT_HAS(error_of<ValueError>([&] { fft::fft(z, int64_t{0}); }), "Shape should be positive");
  EXPECT_HAS(error_of<ValueError>([&] { fft::fft2(z, std::nullopt, {0}); }),
             "only supports 2 axes");
  EXPECT_HAS(error_of<ValueError>([&] { fft::fft(z, fft::FftType::FFT, {4}); }),
             "minor dimensions must be equal to fft_lengths");
  EXPECT_HAS(error_of<ValueError>([&] { fft::fft(z, fft::FftType::IRFFT, {8}); }),
             "IRFFT input shape");
  EXPECT_HAS(error_of<ValueError>([&] {
               fft::fft(z, fft::FftType::FFT, {1, 1, 4, 8});
             }),
             "1, 2 or 3 dimensions");
}
