// pmap (issue 12 item 6): in_axes / out_axes (0, 1, none, trees), the devices option
// and its order, psum / pmean / pmax / pmin / axis_index against a loop of the body
// over slices on one device, pmap under jit and jit under pmap, the placement of
// arguments, and every error of manual-spmd §7 with its text.
#include <gtest/gtest.h>

#include <map>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

Array iota_f(const Shape& s) { return test::ramp(s, 0.5, -1.0); }

void expect_eq(const Array& want, const Array& got, const std::string& what = "") {
  test::expect_close(want, got, 1e-5, what);
}

// The one-device oracle: f on each slice along `axis`, stacked along `out`.
template <class F>
Array loop(F f, const Array& x, int axis, int out) {
  std::vector<Array> ys;
  for (int64_t k = 0; k < x.shape()[axis]; ++k) ys.push_back(f(axis == 0 ? x[k] : x[{all, k}]));
  return stack(ys, out);
}

std::vector<int> shard_devices(const Array& y) {
  std::vector<int> ids;
  for (const Shard& s : y.addressable_shards()) ids.push_back(s.device.id);
  return ids;
}

TEST(Pmap, RowKOnDeviceK) {
  Array x = iota_f({4, 5});
  std::string seen;
  auto f = pmap(
      [&](const Array& row) {
        seen = typeof(row).str();
        return sin(row) * 2.0 + 1.0;
      },
      {.axis_name = "i"});
  Array y = f(x);
  EXPECT_EQ(seen, "f32[5]");
  // As JAX: pmap's mesh is Auto, so the type does not name the axis; the layout does.
  EXPECT_EQ(typeof(y).str(), "f32[4,5]");
  EXPECT_EQ(y.sharding().spec().normalized(2), P("i", nullptr));
  expect_eq(loop([](const Array& r) { return sin(r) * 2.0 + 1.0; }, x, 0, 0), y);
  std::vector<Shard> shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(shards[k].device.id, k);
    EXPECT_EQ(shards[k].data->shape(), (Shape{1, 5})) << "shards keep a size-1 mapped dim";
    expect_eq(reshape(sin(x[k]) * 2.0 + 1.0, {1, 5}), *shards[k].data,
              "shard " + std::to_string(k));
  }
}

TEST(Pmap, InAxesOneAndOutAxes) {
  Array x = iota_f({3, 4, 2});
  auto body = [](const Array& s) { return s * s - 1.0; };  // s: f32[3,2]
  for (int out : {0, 1, 2}) {
    Array y = pmap(body, {.in_axes = 1, .out_axes = out})(x);
    expect_eq(loop(body, x, 1, out), y, "out_axes " + std::to_string(out));
    EXPECT_EQ(y.sharding().spec().normalized(3).entries()[out],
              PartitionEntry(kPmapDefaultAxisName));
  }
  Array neg = pmap(body, {.in_axes = -2, .out_axes = -1})(x);
  expect_eq(loop(body, x, 1, 2), neg, "negative axes count from the end");
}

TEST(Pmap, TreesAndNone) {
  Array a = iota_f({4, 3}), b = iota_f({2, 4}), w = array<float>({1.f, 2.f, 3.f});
  // in_axes per leaf of ((a, b), w): a mapped on 0, b on 1, w broadcast.
  auto f = pmap(
      [](const std::pair<Array, Array>& ab, const Array& v) {
        Array y = ab.first * v + sum(ab.second);
        return std::make_pair(y, psum(sum(y), "i"));
      },
      {.axis_name = "i", .in_axes = {{0, 1}, none}, .out_axes = {0, none}});
  auto [y, total] = f(std::make_pair(a, b), w);
  Array want = a * w + reshape(sum(b, 0), {4, 1});
  expect_eq(want, y);
  EXPECT_EQ(total.shape(), Shape{});
  EXPECT_NEAR(test::item<float>(total), test::item<float>(sum(want)), 1e-4);
  // A map of leaves with a keyed prefix.
  std::map<std::string, Array> m = {{"x", iota_f({4, 2})}, {"k", array<float>({10.f})}};
  Array r = pmap([](const std::map<std::string, Array>& t) { return t.at("x") + t.at("k"); },
                 {.in_axes = {{{"x", 0}, {"k", none}}}})(m);
  expect_eq(iota_f({4, 2}) + 10.0, r);
}

TEST(Pmap, OutAxesNoneIsDeviceZerosCopyUnchecked) {
  Array x = iota_f({4, 3});
  Array y = pmap([](const Array& r) { return r; }, {.out_axes = none})(x);
  expect_eq(x[0], y);  // varies over devices: JAX returns device 0's copy too
}

TEST(Pmap, DevicesOptionAndOrder) {
  std::vector<Device> all = devices();
  std::vector<Device> order = {all[3], all[1], all[7], all[5], all[0]};
  Array x = iota_f({4, 2});
  auto f = pmap([](const Array& r) { return r + astype(axis_index("i"), float32) * 100.0; },
                {.axis_name = "i", .devices = order});
  Array y = f(x);
  EXPECT_EQ(shard_devices(y), (std::vector<int>{3, 1, 7, 5})) << "the first N, in the given order";
  Array idx = reshape(arange(0.0, 4.0) * 100.0, {4, 1}).astype(float32);
  expect_eq(x + idx, y);
  // Default devices: tsr::devices() order.
  EXPECT_EQ(shard_devices(pmap([](const Array& r) { return r; })(iota_f({8}))),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Pmap, CollectivesAgainstALoop) {
  Array x = iota_f({8, 3});
  auto each = [&](auto op) { return pmap(op, {.axis_name = "d"})(x); };
  // Every instance gets the reduction over all rows: one row per device.
  auto rows = [&](const Array& r) { return broadcast_to(r, {8, 3}); };
  expect_eq(rows(sum(x, 0)), each([](const Array& r) { return psum(r, "d"); }), "psum");
  expect_eq(rows(mean(x, 0)), each([](const Array& r) { return pmean(r, "d"); }), "pmean");
  expect_eq(rows(max(x, 0)), each([](const Array& r) { return pmax(r, "d"); }), "pmax");
  expect_eq(rows(min(x, 0)), each([](const Array& r) { return pmin(r, "d"); }), "pmin");
  Array ids = pmap([](const Array&) { return axis_index("d"); }, {.axis_name = "d"})(x);
  EXPECT_EQ(test::values<int32_t>(ids), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  int64_t size = 0;
  (void)pmap(
      [&](const Array& r) {
        size = axis_size("d");
        return r;
      },
      {.axis_name = "d"})(x);
  EXPECT_EQ(size, 8);
  // The default axis name.
  Array s = pmap([](const Array& r) { return psum(r, kPmapDefaultAxisName); })(x);
  expect_eq(rows(sum(x, 0)), s, "default axis name");
  // Normalising each row by the global sum: a psum mixed with per-device values.
  Array n = each([](const Array& r) { return r / psum(sum(r), "d"); });
  expect_eq(x / sum(x), n, "r / psum(sum(r))");
}

TEST(Pmap, UnderJitAndJitInside) {
  Array x = iota_f({4, 3});
  auto body = [](const Array& r) { return psum(r * 2.0, "i") + r; };
  auto f = pmap(body, {.axis_name = "i"});
  Array want = broadcast_to(sum(x * 2.0, 0), {4, 3}) + x;
  Array y = f(x);
  expect_eq(want, y, "eager");
  // pmap under jit, on arguments already on pmap's devices (jit runs on their mesh).
  auto jf = jit(f);
  expect_eq(broadcast_to(sum(want * 2.0, 0), {4, 3}) + want, jf(y), "pmap inside jit");
  EXPECT_EQ(typeof(jf(y)).str(), "f32[4,3]");
  EXPECT_EQ(jf(y).sharding().spec().normalized(2), P("i", nullptr));
  std::string text = jf.lower(y).program;
  EXPECT_NE(text.find("shard_map"), std::string::npos) << text;
  EXPECT_NE(text.find("psum"), std::string::npos) << text;
  // pmap under jit on a host array: the body runs on pmap's devices, not the program's.
  expect_eq(want, jf(x), "pmap inside jit, host argument");
  // jit inside pmap, on a host array.
  expect_eq(want, pmap(jit(body), {.axis_name = "i"})(x), "jit inside pmap");
  // Outputs of one pmap feed the next without moving (same mesh and layout).
  expect_eq(broadcast_to(sum(want * 2.0, 0), {4, 3}) + want, f(y), "chained");
}

TEST(Pmap, ArgumentsPlacedOrRejected) {
  Array host = iota_f({4, 3});
  auto f = pmap([](const Array& r) { return r * 3.0; }, {.axis_name = "i"});
  // On the same devices under another mesh and layout: moved among them.
  Array other = device_put(host, NamedSharding(make_mesh({2, 2}, {"a", "b"}), P("a")));
  expect_eq(host * 3.0, f(other), "same devices, other layout");
  // A user's context mesh does not disturb pmap's own.
  {
    MeshScope scope(make_mesh({2, 4}, {"x", "y"}));
    expect_eq(host * 3.0, f(host), "under a context mesh");
  }
  // On other devices: not moved silently (JAX's jit error).
  std::vector<Device> all = devices();
  Mesh upper(std::vector<Device>(all.begin() + 4, all.end()), {4}, {"u"});
  Array far = device_put(host, NamedSharding(upper, P("u")));
  std::string e = error_of<ValueError>([&] { (void)f(far); });
  EXPECT_HAS(e, "[pmap] Received incompatible devices for jitted computation.");
  EXPECT_HAS(e, "on device ids [4, 5, 6, 7]; expected the pmap's device ids [0, 1, 2, 3]");
  // The same array with devices= those devices is fine.
  Array ok = pmap([](const Array& r) { return r * 3.0; },
                  {.axis_name = "i", .devices = upper.devices()})(far);
  expect_eq(host * 3.0, ok, "devices= where the array lives");
  EXPECT_EQ(shard_devices(ok), (std::vector<int>{4, 5, 6, 7}));
}

TEST(Pmap, ErrorsWithJaxTexts) {
  Array x = iota_f({4, 3});
  auto id = [](const Array& r) { return r; };
  std::string e = error_of<ValueError>([&] { (void)pmap(id, {.in_axes = none})(x); });
  EXPECT_HAS(e, "[pmap] pmap requires at least one argument with a mapped axis.");
  e = error_of<ValueError>([&] {
    (void)pmap([](const Array& a, const Array& b) { return a + b; })(x, iota_f({3, 3}));
  });
  EXPECT_HAS(e, "[pmap] pmap got inconsistent sizes for array axes to be mapped:");
  EXPECT_HAS(e, "one axis had size 3: axis 0 of argument args[1] of type f32[3,3]");
  e = error_of<ValueError>([&] { (void)pmap(id)(iota_f({9, 2})); });
  EXPECT_HAS(e,
             "[pmap] compiling computation that requires 9 logical devices, but only 8 devices "
             "are available.");
  e = error_of<ValueError>(
      [&] { (void)pmap(id, {.devices = std::vector<Device>{devices()[0]}})(x); });
  EXPECT_HAS(e, "requires 4 logical devices, but only 1 devices are available");
  e = error_of<ValueError>([&] { (void)pmap(id, {.devices = std::vector<Device>{}}); });
  EXPECT_HAS(e, "[pmap] 'devices' argument to pmap must be non-empty, or None.");
  e = error_of<ValueError>([&] { (void)pmap(id, {.axis_size = 3})(x); });
  EXPECT_HAS(e, "[pmap] Specified axis_size 3 doesn't match received axis_size 4.");
  EXPECT_NO_THROW((void)pmap(id, {.axis_size = 4})(x));
  e = error_of<ValueError>([&] { (void)pmap(id, {.in_axes = 2})(x); });
  EXPECT_HAS(e,
             "[pmap] pmap was requested to map its argument along axis 2, which implies that "
             "its rank should be at least 3, but is only 2 (its shape is (4, 3))");
  e = error_of<ValueError>([&] { (void)pmap(id, {.out_axes = 2})(x); });
  EXPECT_HAS(e, "[pmap] out_axes 2 is out of range for result result of type f32[3]");
  e = error_of<ValueError>([&] { (void)pmap(id, {.in_axes = {0, 0}})(x); });
  EXPECT_HAS(e, "pmap in_axes");
  // Nested pmap: the context mesh inside is the outer one's, manual.
  e = error_of<ValueError>([&] {
    (void)pmap([&](const Array& r) { return pmap(id)(reshape(r, {3, 1})); })(x);
  });
  EXPECT_HAS(e, "[pmap] The context mesh");
  EXPECT_HAS(e, "should match the mesh passed to shard_map");
  EXPECT_HAS(e, "nested pmap is not supported");
  // Collectives name pmap's axis only.
  e = error_of<NameError>(
      [&] { (void)pmap([](const Array& r) { return psum(r, "j"); }, {.axis_name = "i"})(x); });
  EXPECT_HAS(e, "Found an unbound axis name: j");
}

}  // namespace

namespace {

// The README's example, as written there.
TEST(PmapReadme, RowPlusColumnSums) {
  Array data = reshape(arange(0.0, 20.0), {4, 5});
  auto f = pmap(
      [](const Array& row) {  // row: f32[5], slice k on device k
        return row * 2.0 + psum(row, "data_parallel_axis");
      },
      {.axis_name = "data_parallel_axis"});
  Array y = f(data);
  EXPECT_EQ(typeof(y).str(), "f32[4,5]");  // pmap's mesh is Auto, as JAX's
  expect_eq(data * 2.0 + broadcast_to(sum(data, 0), {4, 5}), y);
}

}  // namespace

// grad through pmap (check_vma=false semantics, manual-spmd §5.5): the psum'd loss on
// every device; jvp and vjp against the same math without pmap.
TEST(Pmap, GradAndVmapOfPmap) {
  Array x = iota_f({4, 3});
  auto per = [](const Array& r) { return sin(r) * psum(sum(r * r), "i"); };
  auto f = pmap(per, {.axis_name = "i"});
  auto loss = [&](const Array& a) { return sum(f(a)); };
  auto loss1 = [](const Array& a) { return sum(sin(a)) * sum(a * a); };
  expect_eq(grad(loss1)(x), grad(loss)(x), "grad of pmap");
  expect_eq(grad(loss1)(x), jit(grad(loss))(x), "jit(grad(pmap))");
  // vmap of pmap: a batch of 2 mapped the same way.
  Array xb = iota_f({2, 4, 3});
  Array want = stack({f(xb[0]), f(xb[1])}, 0);
  expect_eq(want, vmap(f)(xb), "vmap of pmap");
}
