#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {
std::vector<std::vector<PartitionSpec>> s2() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
}
}  // namespace

std::vector<Record> shape_records() {
  std::vector<Record> r;
  auto add = [&](std::vector<std::string> prims, std::string name, std::vector<In> in,
                 std::function<Array(const std::vector<Array>&)> f,
                 std::vector<std::vector<PartitionSpec>> specs) {
    r.push_back(
        {std::move(prims), std::move(name), std::move(in), one(std::move(f)), std::move(specs)});
  };
  add({"reshape"}, "reshape_merge", {{{8, 4}}}, [](auto& a) { return reshape(a[0], {32}); },
      {{P()}, {P("x")}});
  add({"reshape"}, "reshape_split", {{{32}}},
      [](auto& a) {
        return reshape(a[0], {8, 4});
      },
      {{P()}, {P("x")}, {P(Axes{"x", "y"})}});
  add({"reshape"}, "reshape_split_minor", {{{16, 4}}},
      [](auto& a) {
        return reshape(a[0], {2, 8, 4});
      },
      {{P()}, {P("x")}, {P("x", "y")}});
  add({"reshape"}, "reshape_singleton", {{{8, 1, 4}}},
      [](auto& a) {
        return reshape(a[0], {8, 4, 1});
      },
      {{P()}, {P("x")}, {P("x", nullptr, "y")}});
  add({"reshape"}, "reshape_out_sharding", {{{8, 4}}},
      [](auto& a) {
        return reshape(a[0], {4, 8}, P(nullptr, "x"));
      },
      {{P()}, {P("x")}, {P("x", "y")}});
  add({"reshape"}, "reshape_merge_two_sharded", {{{2, 4}}},
      [](auto& a) { return reshape(a[0], {8}); }, {{P("x", "y")}});
  // The sharding_constraint primitive binds on Auto axes only: run it inside
  // auto_axes (which also puts auto_axes through jit, grad and vmap).
  add(
      {"sharding_constraint"}, "wsc_in_auto_axes", {{{8, 4}}},
      [](auto& a) {
        auto f = [](const Array& x) {
          return with_sharding_constraint(sin(x), P(UNCONSTRAINED, UNCONSTRAINED));
        };
        return auto_axes(f, {.out_sharding = typeof(a[0]).sharding.spec()})(a[0]);
      },
      s2());
  r.back().grad = Record::Grad::Skip;
  r.back().grad_why =
      "the grad check's inputs are host values (no mesh): auto_axes leaves them where they are "
      "while their tangents are typed on the mesh, and the two meet inside the body; "
      "tests/unit/auto_propagation_test.cpp differentiates through auto_axes and wsc on meshes";
  add(
      {"transpose"}, "transpose", {{{8, 4}}}, [](auto& a) { return transpose(a[0]); }, s2());
  add({"transpose"}, "transpose3", {{{2, 8, 4}}},
      [](auto& a) {
        return transpose(a[0], {1, 2, 0});
      },
      {{P()}, {P(nullptr, "x")}, {P(nullptr, "x", "y")}});
  add({"squeeze"}, "squeeze", {{{8, 1, 4}}}, [](auto& a) { return squeeze(a[0], 1); },
      {{P()}, {P("x")}, {P("x", nullptr, "y")}});
  add(
      {"broadcast_in_dim"}, "expand_dims", {{{8, 4}}}, [](auto& a) { return expand_dims(a[0], 1); },
      s2());
  add({"broadcast_in_dim"}, "broadcast_to", {{{4}}},
      [](auto& a) {
        return broadcast_to(a[0], {8, 4});
      },
      {{P()}, {P("y")}});
  add({"broadcast_in_dim"}, "broadcast_to_out_sharding", {{{4}}},
      [](auto& a) {
        return broadcast_to(a[0], {8, 4}, P("x"));
      },
      {{P()}});
  add({"slice"}, "slice", {{{8, 4}}},
      [](auto& a) {
        return slice(a[0], {2, 0}, {6, 4});
      },
      {{P()}, {P("x")}, {P(nullptr, "y")}});
  add({"slice"}, "slice_strided", {{{8, 4}}},
      [](auto& a) {
        return slice(a[0], {0, 1}, {8, 4}, {2, 2});
      },
      {{P()}, {P("x")}});
  add({"dynamic_slice"}, "dynamic_slice", {{{8, 4}}},
      [](auto& a) {
        return dynamic_slice(a[0], {3, 0}, {4, 4});
      },
      {{P()}, {P("x")}, {P(nullptr, "y")}});
  add({"dynamic_slice"}, "dynamic_slice_clamped", {{{8, 4}}, {{}, int32, Gen::Index}},
      [](auto& a) {
        return dynamic_slice(a[0], {a[1] + 6, 1}, {4, 2});
      },
      {{P(), P()}});
  add({"dynamic_update_slice"}, "dynamic_update_slice", {{{8, 4}}, {{2, 4}}},
      [](auto& a) {
        return dynamic_update_slice(a[0], a[1], {5, 0});
      },
      {{P(), P()}, {P(nullptr, "y"), P(nullptr, "y")}});
  add({"pad"}, "pad", {{{8, 4}}},
      [](auto& a) {
        return pad(a[0], 0.5, {{2, 2, 0}, {1, 0, 1}});
      },
      {{P()}, {P("x")}});
  add({"pad"}, "pad_negative", {{{8, 4}}},
      [](auto& a) {
        return pad(a[0], 0.0, {{-2, 2, 0}, {0, 0, 0}});
      },
      {{P()}, {P(nullptr, "y")}});
  add({"concatenate"}, "concatenate", {{{8, 4}}, {{8, 4}}},
      [](auto& a) {
        return concatenate({a[0], a[1]}, 1);
      },
      {{P(), P()}, {P("x"), P("x")}, {P("x", "y"), P("x", "y")}});
  add({"concatenate", "broadcast_in_dim"}, "stack", {{{8, 4}}, {{8, 4}}},
      [](auto& a) {
        return stack({a[0], a[1]}, 0);
      },
      {{P(), P()}, {P("x"), P("x")}});
  r.push_back({{"split"},
               "split",
               {{{8, 4}}},
               [](const std::vector<Array>& a) { return split(a[0], 2, 0); },
               {{P()}, {P("x")}, {P(nullptr, "y")}}});
  add(
      {"rev"}, "rev", {{{8, 4}}},
      [](auto& a) {
        return rev(a[0], {0, 1});
      },
      s2());
  add(
      {"reshard"}, "reshard", {{{8, 4}}}, [](auto& a) { return reshard(a[0], P(nullptr, "x")); },
      s2());
  add(
      {"reshard"}, "with_sharding_constraint", {{{8, 4}}},
      [](auto& a) { return with_sharding_constraint(sin(a[0]), typeof(a[0]).sharding); }, s2());
  return r;
}

static const RecordSet kSet(shape_records);

}  // namespace rules
