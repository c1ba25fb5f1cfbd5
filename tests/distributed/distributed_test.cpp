// The distributed suite: one program run in one process (8 simulated devices) and
// under `mpirun -np 2` (4 devices each) and `-np 4` (2 each), so every 8-device mesh
// spans processes. Each process checks its results against the unsharded oracle it
// computes itself on one local device. Meshes put the process boundary on the major
// axis, on the minor axis, and across both (mixed).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/distributed.h"
#include "tsr/shard_map.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

constexpr auto E = AxisType::Explicit;

Mesh mesh_of(const std::vector<int>& order, std::vector<int> sizes,
             std::vector<std::string> names) {
  std::vector<Device> devs;
  for (int id : order) devs.push_back(devices()[static_cast<size_t>(id)]);
  std::vector<AxisType> types(names.size(), E);
  return Mesh(devs, std::move(sizes), std::move(names), types);
}

struct Layout {
  std::string name;
  Mesh mesh;
};

// (a, b) meshes over 8 devices; with 2 processes x 4 devices: "major" splits 'a',
// "minor" splits 'b', "mixed" splits the middle axis of three.
std::vector<Layout> layouts_2d() {
  return {{"major 2x4", mesh_of({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}, {"a", "b"})},
          {"minor 4x2", mesh_of({0, 4, 1, 5, 2, 6, 3, 7}, {4, 2}, {"a", "b"})},
          {"mixed 2x4", mesh_of({0, 1, 4, 5, 2, 3, 6, 7}, {2, 4}, {"a", "b"})},
          {"minor 2x4", mesh_of({0, 4, 1, 5, 2, 6, 3, 7}, {2, 4}, {"a", "b"})}};
}

// The value of x on this process: every block gathered (a collective) when some
// live on other processes.
Array global(const Array& x) {
  if (x.is_fully_addressable()) return x;
  return device_put(device_put(x, NamedSharding(*x.sharding().concrete_mesh(), P())),
                    local_devices()[0]);
}

void expect_close(const Array& want, const Array& got, const std::string& what, double tol = 1e-4) {
  test::expect_close(want, global(got), tol, what);
}

TEST(Distributed, Topology) {
  ASSERT_EQ(device_count(), 8);
  EXPECT_EQ(local_device_count() * process_count(), 8);
  EXPECT_EQ(static_cast<int>(process_indices().size()), process_count());
  auto mine = local_devices();
  ASSERT_EQ(static_cast<int>(mine.size()), local_device_count());
  for (size_t i = 0; i < mine.size(); ++i) {
    EXPECT_EQ(mine[i].id, process_index() * local_device_count() + static_cast<int>(i));
    EXPECT_EQ(mine[i].process_index(), process_index());
  }
  for (const auto& d : devices()) EXPECT_EQ(d.process_index(), d.id / local_device_count());
  EXPECT_HAS(error_of<ValueError>([] { local_devices(process_count()); }),
             "[local_devices] Unknown process_index");
}

TEST(Distributed, GlobalArraysHoldOnlyTheirBlocks) {
  Array host = test::ramp({8, 4}, 1.0, 0.0);
  for (const auto& l : layouts_2d()) {
    Array x = device_put(host, NamedSharding(l.mesh, P("a", "b")));
    const bool alone = process_count() == 1;
    EXPECT_EQ(x.is_fully_addressable(), alone) << l.name;
    EXPECT_EQ(static_cast<int>(x.addressable_shards().size()), local_device_count()) << l.name;
    for (const auto& s : x.addressable_shards()) {
      EXPECT_EQ(s.device.process_index(), process_index());
      Array want =
          slice(host, {s.index[0].start, s.index[1].start}, {s.index[0].stop, s.index[1].stop});
      test::expect_close(want, *s.data, 0, l.name + " shard");
    }
    if (!alone) {
      std::string err = error_of<RuntimeError>([&] { x.to_vector<float>(); });
      EXPECT_NE(err.find("non-addressable"), std::string::npos) << err;
    }
    expect_close(host, x, l.name);
    // Replicated over a mesh of many processes: every process holds every block.
    Array r = device_put(x, NamedSharding(l.mesh, P()));
    test::expect_close(host, r, 0, l.name + " replicated");
  }
}

TEST(Distributed, ReshardBetweenLayouts) {
  Array host = test::ramp({8, 16}, 0.25, -3.0);
  auto ls = layouts_2d();
  for (const auto& l : ls) {
    Array x = device_put(host, NamedSharding(l.mesh, P("a", "b")));
    for (const auto& spec :
         {P("b", "a"), P(nullptr, "a"), P(Axes{"a", "b"}), P("b"), P(nullptr, Axes{"b", "a"})}) {
      Array y = device_put(x, NamedSharding(l.mesh, spec));
      expect_close(host, y, l.name + " -> " + spec.repr());
    }
    // Onto another mesh's devices (the box exchange crosses processes).
    for (const auto& m : ls) {
      Array y = device_put(x, NamedSharding(m.mesh, P("b", "a")));
      expect_close(host, y, l.name + " -> " + m.name);
    }
  }
}

TEST(Distributed, CollectivesInShardMap) {
  Array host = test::ramp({8, 32}, 0.5, -7.0);
  for (const auto& l : layouts_2d()) {
    MeshScope scope(l.mesh);
    const int A = l.mesh.axis_size("a"), B = l.mesh.axis_size("b");
    Array x = device_put(host, P("a", "b"));
    auto smap = [&](auto body, PartitionSpec out) {
      return shard_map(body, {.in_specs = P("a", "b"), .out_specs = out});
    };
    const std::string at = l.name + ": ";
    // Each collective eager and under jit.
    for (bool jitted : {false, true}) {
      auto run = [&](auto body, PartitionSpec out) {
        auto f = smap(body, out);
        return jitted ? jit(f)(x) : f(x);
      };
      const std::string how = at + (jitted ? "jit " : "eager ");
      expect_close(sum(reshape(host, {A, 8 / A, 32}), 0),
                   run([](const Array& b) { return psum(b, "a"); }, P(nullptr, "b")),
                   how + "psum a");
      expect_close(sum(reshape(host, {A, 8 / A, B, 32 / B}), {0, 2}),
                   run(
                       [](const Array& b) {
                         return psum(b, {"a", "b"});
                       },
                       P()),
                   how + "psum ab");
      expect_close(max(reshape(host, {8, B, 32 / B}), 1),
                   run([](const Array& b) { return pmax(b, "b"); }, P("a")), how + "pmax b");
      expect_close(min(reshape(host, {A, 8 / A, 32}), 0),
                   run([](const Array& b) { return pmin(b, "a"); }, P(nullptr, "b")),
                   how + "pmin a");
      expect_close(host,
                   run(
                       [](const Array& b) {
                         return all_gather(b, "b", {.axis = 1, .tiled = true, .invariant = true});
                       },
                       P("a")),
                   how + "all_gather b");
      expect_close(host,
                   run(
                       [](const Array& b) {
                         return all_gather(b, "a", {.axis = 0, .tiled = true, .invariant = true});
                       },
                       P(nullptr, "b")),
                   how + "all_gather a");
      expect_close(sum(reshape(host, {8, B, 32 / B}), 1),
                   run(
                       [](const Array& b) {
                         return psum_scatter(b, "b", {.scatter_dimension = 1, .tiled = true});
                       },
                       P("a", "b")),
                   how + "psum_scatter b");
      std::vector<std::pair<int, int>> shift;
      for (int j = 0; j < B; ++j) shift.emplace_back(j, (j + 1) % B);
      expect_close(roll(host, 32 / B, 1),
                   run([&](const Array& b) { return ppermute(b, "b", shift); }, P("a", "b")),
                   how + "ppermute b");
      std::vector<std::pair<int, int>> flip;
      std::vector<Array> reversed;
      for (int i = 0; i < A; ++i) {
        flip.emplace_back(i, A - 1 - i);
        reversed.push_back(test::chunk(host, 0, A - 1 - i, 8 / A));
      }
      expect_close(concatenate(reversed, 0),
                   run([&](const Array& b) { return ppermute(b, "a", flip); }, P("a", "b")),
                   how + "ppermute a");
      expect_close(host,
                   run([](const Array& b) { return all_to_all(b, "b", 0, 1, {.tiled = true}); },
                       P(Axes{"a", "b"})),
                   how + "all_to_all b");
    }
  }
}

TEST(Distributed, JitGradOfAShardedModel) {
  Array xh = test::ramp({8, 16}, 0.01, -0.5);
  Array wh = test::ramp({16, 8}, 0.02, -1.0);
  auto loss = [](const Array& w, const Array& x) { return sum(tanh(matmul(x, w))); };
  auto g = jit(grad(loss));
  Array want = g(wh, xh);
  for (const auto& l : layouts_2d()) {
    Array x = device_put(xh, NamedSharding(l.mesh, P("a")));
    Array w = device_put(wh, NamedSharding(l.mesh, P(nullptr, "b")));
    expect_close(want, g(w, x), l.name + " grad");
    expect_close(loss(wh, xh), loss(w, x), l.name + " loss", 1e-3);
  }
}

TEST(Distributed, LoopsWithCollectives) {
  Array host = test::ramp({8, 8}, 0.5, 1.0);
  for (const auto& l : layouts_2d()) {
    MeshScope scope(l.mesh);
    const int A = l.mesh.axis_size("a");
    Array x = device_put(host, P("a", "b"));
    auto f = jit(shard_map(
        [](const Array& b) {
          auto step = [](const Array&, const Array& y) { return psum(pvary(y, "a"), "a") * 0.5; };
          return fori_loop(0, 2, step, psum(b, "a") * 0.5);
        },
        {.in_specs = P("a", "b"), .out_specs = P(nullptr, "b")}));
    // y0 = S/2 with S the sum of the a-blocks, then y_{k+1} = A y_k / 2.
    Array s = sum(reshape(host, {A, 8 / A, 8}), 0);
    expect_close(s * (0.5 * std::pow(A / 2.0, 2)), f(x), l.name + " fori psum");
  }
}

}  // namespace

namespace {

// This process's box of `host` under `s`: the hull of its devices' blocks.
Array process_box(const Array& host, const NamedSharding& s) {
  Array x = device_put(host, s);
  Shape lo(static_cast<size_t>(host.ndim()), INT64_MAX), hi(static_cast<size_t>(host.ndim()), 0);
  for (const auto& sh : x.addressable_shards())
    for (size_t d = 0; d < lo.size(); ++d) {
      lo[d] = std::min(lo[d], sh.index[d].start);
      hi[d] = std::max(hi[d], sh.index[d].stop);
    }
  return slice(host, lo, hi);
}

TEST(Distributed, MakeArrayFromProcessLocalData) {
  Array host = test::ramp({16, 8}, 1.0, 0.0);
  std::vector<NamedSharding> cases = {
      NamedSharding(mesh_of({0, 1, 2, 3, 4, 5, 6, 7}, {8}, {"x"}), P("x")),
      NamedSharding(layouts_2d()[0].mesh, P("a", "b")),
      NamedSharding(layouts_2d()[1].mesh, P("a", "b")), NamedSharding(layouts_2d()[0].mesh, P("a")),
      NamedSharding(layouts_2d()[2].mesh, P(nullptr, "b"))};
  for (const auto& s : cases) {
    Array local = process_box(host, s);
    Array x = make_array_from_process_local_data(s, local);
    EXPECT_EQ(x.shape(), host.shape()) << s.str();
    expect_close(host, x, "packed " + s.str(), 0);
    // The global data on every process, indexed globally.
    expect_close(host, make_array_from_process_local_data(s, host, host.shape()),
                 "global " + s.str(), 0);
  }
  if (process_count() == 1) {
    EXPECT_HAS(error_of<ValueError>([&] {
                 make_array_from_process_local_data(cases[0], host, Shape{32, 8});
               }),
               "global_shape should be None or equal to local_data.shape");
  } else {
    EXPECT_HAS(
        error_of<ValueError>([&] {
          make_array_from_process_local_data(cases[0], slice(host, {0, 0}, {3, 8}), Shape{16, 8});
        }),
        "In dimension 0, the process data has 3 elements");
  }
}

TEST(Distributed, MakeArrayFromSingleDeviceArrays) {
  Array host = test::ramp({8, 8}, 0.5, 0.0);
  for (const auto& l : layouts_2d()) {
    NamedSharding s(l.mesh, P("a", "b"));
    Array x = device_put(host, s);
    std::vector<Array> parts;
    for (const auto& sh : x.addressable_shards()) parts.insert(parts.begin(), *sh.data);
    expect_close(host, make_array_from_single_device_arrays(host.shape(), s, parts), l.name, 0);
    parts.pop_back();
    EXPECT_HAS(
        error_of<ValueError>([&] { make_array_from_single_device_arrays(host.shape(), s, parts); }),
        "per-device arrays (this is how many devices are addressable by the sharding)");
  }
}

TEST(Distributed, Multihost) {
  const int P_ = process_count(), me = process_index();
  Array all = multihost::process_allgather(scalar(static_cast<float>(me)));
  EXPECT_EQ(all.shape(), Shape{P_});
  for (int p = 0; p < P_; ++p) EXPECT_EQ(all.to_vector<float>()[static_cast<size_t>(p)], p);
  Array cat = multihost::process_allgather(array<float>({1.0F * me, 2.0F * me}), true);
  EXPECT_EQ(cat.shape(), Shape{2 * P_});
  EXPECT_EQ(multihost::broadcast_one_to_all(scalar(static_cast<float>(me + 7))).item<float>(), 7);
  EXPECT_EQ(multihost::broadcast_one_to_all(scalar(static_cast<float>(me + 7)), me == P_ - 1)
                .item<float>(),
            P_ + 6);
  multihost::sync_global_devices("step 1");
  multihost::assert_equal(scalar(1.0F));
  Array host = test::ramp({8, 4}, 1.0, 0.0);
  Array g = device_put(host, NamedSharding(layouts_2d()[1].mesh, P("a", "b")));
  test::expect_close(host, multihost::process_allgather(g, true), 0, "global tiled");
  if (P_ > 1) {
    EXPECT_HAS(error_of<ValueError>([&] { multihost::process_allgather(g); }),
               "only supports tiled=True");
    EXPECT_HAS(error_of<AssertionError>([&] { multihost::assert_equal(scalar(1.0F * me)); }),
               "differs from process");
    EXPECT_HAS(error_of<AssertionError>(
                   [&] { multihost::sync_global_devices("step " + std::to_string(me)); }),
               "sync_global_devices name mismatch");
  }
}

TEST(Distributed, DivergentProgramsAreAnErrorNotAHang) {
  if (process_count() == 1) GTEST_SKIP() << "needs several processes";
  Array x = device_put(test::ramp({8, 4}, 1.0, 0.0), NamedSharding(layouts_2d()[0].mesh, P("a")));
  auto f = jit([](const Array& a) { return process_index() == 0 ? sin(a) : cos(a) * 2.0; });
  std::string err = error_of<CommError>([&] { f(x); });
  EXPECT_HAS(err, "processes lowered different programs");
  EXPECT_HAS(err, "sin");
  // The processes stay usable: the check stopped the program before it ran.
  expect_close(sin(test::ramp({8, 4}, 1.0, 0.0)), jit([](const Array& a) { return sin(a); })(x),
               "after the mismatch");
}

}  // namespace

namespace {

// Collectives of a few hundred KiB per device: all_reduce over 3+ processes then
// runs in two rounds of chunks (process_group.cpp); the result must not change.
TEST(Distributed, LargeCollectives) {
  const int64_t n = 70001;  // not a multiple of the process count: uneven chunks
  Array host = test::ramp({8, n}, 1e-3, -20.0);
  for (const auto& l : {layouts_2d()[0], layouts_2d()[1]}) {
    MeshScope scope(l.mesh);
    Array x = device_put(host, P(Axes{"a", "b"}));
    auto f = jit(shard_map(
        [](const Array& b) {
          return psum(b, {"a", "b"});
        },
        {.in_specs = P(Axes{"a", "b"}), .out_specs = P()}));
    expect_close(sum(host, 0, {.keepdims = true}), f(x), l.name + " psum", 1e-2);
    auto g = jit(shard_map(
        [](const Array& b) {
          return pmax(b, {"a", "b"});
        },
        {.in_specs = P(Axes{"a", "b"}), .out_specs = P()}));
    expect_close(max(host, 0, {.keepdims = true}), g(x), l.name + " pmax", 0);
  }
}

}  // namespace

// pmap over several processes (JAX's global pmap axis) is refused; on one process's
// devices it runs as in one process (and the others, without a device, run nothing).
TEST(Distributed, PmapRunsOnLocalDevicesOnly) {
  auto f = [](const Array& r) { return psum(r, "i"); };
  Array x = iota({2, 3});
  Array want = sum(x, 0);
  Array y = pmap(f, {.axis_name = "i", .devices = local_devices()})(x);
  test::expect_close(stack({want, want}, 0), y, 1e-6, "pmap on local devices");
  if (process_count() == 1) return;
  EXPECT_HAS(error_of<ValueError>([&] { pmap(f, {.axis_name = "i"})(x); }),
             "[pmap] pmap over several processes is not supported");
  std::vector<Device> other = {devices()[0], devices()[7]};
  EXPECT_HAS(error_of<ValueError>([&] { pmap(f, {.axis_name = "i", .devices = other})(x); }),
             "[pmap] pmap runs on the devices of one process");
}

// Mesh::local_mesh / local_devices / is_multi_process, the addressable views of
// shardings and arrays, and create_hybrid_device_mesh.
// "minor 2x4" puts each process's devices in alternate columns: no block of its own.
bool has_local_block(const Layout& l) { return process_count() == 1 || l.name != "minor 2x4"; }

TEST(Distributed, LocalMeshesAndAddressableViews) {
  for (const auto& l : layouts_2d()) {
    const Mesh& m = l.mesh;
    EXPECT_EQ(m.is_multi_process(), process_count() > 1) << l.name;
    EXPECT_EQ(static_cast<int>(m.local_devices().size()), local_device_count()) << l.name;
    if (!has_local_block(l)) {
      EXPECT_HAS(error_of<ValueError>([&] { m.local_mesh(); }),
                 "devices connected to a single host must form a contiguous subcube");
      continue;
    }
    Mesh lm = m.local_mesh();
    EXPECT_EQ(lm.size(), local_device_count()) << l.name;
    EXPECT_EQ(lm.axis_names(), m.axis_names()) << l.name;
    for (const auto& d : lm.devices()) EXPECT_EQ(d.process_index(), process_index()) << l.name;
    NamedSharding s(m, P("a", "b"));
    EXPECT_EQ(s.is_fully_addressable(), process_count() == 1) << l.name;
    EXPECT_TRUE(s.has_addressable_devices()) << l.name;
    EXPECT_EQ(s.addressable_devices(), m.local_devices()) << l.name;
    EXPECT_EQ(s.addressable_devices_indices_map({8, 8}).size(), m.local_devices().size());
    Array x = device_put(iota({8, 8}), s);
    auto all = x.global_shards();
    ASSERT_EQ(all.size(), 8u) << l.name;
    int here = 0;
    for (const auto& sh : all) here += sh.data != nullptr;
    EXPECT_EQ(here, local_device_count()) << l.name;
    EXPECT_EQ(x.addressable_data(0).shape(), s.shard_shape({8, 8})) << l.name;
    EXPECT_FALSE(x.is_fully_replicated());
    EXPECT_TRUE(device_put(iota({8, 8}), NamedSharding(m, P())).is_fully_replicated());
  }
  EXPECT_HAS(error_of<IndexError>([] { iota({8}).addressable_data(99); }),
             "[addressable_data] index 99 is out of range");
  // Processes as granules, one per row: the default device order.
  auto hybrid =
      create_hybrid_device_mesh({1, local_device_count()}, {process_count(), 1}, {}, true);
  EXPECT_EQ(hybrid, devices());
  EXPECT_HAS(error_of<ValueError>([] {
               create_hybrid_device_mesh({1, 8}, {1, 1});
             }),
             "does not have attribute slice_index. See `process_is_granule` option");
  EXPECT_HAS(
      error_of<ValueError>([] {
        create_hybrid_device_mesh({1, local_device_count()}, {process_count() + 1, 1}, {}, true);
      }),
      "must equal the product of dcn_mesh_shape");
  if (process_count() == 1) return;
  // A 1-D mesh that interleaves processes has no local block (JAX's M16).
  std::vector<int> order;
  for (int i = 0; i < local_device_count(); ++i)
    for (int p = 0; p < process_count(); ++p) order.push_back(p * local_device_count() + i);
  EXPECT_HAS(error_of<ValueError>([&] { mesh_of(order, {8}, {"a"}).local_mesh(); }),
             "must form a contiguous subcube of the global device mesh");
}

// host_local_array_to_global_array and back: this process's piece of the global value
// (the block of its local mesh) becomes the global array, and the round trip keeps it.
TEST(Distributed, HostLocalArraysRoundTrip) {
  Array full = iota({8, 8});
  for (const auto& l : layouts_2d())
    for (const P& spec : {P("a", "b"), P("a"), P(nullptr, "b"), P()}) {
      if (!has_local_block(l)) continue;
      const std::string what = l.name + " " + spec.repr();
      Mesh lm = l.mesh.local_mesh();
      // This process's piece: the block its local mesh covers.
      NamedSharding gs(l.mesh, spec);
      auto idx = gs.devices_indices_map({8, 8});
      Shape lo{8, 8}, hi{0, 0};
      for (const auto& [d, ix] : idx) {
        if (d.process_index() != process_index()) continue;
        for (size_t k = 0; k < 2; ++k) {
          lo[k] = std::min(lo[k], ix[k].full ? 0 : ix[k].start);
          hi[k] = std::max(hi[k], ix[k].full ? 8 : ix[k].stop);
        }
      }
      Array piece = slice(full, lo, hi);
      Array g = multihost::host_local_array_to_global_array(piece, l.mesh, spec);
      EXPECT_EQ(g.shape(), (Shape{8, 8})) << what;
      test::expect_close(full, g, 0, what + " global");
      Array back = multihost::global_array_to_host_local_array(g, l.mesh, spec);
      EXPECT_EQ(back.shape(), piece.shape()) << what;
      EXPECT_TRUE(back.is_fully_addressable()) << what;
      EXPECT_EQ(*back.sharding().concrete_mesh(), lm) << what;
      EXPECT_EQ(back.to_vector<float>(), piece.to_vector<float>()) << what;
    }
  EXPECT_HAS(error_of<ValueError>([&] {
               multihost::host_local_array_to_global_array(full, layouts_2d()[0].mesh,
                                                           std::nullopt);
             }),
             "`None` is not a valid input to the pspecs argument");
}

// device_put of a process-local value onto a mesh with a device on every process checks
// that every process passed the same value (JAX's M37), instead of silently keeping
// each process's blocks of a different value.
TEST(Distributed, DevicePutOfDifferentValuesIsAnError) {
  const Mesh m = layouts_2d()[0].mesh;
  Array same = iota({8});
  test::expect_close(same, device_put(same, NamedSharding(m, P("a"))), 0, "same value");
  if (process_count() == 1) return;
  Array mine = iota({8}) + static_cast<double>(process_index());
  std::string e = error_of<AssertionError>([&] { device_put(mine, NamedSharding(m, P("a"))); });
  EXPECT_HAS(e, "[device_put] Array passed to device_put is not the same on each process");
  EXPECT_HAS(e, "(process 0)");
  multihost::sync_global_devices("after M37");  // still in step
}

namespace {

// JAX refuses device_put of a committed array onto devices of other processes (M38).
// Here an array committed to one device is global: every process names the same
// device, and the put moves its value across processes. Processes that name
// different devices of their own would make different transfers: before the first
// one, the processes compare what moves where (as for a lowered program), and each
// raises a typed error instead of waiting on a group the others never join. (The
// comparison is remembered by content: had process 0 made its move before, alone it
// would skip the comparison, and the others would wait for the timeout.)
TEST(Distributed, DevicePutOfACommittedArrayAcrossProcesses) {
  const Mesh m = layouts_2d()[0].mesh;
  if (process_count() > 1) {
    Array own = device_put(iota({8}), local_devices()[1]);
    std::string e =
        error_of<CommError>([&] { device_put(own, NamedSharding(m, P("a"))).block_until_ready(); });
    EXPECT_HAS(e, "[reshard] processes lowered different programs");
    EXPECT_HAS(e, "on 1`");
    multihost::sync_global_devices("after divergent device_put");  // still in step
  }
  Array on_one = device_put(iota({8}), devices()[1]);
  test::expect_close(iota({8}), device_put(on_one, NamedSharding(m, P("a"))), 0,
                     "one device to the mesh");
}

}  // namespace
