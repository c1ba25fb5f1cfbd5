// gather and the scatter family (spec §12.13–§12.14), through the NumPy-style
// front ends users call. Index inputs hold 0..2, so updates collide.
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

using Fn = std::function<Array(const std::vector<Array>&)>;

Record rec(std::vector<std::string> prims, std::string name, std::vector<In> in, Fn f,
           std::vector<std::vector<PartitionSpec>> specs) {
  return {std::move(prims), std::move(name), std::move(in), one(std::move(f)), std::move(specs)};
}

const In kX{{8, 4}};
const In kIdx4{{4}, int32, Gen::Index};

}  // namespace

std::vector<Record> indexing_records() {
  std::vector<Record> r;
  const std::vector<std::vector<PartitionSpec>> xi = {
      {P(), P()},
      {P("x"), P()},
      {P(nullptr, "y"), P()},
      {P(), P("x")},
      {P(nullptr, "y"), P("x")},
      {P("x", "y"), P("y")},
  };
  r.push_back(rec(
      {"gather"}, "take_rows", {kX, kIdx4},
      [](const std::vector<Array>& a) { return take(a[0], a[1], 0); }, xi));
  r.push_back(rec(
      {"gather"}, "index_columns", {kX, kIdx4},
      [](const std::vector<Array>& a) {
        return a[0][{all, a[1]}];
      },
      xi));
  r.push_back(rec(
      {"gather"}, "index_columns_out_sharding", {kX, kIdx4},
      [](const std::vector<Array>& a) {
        return a[0].at(all, a[1]).get({.out_sharding = P(nullptr, "x")});
      },
      xi));
  r.push_back(rec(
      {"gather"}, "index_pair_strided", {kX, kIdx4},
      [](const std::vector<Array>& a) {
        return a[0][{a[1], Slice{std::nullopt, std::nullopt, 2}}];
      },
      xi));
  r.push_back(rec({"gather"}, "take_along_axis_1", {kX, {{8, 4}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) { return take_along_axis(a[0], a[1], 1); },
                  {{P(), P()},
                   {P("x"), P("x")},
                   {P("x"), P()},
                   {P(), P("x")},
                   {P(nullptr, "y"), P()},
                   {P("x", "y"), P("x", "y")}}));
  r.push_back(rec({"gather"}, "embedding_lookup", {{{16, 8}}, {{4, 2}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) { return a[0].at(a[1]).get(); },
                  {{P(), P()}, {P(nullptr, "y"), P()}, {P("x"), P()}, {P(), P("x")}}));
  r.push_back(rec(
      {"gather"}, "gather_clip_mode", {kX, kIdx4},
      [](const std::vector<Array>& a) {
        return a[0].at(a[1] * 3 - 2).get({.mode = IndexMode::Clip});
      },
      xi));

  const std::vector<std::vector<PartitionSpec>> xiu = {
      {P(), P(), P()},
      {P("x"), P(), P()},
      {P("x"), P("x"), P("x")},
      {P(nullptr, "y"), P(), P(nullptr, "y")},
      {P(), P("x"), P()},
      {P(), P(), P("x")},
      {P("x", "y"), P("x"), P()},
  };
  const In kRows{{4, 4}};
  r.push_back(rec(
      {"scatter"}, "set_rows", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).set(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter_add"}, "add_columns", {kX, kIdx4, {{8, 4}}},
      [](const std::vector<Array>& a) { return a[0].at(all, a[1]).add(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter_sub"}, "subtract_rows", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).subtract(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter_mul"}, "mul_rows", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).mul(a[2]); }, xiu));
  // The result laid out unlike the operand: the jvp's x * dP must follow the output
  // (found by the fuzzer).
  r.push_back(rec(
      {"scatter_mul"}, "mul_rows_out_sharding", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).mul(a[2], {.out_sharding = P("x")}); },
      {{P(), P(), P()}, {P(nullptr, "x"), P(), P()}, {P(nullptr, "y"), P("x"), P()}}));
  r.push_back(rec(
      {"scatter_min"}, "min_rows", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).min(a[2]); }, xiu));
  r.push_back(rec({"scatter_max"}, "max_elements", {kX, kIdx4, {{4}}},
                  [](const std::vector<Array>& a) { return a[0].at(a[1], a[1]).max(a[2]); },
                  {{P(), P(), P()},
                   {P("x"), P(), P()},
                   {P("x"), P("x"), P("x")},
                   {P("x", "y"), P("y"), P("y")},
                   {P(), P("x"), P()}}));
  r.push_back(rec({"scatter"}, "set_static_row", {kX, {{4}}},
                  [](const std::vector<Array>& a) { return a[0].at(-3).set(a[1]); },
                  {{P(), P()}, {P("x"), P()}, {P("x", "y"), P("y")}, {P(nullptr, "y"), P("x")}}));
  // A set into an empty operand drops every update; its transpose reads back through a
  // gather whose window is wider than the size-0 dim (found by the fuzzer).
  r.push_back(rec({"scatter"}, "set_into_empty", {{{0, 4}}, {{}, int32, Gen::Index}, {{4}}},
                  [](const std::vector<Array>& a) { return a[0].at(a[1]).set(a[2]); },
                  {{P(), P(), P()}, {P("x"), P(), P()}, {P(nullptr, "y"), P(), P("y")}}));
  r.push_back(rec(
      {"scatter"}, "set_out_sharding", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).set(a[2], {.out_sharding = P("x")}); },
      xiu));
  r.push_back(rec({"scatter_add"}, "bincount", {{{8}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) { return bincount(a[0], 4); },
                  {{P()}, {P("x")}, {P("y")}}));
  auto all_unreduced = [] {
    const auto& n = get_abstract_mesh().axis_names();
    return PartitionSpec({}, std::set<std::string>(n.begin(), n.end()));
  };
  r.push_back(rec({"scatter_add", "reduce_sum"}, "bincount_unreduced", {{{16}, int32, Gen::Index}},
                  [all_unreduced](const std::vector<Array>& a) {
                    return reshard(bincount(a[0], 4, {}, all_unreduced()), P());
                  },
                  {{P()}, {P("x")}, {P(Axes{"x", "y"})}}));
  r.push_back(rec(
      {"scatter_add"}, "segment_sum", {{{16, 4}}, {{16}, int32, Gen::Index}},
      [](const std::vector<Array>& a) { return segment_sum(a[0], a[1], 4, {.out_sharding = P()}); },
      {{P(), P()}, {P("x"), P("x")}, {P("x", "y"), P("x")}}));
  r.push_back(rec({"scatter_max"}, "segment_max", {{{16, 4}}, {{16}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) {
                    return segment_max(a[0], a[1], 4, {.out_sharding = P(nullptr, "x")});
                  },
                  {{P(), P()}, {P("x"), P("x")}}));
  r.back().grad = Record::Grad::NoFD;
  r.back().grad_why =
      "segment 3 is empty and holds -inf, where finite differences are NaN (the jvp gives 0, "
      "as JAX's); segment_max_all_filled checks finite differences";
  r.push_back(rec({"scatter_add", "reduce_sum"}, "segment_sum_unreduced",
                  {{{16, 4}}, {{16}, int32, Gen::Index}},
                  [all_unreduced](const std::vector<Array>& a) {
                    return reshard(segment_sum(a[0], a[1], 4, {.out_sharding = all_unreduced()}),
                                   P());
                  },
                  {{P(), P()}, {P("x"), P("x")}}));
  r.push_back(rec(
      {"scatter_mul"}, "at_divide", {kX, kIdx4},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).divide(2.0, {.out_sharding = P()}); },
      {{P(), P()}, {P("x"), P()}}));
  // Autodiff coverage: out-of-bounds reads and writes, batching dims, windows,
  // structural ties (an element meeting copies of itself: the split tangents sum
  // to its own, so finite differences still hold) and multiplied duplicates.
  r.push_back(rec(
      {"gather"}, "get_fill_out_of_bounds", {kX, kIdx4},
      [](const std::vector<Array>& a) {
        return a[0].at(a[1] * 3 - 2).get({.mode = IndexMode::FillOrDrop, .fill_value = 0.0});
      },
      xi));
  r.push_back(rec(
      {"scatter_add"}, "add_rows_out_of_bounds", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) { return a[0].at(a[1] * 3 - 2).add(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter"}, "set_rows_clip", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) {
        return a[0].at(a[1] * 3 - 2).set(a[2], {.mode = IndexMode::Clip});
      },
      xiu));
  r.push_back(rec(
      {"scatter"}, "set_columns_window", {kX, kIdx4, {{8, 4}}},
      [](const std::vector<Array>& a) { return a[0].at(all, a[1]).set(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter_mul"}, "mul_columns_window", {kX, kIdx4, {{8, 4}, float32, Gen::Pos}},
      [](const std::vector<Array>& a) { return a[0].at(all, a[1]).mul(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter_mul"}, "divide_by_traced_rows", {kX, kIdx4, {{4, 4}, float32, Gen::Pos}},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).divide(a[2]); }, xiu));
  r.push_back(rec(
      {"scatter_max"}, "max_rows_tied_updates", {kX, kIdx4, kRows},
      [](const std::vector<Array>& a) {
        return a[0].at(concatenate({a[1], a[1]})).max(concatenate({a[2], a[2]}));
      },
      xiu));
  r.push_back(rec(
      {"scatter_max", "gather"}, "max_rows_tied_operand", {kX, kIdx4},
      [](const std::vector<Array>& a) { return a[0].at(a[1]).max(a[0][a[1]]); }, xi));
  r.push_back(rec(
      {"scatter_min"}, "min_columns_tied_updates", {kX, kIdx4, {{8, 4}}},
      [](const std::vector<Array>& a) {
        return a[0].at(all, concatenate({a[1], a[1]})).min(concatenate({a[2], a[2]}, 1));
      },
      xiu));
  {
    // lax.gather with a batching dim and a 2-wide window along the indexed dim.
    GatherDimensionNumbers dn{.offset_dims = {2, 3},
                              .collapsed_slice_dims = {},
                              .start_index_map = {1},
                              .operand_batching_dims = {0},
                              .start_indices_batching_dims = {0}};
    r.push_back(rec({"gather"}, "gather_batching_window",
                    {{{4, 8, 6}}, {{4, 3, 1}, int32, Gen::Index}},
                    [dn](const std::vector<Array>& a) {
                      return gather(a[0], a[1], dn, {1, 2, 6});
                    },
                    {{P(), P()},
                     {P("x"), P("x")},
                     {P("x"), P()},
                     {P(nullptr, nullptr, "y"), P()},
                     {P(nullptr, "x"), P("y")}}));
  }
  {
    // scatter / scatter_add with a batching dim: each row of the operand takes its
    // row of updates, with duplicate indices inside a row.
    ScatterDimensionNumbers dn{.update_window_dims = {},
                               .inserted_window_dims = {1},
                               .scatter_dims_to_operand_dims = {1},
                               .operand_batching_dims = {0},
                               .scatter_indices_batching_dims = {0}};
    const std::vector<std::vector<PartitionSpec>> bs = {{P(), P(), P()},
                                                        {P("x"), P("x"), P("x")},
                                                        {P("x"), P(), P()},
                                                        {P(nullptr, "y"), P(), P()},
                                                        {P(), P("x"), P("x")}};
    for (ScatterKind k : {ScatterKind::Add, ScatterKind::Set, ScatterKind::Max}) {
      const char* pn = k == ScatterKind::Add   ? "scatter_add"
                       : k == ScatterKind::Set ? "scatter"
                                               : "scatter_max";
      r.push_back(rec(
          {pn}, std::string(pn) + "_batching", {{{4, 8}}, {{4, 3, 1}, int32, Gen::Index}, {{4, 3}}},
          [dn, k](const std::vector<Array>& a) { return scatter(k, a[0], a[1], a[2], dn); }, bs));
    }
  }
  r.push_back(rec({"scatter_max"}, "segment_max_all_filled", {{{16, 4}}, {{16}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) { return segment_max(a[0], a[1], 3); },
                  {{P(), P()}, {P("x"), P("x")}, {P(nullptr, "y"), P()}}));
  r.push_back(rec(
      {"scatter_min"}, "segment_min_all_filled", {{{16, 4}}, {{16}, int32, Gen::Index}},
      [](const std::vector<Array>& a) { return segment_min(a[0], a[1], 3, {.out_sharding = P()}); },
      {{P(), P()}, {P("x"), P("x")}}));
  r.push_back(rec({"scatter_mul"}, "segment_prod",
                  {{{16, 4}, float32, Gen::Small}, {{16}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) {
                    return segment_prod(a[0], a[1], 4, {.out_sharding = P()});
                  },
                  {{P(), P()}, {P("x"), P("x")}, {P(nullptr, "y"), P()}}));
  r.push_back(rec({"scatter_add"}, "bincount_weights", {{{8}, int32, Gen::Index}, {{8}}},
                  [](const std::vector<Array>& a) { return bincount(a[0], 4, a[1]); },
                  {{P(), P()}, {P("x"), P("x")}, {P(), P("x")}}));
  r.push_back(rec({"eq"}, "one_hot", {{{8}, int32, Gen::Index}},
                  [](const std::vector<Array>& a) { return one_hot(a[0], 4); }, {{P()}, {P("x")}}));
  return r;
}

static const RecordSet kSet(indexing_records);

}  // namespace rules
