// The fast groups (threads; device and staged over the fake accelerator's ops)
// against the reference group: every collective, every dtype,
// group sizes 1-8 and element counts from 0 to past a task boundary; outputs (and
// guard bytes around them) must be byte-identical.
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "comm/comm_test_util.h"

namespace tsr::test {
namespace {

enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll, AllToAllv, Permute, Broadcast };

struct Collective {
  const char* name;
  Kind kind;
  ReduceOp op;
};

const Collective kCollectives[] = {
    {"all_reduce_sum", Kind::AllReduce, ReduceOp::Sum},
    {"all_reduce_max", Kind::AllReduce, ReduceOp::Max},
    {"all_reduce_min", Kind::AllReduce, ReduceOp::Min},
    {"all_reduce_prod", Kind::AllReduce, ReduceOp::Prod},
    {"reduce_scatter_sum", Kind::ReduceScatter, ReduceOp::Sum},
    {"reduce_scatter_max", Kind::ReduceScatter, ReduceOp::Max},
    {"reduce_scatter_min", Kind::ReduceScatter, ReduceOp::Min},
    {"reduce_scatter_prod", Kind::ReduceScatter, ReduceOp::Prod},
    {"all_gather", Kind::AllGather, ReduceOp::Sum},
    {"all_to_all", Kind::AllToAll, ReduceOp::Sum},
    {"all_to_allv", Kind::AllToAllv, ReduceOp::Sum},
    {"permute", Kind::Permute, ReduceOp::Sum},
    {"broadcast", Kind::Broadcast, ReduceOp::Sum},
};

const int kGroupSizes[] = {1, 2, 3, 4, 8};
const int64_t kCounts[] = {0, 1, 7, 1000, 65537};
constexpr int64_t kGuard = 64;  // bytes checked on each side of every output

// all_to_allv: bytes rank s sends to rank d; uneven, and zero for a third of pairs.
int64_t v_bytes(int64_t count, int s, int d, int isz) {
  return isz * (count * ((s + 2 * d) % 3) / 2);
}

// One scenario's buffers and arguments for every rank.
struct Scenario {
  std::vector<std::vector<char>> in;
  std::vector<int64_t> out_bytes;
  std::vector<std::vector<int64_t>> sc, sd, rc, rd;  // all_to_allv
  std::vector<std::pair<int, int>> pairs;            // permute
};

Scenario make_scenario(const Collective& c, DType dt, int n, int64_t count) {
  Scenario s;
  const int isz = itemsize(dt);
  for (int r = 0; r < n; ++r) {
    const uint64_t seed = (static_cast<uint64_t>(c.kind) * 131 + static_cast<int>(dt)) * 1000003 +
                          n * 7919 + count * 31 + r;
    int64_t in_count = count, out_count = count;
    switch (c.kind) {
      case Kind::ReduceScatter:
        in_count = n * count;
        break;
      case Kind::AllGather:
        out_count = n * count;
        break;
      case Kind::AllToAll:
        in_count = out_count = n * count;
        break;
      default:
        break;
    }
    if (c.kind == Kind::AllToAllv) {
      std::vector<int64_t> sc(n), sd(n), rc(n), rd(n);
      int64_t send_end = 0, recv_end = 0;
      for (int p = 0; p < n; ++p) {
        sc[p] = v_bytes(count, r, p, isz);
        sd[p] = send_end + 3;  // gaps and odd offsets: the op is in bytes
        send_end = sd[p] + sc[p];
        rc[p] = v_bytes(count, p, r, isz);
        rd[p] = recv_end + 5;
        recv_end = rd[p] + rc[p];
      }
      s.in.push_back(random_data(DType::UInt8, send_end, seed));
      s.out_bytes.push_back(recv_end);
      s.sc.push_back(sc), s.sd.push_back(sd), s.rc.push_back(rc), s.rd.push_back(rd);
    } else {
      s.in.push_back(random_data(dt, in_count, seed));
      s.out_bytes.push_back(out_count * isz);
    }
  }
  // A shift that leaves rank 0 receiving nothing (zeros) and rank n-1 sending nothing.
  for (int r = 0; r + 1 < n; ++r) s.pairs.push_back({r, r + 1});
  return s;
}

// Runs the scenario on `backend` and returns every rank's output with its guards.
std::vector<std::vector<char>> run(const std::string& backend, const Collective& c, DType dt,
                                   const Scenario& s, int64_t count, int root) {
  const int n = static_cast<int>(s.in.size());
  auto group = make_group(backend, n);
  std::vector<std::vector<char>> outs(n);
  for (int r = 0; r < n; ++r) outs[r].assign(s.out_bytes[r] + 2 * kGuard, char(0xCD));
  auto results = run_ranks(n, [&](int r) {
    const void* in = s.in[r].data();
    void* out = outs[r].data() + kGuard;
    switch (c.kind) {
      case Kind::AllReduce:
        group->all_reduce(r, in, out, count, dt, c.op);
        break;
      case Kind::ReduceScatter:
        group->reduce_scatter(r, in, out, count, dt, c.op);
        break;
      case Kind::AllGather:
        group->all_gather(r, in, out, count, dt);
        break;
      case Kind::AllToAll:
        group->all_to_all(r, in, out, count, dt);
        break;
      case Kind::AllToAllv:
        group->all_to_allv(r, in, s.sc[r], s.sd[r], out, s.rc[r], s.rd[r]);
        break;
      case Kind::Permute:
        group->permute(r, in, out, count, dt, s.pairs);
        break;
      case Kind::Broadcast:
        group->broadcast(r, in, out, count, dt, root);
        break;
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_FALSE(results[r].threw) << backend << " rank " << r << ": " << results[r].what;
  }
  return outs;
}

class FastVsReference : public ::testing::TestWithParam<std::tuple<int, DType>> {};

TEST_P(FastVsReference, OutputsAreByteIdentical) {
  const Collective& c = kCollectives[std::get<0>(GetParam())];
  const DType dt = std::get<1>(GetParam());
  for (int n : kGroupSizes) {
    for (int64_t count : kCounts) {
      Scenario s = make_scenario(c, dt, n, count);
      for (int root = 0; root < (c.kind == Kind::Broadcast ? n : 1); ++root) {
        SCOPED_TRACE(testing::Message() << c.name << " " << dt << " n=" << n << " count=" << count
                                        << " root=" << root);
        auto ref = run("reference", c, dt, s, count, root);
        for (const std::string& backend : fast_backends()) {
          auto fast = run(backend, c, dt, s, count, root);
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(fast[r], ref[r]) << backend << " rank " << r << " differs";
            const std::vector<char> guard(kGuard, char(0xCD));
            ASSERT_TRUE(std::equal(guard.begin(), guard.end(), ref[r].begin()));
            ASSERT_TRUE(std::equal(guard.begin(), guard.end(), ref[r].end() - kGuard));
          }
        }
      }
    }
  }
}

std::string case_name(const testing::TestParamInfo<std::tuple<int, DType>>& info) {
  return std::string(kCollectives[std::get<0>(info.param)].name) + "_" +
         dtype_short_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllCollectives, FastVsReference,
                         testing::Combine(testing::Range(0,
                                                         static_cast<int>(std::size(kCollectives))),
                                          testing::ValuesIn(all_dtypes())),
                         case_name);

// in == out: the fast group reads each block of every input before writing it.
class InPlace : public ::testing::TestWithParam<DType> {};

TEST_P(InPlace, AllReduceMatchesOutOfPlaceReference) {
  const DType dt = GetParam();
  for (int n : {1, 2, 3, 8}) {
    for (int64_t count : {int64_t{7}, int64_t{65537}}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod}) {
        SCOPED_TRACE(testing::Message() << dt << " n=" << n << " count=" << count << " "
                                        << detail::reduce_op_name(op));
        std::vector<std::vector<char>> bufs(n),
            expected(n, std::vector<char>(count * itemsize(dt)));
        for (int r = 0; r < n; ++r) bufs[r] = random_data(dt, count, 17 * r + count);
        auto ref = make_group("reference", n);
        run_ranks(n, [&](int r) {
          ref->all_reduce(r, bufs[r].data(), expected[r].data(), count, dt, op);
        });
        for (const std::string& backend : fast_backends()) {
          auto copies = bufs;
          auto group = make_group(backend, n);
          auto res = run_ranks(n, [&](int r) {
            group->all_reduce(r, copies[r].data(), copies[r].data(), count, dt, op);
          });
          for (int r = 0; r < n; ++r) {
            ASSERT_FALSE(res[r].threw) << res[r].what;
            ASSERT_EQ(copies[r], expected[r]) << backend << " rank " << r;
          }
        }
      }
    }
  }
}

TEST_P(InPlace, BroadcastKeepsRootAndFillsOthers) {
  const DType dt = GetParam();
  for (int n : {1, 2, 3, 8}) {
    for (int root = 0; root < n; ++root) {
      for (const std::string& backend : fast_backends()) {
        const int64_t count = 70001;
        std::vector<std::vector<char>> bufs(n);
        for (int r = 0; r < n; ++r) bufs[r] = random_data(dt, count, 5 * r + root);
        const std::vector<char> want = bufs[root];
        auto group = make_group(backend, n);
        auto res = run_ranks(n, [&](int r) {
          group->broadcast(r, bufs[r].data(), bufs[r].data(), count, dt, root);
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_FALSE(res[r].threw) << res[r].what;
          ASSERT_EQ(bufs[r], want) << backend << " n=" << n << " root=" << root << " rank " << r;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, InPlace, testing::ValuesIn(all_dtypes()), [](const auto& info) {
  return std::string(dtype_short_name(info.param));
});

}  // namespace
}  // namespace tsr::test
