// axis_index_groups (manual-spmd §4): each grouped collective against a plain loop over
// devices, on meshes (4), (8) and (2,4), over one axis, both axes and both axes in
// reverse order, with contiguous, strided and unordered groups; eager and under jit;
// inside shard_map(check_vma=false), shard_map(check_vma=true) (the block-moving
// collectives) and pmap. The loop ranks each device in its group by its position in
// the group's list and builds the expected result from the group's blocks with
// single-device ops. Then the refusals (vma checking, vmap, the invariant gather), the
// bad-group texts, the printed parameters and lowered groups, and gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "support/arrays.h"
#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

struct Case {
  std::string name;
  std::function<Shape(int64_t g)> block;  // the input block for group size g
  std::function<Array(const Array& x, const AxisNames& axes, const AxisIndexGroups& groups)> op;
  // Device k's result from its group's blocks (in group-list order).
  std::function<Array(const std::vector<Array>& blocks, int64_t k)> loop;
  bool ints = false;         // also run on int32
  bool legacy_only = false;  // psum & co: groups only without vma checking
};

using test::chunk;
using test::sum_of;

std::vector<Case> cases() {
  std::vector<Case> c;
  auto reduce = [&](std::string name, bool ints,
                    std::function<Array(const Array&, const AxisNames&, const PsumOptions&)> op,
                    std::function<Array(const std::vector<Array>&)> loop) {
    c.push_back({name,
                 [](int64_t) {
                   return Shape{2, 3};
                 },
                 [op](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                   return op(x, a, {.axis_index_groups = g});
                 },
                 [loop](const std::vector<Array>& bs, int64_t) { return loop(bs); }, ints, true});
  };
  reduce(
      "psum", true,
      [](const Array& x, const AxisNames& a, const PsumOptions& o) { return psum(x, a, o); },
      sum_of);
  reduce(
      "pmean", false,
      [](const Array& x, const AxisNames& a, const PsumOptions& o) { return pmean(x, a, o); },
      [](const std::vector<Array>& bs) { return mean(stack(bs, 0), 0); });
  reduce(
      "pmax", true,
      [](const Array& x, const AxisNames& a, const PsumOptions& o) { return pmax(x, a, o); },
      [](const std::vector<Array>& bs) { return max(stack(bs, 0), 0); });
  reduce(
      "pmin", false,
      [](const Array& x, const AxisNames& a, const PsumOptions& o) { return pmin(x, a, o); },
      [](const std::vector<Array>& bs) { return min(stack(bs, 0), 0); });
  auto gather = [&](std::string name, int axis, bool tiled, Shape blk, bool ints) {
    c.push_back({name, [blk](int64_t) { return blk; },
                 [=](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                   return all_gather(x, a, {.axis = axis, .tiled = tiled, .axis_index_groups = g});
                 },
                 [=](const std::vector<Array>& bs, int64_t) {
                   int d = axis < 0 ? axis + bs[0].ndim() + (tiled ? 0 : 1) : axis;
                   return tiled ? concatenate(bs, d) : stack(bs, d);
                 },
                 ints});
  };
  gather("all_gather_axis0", 0, false, {2, 3}, true);
  gather("all_gather_axis_neg1", -1, false, {2, 3}, false);
  gather("all_gather_tiled_axis1", 1, true, {2, 3}, false);
  c.push_back({"psum_scatter_dim0",
               [](int64_t g) {
                 return Shape{g, 3};
               },
               [](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                 return psum_scatter(x, a, {.axis_index_groups = g});
               },
               [](const std::vector<Array>& bs, int64_t k) { return sum_of(bs)[k]; }, true});
  c.push_back({"psum_scatter_tiled_dim1",
               [](int64_t g) {
                 return Shape{2, 2 * g};
               },
               [](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                 return psum_scatter(
                     x, a, {.scatter_dimension = -1, .tiled = true, .axis_index_groups = g});
               },
               [](const std::vector<Array>& bs, int64_t k) { return chunk(sum_of(bs), 1, k, 2); }});
  c.push_back({"all_to_all_split0_concat0",
               [](int64_t g) {
                 return Shape{g, 3};
               },
               [](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                 return all_to_all(x, a, 0, 0, {.axis_index_groups = g});
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 std::vector<Array> got;
                 for (const auto& b : bs) got.push_back(b[k]);
                 return stack(got, 0);
               },
               true});
  c.push_back({"all_to_all_split0_concat1",
               [](int64_t g) {
                 return Shape{g, 2, 3};
               },
               [](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                 return all_to_all(x, a, 0, 1, {.axis_index_groups = g});
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 std::vector<Array> got;
                 for (const auto& b : bs) got.push_back(b[k]);
                 return stack(got, 1);
               }});
  c.push_back({"all_to_all_tiled_split1_concat0",
               [](int64_t g) {
                 return Shape{2, 2 * g};
               },
               [](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                 return all_to_all(x, a, 1, 0, {.tiled = true, .axis_index_groups = g});
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 std::vector<Array> got;
                 for (const auto& b : bs) got.push_back(chunk(b, 1, k, 2));
                 return concatenate(got, 0);
               }});
  c.push_back({"pswapaxes_axis1",
               [](int64_t g) {
                 return Shape{3, g};
               },
               [](const Array& x, const AxisNames& a, const AxisIndexGroups& g) {
                 return pswapaxes(x, a, 1, g);
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 std::vector<Array> got;
                 for (const auto& b : bs) got.push_back(squeeze(chunk(b, 1, k, 1), 1));
                 return stack(got, 1);
               }});
  return c;
}

// Groups of each combined axis size: contiguous, strided, unordered.
std::vector<AxisIndexGroups> groups_of(int64_t n) {
  switch (n) {
    case 2:
      return {{{1, 0}}, {{0}, {1}}};
    case 4:
      return {{{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}, {{3, 1}, {2, 0}}};
    default:
      return {{{0, 1, 2, 3}, {4, 5, 6, 7}},
              {{0, 2, 4, 6}, {1, 3, 5, 7}},
              {{6, 1}, {0, 7}, {2, 5}, {4, 3}}};
  }
}

std::string groups_name(const AxisIndexGroups& g) {
  std::string s = "g";
  for (const auto& grp : g) {
    s += "_";
    for (int i : grp) s += std::to_string(i);
  }
  return s;
}

enum class Ctx { Unchecked, Checked, Pmap };

struct Param {
  std::vector<int> sizes;
  std::vector<std::string> names;
  std::vector<std::string> axes;  // the collective's axes, in the order given
  AxisIndexGroups groups;
  size_t which;  // index into cases()
  DType dtype;
  bool jit;
  Ctx ctx;
  std::string name;
};
// ctest lists a case by its name, not a byte dump.
void PrintTo(const Param& p, std::ostream* os) { *os << p.name; }

std::vector<Param> params() {
  struct M {
    std::vector<int> sizes;
    std::vector<std::string> names;
  };
  std::vector<M> meshes = {{{4}, {"a"}}, {{8}, {"a"}}, {{2, 4}, {"a", "b"}}};
  auto all = cases();
  std::vector<Param> out;
  for (const auto& m : meshes) {
    std::vector<std::vector<std::string>> choices;
    for (const auto& a : m.names) choices.push_back({a});
    if (m.names.size() > 1) {
      choices.push_back(m.names);
      choices.push_back({m.names[1], m.names[0]});
    }
    std::string mname = "mesh";
    for (int s : m.sizes) mname += "_" + std::to_string(s);
    for (const auto& ax : choices) {
      int64_t n = 1;
      for (const auto& a : ax)
        n *= m.sizes[static_cast<size_t>(std::find(m.names.begin(), m.names.end(), a) -
                                         m.names.begin())];
      std::string an;
      for (const auto& a : ax) an += a;
      for (const auto& g : groups_of(n))
        for (size_t w = 0; w < all.size(); ++w)
          for (Ctx ctx : {Ctx::Unchecked, Ctx::Checked, Ctx::Pmap}) {
            if (ctx == Ctx::Checked && all[w].legacy_only) continue;
            if (ctx == Ctx::Pmap && m.sizes.size() != 1) continue;  // pmap is 1-D
            for (DType dt : {float32, int32})
              for (bool j : {false, true}) {
                if (dt == int32 && !all[w].ints) continue;
                const char* cn = ctx == Ctx::Unchecked ? "_unchecked"
                                 : ctx == Ctx::Checked ? "_checked"
                                                       : "_pmap";
                out.push_back({m.sizes, m.names, ax, g, w, dt, j, ctx,
                               all[w].name + "_" + mname + "_over_" + an + "_" + groups_name(g) +
                                   cn + (dt == float32 ? "_f32" : "_i32") +
                                   (j ? "_jit" : "_eager")});
              }
          }
    }
  }
  return out;
}

class CollectiveGroups : public ::testing::TestWithParam<Param> {};

TEST_P(CollectiveGroups, MatchALoopOverDevices) {
  const Param& p = GetParam();
  const Case c = cases()[p.which];
  const auto& sizes = p.sizes;
  int devs = 1;
  for (int s : sizes) devs *= s;
  const int64_t gsize = static_cast<int64_t>(p.groups[0].size());
  Shape blk = c.block(gsize);
  int64_t per = 1;
  for (auto d : blk) per *= d;
  // Device d's block is blocks[d]: rows of one host array.
  Shape global = blk;
  global.insert(global.begin(), devs);
  Array host = reshape(arange(0, static_cast<double>(per * devs)) - 7.0, global).astype(p.dtype);
  std::vector<Array> blocks;
  for (int d = 0; d < devs; ++d) blocks.push_back(host[d]);

  auto op = [&](const Array& b) { return c.op(b, p.axes, p.groups); };
  Array y;
  if (p.ctx == Ctx::Pmap) {
    std::vector<Device> ds = devices();
    ds.resize(static_cast<size_t>(devs));
    auto f = pmap(op, {.axis_name = p.axes[0], .devices = ds});
    y = p.jit ? jit(f)(host) : f(host);
  } else {
    Mesh mesh = make_mesh(sizes, p.names);
    MeshScope scope(mesh);
    Shape flat = blk;
    flat[0] *= devs;
    PartitionSpec all_axes = P(Axes(p.names));
    Array x = device_put(reshape(host, flat), all_axes);
    auto f = shard_map(
        op, {.in_specs = all_axes, .out_specs = all_axes, .check_vma = p.ctx == Ctx::Checked});
    y = p.jit ? jit(f)(x) : f(x);
  }

  // The loop: device d's group is the devices with d's coordinates on the unnamed
  // axes whose combined (row-major over p.axes) index is in d's listed group.
  auto coord = [&](int dev, size_t axis) {
    int stride = 1;
    for (size_t a = sizes.size(); a-- > axis + 1;) stride *= sizes[a];
    return (dev / stride) % sizes[axis];
  };
  auto axis_pos = [&](const std::string& a) {
    return static_cast<size_t>(std::find(p.names.begin(), p.names.end(), a) - p.names.begin());
  };
  auto index_of = [&](int dev) {
    int r = 0;
    for (const auto& a : p.axes) r = r * sizes[axis_pos(a)] + coord(dev, axis_pos(a));
    return r;
  };
  auto find_in = [&](int r) {  // (group, position)
    for (size_t k = 0; k < p.groups.size(); ++k)
      for (size_t j = 0; j < p.groups[k].size(); ++j)
        if (p.groups[k][j] == r) return std::make_pair(k, static_cast<int64_t>(j));
    return std::make_pair(size_t{0}, int64_t{-1});
  };
  std::vector<Array> want;
  for (int dev = 0; dev < devs; ++dev) {
    auto [grp, k] = find_in(index_of(dev));
    std::vector<Array> bs(p.groups[grp].size());
    for (int g = 0; g < devs; ++g) {
      bool same = true;
      for (size_t a = 0; a < sizes.size(); ++a)
        if (std::find(p.axes.begin(), p.axes.end(), p.names[a]) == p.axes.end() &&
            coord(g, a) != coord(dev, a))
          same = false;
      auto [g2, j] = find_in(index_of(g));
      if (same && g2 == grp) bs[static_cast<size_t>(j)] = blocks[static_cast<size_t>(g)];
    }
    Array r = c.loop(bs, k);
    want.push_back(c.name == "pmean" ? r : r.astype(p.dtype));
  }
  Array expect = p.ctx == Ctx::Pmap ? stack(want, 0) : concatenate(want, 0);
  ASSERT_EQ(expect.shape(), y.shape()) << p.name;
  EXPECT_EQ(expect.dtype(), y.dtype()) << p.name;
  auto a = test::values<double>(expect), b = test::values<double>(y);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << p.name << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(Table, CollectiveGroups, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& i) { return i.param.name; });

// ---- refusals and error texts ----------------------------------------------------------

Array iota_f(const Shape& s) { return test::ramp(s, 0.25, -1.0); }

// Runs body on mesh (4) ('a') over a (4, 4) input split P('a') (blocks (1, 4)).
Array run4(const std::function<Array(const Array&)>& body, bool check_vma) {
  Mesh mesh = make_mesh({4}, {"a"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({4, 4}), P("a"));
  return shard_map(body, {.in_specs = P("a"), .out_specs = P("a"), .check_vma = check_vma})(x);
}

const AxisIndexGroups kPairs = {{0, 1}, {2, 3}};

TEST(CollectiveGroupsErrors, ReductionsWithGroupsNeedCheckVmaFalse) {
  using R = std::function<Array(const Array&, const AxisNames&, const PsumOptions&)>;
  std::vector<std::pair<std::string, R>> ops = {
      {"psum",
       [](const Array& x, const AxisNames& a, const PsumOptions& o) { return psum(x, a, o); }},
      {"pmean",
       [](const Array& x, const AxisNames& a, const PsumOptions& o) { return pmean(x, a, o); }},
      {"pmax",
       [](const Array& x, const AxisNames& a, const PsumOptions& o) { return pmax(x, a, o); }},
      {"pmin",
       [](const Array& x, const AxisNames& a, const PsumOptions& o) { return pmin(x, a, o); }}};
  for (const auto& [name, op] : ops) {
    std::string e = error_of<NotImplementedError>([&, op = op] {
      run4([&](const Array& b) { return op(b, "a", {.axis_index_groups = kPairs}); }, true);
    });
    const std::string reduced = name == "pmean" ? "psum" : name;
    EXPECT_HAS(e, "[" + reduced + "] " + reduced +
                      " with axis_index_groups is not implemented when vma is checked");
    EXPECT_HAS(e, "Got axis_index_groups=((0, 1), (2, 3))");
    EXPECT_HAS(e, "check_vma = false");
  }
  // Under jit too (the rule raises while tracing).
  Mesh mesh = make_mesh({4}, {"a"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({4, 4}), P("a"));
  auto f = shard_map([](const Array& b) { return psum(b, "a", {.axis_index_groups = kPairs}); },
                     {.in_specs = P("a"), .out_specs = P()});
  EXPECT_HAS(error_of<NotImplementedError>([&] { jit(f)(x); }), "when vma is checked");
}

TEST(CollectiveGroupsErrors, BadGroupsTexts) {
  using G = std::function<Array(const Array&, const AxisIndexGroups&)>;
  std::vector<std::tuple<std::string, G, bool>> ops = {
      {"psum",
       [](const Array& b, const AxisIndexGroups& g) {
         return psum(b, "a", {.axis_index_groups = g});
       },
       false},
      {"pmax",
       [](const Array& b, const AxisIndexGroups& g) {
         return pmax(b, "a", {.axis_index_groups = g});
       },
       false},
      {"all_gather",
       [](const Array& b, const AxisIndexGroups& g) {
         return all_gather(b, "a", {.tiled = true, .axis_index_groups = g});
       },
       true},
      {"psum_scatter",
       [](const Array& b, const AxisIndexGroups& g) {
         return psum_scatter(b, "a",
                             {.scatter_dimension = 1, .tiled = true, .axis_index_groups = g});
       },
       true},
      {"all_to_all",
       [](const Array& b, const AxisIndexGroups& g) {
         return all_to_all(b, "a", 1, 1, {.tiled = true, .axis_index_groups = g});
       },
       true}};
  const std::string cover = "axis_index_groups must cover all indices exactly once";
  for (const auto& [name, op, checked] : ops) {
    auto err = [&, op = op, checked = checked](const AxisIndexGroups& g) {
      return error_of<ValueError>([&] { run4([&](const Array& b) { return op(b, g); }, checked); });
    };
    std::string missing = err({{0, 1}, {2}});
    EXPECT_HAS(missing, "[" + name + "] " + cover);
    EXPECT_HAS(missing,
               "Got axis_index_groups=((0, 1), (2,)) for axes ('a',) of size 4 (index 3 "
               "is missing); expected each index of 0..3 in exactly one group.");
    std::string twice = err({{0, 1}, {1, 2}, {3, 0}});
    EXPECT_HAS(twice, cover);
    EXPECT_HAS(twice, "(index 1 appears twice)");
    std::string range = err({{0, 1}, {2, 4}});
    EXPECT_HAS(range, cover);
    EXPECT_HAS(range, "(index 4 is out of range)");
    std::string unequal = err({{0}, {1, 2, 3}});
    EXPECT_HAS(unequal, "[" + name +
                            "] axis_index_groups must all be the same size. Got "
                            "axis_index_groups=((0,), (1, 2, 3)) for axes ('a',) of size 4 (groups "
                            "of 1 and 3 indices); expected one size for every group");
    EXPECT_HAS(unequal, "Split the indices into groups of equal size.");
  }
}

TEST(CollectiveGroupsErrors, GroupSizeSetsTheShapeChecks) {
  // Untiled psum_scatter / all_to_all need the split dimension to equal the group size.
  std::string e = error_of<ValueError>([] {
    run4(
        [](const Array& b) {
          return psum_scatter(reshape(b, {4}), "a", {.axis_index_groups = kPairs});
        },
        true);
  });
  EXPECT_HAS(e, "reduce_scatter operand scatter dimension size 4 must match shard count 2");
  e = error_of<ValueError>([] {
    run4(
        [](const Array& b) {
          return all_to_all(reshape(b, {4}), "a", 0, 0, {.axis_index_groups = kPairs});
        },
        true);
  });
  EXPECT_HAS(e, "but they are 2 and 4 respectively");
}

TEST(CollectiveGroupsErrors, InvariantGatherAndVmapAxesRefuseGroups) {
  std::string e = error_of<NotImplementedError>([] {
    run4(
        [](const Array& b) {
          return all_gather(b, "a",
                            {.tiled = true, .invariant = true, .axis_index_groups = kPairs});
        },
        true);
  });
  EXPECT_HAS(e, "[all_gather] all_gather_invariant does not take axis_index_groups");
  // Over a vmap's axis_name (manual-spmd §6.2).
  Array x = iota_f({4, 4});
  const std::string vm = "axis_index_groups not supported in vmap collectives";
  auto under_vmap = [&](std::function<Array(const Array&)> f) {
    return error_of<NotImplementedError>([&] { vmap(f, {.axis_name = "i"})(x); });
  };
  EXPECT_HAS(under_vmap([](const Array& r) { return psum(r, "i", {.axis_index_groups = kPairs}); }),
             "[psum] " + vm);
  EXPECT_HAS(
      under_vmap([](const Array& r) { return pmean(r, "i", {.axis_index_groups = kPairs}); }), vm);
  EXPECT_HAS(
      under_vmap([](const Array& r) { return all_gather(r, "i", {.axis_index_groups = kPairs}); }),
      "[all_gather] " + vm + ". Got all_gather over the vmap axis 'i'");
  EXPECT_HAS(under_vmap([](const Array& r) {
               return psum_scatter(r, "i", {.tiled = true, .axis_index_groups = kPairs});
             }),
             "[psum_scatter] " + vm);
  EXPECT_HAS(under_vmap([](const Array& r) {
               return all_to_all(r, "i", 0, 0, {.tiled = true, .axis_index_groups = kPairs});
             }),
             "[all_to_all] " + vm);
}

// ---- printing and lowering -------------------------------------------------------------

TEST(CollectiveGroupsPrinting, ParametersAndLoweredGroups) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array x = device_put(iota_f({8, 8}), P("x", "y"));
  const AxisIndexGroups strided = {{0, 2}, {1, 3}};
  auto f = shard_map(
      [&](const Array& b) {
        Array g = all_gather(b, "y", {.axis_index_groups = strided});
        Array s = psum_scatter(g, "y", {.axis_index_groups = strided});
        Array t = all_to_all(s, "y", 1, 1, {.tiled = true, .axis_index_groups = {{3, 0}, {1, 2}}});
        return psum(t, "y", {.axis_index_groups = kPairs});
      },
      {.in_specs = P("x", "y"), .out_specs = P("x", "y"), .check_vma = false});
  std::string j = make_jaxpr(f, x);
  for (const char* want :
       {"all_gather[axes=('y',) axis_index_groups=((0, 2), (1, 3)) axis=0 tiled=False]",
        "reduce_scatter[axes=('y',) axis_index_groups=((0, 2), (1, 3)) scatter_dimension=0 "
        "tiled=False]",
        "all_to_all[axes=('y',) axis_index_groups=((3, 0), (1, 2)) split_axis=1 concat_axis=1 "
        "tiled=True]",
        "psum[axes=('y',) axis_index_groups=((0, 1), (2, 3))]"})
    EXPECT_HAS(j, want);
  std::string local = jit(f).lower(x).local;
  for (const char* want : {"all_gather in 4 groups of 2: {0,2} {1,3} {4,6} {5,7}",
                           "all_to_all in 4 groups of 2: {1,2} {3,0} {5,6} {7,4}",
                           "all_reduce in 4 groups of 2: {0,1} {2,3} {4,5} {6,7}"})
    EXPECT_HAS(local, want);
  // Groups take part in equality: the same op with other groups is another program.
  auto h = [&](const AxisIndexGroups& g) {
    return shard_map([&](const Array& b) { return psum(b, "y", {.axis_index_groups = g}); },
                     {.in_specs = P("x", "y"), .out_specs = P("x", "y"), .check_vma = false})(x);
  };
  EXPECT_NE(test::values<double>(h(kPairs)), test::values<double>(h(strided)));
}

// ---- composition: vmap without a name keeps the groups ---------------------------------

TEST(CollectiveGroupsVmap, VmapOfPmapAndShardMapKeepsTheGroups) {
  // vmap over dim 0 of a pmap over dim 1: each of the 3 slices is one pmap.
  Array x = iota_f({3, 4, 2});
  std::vector<Device> ds = devices();
  ds.resize(4);
  auto pm = pmap(
      [](const Array& r) {
        return psum(r, "i", {.axis_index_groups = {{0, 3}, {1, 2}}});
      },
      {.axis_name = "i", .devices = ds});
  Array got = vmap(pm)(x);
  std::vector<Array> want;
  for (int64_t i = 0; i < 3; ++i) want.push_back(pm(x[i]));
  Array w = stack(want, 0);
  ASSERT_EQ(w.shape(), got.shape());
  EXPECT_EQ(test::values<double>(w), test::values<double>(got));
  // The loop's own value: rows 0 and 3 hold the sum of rows 0 and 3.
  auto s = test::values<double>(pm(x[0]));
  auto r = test::values<double>(x[0]);
  EXPECT_DOUBLE_EQ(s[0], r[0] + r[6]);
  EXPECT_DOUBLE_EQ(s[2], r[2] + r[4]);

  Mesh mesh = make_mesh({4}, {"a"});
  MeshScope scope(mesh);
  auto sm = shard_map(
      [](const Array& b) {
        return all_gather(b, "a", {.tiled = true, .axis_index_groups = {{0, 2}, {1, 3}}});
      },
      {.in_specs = P("a"), .out_specs = P("a")});
  Array z = iota_f({3, 8, 2});
  Array got2 = vmap(sm)(device_put(z, P(nullptr, "a")));
  std::vector<Array> want2;
  for (int64_t i = 0; i < 3; ++i) want2.push_back(sm(device_put(z[i], P("a"))));
  Array w2 = stack(want2, 0);
  ASSERT_EQ(w2.shape(), got2.shape());
  EXPECT_EQ(test::values<double>(w2), test::values<double>(got2));
}

// ---- gradients -------------------------------------------------------------------------

// On mesh (2, 4) with blocks (4, 2): L(x) = sum_d <w_d, y_d> where y_d is the sum of
// the blocks of d's group over 'y' (groups {{0,2},{1,3}}), so dL/dx_j is the sum of the
// weights of j's group.
void expect_group_sum_gradient(const std::function<Array(const Array&)>& body, bool check_vma) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope(mesh);
  Array xh = iota_f({8, 8});
  Array wh = cos(iota_f({8, 8}) * 1.3);
  Array x = device_put(xh, P("x", "y"));
  Array w = device_put(wh, P("x", "y"));
  auto sm =
      shard_map(body, {.in_specs = P("x", "y"), .out_specs = P("x", "y"), .check_vma = check_vma});
  auto loss = [&](const Array& v) { return sum(sm(v) * w); };
  // Expected: block (i, j) of the gradient is w's block (i, j) + w's block (i, partner(j)).
  std::vector<Array> rows;
  for (int i = 0; i < 2; ++i) {
    std::vector<Array> cols;
    for (int j = 0; j < 4; ++j) {
      int partner = j ^ 2;  // {0,2}, {1,3}
      cols.push_back(chunk(chunk(wh, 0, i, 4), 1, j, 2) + chunk(chunk(wh, 0, i, 4), 1, partner, 2));
    }
    rows.push_back(concatenate(cols, 1));
  }
  Array want = concatenate(rows, 0);
  for (bool use_jit : {false, true}) {
    Array g = use_jit ? jit(grad(loss))(x) : grad(loss)(x);
    ASSERT_EQ(want.shape(), g.shape());
    auto a = test::values<double>(want), b = test::values<double>(g);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << "at " << i;
  }
}

const AxisIndexGroups kStrided = {{0, 2}, {1, 3}};

TEST(CollectiveGroupsAd, GradThroughGroupedScatterThenGather) {
  for (bool check_vma : {true, false})
    expect_group_sum_gradient(
        [](const Array& b) {
          Array s = psum_scatter(b, "y", {.tiled = true, .axis_index_groups = kStrided});
          return all_gather(s, "y", {.tiled = true, .axis_index_groups = kStrided});
        },
        check_vma);
  // Untiled along dimension 1: each device keeps one column of the group sum.
  expect_group_sum_gradient(
      [](const Array& b) {
        Array s = psum_scatter(b, "y", {.scatter_dimension = 1, .axis_index_groups = kStrided});
        return all_gather(s, "y", {.axis = 1, .axis_index_groups = kStrided});
      },
      true);
}

TEST(CollectiveGroupsAd, GradThroughLegacyGroupedPsum) {
  // Legacy psum transposes to psum with the same groups.
  expect_group_sum_gradient(
      [](const Array& b) { return psum(b, "y", {.axis_index_groups = kStrided}); }, false);
}

TEST(CollectiveGroupsAd, GradOfPmapWithGroupedPmean) {
  // L = sum_k <w_k, pmean_G(x)_k>: dL/dx_j = (sum of w over j's group) / 2.
  Array x = iota_f({4, 3});
  Array w = cos(iota_f({4, 3}));
  std::vector<Device> ds = devices();
  ds.resize(4);
  auto pm = pmap(
      [](const Array& r) {
        return pmean(r, "i", {.axis_index_groups = {{0, 1}, {2, 3}}});
      },
      {.axis_name = "i", .devices = ds});
  auto loss = [&](const Array& v) { return sum(pm(v) * w); };
  Array g = grad(loss)(x);
  std::vector<Array> want;
  for (int64_t k = 0; k < 4; ++k) want.push_back((w[k] + w[k ^ 1]) / 2.0);
  auto a = test::values<double>(stack(want, 0)), b = test::values<double>(g);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << "at " << i;
}

}  // namespace
