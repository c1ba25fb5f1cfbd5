// Issue 9's rule fixes: each case once gave a silently wrong answer, ran into
// a kernel that refused, or was accepted by jit but refused eagerly.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "support/error_of.h"

#include "tsr/tsr.h"

using namespace tsr;

namespace {

// The value `v` held unreduced (kind sum) over `axis` of size k, with partials that
// differ per device: 2v on the first, -v on the second, 0 elsewhere (exact for ints).
Array spread(const Array& v, const std::string& axis, int k) {
  std::vector<double> w(static_cast<size_t>(k), 0.0);
  w[0] = 2;
  w[1] = -1;
  Shape s = v.shape();
  s.push_back(k);
  std::vector<PartitionEntry> ve = typeof(v).sharding.spec().normalized(v.ndim()).entries();
  std::vector<PartitionEntry> e = ve;
  e.push_back(PartitionEntry(axis));
  Array x = reshard(broadcast_to(expand_dims(v, -1), s), PartitionSpec(e));
  Array wv = device_put(array(w).astype(v.dtype()), P(axis.c_str()));
  return dot_general(
      x, wv, {{v.ndim()}, {0}},
      {.out_sharding = PartitionSpec(ve, {axis}), .preferred_element_type = v.dtype()});
}

void expect_values(const Array& got, const Array& want, const std::string& what) {
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], 1e-4 * std::max(1.0, std::fabs(w[i]))) << what << " at " << i;
}

class RuleCorrectness : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope{mesh};
};

// Item 1: a dim both batched and contracted used to leave output elements unwritten.
TEST_F(RuleCorrectness, DotGeneralRefusesOverlappingBatchAndContractingDims) {
  Array a = ones({2, 4, 2}), b = ones({2, 2, 8});
  DotDimensionNumbers d{{2}, {0}, {0}, {0}};
  auto m = error_of<TypeError>([&] { dot_general(a, b, d); });
  EXPECT_HAS(m,
             "dot_general requires rhs batch dimensions to be disjoint from contracting "
             "dimensions, got rhs_batch (0,) and rhs_contracting (0,).");
  auto j = error_of<TypeError>(
      [&] { jit([&](const Array& p, const Array& q) { return dot_general(p, q, d); })(a, b); });
  EXPECT_EQ(m, j);
  DotDimensionNumbers dl{{0}, {1}, {0}, {0}};
  EXPECT_HAS(error_of<TypeError>([&] { dot_general(a, b, dl); }),
             "dot_general requires lhs batch dimensions to be disjoint from contracting "
             "dimensions, got lhs_batch (0,) and lhs_contracting (0,).");
  EXPECT_HAS(error_of<TypeError>([&] {
               dot_general(a, b, {{2}, {1}, {0, 0}, {0, 1}});
             }),
             "dot_general requires lhs batch dimensions to be distinct, got lhs_batch (0, 0).");
  EXPECT_HAS(error_of<TypeError>([&] {
               dot_general(a, b, {{2}, {1}, {0}, {}});
             }),
             "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got "
             "lhs_batch (0,) and rhs_batch ().");
  EXPECT_HAS(error_of<TypeError>([&] {
               dot_general(a, b, {{1}, {1}});
             }),
             "dot_general requires contracting dimensions to have the same shape, got (4,) and "
             "(2,).");
  // Contracting over an empty dim gives zeros, never stale memory.
  Array z = dot_general(zeros({3, 0}), zeros({0, 5}), {{1}, {0}});
  for (float f : z.to_vector<float>()) EXPECT_EQ(f, 0.f);
}

// Item 2: a logical 1.0 held as partials (2, -1, 0, 0) must not convert per device.
TEST_F(RuleCorrectness, ConvertOfUnreducedOnlyFloatToFloat) {
  Array u = spread(full({4}, 1.0), "y", 4);
  EXPECT_EQ(typeof(u).str(), "f32[4]{U:y}");
  for (DType t : {int32, bool_, uint8}) {
    auto m = error_of<ShardingTypeError>([&] { astype(u, t); });
    EXPECT_HAS(m, "an unreduced value cannot be converted");
    EXPECT_HAS(m, "reshard");
    auto j =
        error_of<ShardingTypeError>([&] { jit([&](const Array& v) { return astype(v, t); })(u); });
    EXPECT_EQ(m, j);
  }
  Array h = astype(u, float16);
  EXPECT_EQ(typeof(h).str(), "f16[4]{U:y}");
  expect_values(h, full({4}, 1.0), "f32->f16 of an unreduced value");
  // Reduced first, any conversion is fine; convert_element_type can lay the result out.
  Array r = convert_element_type(u, int32, {.sharding = P()});
  EXPECT_EQ(typeof(r).str(), "i32[4]");
  expect_values(r, full({4}, 1.0), "convert with a replicated sharding reduces first");
  Array s = convert_element_type(full({8}, 3.0), int32, {.sharding = P("x")});
  EXPECT_EQ(typeof(s).str(), "i32[8@x]");
  expect_values(s, full({8}, 3.0), "convert with a sharded result");
  EXPECT_HAS(error_of<ValueError>([&] {
               convert_element_type(full({8}, 3.0), float32,
                                    {.sharding = P(Unreduced{{"y"}, UnreducedKind::Max})});
             }),
             "`sharding` passed to `convert_element_type` can only contain unreduced of kind "
             "`sum`.");
}

// Item 3: a reduction's out_sharding kind is checked in the rule, so a dead value
// under jit is refused exactly as eagerly.
TEST_F(RuleCorrectness, ReductionOutShardingKindCheckedInTheRule) {
  Array x = device_put(iota({8, 4}), P("y", nullptr));
  ReduceOptions bad{.out_sharding = P(nullptr, Unreduced{{"y"}})};
  auto m = error_of<ShardingTypeError>([&] { max(x, 0, bad); });
  EXPECT_HAS(m, "reduce_max requires `out_sharding`'s unreduced_kind to be max but got");
  auto dead = error_of<ShardingTypeError>([&] {
    jit([&](const Array& v) {
      (void)max(v, 0, bad);
      return v;
    })(x);
  });
  EXPECT_EQ(m, dead);
  auto u = error_of<ShardingTypeError>(
      [&] { sum(x, 1, {.out_sharding = P(nullptr, Unreduced{{"y"}})}); });
  EXPECT_HAS(
      u, "out_sharding's unreduced axes should be in operand's specs that were reduce_sum over");
  Array good = max(x, 0, {.out_sharding = P(Unreduced{{"y"}, UnreducedKind::Max})});
  EXPECT_EQ(typeof(good).str(), "f32[4]{U_max:y}");
  expect_values(good, max(iota({8, 4}), 0), "max with a max-kind unreduced result");
  EXPECT_HAS(
      error_of<ShardingTypeError>([&] { prod(x, 0, {.out_sharding = P(Unreduced{{"y"}})}); }),
      "cannot leave its result unreduced");
}

// Item 13: bool follows jnp (abs/floor/ceil: identity, square: int32, clamp: as is)
// and refuses in the rule where lax refuses.
TEST_F(RuleCorrectness, BoolOperandsFollowJnp) {
  Array b = device_put(array<bool>({true, false, true, true, false, false, true, false}), P("x"));
  EXPECT_EQ(abs(b).to_vector<bool>(), b.to_vector<bool>());
  EXPECT_EQ(floor(b).to_vector<bool>(), b.to_vector<bool>());
  EXPECT_EQ(ceil(b).to_vector<bool>(), b.to_vector<bool>());
  Array sq = square(b);
  EXPECT_EQ(sq.dtype(), int32);
  EXPECT_EQ(sq.to_vector<int>(), (std::vector<int>{1, 0, 1, 1, 0, 0, 1, 0}));
  Array c = clamp(false, b, true);
  EXPECT_EQ(c.to_vector<bool>(), b.to_vector<bool>());
  Array c2 = clamp(true, b, true);
  EXPECT_EQ(c2.to_vector<bool>(), std::vector<bool>(8, true));
  EXPECT_EQ((b + b).to_vector<bool>(), b.to_vector<bool>());           // logical or
  EXPECT_EQ((b * !b).to_vector<bool>(), std::vector<bool>(8, false));  // logical and
  for (auto f : std::vector<std::function<Array(const Array&)>>{
           [](const Array& v) { return round(v); }, [](const Array& v) { return sign(v); },
           [](const Array& v) { return neg(v); }}) {
    auto m = error_of<TypeError>([&] { f(b); });
    EXPECT_HAS(m, "does not accept dtype bool. Accepted dtypes are subtypes of");
    EXPECT_EQ(m, error_of<TypeError>([&] { jit(f)(b); }));
  }
  Array u8 = array<uint8_t>({1, 200});
  EXPECT_EQ(abs(u8).to_vector<int>(), (std::vector<int>{1, 200}));
  EXPECT_EQ(floor(array<int>({-3, 4})).to_vector<int>(), (std::vector<int>{-3, 4}));
}

// Item 17: ops linear in an unreduced operand keep it unreduced (no communication),
// and the value after the final reduction is the op applied to the logical value.
struct LinearCase {
  std::string name;
  std::function<Array(const Array&)> f;  // on an unreduced or a plain value alike
  std::string type;                      // typeof of f(unreduced)
};

TEST_F(RuleCorrectness, LinearOpsKeepUnreducedValues) {
  Array v = device_put(iota({4, 8}) - 7.0, P(nullptr, "x"));
  Array u = spread(v, "y", 4);
  ASSERT_EQ(typeof(u).str(), "f32[4,8@x]{U:y}");
  Array rep = device_put(iota({4, 8}) * 0.5 + 1.0, P(nullptr, "x"));
  Array mat = device_put(iota({8, 3}), P());
  Array c = device_put(iota({4, 8}) > 10.0, P(nullptr, "x"));
  std::vector<LinearCase> cases = {
      {"neg", [](const Array& a) { return -a; }, "f32[4,8@x]{U:y}"},
      {"add", [](const Array& a) { return a + a; }, "f32[4,8@x]{U:y}"},
      {"sub", [&](const Array& a) { return a - a * 3.0; }, "f32[4,8@x]{U:y}"},
      {"mul_replicated", [&](const Array& a) { return a * rep; }, "f32[4,8@x]{U:y}"},
      {"div_replicated", [&](const Array& a) { return a / rep; }, "f32[4,8@x]{U:y}"},
      {"sum", [](const Array& a) { return sum(a, 0); }, "f32[8@x]{U:y}"},
      {"reshape",
       [](const Array& a) {
         return reshape(a, {2, 2, 8});
       },
       "f32[2,2,8@x]{U:y}"},
      {"transpose", [](const Array& a) { return transpose(a); }, "f32[8@x,4]{U:y}"},
      {"broadcast",
       [](const Array& a) {
         return broadcast_to(a, {3, 4, 8});
       },
       "f32[3,4,8@x]{U:y}"},
      {"slice",
       [](const Array& a) {
         return slice(a, {1, 0}, {3, 8});
       },
       "f32[2,8@x]{U:y}"},
      {"slice_to_one",
       [](const Array& a) {
         return slice(a, {1, 2}, {2, 3});
       },
       "f32[1,1]{U:y}"},
      {"pad",
       [](const Array& a) {
         return pad(a, 1.5, {{1, 1, 0}, {0, 0, 0}});
       },
       "f32[6,8@x]{U:y}"},
      {"concatenate",
       [](const Array& a) {
         return concatenate({a, a}, 0);
       },
       "f32[8,8@x]{U:y}"},
      {"rev", [](const Array& a) { return rev(a, {0}); }, "f32[4,8@x]{U:y}"},
      {"cumsum", [](const Array& a) { return cumsum(a, 0); }, "f32[4,8@x]{U:y}"},
      {"select",
       [&](const Array& a) {
         return select_n(c, {a, a * 2.0});
       },
       "f32[4,8@x]{U:y}"},
      {"dot_replicated", [&](const Array& a) { return matmul(reshard(a, P()), mat); }, ""},
      {"f16", [](const Array& a) { return astype(a, float16); }, "f16[4,8@x]{U:y}"},
      {"scatter_add", [](const Array& a) { return a.at(1).add(a[2] * 2.0); }, "f32[4,8@x]{U:y}"},
      {"scatter_set", [](const Array& a) { return a.at(0).set(a[3]); }, "f32[4,8@x]{U:y}"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    Array want = k.f(v);
    Array got = k.f(u);
    if (!k.type.empty()) {
      EXPECT_EQ(typeof(got).str(), k.type);
    }
    expect_values(reshard(got, P()), want, k.name + " eager");
    Array traced = jit(k.f)(u);
    EXPECT_EQ(typeof(traced).str(), typeof(got).str());
    expect_values(traced, want, k.name + " jit");
  }
  // dot with a replicated other side keeps the operand's unreduced axes.
  Array uv = spread(device_put(iota({4, 8}), P()), "y", 4);
  Array d = matmul(uv, mat);
  EXPECT_EQ(typeof(d).str(), "f32[4,3]{U:y}");
  expect_values(d, matmul(iota({4, 8}), iota({8, 3})), "dot of an unreduced value");
  // Integer values: the i32[2]{U:y}.
  Array ui = spread(device_put(array<int>({5, -7}), P()), "y", 4);
  Array si = sum(ui, 0);
  EXPECT_EQ(typeof(si).str(), "i32[]{U:y}");
  EXPECT_EQ(si.item<int>(), -2);
}

TEST_F(RuleCorrectness, MaxKindValuesAndRefusals) {
  Array v = device_put(iota({8, 4}), P("y", nullptr));
  Array m = max(v, 0, {.out_sharding = P(Unreduced{{"y"}, UnreducedKind::Max})});
  Array n = -m;  // -max(a) = min(-a)
  EXPECT_EQ(typeof(n).str(), "f32[4]{U_min:y}");
  expect_values(n, -max(iota({8, 4}), 0), "neg of a max-kind value");
  expect_values(maximum(m, m), max(iota({8, 4}), 0), "max of two max-kind values");
  Array u = spread(device_put(iota({4}), P()), "y", 4);
  Array ui = spread(device_put(array<int>({1, 2}), P()), "y", 4);  // an unreduced index
  for (auto f : std::vector<std::function<Array(const Array&)>>{
           [](const Array& a) { return sin(a); }, [](const Array& a) { return a * a; },
           [&](const Array& a) { return a + 1.0; }, [](const Array& a) { return cumprod(a, 0); },
           [](const Array& a) { return max(a); }, [](const Array& a) { return sort(a); },
           [&](const Array&) { return dynamic_slice(iota({8}), {ui[0]}, {2}); }}) {
    std::string eager;
    try {
      f(u);
      ADD_FAILURE() << "accepted a non-linear op on an unreduced value";
    } catch (const Error& e) {
      eager = e.what();
    }
    EXPECT_HAS(eager, "reshard");
    std::string traced;
    try {
      jit(f)(u);
    } catch (const Error& e) {
      traced = e.what();
    }
    EXPECT_EQ(eager, traced);
  }
}

// Fuzzer finding (seed 7 case 2917): an out_sharding that asks reshape (or any op
// that reshards to it) for a new max-kind unreduced axis was refused eagerly by
// the reshard but accepted under jit until the value was used. Such moves now
// work (beyond JAX: each device of the axis holds the value); a kind change is
// refused in the rule, eagerly and under jit alike.
TEST_F(RuleCorrectness, OutShardingUnreducedMovesCheckedInTheRule) {
  Array x = device_put(iota({4}), P());
  PartitionSpec to = P(nullptr, nullptr, Unreduced{{"x"}, UnreducedKind::Max});
  Array r = reshape(x, {2, 2}, to);
  EXPECT_EQ(typeof(r).str(), "f32[2,2]{U_max:x}");
  expect_values(reshard(r, P()), reshape(iota({4}), {2, 2}), "reshape to max-unreduced");
  Array rj = jit([&](const Array& v) { return reshard(reshape(v, {2, 2}, to), P()); })(x);
  expect_values(rj, reshape(iota({4}), {2, 2}), "reshape to max-unreduced under jit");
  Array u = spread(iota({4}), "x", 2);
  auto m = error_of<ValueError>([&] { reshape(u, {2, 2}, to); });
  EXPECT_HAS(m, "[reshape] the unreduced kinds differ.");
  auto dead = error_of<ValueError>([&] {
    jit([&](const Array& v) {
      (void)reshape(v, {2, 2}, to);
      return v;
    })(u);
  });
  EXPECT_EQ(m, dead);
  auto b = error_of<ValueError>([&] { broadcast_to(u, {2, 4}, to); });
  EXPECT_HAS(b, "[broadcast_in_dim] the unreduced kinds differ.");
}

// Fuzzer finding (seed 7 case 9632): float operands with an integer
// preferred_element_type rounded each device's partial product before the sum.
TEST_F(RuleCorrectness, DotGeneralPreferredTypeFollowsLax) {
  Array a = device_put(full({2, 4}, 0.75), P(nullptr, "x"));
  Array b = device_put(ones({4, 1}), P("x", nullptr));
  auto m = error_of<TypeError>([&] {
    dot_general(a, b, {{1}, {0}}, {.out_sharding = P(), .preferred_element_type = int32});
  });
  EXPECT_HAS(m, "Input type is incompatible with `preferred_element_type`.");
  EXPECT_HAS(error_of<TypeError>([&] {
               dot_general(a.astype(int32), b.astype(int32), {{1}, {0}},
                           {.preferred_element_type = uint32});
             }),
             "`preferred_element_type` must have the same signedness as the original type.");
  EXPECT_HAS(error_of<TypeError>([&] {
               dot_general(a.astype(float64), b.astype(float64), {{1}, {0}},
                           {.preferred_element_type = float32});
             }),
             "`preferred_element_type` must not be narrower than the original type.");
  Array ok = dot_general(a.astype(int32), b.astype(int32), {{1}, {0}},
                         {.out_sharding = P(), .preferred_element_type = float32});
  expect_values(ok, zeros({2, 1}), "int inputs with a float preferred type");
}

}  // namespace
