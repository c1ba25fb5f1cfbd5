// Records of the NumPy composites (roll, tile, repeat, triangles, diagonals, ...):
// each runs on sharded layouts it accepts and hits its refusal (E17 and friends).
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {
std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(nullptr, "x")}};
}
std::vector<std::vector<PartitionSpec>> specs2() {
  return {{P(), P()}, {P("x"), P("x")}, {P(nullptr, "y"), P(nullptr, "y")}, {P("x"), P()}};
}
}  // namespace

std::vector<Record> numpy_records() {
  std::vector<Record> r;
  auto add = [&](std::vector<std::string> prims, std::string name, std::vector<In> in,
                 std::function<Array(const std::vector<Array>&)> f,
                 std::vector<std::vector<PartitionSpec>> sp) {
    r.push_back(
        {std::move(prims), std::move(name), std::move(in), one(std::move(f)), std::move(sp)});
  };
  add(
      {"slice", "concatenate"}, "roll_axis1", {{{8, 4}}}, [](auto& a) { return roll(a[0], -3, 1); },
      specs());
  add(
      {"slice", "concatenate"}, "roll_two_axes", {{{8, 4}}},
      [](auto& a) {
        return roll(a[0], {2, 5}, {0, 1});
      },
      specs());
  add(
      {"slice", "concatenate", "reshape"}, "roll_flat", {{{8, 4}}},
      [](auto& a) { return roll(a[0], 5); }, specs());
  add(
      {"broadcast_in_dim", "reshape"}, "tile", {{{8, 4}}},
      [](auto& a) {
        return tile(a[0], {2, 1});
      },
      specs());
  add(
      {"broadcast_in_dim", "reshape"}, "tile_rank_up", {{{8, 4}}},
      [](auto& a) {
        return tile(a[0], {2, 1, 3});
      },
      specs());
  add({"broadcast_in_dim", "reshape"}, "repeat_uniform", {{{8, 4}}},
      [](auto& a) { return repeat(a[0], 2, 1); }, {{P()}, {P("x")}, {P(Axes{"x", "y"})}});
  add({"slice", "concatenate"}, "repeat_per_element", {{{8, 4}}},
      [](auto& a) {
        return repeat(a[0], {1, 0, 3, 3}, 1);
      },
      {{P()}, {P("x")}});
  add({"slice", "concatenate"}, "repeat_total_length", {{{8, 4}}},
      [](auto& a) {
        return repeat(a[0], {2, 1, 1, 1}, -1, 8);
      },
      {{P()}, {P("x")}});
  add(
      {"reshard"}, "repeat_out_sharding", {{{8, 4}}},
      [](auto& a) { return repeat(a[0], 2, 0, std::nullopt, P("x")); }, specs());
  add({"dynamic_slice", "concatenate"}, "roll_traced_shift", {{{8, 4}}, {{}, int32, Gen::Index}},
      [](auto& a) { return roll(a[0], a[1], {1}); }, {{P(), P()}, {P("x"), P()}});
  add({"reshape", "transpose"}, "reshape_order_f", {{{8, 4}}},
      [](auto& a) {
        return reshape(a[0], {4, 8}, Order::F);
      },
      {{P()}, {P(nullptr, "x")}});
  add({"broadcast_in_dim"}, "full_like_array_fill", {{{8, 4}}, {{}}},
      [](auto& a) { return full_like(a[0], a[1]); },
      {{P(), P()}, {P("x"), P()}, {P("x", "y"), P()}});
  add({"broadcast_in_dim", "reshape"}, "repeat_no_axis", {{{8, 4}}},
      [](auto& a) { return repeat(a[0], 2); }, {{P()}});
  add(
      {"reshard"}, "repeat_no_axis_out_sharding", {{{8, 4}}},
      [](auto& a) { return repeat(a[0], {3}, std::nullopt, std::nullopt, P("x")); }, specs());
  add(
      {"rev"}, "flip", {{{8, 4}}}, [](auto& a) { return flip(a[0], 1); }, specs());
  add(
      {"select_n", "iota"}, "triu", {{{8, 4}}}, [](auto& a) { return triu(a[0], 1); }, specs());
  add({"select_n", "iota"}, "tril_batched", {{{2, 4, 8}}}, [](auto& a) { return tril(a[0], -1); },
      {{P()}, {P("x")}, {P(nullptr, "x", "y")}, {P("x", nullptr, "y")}});
  add({"pad", "select_n"}, "diag_build", {{{8}}}, [](auto& a) { return diag(a[0], 2); },
      {{P()}, {P("x")}});
  add(
      {"select_n", "reduce_sum"}, "diag_take", {{{8, 4}}}, [](auto& a) { return diag(a[0], -1); },
      specs());
  add({"select_n", "reduce_sum"}, "diagonal_batched", {{{2, 8, 4}, int32, Gen::Int}},
      [](auto& a) { return diagonal(a[0], 1, 1, 2); },
      {{P()}, {P("x")}, {P(nullptr, "x")}, {P(nullptr, "x", "y")}});
  add(
      {"reduce_sum"}, "trace", {{{8, 4}}}, [](auto& a) { return trace(a[0]); }, specs());
  add({"max", "min"}, "clip", {{{8, 4}}, {{4}}}, [](auto& a) { return clip(a[0], a[1], 1.0); },
      {{P(), P()}, {P("x"), P()}, {P(nullptr, "y"), P("y")}});
  r.push_back({{"split", "squeeze"},
               "unstack",
               {{{8, 4}}},
               [](const std::vector<Array>& a) { return unstack(a[0], 1); },
               specs()});
  add(
      {"reshape"}, "ravel", {{{8, 4}}}, [](auto& a) { return ravel(a[0]); }, specs());
  add({"transpose"}, "swapaxes", {{{2, 8, 4}}}, [](auto& a) { return swapaxes(a[0], 0, 2); },
      {{P()}, {P("x")}, {P(nullptr, "x", "y")}});
  add({"transpose"}, "moveaxis", {{{2, 8, 4}}}, [](auto& a) { return moveaxis(a[0], 0, -1); },
      {{P()}, {P("x")}, {P(nullptr, "x", "y")}});
  r.push_back({{"broadcast_in_dim"},
               "meshgrid_xy",
               {{{8}}, {{4}}},
               [](const std::vector<Array>& a) {
                 return meshgrid({a[0], a[1]});
               },
               {{P(), P()}, {P("x"), P()}, {P("x"), P("y")}}});
  r.push_back({{"broadcast_in_dim"},
               "meshgrid_ij",
               {{{8}}, {{4}}},
               [](const std::vector<Array>& a) {
                 return meshgrid({a[0], a[1]}, "ij");
               },
               {{P(), P()}, {P("x"), P("y")}}});
  add({"mul"}, "outer", {{{8}}, {{4}}}, [](auto& a) { return outer(a[0], a[1]); },
      {{P(), P()}, {P("x"), P()}, {P("x"), P("y")}, {P("x"), P("x")}});
  add({"mul", "reshape"}, "kron", {{{4, 2}}, {{2, 4}}}, [](auto& a) { return kron(a[0], a[1]); },
      {{P(), P()}, {P("x"), P()}, {P(), P("x")}, {P(nullptr, "y"), P()}});
  add(
      {"le"}, "isclose", {{{8, 4}}, {{8, 4}}},
      [](auto& a) { return isclose(a[0], a[0] + where(a[1] > 0, 1e-6, 1.0), 1e-5, 1e-8, true); },
      specs2());
  add(
      {"reduce_and"}, "allclose", {{{8, 4}}, {{8, 4}}},
      [](auto& a) { return allclose(a[0], a[0] * 1.000001); }, specs2());
  r.push_back({{"select_n"},
               "nan_to_num",
               {{{8, 4}}},
               [](const std::vector<Array>& a) {
                 return std::vector<Array>{nan_to_num(log(a[0])), nan_to_num(divide(1.0, a[0])),
                                           nan_to_num(log(a[0]), 7.0, 1.0, -2.0)};
               },
               specs()});
  add(
      {"rem", "select_n"}, "remainder_f32", {{{8, 4}}, {{8, 4}, float32, Gen::Pos}},
      [](auto& a) { return remainder(a[0], a[1] * -1.0) + a[0] % a[1]; }, specs2());
  add(
      {"rem", "select_n"}, "remainder_floor_divide_i32",
      {{{8, 4}, int32, Gen::Int}, {{8, 4}, int32, Gen::Index}},
      [](auto& a) { return floor_divide(a[0], a[1] + 1) * 10 + a[0] % (a[1] - 3); }, specs2());
  return r;
}

static const RecordSet kSet(numpy_records);

}  // namespace rules
