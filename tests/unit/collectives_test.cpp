// Every collective against a plain loop over devices (issue 12 item 3): on meshes (2),
// (4), (8), (2,4), (2,2,2), over each single axis, every axis, and two axes in
// reverse mesh order (the group index is row-major in the order the names are
// given), for f32 and i32, eager and under jit. Each device's block is a slice of
// one host array; the loop builds each device's expected result from its group's
// blocks with single-device ops.
#include <gtest/gtest.h>

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
  std::function<Shape(int64_t n)> block;  // the input block for group size n
  std::function<Array(const Array& x, const AxisNames& axes, int64_t n)> op;
  // Device k's result from the group's blocks (in group order).
  std::function<Array(const std::vector<Array>& blocks, int64_t k)> loop;
  bool ints = true;  // also run on int32
};

using test::chunk;
using test::sum_of;

std::vector<Case> cases() {
  std::vector<Case> c;
  auto gather = [&](std::string name, int axis, bool tiled, bool inv, Shape blk) {
    c.push_back({name, [blk](int64_t) { return blk; },
                 [=](const Array& x, const AxisNames& a, int64_t) {
                   return all_gather(x, a, {.axis = axis, .tiled = tiled, .invariant = inv});
                 },
                 [=](const std::vector<Array>& bs, int64_t) {
                   int d = axis < 0 ? axis + bs[0].ndim() + (tiled ? 0 : 1) : axis;
                   return tiled ? concatenate(bs, d) : stack(bs, d);
                 }});
  };
  gather("all_gather_axis0", 0, false, false, {2, 3});
  gather("all_gather_axis1", 1, false, false, {2, 3});
  gather("all_gather_axis_neg1", -1, false, false, {2, 3});
  gather("all_gather_tiled_axis1", 1, true, false, {2, 3});
  gather("all_gather_invariant_tiled", 0, true, true, {2, 3});
  c.push_back({"psum_scatter_dim0",
               [](int64_t n) {
                 return Shape{n, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t) { return psum_scatter(x, a); },
               [](const std::vector<Array>& bs, int64_t k) { return sum_of(bs)[k]; }});
  c.push_back({"psum_scatter_dim1",
               [](int64_t n) {
                 return Shape{2, n, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t) {
                 return psum_scatter(x, a, {.scatter_dimension = 1});
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 return squeeze(chunk(sum_of(bs), 1, k, 1), 1);
               }});
  c.push_back({"psum_scatter_tiled_dim1",
               [](int64_t n) {
                 return Shape{2, 2 * n};
               },
               [](const Array& x, const AxisNames& a, int64_t) {
                 return psum_scatter(x, a, {.scatter_dimension = -1, .tiled = true});
               },
               [](const std::vector<Array>& bs, int64_t k) { return chunk(sum_of(bs), 1, k, 2); }});
  c.push_back({"ppermute_shift",
               [](int64_t) {
                 return Shape{2, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t n) {
                 std::vector<std::pair<int, int>> p;
                 for (int i = 0; i < n; ++i) p.emplace_back(i, static_cast<int>((i + 1) % n));
                 return ppermute(x, a, p);
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 int64_t n = static_cast<int64_t>(bs.size());
                 return bs[static_cast<size_t>((k + n - 1) % n)];
               }});
  c.push_back({"ppermute_partial",
               [](int64_t) {
                 return Shape{2, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t n) {
                 return ppermute(x, a, {{0, static_cast<int>(n - 1)}});
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 return k == static_cast<int64_t>(bs.size()) - 1 ? bs[0] : zeros_like(bs[0]);
               }});
  c.push_back({"pshuffle_reverse", [](int64_t) { return Shape{3}; },
               [](const Array& x, const AxisNames& a, int64_t n) {
                 std::vector<int> p;
                 for (int i = 0; i < n; ++i) p.push_back(static_cast<int>(n - 1 - i));
                 return pshuffle(x, a, p);
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 return bs[bs.size() - 1 - static_cast<size_t>(k)];
               }});
  c.push_back({"all_to_all_split0_concat0",
               [](int64_t n) {
                 return Shape{n, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t) { return all_to_all(x, a, 0, 0); },
               [](const std::vector<Array>& bs, int64_t k) {
                 std::vector<Array> got;
                 for (const auto& b : bs) got.push_back(b[k]);
                 return stack(got, 0);
               }});
  c.push_back({"all_to_all_split0_concat1",
               [](int64_t n) {
                 return Shape{n, 2, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t) { return all_to_all(x, a, 0, 1); },
               [](const std::vector<Array>& bs, int64_t k) {
                 std::vector<Array> got;
                 for (const auto& b : bs) got.push_back(b[k]);
                 return stack(got, 1);
               }});
  c.push_back(
      {"all_to_all_tiled_split1_concat0",
       [](int64_t n) {
         return Shape{2, 2 * n};
       },
       [](const Array& x, const AxisNames& a, int64_t) { return all_to_all(x, a, 1, 0, true); },
       [](const std::vector<Array>& bs, int64_t k) {
         std::vector<Array> got;
         for (const auto& b : bs) got.push_back(chunk(b, 1, k, 2));
         return concatenate(got, 0);
       }});
  c.push_back({"pbroadcast_last",
               [](int64_t) {
                 return Shape{2, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t n) {
                 return pbroadcast(x, a, static_cast<int>(n - 1));
               },
               [](const std::vector<Array>& bs, int64_t) { return bs.back(); }});
  c.push_back({"psum",
               [](int64_t) {
                 return Shape{2, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t) { return psum(x, a); },
               [](const std::vector<Array>& bs, int64_t) { return sum_of(bs); }});
  c.push_back({"pmax",
               [](int64_t) {
                 return Shape{2, 3};
               },
               [](const Array& x, const AxisNames& a, int64_t) { return pmax(x, a); },
               [](const std::vector<Array>& bs, int64_t) { return max(stack(bs, 0), 0); }});
  c.push_back({"axis_index_plus_block", [](int64_t) { return Shape{2}; },
               [](const Array& x, const AxisNames& a, int64_t) {
                 return x + axis_index(a).astype(x.dtype());
               },
               [](const std::vector<Array>& bs, int64_t k) {
                 return bs[static_cast<size_t>(k)] +
                        full({}, static_cast<double>(k), bs[0].dtype());
               }});
  return c;
}

struct MeshSpec {
  std::vector<int> sizes;
  std::vector<std::string> names;
};

struct Param {
  MeshSpec mesh;
  std::vector<std::string> axes;  // the collective's axes, in the order given
  size_t which;                   // index into cases()
  DType dtype;
  bool jit;
  std::string name;
};
// ctest lists a case by its name, not a byte dump.
void PrintTo(const Param& p, std::ostream* os) { *os << p.name; }

std::vector<Param> params() {
  std::vector<MeshSpec> meshes = {
      {{2}, {"a"}}, {{4}, {"a"}}, {{8}, {"a"}}, {{2, 4}, {"a", "b"}}, {{2, 2, 2}, {"a", "b", "c"}}};
  std::vector<Param> out;
  auto all = cases();
  for (const auto& m : meshes) {
    std::vector<std::vector<std::string>> choices;
    for (const auto& a : m.names) choices.push_back({a});
    if (m.names.size() > 1) {
      choices.push_back(m.names);
      choices.push_back({m.names[1], m.names[0]});
    }
    std::string mname = "mesh";
    for (int s : m.sizes) mname += "_" + std::to_string(s);
    for (const auto& ax : choices)
      for (size_t w = 0; w < all.size(); ++w)
        for (DType dt : {float32, int32})
          for (bool j : {false, true}) {
            if (dt == int32 && !all[w].ints) continue;
            std::string an;
            for (const auto& a : ax) an += a;
            out.push_back({m, ax, w, dt, j,
                           all[w].name + "_" + mname + "_over_" + an + "_" +
                               (dt == float32 ? "f32" : "i32") + (j ? "_jit" : "_eager")});
          }
  }
  return out;
}

class Collectives : public ::testing::TestWithParam<Param> {};

TEST_P(Collectives, MatchALoopOverDevices) {
  const Param& p = GetParam();
  const Case c = cases()[p.which];
  Mesh mesh = make_mesh(p.mesh.sizes, p.mesh.names);
  MeshScope scope(mesh);
  const int devs = static_cast<int>(mesh.size());
  int64_t n = 1;
  for (const auto& a : p.axes) n *= mesh.abstract_mesh().axis_size(a);
  Shape blk = c.block(n);
  Shape global = blk;
  global[0] *= devs;
  int64_t count = 1;
  for (auto d : global) count *= d;
  Array host = reshape(arange(0, static_cast<double>(count)) - 7.0, global).astype(p.dtype);
  PartitionSpec all_axes = P(Axes(p.mesh.names));
  Array x = device_put(host, all_axes);
  auto f = shard_map([&](const Array& b) { return c.op(b, p.axes, n); },
                     {.in_specs = all_axes, .out_specs = all_axes});
  Array y = p.jit ? jit(f)(x) : f(x);

  // The loop: device f's block is rows [f*b0, (f+1)*b0) of host; its group is the
  // devices with f's coordinates on the unnamed axes, ranked row-major over p.axes.
  const auto& sizes = p.mesh.sizes;
  auto coord = [&](int dev, size_t axis) {
    int stride = 1;
    for (size_t a = sizes.size(); a-- > axis + 1;) stride *= sizes[a];
    return (dev / stride) % sizes[axis];
  };
  auto axis_pos = [&](const std::string& a) {
    return static_cast<size_t>(std::find(p.mesh.names.begin(), p.mesh.names.end(), a) -
                               p.mesh.names.begin());
  };
  auto rank_of = [&](int dev) {
    int64_t r = 0;
    for (const auto& a : p.axes) r = r * sizes[axis_pos(a)] + coord(dev, axis_pos(a));
    return r;
  };
  std::vector<Array> want;
  for (int dev = 0; dev < devs; ++dev) {
    std::vector<Array> blocks(static_cast<size_t>(n));
    for (int g = 0; g < devs; ++g) {
      bool same = true;
      for (size_t a = 0; a < sizes.size(); ++a)
        if (std::find(p.axes.begin(), p.axes.end(), p.mesh.names[a]) == p.axes.end() &&
            coord(g, a) != coord(dev, a))
          same = false;
      if (same) blocks[static_cast<size_t>(rank_of(g))] = chunk(host, 0, g, blk[0]);
    }
    want.push_back(c.loop(blocks, rank_of(dev)).astype(p.dtype));
  }
  Array expect = concatenate(want, 0);
  ASSERT_EQ(expect.shape(), y.shape()) << p.name;
  EXPECT_EQ(expect.dtype(), y.dtype()) << p.name;
  EXPECT_EQ(test::values<double>(expect), test::values<double>(y)) << p.name;
}

INSTANTIATE_TEST_SUITE_P(Table, Collectives, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& i) { return i.param.name; });

}  // namespace
