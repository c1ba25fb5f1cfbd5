// Mistakes in collective calls: every rank raises the same CommError naming the op
// and the ranks, the group stays usable after a mismatch, and a missing rank turns
// into an error after the timeout instead of a hang.
#include <chrono>
#include <string>
#include <vector>

#include "comm/comm_test_util.h"

namespace tsr::test {
namespace {

class Errors : public ::testing::TestWithParam<std::string> {
 protected:
  // Expects every rank to have raised the same CommError; returns its message.
  static std::string same_comm_error(const std::vector<RankResult>& res) {
    for (size_t r = 0; r < res.size(); ++r) {
      EXPECT_TRUE(res[r].comm_error)
          << "rank " << r << " threw=" << res[r].threw << " " << res[r].what;
      EXPECT_EQ(res[r].what, res[0].what) << "rank " << r;
    }
    return res[0].what;
  }

  // A correct all_reduce on `group`: the group must still work after an error.
  static void expect_group_works(GroupImpl& group) {
    const int n = group.size();
    std::vector<int32_t> in(n), out(n, -1);
    for (int r = 0; r < n; ++r) in[r] = r + 1;
    auto res = run_ranks(
        n, [&](int r) { group.all_reduce(r, &in[r], &out[r], 1, DType::Int32, ReduceOp::Sum); });
    for (int r = 0; r < n; ++r) {
      EXPECT_FALSE(res[r].threw) << res[r].what;
      EXPECT_EQ(out[r], n * (n + 1) / 2);
    }
  }
};

TEST_P(Errors, CountMismatchNamesOpAndRanks) {
  const int n = 4;
  auto group = make_group(GetParam(), n);
  std::vector<std::vector<float>> in(n, std::vector<float>(1024)), out = in;
  auto res = run_ranks(n, [&](int r) {
    group->all_reduce(r, in[r].data(), out[r].data(), r == 3 ? 512 : 1024, DType::Float32,
                      ReduceOp::Sum);
  });
  std::string msg = same_comm_error(res);
  EXPECT_TRUE(contains(msg, "[all_reduce] ranks disagree on the element count"));
  EXPECT_TRUE(contains(msg, "Got ranks 0-2: 1024, rank 3: 512"));
  EXPECT_TRUE(contains(msg, "expected the same element count on every rank"));
  expect_group_works(*group);
}

TEST_P(Errors, DTypeMismatch) {
  const int n = 3;
  auto group = make_group(GetParam(), n);
  std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(8)),
      out(n, std::vector<int64_t>(24));
  auto res = run_ranks(n, [&](int r) {
    group->all_gather(r, in[r].data(), out[r].data(), 8, r == 1 ? DType::Int32 : DType::Float32);
  });
  std::string msg = same_comm_error(res);
  EXPECT_TRUE(contains(msg, "[all_gather] ranks disagree on the dtype"));
  EXPECT_TRUE(contains(msg, "rank 1: int32"));
  EXPECT_TRUE(contains(msg, "ranks 0,2: float32"));
  expect_group_works(*group);
}

TEST_P(Errors, ReduceOpMismatch) {
  const int n = 2;
  auto group = make_group(GetParam(), n);
  std::vector<float> in(4), out(2);
  auto res = run_ranks(n, [&](int r) {
    group->reduce_scatter(r, in.data() + 2 * r, out.data() + r, 1, DType::Float32,
                          r == 0 ? ReduceOp::Sum : ReduceOp::Max);
  });
  std::string msg = same_comm_error(res);
  EXPECT_TRUE(contains(msg, "[reduce_scatter] ranks disagree on the reduction"));
  EXPECT_TRUE(contains(msg, "rank 0: sum, rank 1: max"));
  expect_group_works(*group);
}

TEST_P(Errors, DifferentCollectives) {
  const int n = 3;
  auto group = make_group(GetParam(), n);
  std::vector<float> in(3), out(9);
  auto res = run_ranks(n, [&](int r) {
    if (r == 2) {
      group->all_gather(r, &in[r], out.data() + 3 * r, 1, DType::Float32);
    } else {
      group->all_reduce(r, &in[r], &out[r], 1, DType::Float32, ReduceOp::Sum);
    }
  });
  std::string msg = same_comm_error(res);
  EXPECT_TRUE(contains(msg, "ranks disagree on the collective"));
  EXPECT_TRUE(contains(msg, "ranks 0-1: all_reduce, rank 2: all_gather"));
  expect_group_works(*group);
}

TEST_P(Errors, RootAndPairsMismatch) {
  const int n = 2;
  auto group = make_group(GetParam(), n);
  float in[2] = {1, 2}, out[2] = {};
  auto res =
      run_ranks(n, [&](int r) { group->broadcast(r, &in[r], &out[r], 1, DType::Float32, r); });
  EXPECT_TRUE(contains(same_comm_error(res),
                       "[broadcast] ranks disagree on the root. Got "
                       "rank 0: 0, rank 1: 1"));
  std::vector<std::vector<std::pair<int, int>>> pairs = {{{0, 1}, {1, 0}}, {{0, 1}}};
  res =
      run_ranks(n, [&](int r) { group->permute(r, &in[r], &out[r], 1, DType::Float32, pairs[r]); });
  EXPECT_TRUE(contains(same_comm_error(res),
                       "[permute] ranks disagree on the pairs. Got rank "
                       "0: [(0, 1), (1, 0)], rank 1: [(0, 1)]"));
  expect_group_works(*group);
}

TEST_P(Errors, InvalidArgumentsOnOneRank) {
  const int n = 3;
  auto group = make_group(GetParam(), n);
  float in[3] = {}, out[3] = {};
  auto res = run_ranks(n, [&](int r) {
    std::vector<std::pair<int, int>> pairs = {{0, 1}, {1, r == 2 ? 7 : 2}};
    group->permute(r, &in[r], &out[r], 1, DType::Float32, pairs);
  });
  std::string msg = same_comm_error(res);
  EXPECT_TRUE(contains(msg,
                       "[permute] rank 2 passed invalid arguments: pair (1, 7) names a "
                       "rank outside the group (the group has 3 ranks)"));
  res = run_ranks(n, [&](int r) {
    group->all_reduce(r, &in[r], &out[r], r == 0 ? -1 : 1, DType::Float32, ReduceOp::Sum);
  });
  EXPECT_TRUE(contains(same_comm_error(res),
                       "rank 0 passed invalid arguments: the element "
                       "count is -1"));
  expect_group_works(*group);
}

TEST_P(Errors, AllToAllvCountsMustAgreeByPair) {
  const int n = 2;
  auto group = make_group(GetParam(), n);
  char send[2][4] = {}, recv[2][4] = {};
  std::vector<std::vector<int64_t>> sc = {{1, 2}, {1, 1}}, rc = {{1, 1}, {3, 1}};
  std::vector<int64_t> displs = {0, 2};
  auto res = run_ranks(
      n, [&](int r) { group->all_to_allv(r, send[r], sc[r], displs, recv[r], rc[r], displs); });
  EXPECT_TRUE(contains(same_comm_error(res),
                       "[all_to_allv] ranks disagree on how many bytes rank 0 sends to rank 1. "
                       "Got send_counts[1] = 2 on rank 0, recv_counts[0] = 3 on rank 1"));
  expect_group_works(*group);
}

TEST_P(Errors, FailedRankIsNamedOnEveryRank) {
  const int n = 4;
  auto group = make_group(GetParam(), n);
  std::vector<float> in(4), out(16);
  auto res = run_ranks(n, [&](int r) {
    if (r == 2) {
      group->fail(r, "all_gather", "its input holds a NaN from a failed kernel");
    } else {
      group->all_gather(r, &in[r], out.data() + 4 * r, 1, DType::Float32);
    }
  });
  std::string msg = same_comm_error(res);
  EXPECT_TRUE(contains(msg,
                       "[all_gather] rank 2 failed before the collective: its input holds "
                       "a NaN from a failed kernel"));
  expect_group_works(*group);
}

TEST_P(Errors, MissingRankTimesOutAndBreaksTheGroup) {
  const int n = 3;
  auto group = make_group(GetParam(), n, /*timeout_ms=*/200);
  float in[3] = {}, out[3] = {};
  auto start = std::chrono::steady_clock::now();
  auto res = run_ranks(
      n,
      [&](int r) {
        if (r != 1) group->all_reduce(r, &in[r], &out[r], 1, DType::Float32, ReduceOp::Sum);
      },
      std::chrono::seconds(30));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_LT(waited, std::chrono::seconds(20));  // a bound for the watchdog, not a timing test
  EXPECT_FALSE(res[1].threw);
  for (int r : {0, 2}) {
    EXPECT_TRUE(res[r].comm_error) << res[r].what;
    EXPECT_TRUE(contains(res[r].what, "[all_reduce] timed out after 200 ms waiting for rank 1"));
    EXPECT_TRUE(contains(res[r].what, "ranks 0,2 arrived"));
  }
  // Every later call raises at once, on every rank, instead of waiting again.
  res = run_ranks(
      n, [&](int r) { group->barrier(r); }, std::chrono::seconds(30));
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(res[r].comm_error);
    EXPECT_TRUE(contains(res[r].what, "[barrier] the " + GetParam() + " group is broken"));
  }
}

TEST_P(Errors, SingleRankGroupRaisesToo) {
  auto group = make_group(GetParam(), 1);
  float x = 1, y = 0;
  EXPECT_THROW(group->fail(0, "all_reduce", "bad input"), CommError);
  EXPECT_THROW(group->broadcast(0, &x, &y, 1, DType::Float32, 1), CommError);
  group->all_reduce(0, &x, &y, 1, DType::Float32, ReduceOp::Sum);
  EXPECT_EQ(y, 1.f);
}

TEST(GroupFactory, RejectsEmptyGroups) {
  EXPECT_THROW(detail::make_threads_group(0), CommError);
  EXPECT_THROW(detail::make_reference_group(-1), CommError);
}

INSTANTIATE_TEST_SUITE_P(Backends, Errors, testing::Values("threads", "reference"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tsr::test
