// conv_general_dilated and conv_transpose against JAX's float64 values and gradients
// (tests/reference/conv_fixtures.json, written by conv_fixtures.py): float64 on the
// direct loop, float32 on oneDNN (forward, filter-gradient and input-gradient forms),
// on one device and batch-sharded; then the errors, the sharding rule, the halo
// exchange and the data-parallel filter gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/error_of.h"
#include "tsr/conv.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Case {
  std::string name;
  bool transpose = false, transpose_kernel = false;
  Shape lhs_shape, rhs_shape, y_shape;
  std::vector<double> lhs, rhs, y, grad_lhs, grad_rhs;
  Shape strides, lhs_dilation, rhs_dilation;
  Padding padding = "VALID";
  std::vector<std::string> dn;
  int64_t fgc = 1, bgc = 1;
};

// gtest prints a case by its name, not a byte dump.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> load() {
  std::ifstream f(TSR_CONV_FIXTURES);
  EXPECT_TRUE(f.good()) << "cannot open " << TSR_CONV_FIXTURES;
  nlohmann::json j = nlohmann::json::parse(f);
  std::vector<Case> cases;
  for (const auto& c : j["cases"]) {
    Case k;
    k.name = c["name"];
    k.transpose = c.value("transpose", false);
    k.transpose_kernel = c.value("transpose_kernel", false);
    k.lhs_shape = c["lhs"]["shape"].get<Shape>();
    k.rhs_shape = c["rhs"]["shape"].get<Shape>();
    k.y_shape = c["y"]["shape"].get<Shape>();
    k.lhs = c["lhs"]["data"].get<std::vector<double>>();
    k.rhs = c["rhs"]["data"].get<std::vector<double>>();
    k.y = c["y"]["data"].get<std::vector<double>>();
    k.grad_lhs = c["grad_lhs"].get<std::vector<double>>();
    k.grad_rhs = c["grad_rhs"].get<std::vector<double>>();
    k.strides = c["strides"].get<Shape>();
    if (c["padding"].is_string()) {
      k.padding = c["padding"].get<std::string>();
    } else {
      std::vector<std::pair<int64_t, int64_t>> p;
      for (const auto& e : c["padding"]) p.emplace_back(e[0].get<int64_t>(), e[1].get<int64_t>());
      k.padding = p;
    }
    if (!k.transpose) {
      k.lhs_dilation = c["lhs_dilation"].get<Shape>();
      k.rhs_dilation = c["rhs_dilation"].get<Shape>();
      k.dn = c["dimension_numbers"].get<std::vector<std::string>>();
      k.fgc = c["feature_group_count"];
      k.bgc = c["batch_group_count"];
    }
    cases.push_back(k);
  }
  return cases;
}

Array run(const Case& c, const Array& l, const Array& r) {
  if (c.transpose)
    return conv_transpose(l, r, c.strides, c.padding, {.transpose_kernel = c.transpose_kernel});
  return conv_general_dilated(l, r, c.strides, c.padding,
                              {.lhs_dilation = c.lhs_dilation,
                               .rhs_dilation = c.rhs_dilation,
                               .dimension_numbers = {c.dn[0], c.dn[1], c.dn[2]},
                               .feature_group_count = c.fgc,
                               .batch_group_count = c.bgc});
}

void expect_near_all(const std::vector<double>& want, const std::vector<double>& got,
                     const std::string& what, double rtol) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double scale = 1;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rtol * scale) << what << " element " << i;
}

void check(const Case& c, DType dt, bool sharded) {
  Array l = astype(array<double>(c.lhs, c.lhs_shape), dt);
  Array r = astype(array<double>(c.rhs, c.rhs_shape), dt);
  // The batch dimension's position: dimension_numbers' 'N' (conv_transpose: NHWC).
  const int nb = c.transpose ? 0 : static_cast<int>(c.dn[0].find('N'));
  if (sharded && c.lhs_shape[static_cast<size_t>(nb)] % 2 == 0) {
    std::vector<PartitionEntry> e(c.lhs_shape.size());
    e[static_cast<size_t>(nb)] = PartitionEntry("x");
    l = device_put(l, NamedSharding(make_mesh({2}, {"x"}), PartitionSpec(e)));
    r = device_put(r, NamedSharding(make_mesh({2}, {"x"}), P()));
  }
  const std::string what = c.name + (sharded ? " (sharded)" : "") + " " + dtype_name(dt);
  const double rtol = dt == float64 ? 1e-12 : 2e-5;
  Array y = run(c, l, r);
  ASSERT_EQ(y.shape(), c.y_shape) << what;
  expect_near_all(c.y, astype(y, float64).to_vector<double>(), what, rtol);
  std::vector<double> wv(c.y.size());
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<double>(i % 7) - 3.0;
  Array w = astype(array<double>(wv, c.y_shape), dt);
  auto [gl, gr] =
      grad([&](const Array& a, const Array& b) { return sum(multiply(run(c, a, b), w)); },
           argnums<0, 1>)(l, r);
  expect_near_all(c.grad_lhs, astype(gl, float64).to_vector<double>(), what + " d/dlhs", rtol);
  expect_near_all(c.grad_rhs, astype(gr, float64).to_vector<double>(), what + " d/drhs", rtol);
}

class ConvVsJax : public ::testing::TestWithParam<Case> {};
TEST_P(ConvVsJax, Float64OneDevice) { check(GetParam(), float64, false); }
TEST_P(ConvVsJax, Float64BatchSharded) { check(GetParam(), float64, true); }
TEST_P(ConvVsJax, Float32OneDevice) { check(GetParam(), float32, false); }
TEST_P(ConvVsJax, Float32BatchSharded) { check(GetParam(), float32, true); }
INSTANTIATE_TEST_SUITE_P(Fixtures, ConvVsJax, ::testing::ValuesIn(load()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(Conv, DimensionNumbersFromLayoutStrings) {
  ConvDimensionNumbers dn =
      conv_dimension_numbers({2, 8, 8, 3}, {3, 3, 3, 4}, {"NHWC", "HWIO", "NHWC"});
  EXPECT_EQ(dn.lhs_spec, (std::vector<int>{0, 3, 1, 2}));
  EXPECT_EQ(dn.rhs_spec, (std::vector<int>{3, 2, 0, 1}));
  EXPECT_EQ(dn.out_spec, (std::vector<int>{0, 3, 1, 2}));
  // Spatial dims follow rhs's order.
  dn = conv_dimension_numbers({2, 8, 8, 3}, {3, 3, 3, 4}, {"NWHC", "HWIO", "NHWC"});
  EXPECT_EQ(dn.lhs_spec, (std::vector<int>{0, 3, 2, 1}));
  dn = conv_dimension_numbers({2, 3, 8}, {4, 3, 2}, {});
  EXPECT_EQ(dn.lhs_spec, (std::vector<int>{0, 1, 2}));
}

TEST(Conv, ErrorsNameTheFix) {
  Array x = zeros({2, 3, 8, 8}), w = zeros({4, 3, 3, 3});
  EXPECT_HAS(
      error_of<TypeError>([&] {
        conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NCHW", "OIHW", "NHW"}});
      }),
      "convolution dimension_numbers[2] must have len equal to the ndim of lhs and rhs");
  EXPECT_HAS(
      error_of<TypeError>([&] {
        conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NCHW", "OIHW", "NCHH"}});
      }),
      "convolution dimension_numbers[2] cannot have duplicate characters, got NCHH");
  EXPECT_HAS(
      error_of<TypeError>([&] {
        conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"XCHW", "OIHW", "NCHW"}});
      }),
      "must contain the characters 'N' and 'C' exactly once");
  EXPECT_HAS(error_of<ValueError>([&] {
               conv(x, zeros({4, 2, 3, 3}), {1, 1}, "SAME");
             }),
             "conv_general_dilated lhs feature dimension size divided by feature_group_count "
             "must equal the rhs input feature dimension size, but 3 // 1 != 2");
  EXPECT_HAS(
      error_of<ValueError>([&] {
        conv_general_dilated(x, zeros({4, 1, 3, 3}), {1, 1}, "SAME", {.feature_group_count = 2});
      }),
      "feature_group_count must divide lhs feature dimension size, but 2 does not divide 3");
  EXPECT_HAS(error_of<ValueError>([&] { conv(x, w, {1}, "SAME"); }),
             "window and window_strides must have the same number of dimensions, but got 2 and 1");
  EXPECT_HAS(error_of<TypeError>([&] {
               conv(x, astype(w, float16), {1, 1}, "SAME");
             }),
             "conv_general_dilated requires arguments to have the same dtypes, got float32, "
             "float16");
  EXPECT_HAS(error_of<ValueError>([&] {
               conv_general_dilated(x, w, {1, 1}, "SAME", {.lhs_dilation = {2, 2}});
             }),
             "String padding is not implemented for transposed convolution");
  EXPECT_HAS(error_of<ValueError>([&] {
               conv(x, w, {1, 1}, Padding{{-9, 0}, {0, 0}});
             }),
             "Negative padding is larger than the size of the corresponding dimension");
  EXPECT_HAS(error_of<TypeError>([&] {
               conv(x, w, {1, 1}, "VALID", int32);
             }),
             "Input type is incompatible with `preferred_element_type`");
  // Spec §12.15: a sharded rhs (or lhs feature dim) needs an out_sharding.
  Mesh m = make_mesh({2}, {"x"});
  Array ws = device_put(zeros({4, 3, 3, 3}), NamedSharding(m, P("x")));
  EXPECT_HAS(error_of<ShardingTypeError>([&] {
               conv(device_put(x, NamedSharding(m, P())), ws, {1, 1}, "SAME");
             }),
             "Please specify the output sharding via `out_sharding` parameter of "
             "`conv_general_dilated`");
  // E9 through the varying-out rule: a sharded spatial dim whose output does not divide.
  Array xs = device_put(zeros({2, 3, 8, 8}), NamedSharding(m, P(nullptr, nullptr, "x")));
  EXPECT_HAS(error_of<ShardingTypeError>([&] {
               conv(xs, device_put(zeros({4, 3, 4, 4}), NamedSharding(m, P())), {1, 1}, "VALID");
             }),
             "conv_general_dilated on sharded dims where out dim (5) is not divisible by mesh "
             "axes (2)");
}

// The output follows lhs through the dimension numbers: NCHW in, NHWC out keeps the
// batch sharding on the batch dim (JAX maps positionally; design 0022).
TEST(Conv, ShardingFollowsTheDimensionNumbers) {
  Mesh m = make_mesh({2}, {"x"});
  Array x = device_put(ones({4, 3, 6, 6}), NamedSharding(m, P("x")));
  Array w = device_put(ones({3, 3, 3, 5}), NamedSharding(m, P()));
  Array y =
      conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = {"NCHW", "HWIO", "NHWC"}});
  EXPECT_EQ(typeof(y).str(), "f32[4@x,6,6,5]");
  // An output-feature-sharded kernel with an out_sharding: each device computes its
  // features.
  Array x2 = device_put(ones({4, 6, 6, 3}), NamedSharding(m, P()));
  Array w2 = device_put(ones({3, 3, 3, 4}), NamedSharding(m, P(nullptr, nullptr, nullptr, "x")));
  auto f = jit([m](const Array& a, const Array& b) {
    return conv_general_dilated(
        a, b, {1, 1}, "SAME",
        {.dimension_numbers = {"NHWC", "HWIO", "NHWC"},
         .out_sharding = NamedSharding(m, P(nullptr, nullptr, nullptr, "x"))});
  });
  std::string text = f.lower(x2, w2).local;
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  Array y2 = f(x2, w2);
  EXPECT_EQ(typeof(y2).str(), "f32[4,6,6,4@x]");
  EXPECT_FLOAT_EQ(y2.to_vector<float>()[0], 12.0f);  // a corner: 2 x 2 taps x 3 features
}

// A spatial dimension sharded over 2 devices: SAME 3x3 convolution takes one row from
// each neighbour (ppermute) instead of gathering the image; values and gradients equal
// the one-device run.
TEST(Conv, ShardedSpatialDimExchangesHalos) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x0 = random::normal(random::key(3), {2, 8, 8, 3}, float64);
  Array w0 = random::normal(random::key(4), {3, 3, 3, 4}, float64);
  Array x = device_put(x0, P(nullptr, "x"));
  Array w = device_put(w0, P());
  for (int stride : {1, 2}) {
    auto fn = [stride](const Array& a, const Array& b) {
      return conv_general_dilated(a, b, {stride, stride}, "SAME",
                                  {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
    };
    auto f = jit(fn);
    std::string text = f.lower(x, w).local;
    EXPECT_NE(text.find("ppermute"), std::string::npos) << text;
    EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
    Array y = f(x, w);
    EXPECT_EQ(typeof(y).str(), stride == 1 ? "f64[2,8@x,8,4]" : "f64[2,4@x,4,4]");
    Array want = fn(device_put(x0, local_devices()[0]), device_put(w0, local_devices()[0]));
    std::vector<double> a = want.to_vector<double>(), b = y.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
    auto loss = [&](const Array& u, const Array& v) { return sum(multiply(fn(u, v), fn(u, v))); };
    auto [ga, gwa] = grad(loss, argnums<0, 1>)(device_put(x0, local_devices()[0]),
                                               device_put(w0, local_devices()[0]));
    auto [gb, gwb] = jit(grad(loss, argnums<0, 1>))(x, w);
    std::vector<double> p = ga.to_vector<double>(), q = gb.to_vector<double>();
    for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], q[i], 1e-10) << i;
    p = gwa.to_vector<double>();
    q = gwb.to_vector<double>();
    for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], q[i], 1e-9) << i;
  }
}

// Data parallelism: the filter gradient of a batch-sharded convolution is each device's
// partial convolution and one all-reduce, not a gather of the batch.
TEST(Conv, DataParallelFilterGradientDoesNotGatherTheBatch) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(random::normal(random::key(1), {4, 6, 6, 3}), P("x"));
  Array w = device_put(random::normal(random::key(2), {3, 3, 3, 4}), P());
  auto loss = [](const Array& v, const Array& a) {
    return sum(square(conv_general_dilated(a, v, {1, 1}, "SAME",
                                           {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}})));
  };
  auto g = jit(grad(loss));
  std::string text = g.lower(w, x).local;
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_NE(text.find("all_reduce"), std::string::npos) << text;
  std::vector<float> got = g(w, x).to_vector<float>();
  std::vector<float> want =
      grad(loss)(device_put(w, local_devices()[0]), device_put(x, local_devices()[0]))
          .to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3) << i;
}

TEST(Conv, Bfloat16AndPreferredFloat32) {
  Array x = random::normal(random::key(5), {2, 6, 6, 4});
  Array w = random::normal(random::key(6), {3, 3, 4, 8});
  ConvOptions o{.dimension_numbers = {"NHWC", "HWIO", "NHWC"}};
  std::vector<float> want = conv_general_dilated(x, w, {1, 1}, "SAME", o).to_vector<float>();
  Array xb = astype(x, bfloat16), wb = astype(w, bfloat16);
  Array yb = conv_general_dilated(xb, wb, {1, 1}, "SAME", o);
  EXPECT_EQ(yb.dtype(), bfloat16);
  o.preferred_element_type = float32;
  Array yf = conv_general_dilated(xb, wb, {1, 1}, "SAME", o);
  EXPECT_EQ(yf.dtype(), float32);
  std::vector<float> b = astype(yb, float32).to_vector<float>(), f = yf.to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(b[i], want[i], 0.1 + 0.02 * std::fabs(want[i])) << i;
    EXPECT_NEAR(f[i], want[i], 0.1 + 0.02 * std::fabs(want[i])) << i;
  }
  // Integers run on the direct loop, exactly.
  Array xi = astype(multiply(x, 4.0), int32), wi = astype(multiply(w, 4.0), int32);
  std::vector<int32_t> yi =
      conv_general_dilated(xi, wi, {1, 1}, "SAME", {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}})
          .to_vector<int32_t>();
  std::vector<float> yr =
      conv_general_dilated(astype(xi, float32), astype(wi, float32), {1, 1}, "SAME",
                           {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}})
          .to_vector<float>();
  for (size_t i = 0; i < yr.size(); ++i) EXPECT_EQ(static_cast<float>(yi[i]), yr[i]) << i;
}

}  // namespace
