// einsum as one unit (item 16): several operands with out_sharding, the greedy
// path, `...`, repeated labels; sharded over several meshes vs the oracle.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "unit/oracle_harness.h"

#include "tsr/tsr.h"

using namespace tsr;
using oracle::ramp;

namespace {

oracle::Fn es(const std::string& s, const EinsumOptions& o = {}) {
  return [s, o](const std::vector<Array>& a) { return einsum(s, a, o); };
}

// The case: the pairwise steps would refuse, the unit must not.
TEST(Einsum, ThreeOperandsWithOutShardingNeverRefuseIntermediates) {
  std::vector<oracle::Input> in = {ramp({8, 8}, 0), ramp({8, 8}, 1), ramp({8, 8}, 2)};
  auto expect_replicated = [](const Array& r) { EXPECT_EQ(typeof(r).str(), "f32[8]"); };
  oracle::check("ab,bc,ac->c", in, {P("x", "y"), P("y", nullptr), P("x", nullptr)},
                es("ab,bc,ac->c", {.out_sharding = P()}), {}, expect_replicated);
  for (auto path : {EinsumPath::Greedy, EinsumPath::LeftToRight}) {
    oracle::check("ab,bc,ac->c sharded out", in, {P("x", "y"), P("y", nullptr), P("x", nullptr)},
                  es("ab,bc,ac->c", {.out_sharding = P("x"), .optimize = path}), {},
                  [](const Array& r) { EXPECT_EQ(typeof(r).str(), "f32[8@x]"); });
    oracle::check("ab,bc,ac->c no out_sharding", in,
                  {P("x", "y"), P("y", nullptr), P("x", nullptr)},
                  es("ab,bc,ac->c", {.optimize = path}));
  }
}

TEST(Einsum, FourOperandChainsOnManyLayouts) {
  std::vector<oracle::Input> in = {ramp({8, 4}, 0), ramp({4, 8}, 1), ramp({8, 4}, 2),
                                   ramp({4, 8}, 3)};
  std::vector<std::vector<PartitionSpec>> layouts = {
      {P(), P(), P(), P()},
      {P("x"), P("x"), P(nullptr, "x"), P("x")},
      {P("x", "y"), P("y", "x"), P("x", "y"), P("y", "x")},
      {P(nullptr, "y"), P("y"), P("x", "y"), P(nullptr, "x")}};
  for (const auto& l : layouts) {
    oracle::check("ab,bc,cd,de->ae", in, l, es("ab,bc,cd,de->ae"));
    oracle::check("ab,bc,cd,de->ea out", in, l, es("ab,bc,cd,de->ea", {.out_sharding = P("x")}));
    oracle::check("ab,bc,cd,de->ae ltr", in, l,
                  es("ab,bc,cd,de->ae", {.optimize = EinsumPath::LeftToRight}));
  }
}

TEST(Einsum, GreedyPathContractsTheCheapPairFirst) {
  // (b c)(c d) first gives a 2x2 intermediate; left to right a 64x64 one.
  Array a = ones({64, 2}), b = ones({2, 64}), c = ones({64, 2});
  auto text = [&](EinsumPath p) {
    return jit([p](const Array& x, const Array& y, const Array& z) {
             return einsum("ab,bc,cd->ad", {x, y, z}, {.optimize = p});
           })
        .lower(a, b, c)
        .as_text();
  };
  EXPECT_EQ(text(EinsumPath::Greedy).find("f32[64,64]"), std::string::npos)
      << text(EinsumPath::Greedy);
  EXPECT_NE(text(EinsumPath::LeftToRight).find("f32[64,64]"), std::string::npos);
  EXPECT_EQ(einsum("ab,bc,cd->ad", {a, b, c}).to_vector<float>(),
            std::vector<float>(64 * 2, 128.0f));
}

TEST(Einsum, EllipsisBroadcastsAndIsSummedWhenTheOutputOmitsIt) {
  std::vector<oracle::Input> in = {ramp({4, 8, 4}, 0), ramp({4, 2}, 1)};
  auto ref = [](const std::vector<Array>& a) { return matmul(a[0], a[1]); };
  oracle::check("...ij,jk->...ik", in, {P("x"), P()}, es("...ij,jk->...ik"), ref);
  oracle::check("...ij,jk implicit", in, {P("x", "y"), P()}, es("...ij,jk"), ref);
  oracle::check("...ij,jk->ik", in, {P("x"), P()}, es("...ij,jk->ik"),
                [](const std::vector<Array>& a) { return sum(matmul(a[0], a[1]), 0); });
  oracle::check("i...->...i", {ramp({8, 2, 4})}, {P("x")}, es("i...->...i"),
                [](const std::vector<Array>& a) {
                  return transpose(a[0], {1, 2, 0});
                });
  // Ellipses of different ranks broadcast (NumPy aligns them on the right), size 1 too.
  std::vector<oracle::Input> b = {ramp({2, 4, 8}, 0), ramp({1, 8}, 1)};
  oracle::check("...j,...j->...", b, {P("x"), P()}, es("...j,...j->..."),
                [](const std::vector<Array>& a) { return sum(a[0] * a[1], -1); });
}

TEST(Einsum, RepeatedLabelsTakeDiagonals) {
  oracle::Input sq = ramp({8, 8});
  for (auto p : {P(), P("x"), P(nullptr, "x"), P("x", "y")}) {
    oracle::check("ii->i", {sq}, {p}, es("ii->i"),
                  [](const std::vector<Array>& a) { return diagonal(a[0]); });
    oracle::check("ii->", {sq}, {p}, es("ii->"),
                  [](const std::vector<Array>& a) { return trace(a[0]); });
    oracle::check("ii implicit", {sq}, {p}, es("ii"),
                  [](const std::vector<Array>& a) { return trace(a[0]); });
    oracle::check("ij,jj->i", {sq, ramp({8, 8}, 1)}, {p, p}, es("ij,jj->i", {.out_sharding = P()}),
                  [](const std::vector<Array>& a) { return matmul(a[0], diagonal(a[1])); });
  }
  oracle::check("iij->j", {ramp({4, 4, 8})}, {P(nullptr, "x", "y")}, es("iij->j"),
                [](const std::vector<Array>& a) { return trace(a[0], 0, 0, 1); });
  oracle::check(
      "iii->i", {ramp({4, 4, 4})}, {P("x")}, es("iii->i"),
      [](const std::vector<Array>& a) { return diagonal(diagonal(a[0], 0, 0, 1), 0, 0, 1); });
}

TEST(Einsum, OneOperandTakesOutSharding) {
  oracle::check(
      "ij->ji", {ramp({8, 8})}, {P("x")}, es("ij->ji", {.out_sharding = P("x")}),
      [](const std::vector<Array>& a) { return transpose(a[0]); },
      [](const Array& r) { EXPECT_EQ(typeof(r).str(), "f32[8@x,8]"); });
  oracle::check("ij->j", {ramp({8, 4})}, {P("x")}, es("ij->j", {.out_sharding = P()}),
                [](const std::vector<Array>& a) { return sum(a[0], 0); });
}

class EinsumErrors : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope{mesh};
};

TEST_F(EinsumErrors, TwoOperandsKeepDotGeneralsRule) {
  // One contraction is dot_general itself: its ambiguity error stays (as JAX).
  Array a = device_put(ones({8, 8}), P(nullptr, "x")), b = device_put(ones({8, 8}), P("x"));
  auto m = error_of<ShardingTypeError>([&] { einsum("ij,jk->ik", {a, b}); });
  EXPECT_HAS(m, "Contracting dimensions are sharded and it is ambiguous");
  EXPECT_EQ(typeof(einsum("ij,jk->ik", {a, b}, {.out_sharding = P("x")})).str(), "f32[8@x,8]");
}

TEST_F(EinsumErrors, BadSubscriptsUseOptEinsumsWords) {
  Array a = ones({2, 3}), b = ones({3, 4}), s = ones({3, 3});
  EXPECT_HAS(error_of<ValueError>([&] { einsum("ij->ik", {a}); }),
             "Output character 'k' did not appear in the input");
  EXPECT_HAS(error_of<ValueError>([&] { einsum("ij->ii", {s}); }),
             "Output character 'i' appeared more than once in the output.");
  EXPECT_HAS(error_of<ValueError>([&] { einsum("ij,jk", {a}); }),
             "Number of einsum subscripts must be equal to the number of operands.");
  EXPECT_HAS(error_of<ValueError>([&] { einsum("i1->i", {a}); }),
             "Character '1' is not a valid symbol.");
  EXPECT_HAS(error_of<ValueError>([&] { einsum("ijk->i", {a}); }),
             "does not contain the correct number of indices for operand 0.");
  EXPECT_HAS(error_of<ValueError>([&] {
               einsum("ij,ij->i", {a, b});
             }),
             "Size of label 'i' for operand 1 (3) does not match previous terms (2).");
  EXPECT_HAS(error_of<ValueError>([&] { einsum("ii->i", {a}); }),
             "Size of label 'i' for operand 0");
  EXPECT_HAS(error_of<ValueError>([&] { einsum("...i...->i", {a}); }), "Invalid Ellipses.");
}

}  // namespace
