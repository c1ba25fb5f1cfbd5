// The IR and jit: printed programs, passes, retracing, donation, nested jit,
// closure capture, and the errors for traced values.
#include <gtest/gtest.h>

#include <cmath>

#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/prims/elementwise.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

#define EXPECT_HAS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

class ProgramTest : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2, 4}, {"X", "Y"});
  MeshScope scope{mesh};
};

TEST_F(ProgramTest, PrintsTypedProgram) {
  Array x = device_put(zeros({8, 4}), P("X", "Y"));
  Array b = device_put(zeros({4}), P("Y"));
  std::string text = make_jaxpr([](const Array& x, const Array& b) { return sin(x) + b; }, x, b);
  EXPECT_EQ(text,
            "{ lambda ; a:f32[8@X,4@Y] b:f32[4@Y]. let\n"
            "    c:f32[8@X,4@Y] = sin a\n"
            "    d:f32[1,4@Y] = broadcast_in_dim[shape=(1, 4) broadcast_dimensions=(1,) "
            "out_sharding=None] b\n"
            "    e:f32[8@X,4@Y] = add c d\n"
            "  in (e,) }");
}

TEST_F(ProgramTest, PrintsReductionAndDot) {
  Array x = device_put(zeros({8, 4}), P("X", nullptr));
  Array w = device_put(zeros({4, 2}), P());
  std::string text =
      make_jaxpr([](const Array& x, const Array& w) { return sum(matmul(x, w), 0); }, x, w);
  EXPECT_HAS(text,
             "c:f32[8@X,2] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) "
             "out_sharding=None preferred_element_type=float32] a b");
  EXPECT_HAS(text, "d:f32[2] = reduce_sum[axes=(0,)] c");
}

TEST_F(ProgramTest, ClosureCaptureBecomesConstInput) {
  Array c = device_put(ones({8, 4}), P("X"));
  Array x = device_put(zeros({8, 4}), P("X"));
  auto f = jit([&](const Array& x) { return x * c; });
  std::string text = f.lower(x).as_text();
  EXPECT_HAS(text, "{ lambda a:f32[8@X,4] ; b:f32[8@X,4]. let");
  EXPECT_EQ(f(x + 2.0).to_vector<float>()[5], 2.0f);
}

TEST_F(ProgramTest, CseMergesAndDceDrops) {
  ArrayType ty = typeof(device_put(zeros({8}), P("X")));
  detail::Trace t;
  Array a = t.new_input(ty);
  Array s1 = sin(a), s2 = sin(a), unused = cos(a);
  Array r = s1 + s2;
  detail::Program p = t.finish({r});
  EXPECT_EQ(p.eqns.size(), 4u);
  detail::Program q = detail::dce(detail::cse(p));
  EXPECT_EQ(q.eqns.size(), 2u) << q.str();
  EXPECT_EQ(
      q.str(),
      "{ lambda ; a:f32[8@X]. let\n    b:f32[8@X] = sin a\n    c:f32[8@X] = add b b\n  in (c,) }");
  (void)unused;
  detail::typecheck(q);
}

TEST_F(ProgramTest, TypecheckReportsFirstMismatch) {
  ArrayType ty = typeof(device_put(zeros({8}), P("X")));
  detail::Trace t;
  Array a = t.new_input(ty);
  Array s = sin(a);
  detail::Program p = t.finish({s});
  p.eqns[0].outs[0]->type.shape = {4};
  try {
    detail::typecheck(p);
    FAIL() << "no error";
  } catch (const TypeError& e) {
    EXPECT_HAS(
        std::string(e.what()),
        "equation 0 (sin) output 0 has the wrong type. Got recorded f32[4@X]; expected f32[8@X]");
  }
}

TEST_F(ProgramTest, RetracesOnlyForNewTypes) {
  auto f = jit([](const Array& x) { return exp(x) * 2.0; });
  Array a = device_put(zeros({8, 4}), P("X"));
  Array b = device_put(ones({8, 4}), P("X"));
  f(a);
  f(b);
  EXPECT_EQ(f.trace_count(), 1);
  f(device_put(zeros({8, 4}), P("X", "Y")));
  EXPECT_EQ(f.trace_count(), 2);
  f(zeros({8, 2}));
  EXPECT_EQ(f.trace_count(), 3);
  f(b);
  EXPECT_EQ(f.trace_count(), 3);
}

TEST_F(ProgramTest, StaticArgumentsAreCacheKeys) {
  auto f = jit([](const Array& x, int k) { return x * static_cast<double>(k); });
  Array a = device_put(ones({8}), P("X"));
  EXPECT_EQ(f(a, 2).to_vector<float>()[0], 2.f);
  EXPECT_EQ(f(a, 3).to_vector<float>()[0], 3.f);
  EXPECT_EQ(f(a, 3).to_vector<float>()[0], 3.f);
  EXPECT_EQ(f.trace_count(), 2);
}

TEST_F(ProgramTest, TupleAndVectorResults) {
  auto f = jit(
      [](const std::vector<Array>& xs) { return std::make_tuple(xs[0] + xs[1], xs[0] - xs[1]); });
  Array a = device_put(full({8}, 3), P("X")), b = device_put(ones({8}), P("X"));
  auto [s, d] = f(std::vector<Array>{a, b});
  EXPECT_EQ(s.to_vector<float>()[7], 4.f);
  EXPECT_EQ(d.to_vector<float>()[7], 2.f);
}

TEST_F(ProgramTest, InAndOutShardings) {
  auto f = jit([](const Array& x) { return x * 2.0; },
               {.in_shardings = {P("X", "Y")}, .out_shardings = {P()}});
  Array a = arange(32.f).reshape({8, 4});
  Array r = f(a);
  EXPECT_EQ(typeof(r).str(), "f32[8,4]");
  EXPECT_TRUE(r.sharding().is_fully_replicated());
  EXPECT_EQ(r.to_vector<float>()[31], 62.f);
  EXPECT_HAS(f.lower(a).as_text(), "a:f32[8@X,4@Y]");
}

TEST_F(ProgramTest, DonationDeletesTheArgument) {
  auto f = jit([](const Array& x) { return x + 1.0; }, {.donate_argnums = {0}});
  Array a = device_put(zeros({8}), P("X"));
  Array r = f(a);
  EXPECT_EQ(r.to_vector<float>()[0], 1.f);
  try {
    a.to_vector<float>();
    FAIL() << "donated array still readable";
  } catch (const ValueError& e) {
    EXPECT_HAS(std::string(e.what()), "donated");
  }
}

TEST_F(ProgramTest, NestedJitIsOneEquation) {
  auto inner = jit([](const Array& x) { return sin(x) * 2.0; }, {.name = "inner"});
  auto outer = jit([&](const Array& x) { return inner(x) + inner(x * 3.0); });
  Array a = device_put(arange(8.f), P("X"));
  std::string text = outer.lower(a).as_text();
  EXPECT_HAS(text, "= jit[name=inner program={ lambda ; a:f32[8@X]. let");
  auto v = outer(a).to_vector<float>();
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(v[i], 2 * std::sin(i) + 2 * std::sin(3.f * i), 1e-5);
}

TEST_F(ProgramTest, LocalProgramShowsCollectives) {
  Array a = device_put(zeros({8, 4}), P("X", "Y"));
  auto f = jit([](const Array& x) { return sum(x, 0); });
  std::string local = f.lower(a).local;
  EXPECT_HAS(local, "reduce_sum[axes=(0,)]");
  EXPECT_HAS(local, "all_reduce sum");
}

TEST_F(ProgramTest, TracedValuesCannotBeRead) {
  auto f = jit([](const Array& x) {
    x.to_vector<float>();
    return x;
  });
  try {
    f(zeros({4}));
    FAIL() << "no error";
  } catch (const ConcretizationTypeError& e) {
    EXPECT_HAS(std::string(e.what()), "traced value");
    EXPECT_HAS(std::string(e.what()), "while_loop");
  }
}

TEST_F(ProgramTest, EscapedTracerIsAnError) {
  Array leaked;
  auto f = jit([&](const Array& x) {
    leaked = x * 2.0;
    return x;
  });
  f(zeros({4}));
  try {
    sin(leaked);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_HAS(std::string(e.what()), "escaped");
  }
}

TEST_F(ProgramTest, EagerMatchesJit) {
  Array a = device_put(arange(32.f).reshape({8, 4}), P("X", "Y"));
  auto f = [](const Array& x) { return softmax(x) * mean(x, 1, {.keepdims = true}); };
  EXPECT_EQ(f(a).to_vector<float>(), jit(f)(a).to_vector<float>());
}

}  // namespace
