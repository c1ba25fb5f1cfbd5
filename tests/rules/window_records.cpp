// Records of reduce_window (sum / max / min) and pooling: windows over unsharded and
// sharded dimensions (spec §12.15: the result keeps the operand's sharding when the
// output size divides; E9 otherwise: tests/unit/window_test.cpp), strides, SAME / VALID / explicit
// padding, base and window dilation; max pooling's derivative runs select_and_gather_add and
// select_and_scatter_add.
#include <limits>

#include "rules/record.h"
#include "tsr/prims/windowed.h"
#include "tsr/window.h"

using namespace tsr;

namespace rules {
namespace {
std::vector<std::vector<PartitionSpec>> specs4() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(nullptr, nullptr, "x")}};
}
// A record value x + a fixed ramp: the driver's values repeat with period 17, so
// windows would hold tied maxima, where a max pool's derivative is not defined.
Array distinct(const Array& x) {
  int64_t n = 1;
  for (int64_t d : x.shape()) n *= d;
  Array k = reshape(astype(broadcasted_iota(int32, {n}, 0), x.dtype()), x.shape());
  return add(x, multiply(k, 0.001));
}
}  // namespace

std::vector<Record> window_records() {
  std::vector<Record> r;
  auto add1 = [&](std::vector<std::string> prims, std::string name, In in,
                  std::function<Array(const Array&)> f,
                  std::vector<std::vector<PartitionSpec>> specs = specs4()) {
    r.push_back({std::move(prims),
                 std::move(name),
                 {in},
                 one([f](const std::vector<Array>& a) { return f(a[0]); }),
                 std::move(specs)});
  };
  const double inf = std::numeric_limits<double>::infinity();
  // Overlapping windows over a sharded dimension exchange halos on Explicit axes (a
  // shard_map with ppermutes, design 0021); on Auto axes the primitive's layout
  // gathers the dimension instead.
  const std::string halo_auto =
      "halo exchange runs on Explicit axes only: on Auto axes the windowed dimension is "
      "gathered";
  auto mark_halo = [&] { r.back().auto_comm_why = halo_auto; };
  // NHWC images, 8 x 8 x 8 x 4.
  const In img{{8, 8, 8, 4}};
  add1({"reduce_window_max", "select_and_gather_add", "select_and_scatter_add"},
       "max_pool_2x2_stride2", img, [](const Array& x) {
         return max_pool(distinct(x), {2, 2}, {2, 2});
       });
  add1({"reduce_window_max"}, "max_pool_3x3_same", img, [](const Array& x) {
    return max_pool(distinct(x), {3, 3}, {1, 1}, "SAME");
  });
  mark_halo();
  add1({"reduce_window_min"}, "min_pool_3x3_stride2_same", img, [](const Array& x) {
    return min_pool(distinct(x), {3, 3}, {2, 2}, "SAME");
  });
  mark_halo();
  add1({"reduce_window_sum"}, "avg_pool_2x2", img, [](const Array& x) {
    return avg_pool(x, {2, 2}, {2, 2});
  });
  add1({"reduce_window_sum"}, "avg_pool_3x3_same_exclude_pad", img, [](const Array& x) {
    return avg_pool(x, {3, 3}, {1, 1}, "SAME", false);
  });
  mark_halo();
  add1({"reduce_window_sum"}, "avg_pool_explicit_padding", img, [](const Array& x) {
    return avg_pool(x, {2, 3}, {2, 1}, Padding{{1, 1}, {0, 2}});
  });
  mark_halo();
  add1({"reduce_window_max"}, "max_pool_unbatched", {{8, 8, 4}},
       [](const Array& x) {
         return max_pool(distinct(x), {2, 2}, {2, 2});
       },
       {{P()}, {P("x")}, {P(nullptr, "y")}});
  // lax.reduce_window directly: dilations, an init that is not the identity.
  add1({"reduce_window_sum"}, "reduce_window_sum_dilated", {{8, 16}},
       [](const Array& x) {
         return reduce_window(x, 0.0, WindowReducer::add, {2, 3},
                              {.window_strides = {2, 1},
                               .padding = Padding{{0, 0}, {1, 2}},
                               .base_dilation = {1, 2},
                               .window_dilation = {1, 2}});
       },
       {{P()}, {P("x")}, {P(nullptr, "y")}, {P("x", "y")}});
  mark_halo();
  add1({"reduce_window_max"}, "reduce_window_max_window_dilation", {{8, 16}},
       [=](const Array& x) {
         return reduce_window(
             distinct(x), -inf, WindowReducer::max, {1, 3},
             {.window_strides = {1, 2}, .padding = "SAME", .window_dilation = {1, 2}});
       },
       {{P()}, {P("x")}, {P(nullptr, "y")}});
  mark_halo();
  add1({"reduce_window_sum"}, "reduce_window_sum_init_one_padded", {{8, 8}},
       [](const Array& x) {
         return reduce_window(x, 1.0, WindowReducer::add, {3, 3}, {.padding = "SAME"});
       },
       {{P()}, {P("x")}});
  mark_halo();
  add1({"reduce_window_max"}, "reduce_window_max_init_above", {{8, 8}},
       [](const Array& x) {
         return reduce_window(x, 0.5, WindowReducer::max, {2, 2});
       },
       {{P()}, {P("x")}});
  r.back().grad = Record::Grad::NoFD;
  r.back().grad_why = "max with the init value: a kink where an element equals it";
  add1({"reduce_window_max"}, "reduce_window_max_int", {{8, 8}, int32, Gen::Int},
       [=](const Array& x) {
         return reduce_window(x, -inf, WindowReducer::max, {2, 2});
       },
       {{P()}, {P("x")}, {P(nullptr, "y")}});
  add1({"reduce_window_sum"}, "reduce_window_sum_int", {{8, 8}, int32, Gen::Int},
       [](const Array& x) {
         return reduce_window(x, 0, WindowReducer::add, {2, 2}, {.window_strides = {2, 2}});
       },
       {{P()}, {P("x")}, {P("x", "y")}});
  // The pooling-gradient primitives on their own (max pooling's jvp and vjp reach
  // them; here their own jvp, transpose and batching rules run too).
  const prim::Window w2{{2, 2}, {2, 2}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1}};
  const prim::Window w3{{3, 1}, {1, 1}, {{1, 1}, {0, 0}}, {1, 1}, {1, 1}};
  r.push_back({{"select_and_gather_add"},
               "select_and_gather_add",
               {{{8, 8}}, {{8, 8}}},
               one([=](const std::vector<Array>& a) {
                 return detail::bind1(
                     std::make_shared<prim::SelectAndGatherAdd>(prim::WindowOp::Max, w3),
                     {a[0], distinct(a[1])});
               }),
               {{P(), P()}, {P(nullptr, "y"), P(nullptr, "y")}, {P("x"), P("x")}}});
  r.back().auto_comm_why = halo_auto;
  r.push_back({{"select_and_scatter_add"},
               "select_and_scatter_add",
               {{{4, 4}}, {{8, 8}}},
               one([=](const std::vector<Array>& a) {
                 return detail::bind1(
                     std::make_shared<prim::SelectAndScatterAdd>(prim::WindowOp::Min, w2),
                     {a[0], distinct(a[1])});
               }),
               {{P(), P()}, {P("x"), P("x")}, {P(nullptr, "y"), P(nullptr, "y")}}});
  return r;
}

static const RecordSet kSet(window_records);

}  // namespace rules
