// Collectives against values worked out by hand, on both in-process groups.
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "comm/comm_test_util.h"

namespace tsr::test {
namespace {

class Values : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs fn(group, rank) on n ranks and expects no rank to raise.
  void run(int n, const std::function<void(GroupImpl&, int)>& fn) {
    auto group = make_group(GetParam(), n);
    auto res = run_ranks(n, [&](int r) { fn(*group, r); });
    for (int r = 0; r < n; ++r) ASSERT_FALSE(res[r].threw) << "rank " << r << ": " << res[r].what;
  }
};

TEST_P(Values, AllReduceSumInt32) {
  const int n = 4, count = 10;
  std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(count)), out = in;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < count; ++i) in[r][i] = r * 1000 + i;
  run(n, [&](GroupImpl& g, int r) {
    g.all_reduce(r, in[r].data(), out[r].data(), count, DType::Int32, ReduceOp::Sum);
  });
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < count; ++i) EXPECT_EQ(out[r][i], n * i + 1000 * (0 + 1 + 2 + 3));
}

TEST_P(Values, HalfTypesRoundAfterEveryStep) {
  // f16 has 11 significant bits: 2048 + 1 rounds (to even) back to 2048 at each
  // step, while summing in float and rounding once would give 2050.
  std::vector<float16_t> h = {float16_t(2048.f), float16_t(1.f), float16_t(1.f)};
  std::vector<float16_t> hout(3);
  run(3, [&](GroupImpl& g, int r) {
    g.all_reduce(r, &h[r], &hout[r], 1, DType::Float16, ReduceOp::Sum);
  });
  for (auto v : hout) EXPECT_EQ(static_cast<float>(v), 2048.f);
  // bf16 has 8 significant bits: the same happens at 256.
  std::vector<bfloat16_t> b = {bfloat16_t(256.f), bfloat16_t(1.f), bfloat16_t(1.f)};
  std::vector<bfloat16_t> bout(3);
  run(3, [&](GroupImpl& g, int r) {
    g.all_reduce(r, &b[r], &bout[r], 1, DType::BFloat16, ReduceOp::Sum);
  });
  for (auto v : bout) EXPECT_EQ(static_cast<float>(v), 256.f);
}

TEST_P(Values, IntegersWrapAround) {
  std::vector<int8_t> in = {100, 100}, out(2);
  run(2, [&](GroupImpl& g, int r) {
    g.all_reduce(r, &in[r], &out[r], 1, DType::Int8, ReduceOp::Sum);
  });
  EXPECT_EQ(out[0], int8_t(-56));
  EXPECT_EQ(out[1], int8_t(-56));
  std::vector<int32_t> big = {1 << 20, 1 << 20}, prod(2);
  run(2, [&](GroupImpl& g, int r) {
    g.all_reduce(r, &big[r], &prod[r], 1, DType::Int32, ReduceOp::Prod);
  });
  EXPECT_EQ(prod[0], 0);  // 2^40 mod 2^32
  std::vector<uint32_t> u = {5, 7}, umin(2);
  run(2, [&](GroupImpl& g, int r) {
    g.all_reduce(r, &u[r], &umin[r], 1, DType::UInt32, ReduceOp::Min);
  });
  EXPECT_EQ(umin[1], 5u);
}

TEST_P(Values, BoolSumIsOrAndProdIsAnd) {
  // Elements: (F,F,F), (T,F,F), (T,T,T) over three ranks.
  bool in[3][3] = {{false, true, true}, {false, false, true}, {false, false, true}};
  for (auto [op, want] : {std::pair{ReduceOp::Sum, std::vector<bool>{false, true, true}},
                          std::pair{ReduceOp::Max, std::vector<bool>{false, true, true}},
                          std::pair{ReduceOp::Prod, std::vector<bool>{false, false, true}},
                          std::pair{ReduceOp::Min, std::vector<bool>{false, false, true}}}) {
    bool out[3][3] = {};
    run(3, [&](GroupImpl& g, int r) { g.all_reduce(r, in[r], out[r], 3, DType::Bool, op); });
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < 3; ++i) EXPECT_EQ(out[r][i], want[i]) << detail::reduce_op_name(op);
  }
}

TEST_P(Values, FloatMaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float in[3][2] = {{1.f, 1.f}, {nan, -3.f}, {2.f, 5.f}};
  float mx[3][2], mn[3][2];
  run(3, [&](GroupImpl& g, int r) {
    g.all_reduce(r, in[r], mx[r], 2, DType::Float32, ReduceOp::Max);
    g.all_reduce(r, in[r], mn[r], 2, DType::Float32, ReduceOp::Min);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(std::isnan(mx[r][0]));
    EXPECT_TRUE(std::isnan(mn[r][0]));
    EXPECT_EQ(mx[r][1], 5.f);
    EXPECT_EQ(mn[r][1], -3.f);
  }
}

TEST_P(Values, AllGatherConcatenatesInRankOrder) {
  const int n = 3, count = 2;
  std::vector<std::vector<double>> in = {{0.5, 1.5}, {2.5, 3.5}, {4.5, 5.5}};
  std::vector<std::vector<double>> out(n, std::vector<double>(n * count));
  run(n, [&](GroupImpl& g, int r) {
    g.all_gather(r, in[r].data(), out[r].data(), count, DType::Float64);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(out[r], (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}));
}

TEST_P(Values, ReduceScatterGivesEachRankItsBlock) {
  const int n = 2, count = 2;
  std::vector<std::vector<int64_t>> in = {{1, 2, 3, 4}, {10, 20, 30, 40}};
  std::vector<std::vector<int64_t>> out(n, std::vector<int64_t>(count));
  run(n, [&](GroupImpl& g, int r) {
    g.reduce_scatter(r, in[r].data(), out[r].data(), count, DType::Int64, ReduceOp::Sum);
  });
  EXPECT_EQ(out[0], (std::vector<int64_t>{11, 22}));
  EXPECT_EQ(out[1], (std::vector<int64_t>{33, 44}));
}

TEST_P(Values, AllToAllTransposesBlocks) {
  const int n = 3, count = 2;
  // in[s] block b, element i = s*100 + b*10 + i.
  std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(n * count)), out = in;
  for (int s = 0; s < n; ++s)
    for (int b = 0; b < n; ++b)
      for (int i = 0; i < count; ++i) in[s][b * count + i] = s * 100 + b * 10 + i;
  run(n, [&](GroupImpl& g, int r) {
    g.all_to_all(r, in[r].data(), out[r].data(), count, DType::Int32);
  });
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < n; ++s)
      for (int i = 0; i < count; ++i) EXPECT_EQ(out[r][s * count + i], s * 100 + r * 10 + i);
}

TEST_P(Values, AllToAllvMovesUnevenPieces) {
  // Rank 0 sends "ab" to 0, nothing to 1, "cde" to 2; rank 1 sends "f" to 0 only;
  // rank 2 sends "gh" to 1 only.
  std::vector<std::string> send = {"abcde", "f", "gh"};
  std::vector<std::vector<int64_t>> sc = {{2, 0, 3}, {1, 0, 0}, {0, 2, 0}};
  std::vector<std::vector<int64_t>> sd = {{0, 2, 2}, {0, 1, 1}, {0, 0, 2}};
  std::vector<std::vector<int64_t>> rc = {{2, 1, 0}, {0, 0, 2}, {3, 0, 0}};
  std::vector<std::vector<int64_t>> rd = {{0, 2, 3}, {0, 0, 0}, {0, 3, 3}};
  std::vector<std::string> recv = {"....", "..", "..."};
  run(3, [&](GroupImpl& g, int r) {
    g.all_to_allv(r, send[r].data(), sc[r], sd[r], recv[r].data(), rc[r], rd[r]);
  });
  EXPECT_EQ(recv[0], "abf.");
  EXPECT_EQ(recv[1], "gh");
  EXPECT_EQ(recv[2], "cde");
}

TEST_P(Values, PermuteZeroesRanksThatReceiveNothing) {
  const int n = 4;
  std::vector<std::vector<float>> in(n), out(n, std::vector<float>(3, -1.f));
  for (int r = 0; r < n; ++r) in[r] = {float(r), float(r) + 0.5f, float(r) + 0.25f};
  const std::vector<std::pair<int, int>> pairs = {{0, 2}, {2, 1}, {1, 3}};  // rank 0 gets none
  run(n, [&](GroupImpl& g, int r) {
    g.permute(r, in[r].data(), out[r].data(), 3, DType::Float32, pairs);
  });
  EXPECT_EQ(out[0], (std::vector<float>{0.f, 0.f, 0.f}));
  EXPECT_EQ(out[1], in[2]);
  EXPECT_EQ(out[2], in[0]);
  EXPECT_EQ(out[3], in[1]);
}

TEST_P(Values, BroadcastFromEveryRoot) {
  const int n = 3;
  for (int root = 0; root < n; ++root) {
    std::vector<std::vector<uint8_t>> in = {{1, 2}, {3, 4}, {5, 6}}, out(n, {0, 0});
    run(n, [&](GroupImpl& g, int r) {
      g.broadcast(r, in[r].data(), out[r].data(), 2, DType::UInt8, root);
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], in[root]) << "root " << root;
  }
}

TEST_P(Values, BarrierWaitsForEveryRank) {
  const int n = 8, rounds = 50;
  std::vector<std::atomic<int>> reached(n);
  std::atomic<int> early{0};
  run(n, [&](GroupImpl& g, int r) {
    for (int k = 1; k <= rounds; ++k) {
      reached[r].store(k);
      g.barrier(r);
      for (int p = 0; p < n; ++p) early += reached[p].load() < k;
      g.barrier(r);  // nobody starts round k+1 before everyone checked round k
    }
  });
  EXPECT_EQ(early.load(), 0);
}

TEST_P(Values, LargeBuffersMatchSmallCase) {
  // Past the streaming threshold (non-temporal stores in the fast group), with
  // odd lengths so the unaligned head and the tail are exercised.
  const int n = 3;
  const int64_t count = (3 << 20) + 13;
  std::vector<std::vector<float>> in(n, std::vector<float>(count)), out = in;
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < count; ++i) in[r][i] = float(r + 1) * float(i % 1000);
  run(n, [&](GroupImpl& g, int r) {
    g.all_reduce(r, in[r].data(), out[r].data() + 1, count - 1, DType::Float32, ReduceOp::Sum);
  });
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count - 1; i += 4099) ASSERT_EQ(out[r][i + 1], 6.f * float(i % 1000));
    ASSERT_EQ(out[r][count - 1], 6.f * float((count - 2) % 1000));
  }
  std::vector<std::vector<float>> all(n, std::vector<float>(n * count));
  run(n, [&](GroupImpl& g, int r) {
    g.all_gather(r, in[r].data(), all[r].data(), count, DType::Float32);
  });
  for (int r = 0; r < n; ++r) {
    for (int s = 0; s < n; ++s) {
      ASSERT_EQ(0, std::memcmp(all[r].data() + s * count, in[s].data(), count * 4));
    }
  }
  run(n, [&](GroupImpl& g, int r) {
    g.broadcast(r, in[r].data(), out[r].data(), count, DType::Float32, 2);
  });
  for (int r = 0; r < n; ++r) ASSERT_EQ(out[r], in[2]);
}

INSTANTIATE_TEST_SUITE_P(Backends, Values, testing::Values("threads", "reference"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tsr::test
