// shard_map on Auto meshes and Explicit regions (issue 23 items 2-5; twins in
// cases_auto.py).
#include "ref.h"

using namespace tsr;

namespace {

// Item 2's program: out_specs P(None, 'y') needs the psum over 'x'.
auto psum_rows(const Mesh& m) {
  return shard_map([](const Array& b) { return psum(b, "x"); },
                   {.mesh = m, .in_specs = {P("x", "y")}, .out_specs = P(nullptr, "y")});
}

ref::Outs manual_to(AxisType t, bool to_auto) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, t);
  MeshScope s(m);
  Array xs = device_put(iota({4, 4}), P("x", "y"));
  auto body = [to_auto](const Array& b) {
    auto twice = [](const Array& u) { return u * 2.f; };
    if (to_auto) return auto_axes(twice, {.axes = {"x"}, .out_sharding = P()})(b);
    return explicit_axes(twice, {.axes = {"x"}, .in_sharding = P()})(b);
  };
  auto f = shard_map(body, {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}});
  return {jit(f)(xs)};
}

}  // namespace

REF_CASE(auto_smap_host_arg_jit) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  auto sm = psum_rows(m);
  Array x = iota({8, 8});
  return {sm(x), jit(sm)(x)};
}

REF_CASE(auto_smap_host_arg_grad) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  auto sm = psum_rows(m);
  Array x = iota({8, 8});
  auto loss = [&](const Array& a) { return sum(sm(a)); };
  auto [y, pull] = vjp(sm, x);
  return {grad(loss)(x), jit(grad(loss))(x), y, std::get<0>(pull(iota({4, 8})))};
}

REF_CASE(auto_smap_host_arg_vmap) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  auto sm = psum_rows(m);
  Array xs = iota({2, 8, 8});
  return {vmap(sm)(xs), jit(vmap(sm))(xs)};
}

REF_CASE(auto_smap_captured_host_jit) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  auto f = [m](const Array& a, const Array& k) {
    return shard_map([&](const Array& b) { return psum(b * k, "x"); },
                     {.mesh = m, .in_specs = {P("x")}, .out_specs = P()})(a);
  };
  Array x = iota({8, 4}), c = iota({4, 4}) * 0.5f;
  auto loss = [&](const Array& a, const Array& k) { return sum(f(a, k)); };
  auto [ga, gk] = jit(grad(loss, argnums<0, 1>))(x, c);
  return {jit(f)(x, c), ga, gk};
}

REF_CASE(auto_smap_out_specs_layout) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  MeshScope s(m);
  Array xs = device_put(iota({8, 8}), P("x", "y"));
  auto twice = shard_map([](const Array& b) { return b * 2.f; },
                         {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  auto rows =
      shard_map([](const Array& b) { return sin(b); }, {.in_specs = {P("x")}, .out_specs = P("x")});
  auto summed = shard_map([](const Array& b) { return psum(b, "x"); },
                          {.in_specs = {P("x", "y")}, .out_specs = P(nullptr, "y")});
  return {twice(xs), jit(twice)(xs), rows(xs), jit(rows)(xs), jit(summed)(xs)};
}

REF_CASE(auto_smap_block_shape_changes) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  MeshScope s(m);
  Array xs = device_put(iota({8, 8}), P("x", "y"));
  auto f = shard_map(
      [](const Array& b) {
        return sum(all_gather(b, "y", {.axis = 1, .tiled = true}), {1}, {.keepdims = true});
      },
      {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  return {f(xs), jit(f)(xs)};
}

REF_CASE(auto_smap_axis_index_groups) {
  Mesh m = ref::mesh({4}, {"x"}, AxisType::Auto);
  MeshScope s(m);
  Array xs = device_put(iota({8, 2}), P("x"));
  auto f = shard_map(
      [](const Array& b) {
        return psum(b, "x", {.axis_index_groups = {{0, 1}, {2, 3}}});
      },
      {.in_specs = {P("x")}, .out_specs = P("x"), .check_vma = false});
  return {f(xs), jit([&](const Array& v) { return exp(f(v) * 0.01f); })(xs)};
}

REF_CASE(auto_smap_grad_vmap_layout) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"}, AxisType::Auto);
  MeshScope s(m);
  Array xs = device_put(iota({8, 8}) / 64.f, P("x", "y"));
  auto sm = shard_map([](const Array& b) { return sin(b); },
                      {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  auto loss = [&](const Array& a) { return sum(sm(a)); };
  Array b3 = device_put(iota({2, 8, 8}) / 128.f, P());
  return {grad(loss)(xs), jit(grad(loss))(xs), vmap(sm)(b3), jit(vmap(sm))(b3)};
}

REF_CASE(auto_smap_mixed_mesh_layout) {
  Mesh m = make_mesh({2, 2}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  MeshScope s(m);
  Array xs = device_put(iota({8, 8}), P("x", "y"));
  auto f = shard_map([](const Array& b) { return b + 1.f; },
                     {.in_specs = {P("x", "y")}, .out_specs = P("x", "y")});
  return {f(xs), jit(f)(xs)};
}

REF_CASE(auto_explicit_axes_exit_open) {
  Mesh m = ref::mesh({4}, {"X"}, AxisType::Auto);
  MeshScope s(m);
  Array a = device_put(iota({4, 4}) / 16.f, P("X"));
  auto f = explicit_axes([](const Array& u) { return sin(u); }, {.in_sharding = P("X")});
  return {f(a), jit(f)(a)};
}

REF_CASE(auto_use_abstract_mesh_exit_open) {
  Mesh m = ref::mesh({4}, {"X"}, AxisType::Auto);
  AbstractMesh ex = m.abstract_mesh().update_axis_types({{"X", AxisType::Explicit}});
  MeshScope s(m);
  Array a = device_put(iota({4, 4}) / 16.f, P("X"));
  auto region = [ex](const Array& u) {
    Array y;
    {
      AbstractMeshScope in(ex);
      y = sin(reshard(u, P("X")));
    }
    return reshard(y, P());
  };
  return {jit(region)(a)};
}

REF_CASE(auto_axes_of_manual_axis) { return manual_to(AxisType::Auto, true); }

REF_CASE(explicit_axes_of_manual_axis) { return manual_to(AxisType::Explicit, false); }

REF_CASE(auto_axes_all_in_manual_body) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"});
  MeshScope s(m);
  Array xs = device_put(iota({4, 4}), P("x", "y"));
  auto body = auto_axes([](const Array& u) { return u * 2.f; }, {.out_sharding = P()});
  return {shard_map(body, {.in_specs = {P("x")}, .out_specs = P("x"), .axis_names = {"x"}})(xs)};
}
