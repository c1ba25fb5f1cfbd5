// lower(...).comm_report(): every communication with its cause, and
// JitOptions::implicit_comm refusing what the partitioner inserted on its own.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Mesh mesh8() { return make_mesh({8}, {"x"}); }

Array sharded(const Mesh& m) { return device_put(ones({64}), NamedSharding(m, P("x"))); }

TEST(CommReport, ASumOverAShardedDimIsAnImplicitAllReduce) {
  Mesh m = mesh8();
  Lowered l = jit([](const Array& x) { return sum(x); }).lower(sharded(m));
  const CommReport& r = l.comm_report();
  ASSERT_EQ(r.events.size(), 1u) << r.str();
  const CommEvent& e = r.events[0];
  EXPECT_EQ(e.kind, "all_reduce");
  EXPECT_EQ(e.axes, (std::vector<std::string>{"x"}));
  EXPECT_EQ(e.bytes_per_device, 4);
  EXPECT_HAS(e.cause, "result of reduce_sum");
  EXPECT_TRUE(e.implicit);
  EXPECT_EQ(r.implicit_count(), 1u);
  EXPECT_HAS(r.str(), "all_reduce over ('x',), 4 B per device: result of reduce_sum [implicit]");
}

TEST(CommReport, WrittenCommunicationIsNotImplicit) {
  Mesh m = mesh8();
  Lowered g =
      jit([&](const Array& x) { return reshard(x, NamedSharding(m, P())); }).lower(sharded(m));
  ASSERT_EQ(g.comm_report().events.size(), 1u) << g.comm_report().str();
  EXPECT_EQ(g.comm_report().events[0].kind, "all_gather");
  EXPECT_EQ(g.comm_report().events[0].bytes_per_device, 256);
  EXPECT_EQ(g.comm_report().events[0].cause, "reshard");
  EXPECT_FALSE(g.comm_report().events[0].implicit);
  auto ps = shard_map([](const Array& b) { return psum(b, "x"); },
                      {.mesh = m, .in_specs = P("x"), .out_specs = P()});
  Lowered p = jit(ps).lower(sharded(m));
  ASSERT_EQ(p.comm_report().events.size(), 1u) << p.comm_report().str();
  EXPECT_EQ(p.comm_report().events[0].kind, "all_reduce");
  EXPECT_EQ(p.comm_report().events[0].cause, "psum");
  EXPECT_EQ(p.comm_report().implicit_count(), 0u);
  Lowered none = jit([](const Array& x) { return sin(x) * 2.0f; }).lower(sharded(m));
  EXPECT_TRUE(none.comm_report().events.empty()) << none.comm_report().str();
  EXPECT_EQ(none.comm_report().str(), "no communication\n");
}

TEST(CommReport, LoopBodiesAreListedWithWhereTheyRun) {
  Mesh m = mesh8();
  auto f = [](const Array& x) {
    return fori_loop(
        0, 3, [](const Array&, const Array& c) { return c + sum(c); }, x);
  };
  Lowered l = jit(f).lower(sharded(m));
  ASSERT_EQ(l.comm_report().events.size(), 1u) << l.comm_report().str();
  EXPECT_HAS(l.comm_report().events[0].cause, "body of scan: result of reduce_sum");
}

TEST(CommReport, ImplicitCommErrorRefusesTheFirstInsertedCollective) {
  Mesh m = mesh8();
  JitOptions o;
  o.implicit_comm = ImplicitComm::Error;
  o.name = "loss";
  std::string e = error_of<ShardingTypeError>(
      [&] { jit([](const Array& x) { return sum(x); }, o)(sharded(m)); });
  EXPECT_HAS(e, "[jit] loss: the partitioner inserted all_reduce over ('x',)");
  EXPECT_HAS(e, "result of reduce_sum");
  // Only written communication: runs.
  auto ps = shard_map([](const Array& b) { return psum(sum(b), "x"); },
                      {.mesh = m, .in_specs = P("x"), .out_specs = P()});
  Array got = jit(ps, o)(sharded(m));
  EXPECT_FLOAT_EQ(got.item<float>(), 64.0f);
  Array r = jit([&](const Array& x) { return reshard(x, NamedSharding(m, P())); }, o)(sharded(m));
  EXPECT_EQ(r.shape(), (Shape{64}));
  // lower() shows the report rather than refusing; the call after it still refuses.
  auto s = jit([](const Array& x) { return sum(x); }, o);
  EXPECT_EQ(s.lower(sharded(m)).comm_report().implicit_count(), 1u);
  std::string again = error_of<ShardingTypeError>([&] { s(sharded(m)); });
  EXPECT_HAS(again, "result of reduce_sum");
}

}  // namespace
