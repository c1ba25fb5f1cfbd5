// visualize() for ranks 0-4: the exact diagram for the common cases, structure for the rest.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tsr/tsr.h>

using namespace tsr;
using ::testing::HasSubstr;

TEST(Visualize, Rank2Grid) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  std::string v = visualize(zeros({8, 4}, float32, NamedSharding(m, P("X", "Y"))));
  EXPECT_EQ(v,
            "f32[8@X,4@Y] on Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit))\n"
            "┌─────────┬─────────┐\n"
            "│  CPU 0  │  CPU 1  │\n"
            "├─────────┼─────────┤\n"
            "│  CPU 2  │  CPU 3  │\n"
            "├─────────┼─────────┤\n"
            "│  CPU 4  │  CPU 5  │\n"
            "├─────────┼─────────┤\n"
            "│  CPU 6  │  CPU 7  │\n"
            "└─────────┴─────────┘\n"
            "shard shape (2, 2), 16 B per device, 8 devices\n");
}

TEST(Visualize, Rank1WithReplicas) {
  Mesh m = make_mesh({4, 2}, {"X", "Y"});
  std::string v = visualize(zeros({8}, float32, NamedSharding(m, P("Y"))));
  EXPECT_EQ(v,
            "f32[8@Y] on Mesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit))\n"
            "┌───────────────┬───────────────┐\n"
            "│  CPU 0,2,4,6  │  CPU 1,3,5,7  │\n"
            "└───────────────┴───────────────┘\n"
            "shard shape (4,), 16 B per device, 8 devices\n");
}

TEST(Visualize, Rank0AndReplicated) {
  Mesh m = make_mesh({8}, {"d"});
  std::string v = visualize(zeros({}, float32, NamedSharding(m, P())));
  EXPECT_THAT(v, HasSubstr("f32[] on Mesh('d': 8"));
  EXPECT_THAT(v, HasSubstr("│  CPU 0-7  │"));
  EXPECT_THAT(v, HasSubstr("shard shape (), 4 B per device, 8 devices"));
  std::string one = visualize(array({1.f, 2.f}));
  EXPECT_THAT(one, HasSubstr("f32[2] on device CPU 0"));
  EXPECT_THAT(one, HasSubstr("│  CPU 0  │"));
}

TEST(Visualize, Rank3And4ShowShardedDims) {
  Mesh m = make_mesh({2, 2, 2}, {"p", "q", "r"});
  std::string v3 = visualize(zeros({4, 6, 8}, float32, NamedSharding(m, P("p", nullptr, "q"))));
  EXPECT_THAT(v3, HasSubstr("f32[4@p,6,8@q]"));
  EXPECT_THAT(v3, HasSubstr("rows: dim 0 (4 in 2 blocks)"));
  EXPECT_THAT(v3, HasSubstr("cols: dim 2 (8 in 2 blocks)"));
  EXPECT_THAT(v3, HasSubstr("│  CPU 0,1  │  CPU 2,3  │"));
  EXPECT_THAT(v3, HasSubstr("shard shape (2, 6, 4), 192 B per device"));

  std::string v4 =
      visualize(zeros({2, 4, 6, 8}, bfloat16, NamedSharding(m, P("p", "q", nullptr, "r"))));
  EXPECT_THAT(v4, HasSubstr("bf16[2@p,4@q,6,8@r]"));
  EXPECT_THAT(v4, HasSubstr("dim 0 (2 in 2 blocks): block 0"));
  EXPECT_THAT(v4, HasSubstr("dim 0 (2 in 2 blocks): block 1"));
  EXPECT_THAT(v4, HasSubstr("│  CPU 6  │  CPU 7  │"));
  EXPECT_THAT(v4, HasSubstr("shard shape (1, 2, 6, 4), 96 B per device"));

  std::string unsharded = visualize(zeros({2, 2, 2}, float32, NamedSharding(m, P())));
  EXPECT_THAT(unsharded, HasSubstr("no dimension is sharded"));
  EXPECT_THAT(unsharded, HasSubstr("CPU 0-7"));
}

TEST(Visualize, UnreducedIsMarked) {
  Mesh m = make_mesh({8}, {"d"});
  std::string v = visualize(zeros({4}, float32, NamedSharding(m, P(nullptr, Unreduced{{"d"}}))));
  EXPECT_THAT(v, HasSubstr("f32[4]{U:d}"));
  EXPECT_THAT(v, HasSubstr("partial value"));
}
