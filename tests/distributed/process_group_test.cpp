// The comm layer across processes: every collective of a group whose ranks span
// processes (2 x 4 and 4 x 2 under mpirun; one process runs the same cases on the
// threads group) against the reference group run over all ranks in this process.
// Device orders put the process boundary between halves, interleave the processes,
// mix both, and leave processes with uneven or no ranks. Counts cover empty, small
// (sent with their header, the leader alone), large (moved in place, the ranks
// sharing the work) and chunked (all_reduce over 3+ processes) calls. Inputs are small
// integers, so any order of reduction gives the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "comm/comm_test_util.h"
#include "tsr/distributed.h"
#include "tsr/runtime/runtime.h"
#include "tsr/tsr.h"

namespace tsr::test {
namespace {

enum class Kind {
  AllReduce,
  AllReduceInPlace,
  ReduceScatter,
  AllGather,
  AllToAll,
  AllToAllv,
  Permute,
  Broadcast,
  BroadcastInPlace,
  Barrier
};

struct Collective {
  const char* name;
  Kind kind;
  ReduceOp op = ReduceOp::Sum;
};

const Collective kCollectives[] = {
    {"all_reduce_sum", Kind::AllReduce},
    {"all_reduce_max", Kind::AllReduce, ReduceOp::Max},
    {"all_reduce_prod", Kind::AllReduce, ReduceOp::Prod},
    {"all_reduce_in_place", Kind::AllReduceInPlace},
    {"reduce_scatter_sum", Kind::ReduceScatter},
    {"reduce_scatter_min", Kind::ReduceScatter, ReduceOp::Min},
    {"all_gather", Kind::AllGather},
    {"all_to_all", Kind::AllToAll},
    {"all_to_allv", Kind::AllToAllv},
    {"permute", Kind::Permute},
    {"broadcast", Kind::Broadcast},
    {"broadcast_in_place", Kind::BroadcastInPlace},
    {"barrier", Kind::Barrier},
};

struct Order {
  const char* name;
  std::vector<int> ids;  // device ids, in rank order
};

const Order kOrders[] = {
    {"halves", {0, 1, 2, 3, 4, 5, 6, 7}},
    {"interleaved", {0, 4, 1, 5, 2, 6, 3, 7}},
    {"mixed", {0, 1, 4, 5, 2, 3, 6, 7}},
    {"reversed", {7, 6, 5, 4, 3, 2, 1, 0}},
    {"uneven", {1, 2, 3, 5}},  // -np 2: 3 + 1 ranks; -np 4: 1 + 2 + 1, one process has none
};

constexpr int64_t kGuard = 16;

// Element i of rank r's input: an integer in [-2, 2] (sums and products of 8 are exact
// in every dtype here).
std::vector<char> input(DType dt, int r, int64_t n, int salt) {
  std::vector<char> out(static_cast<size_t>(n * itemsize(dt)));
  for (int64_t i = 0; i < n; ++i) {
    auto x = static_cast<uint32_t>(r * 2654435761u + static_cast<uint32_t>(i) * 40503u +
                                   static_cast<uint32_t>(salt) * 97u);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    const int v = static_cast<int>(x % 5) - 2;
    switch (dt) {
      case DType::Float32: {
        const float f = static_cast<float>(v);
        std::memcpy(out.data() + i * 4, &f, 4);
        break;
      }
      case DType::Int32:
        std::memcpy(out.data() + i * 4, &v, 4);
        break;
      case DType::Float16: {
        const float16_t h(static_cast<float>(v));
        std::memcpy(out.data() + i * 2, &h, 2);
        break;
      }
      default:
        ADD_FAILURE() << "no input for " << dt;
    }
  }
  return out;
}

// Every rank's buffers and arguments for one call.
struct Scenario {
  std::vector<std::vector<char>> in;
  std::vector<int64_t> out_bytes;
  std::vector<std::vector<int64_t>> sc, sd, rc, rd;  // all_to_allv
  std::vector<std::pair<int, int>> pairs;            // permute: a shift, rank 0 gets none
};

Scenario make_scenario(const Collective& c, DType dt, int n, int64_t count) {
  Scenario s;
  const int isz = itemsize(dt);
  for (int r = 0; r < n; ++r) {
    int64_t in_count = count, out_count = count;
    if (c.kind == Kind::ReduceScatter) in_count = n * count;
    if (c.kind == Kind::AllGather) out_count = n * count;
    if (c.kind == Kind::AllToAll) in_count = out_count = n * count;
    if (c.kind == Kind::AllToAllv) {
      // Uneven pieces, a third of them empty, at odd offsets with gaps.
      auto bytes = [&](int src, int dst) { return isz * (count * ((src + 2 * dst) % 3) / 2); };
      std::vector<int64_t> sc(n), sd(n), rc(n), rd(n);
      int64_t send_end = 0, recv_end = 0;
      for (int p = 0; p < n; ++p) {
        sc[p] = bytes(r, p);
        sd[p] = send_end + 3;
        send_end = sd[p] + sc[p];
        rc[p] = bytes(p, r);
        rd[p] = recv_end + 5;
        recv_end = rd[p] + rc[p];
      }
      s.in.push_back(input(DType::Int32, r, (send_end + 3) / 4, 1));
      s.in.back().resize(static_cast<size_t>(send_end));
      s.out_bytes.push_back(recv_end);
      s.sc.push_back(sc), s.sd.push_back(sd), s.rc.push_back(rc), s.rd.push_back(rd);
    } else {
      s.in.push_back(input(dt, r, in_count, static_cast<int>(c.kind)));
      s.out_bytes.push_back(out_count * isz);
    }
  }
  for (int r = 0; r + 1 < n; ++r) s.pairs.push_back({(r + 1) % n, (r + 2) % n});
  return s;
}

// One rank's call; the output (with guards) starts as `out`.
void call(GroupImpl& g, const Collective& c, DType dt, const Scenario& s, int r, int64_t count,
          int root, std::vector<char>& out) {
  void* o = out.data() + kGuard;
  const void* in = s.in[static_cast<size_t>(r)].data();
  switch (c.kind) {
    case Kind::AllReduce:
      return g.all_reduce(r, in, o, count, dt, c.op);
    case Kind::AllReduceInPlace:
      std::memcpy(o, in, static_cast<size_t>(s.out_bytes[r]));
      return g.all_reduce(r, o, o, count, dt, c.op);
    case Kind::ReduceScatter:
      return g.reduce_scatter(r, in, o, count, dt, c.op);
    case Kind::AllGather:
      return g.all_gather(r, in, o, count, dt);
    case Kind::AllToAll:
      return g.all_to_all(r, in, o, count, dt);
    case Kind::AllToAllv:
      return g.all_to_allv(r, in, s.sc[r], s.sd[r], o, s.rc[r], s.rd[r]);
    case Kind::Permute:
      return g.permute(r, in, o, count, dt, s.pairs);
    case Kind::Broadcast:
      return g.broadcast(r, in, o, count, dt, root);
    case Kind::BroadcastInPlace:
      std::memcpy(o, in, static_cast<size_t>(s.out_bytes[r]));
      return g.broadcast(r, o, o, count, dt, root);
    case Kind::Barrier:
      return g.barrier(r);
  }
}

std::vector<std::vector<char>> fresh_outputs(const Scenario& s) {
  std::vector<std::vector<char>> outs;
  for (int64_t b : s.out_bytes) outs.emplace_back(static_cast<size_t>(b + 2 * kGuard), char(0xCD));
  return outs;
}

class ProcessGroups : public ::testing::TestWithParam<int> {};

TEST_P(ProcessGroups, MatchTheReferenceGroup) {
  const Collective& c = kCollectives[GetParam()];
  const int me = process_index();
  for (const Order& order : kOrders) {
    const int n = static_cast<int>(order.ids.size());
    std::vector<int> local;  // this process's ranks
    for (int r = 0; r < n; ++r)
      if (devices()[static_cast<size_t>(order.ids[r])].process_index() == me) local.push_back(r);
    auto group = detail::Runtime::get().group(order.ids);
    auto reference = detail::make_reference_group(n);
    for (DType dt : {DType::Float32, DType::Int32, DType::Float16}) {
      std::vector<int64_t> counts = {0, 5, 40000};
      if (dt == DType::Float32) counts.push_back(300000);
      for (int64_t count : counts) {
        const Scenario s = make_scenario(c, dt, n, count);
        for (int root : {0, n - 1}) {
          if (root && c.kind != Kind::Broadcast && c.kind != Kind::BroadcastInPlace) continue;
          SCOPED_TRACE(testing::Message() << c.name << " " << order.name << " " << dt
                                          << " count=" << count << " root=" << root);
          auto want = fresh_outputs(s), got = fresh_outputs(s);
          auto ref =
              run_ranks(n, [&](int r) { call(*reference, c, dt, s, r, count, root, want[r]); });
          auto res = run_ranks(static_cast<int>(local.size()), [&](int i) {
            const int r = local[static_cast<size_t>(i)];
            call(*group, c, dt, s, r, count, root, got[r]);
          });
          for (size_t i = 0; i < local.size(); ++i) {
            const int r = local[i];
            ASSERT_FALSE(ref[r].threw) << ref[r].what;
            ASSERT_FALSE(res[i].threw) << "rank " << r << ": " << res[i].what;
            ASSERT_EQ(want[r], got[r]) << "rank " << r << " differs (or wrote past its output)";
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCollectives, ProcessGroups,
                         testing::Range(0, static_cast<int>(std::size(kCollectives))),
                         [](const auto& info) {
                           return std::string(kCollectives[info.param].name);
                         });

// Counts that disagree between processes, and all_to_allv pieces whose totals agree
// but whose pairs do not, are the same CommError on every rank, and the group works
// again afterwards.
TEST(ProcessGroupErrors, MismatchesRaiseEverywhereAndTheGroupRecovers) {
  if (process_count() == 1) GTEST_SKIP() << "needs several processes";
  const std::vector<int> ids = {0, 1, 2, 3, 4, 5, 6, 7};
  const int me = process_index();
  std::vector<int> local;
  for (int r = 0; r < 8; ++r)
    if (devices()[static_cast<size_t>(r)].process_index() == me) local.push_back(r);
  auto group = detail::Runtime::get().group(ids);
  const int L = static_cast<int>(local.size());
  // The last process passes a different count.
  for (int64_t big : {int64_t{8}, int64_t{50000}}) {
    const int64_t count = me == process_count() - 1 ? big / 2 : big;
    std::vector<std::vector<float>> bufs(8, std::vector<float>(static_cast<size_t>(big), 1.0F));
    auto res = run_ranks(L, [&](int i) {
      auto& b = bufs[local[i]];
      group->all_reduce(local[i], b.data(), b.data(), count, DType::Float32, ReduceOp::Sum);
    });
    for (int i = 0; i < L; ++i) {
      ASSERT_TRUE(res[i].comm_error) << res[i].what;
      EXPECT_TRUE(contains(res[i].what, "processes disagree on the collective"));
    }
  }
  // all_to_allv: rank 0 sends rank 7 (on the last process) 8 bytes and rank 1 sends it 16,
  // but rank 7 expects 16 from rank 0 and 8 from rank 1: equal totals, different pairs.
  {
    std::vector<std::vector<char>> in(8, std::vector<char>(64, 1)), out(8, std::vector<char>(64));
    auto res = run_ranks(L, [&](int i) {
      const int r = local[i];
      std::vector<int64_t> sc(8, 0), sd(8, 0), rc(8, 0), rd(8, 0);
      if (r == 0) sc[7] = 8;
      if (r == 1) sc[7] = 16;
      if (r == 7) rc[0] = 16, rc[1] = 8, rd[1] = 16;
      group->all_to_allv(r, in[r].data(), sc, sd, out[r].data(), rc, rd);
    });
    for (int i = 0; i < L; ++i) {
      ASSERT_TRUE(res[i].comm_error) << res[i].what;
      EXPECT_TRUE(contains(res[i].what, "Every pair's counts must agree")) << res[i].what;
    }
  }
  // A bad argument on one rank is named by its rank in the group, on every process.
  {
    const int bad = 5;  // on the second process under -np 2 and -np 4
    std::vector<std::vector<float>> b(8, std::vector<float>(4, 1.0F));
    auto res = run_ranks(L, [&](int i) {
      const int r = local[i];
      group->all_reduce(r, b[r].data(), r == bad ? nullptr : b[r].data(), 4, DType::Float32,
                        ReduceOp::Sum);
    });
    for (int i = 0; i < L; ++i) {
      ASSERT_TRUE(res[i].comm_error) << res[i].what;
      EXPECT_TRUE(contains(res[i].what, "rank 5 ")) << res[i].what;
    }
  }
  // The group still works.
  std::vector<std::vector<float>> bufs(8, std::vector<float>(100000, 1.0F));
  auto res = run_ranks(L, [&](int i) {
    auto& b = bufs[local[i]];
    group->all_reduce(local[i], b.data(), b.data(), 100000, DType::Float32, ReduceOp::Sum);
  });
  for (int i = 0; i < L; ++i) {
    ASSERT_FALSE(res[i].threw) << res[i].what;
    EXPECT_EQ(bufs[local[i]][99999], 8.0F);
  }
}

}  // namespace
}  // namespace tsr::test
