// General manual-SPMD and transform programs (twins in cases_general.py).
#include "ref.h"

using namespace tsr;

namespace {
Array ramp(const Shape& s) { return iota(s) * 0.5 - 1.0; }
}  // namespace

REF_CASE(smap_psum_sum) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return psum(sum(b), "x"); },
                     {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(ramp({8}), P("x")))};
}

REF_CASE(smap_types_in_body) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        ref::note_type(b);
        Array c = ref::note_type(b * 2.0);
        Array d = ref::note_type(psum(c, "x"));
        return ref::note_type(all_gather(d, "y", {.tiled = true}));
      },
      {.in_specs = P("x", "y"), .out_specs = P("y")});
  return {f(device_put(ramp({4, 4}), P("x", "y")))};
}

REF_CASE(smap_grad_invariant_input) {
  // manual-spmd §5.5: the pvary of w transposes into a psum.
  Mesh m = ref::mesh({2}, {"batch"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& w, const Array& d) {
        return grad([&](const Array& v) { return psum(sum((v * v + 1.0) * d), "batch"); })(w);
      },
      {.in_specs = {P(), P("batch")}, .out_specs = P()});
  return {f(device_put(array({1.5f}), P()), device_put(array({0.f, 1.f}), P("batch")))};
}

REF_CASE(vmap_psum_grad_neg) {
  auto g = vmap(grad([](const Array& x) { return -psum(x, "i"); }),
                {.out_axes = none, .axis_name = "i"});
  return {g(ones({5}))};
}

// ---- collectives in shard_map bodies (manual-spmd §4) --------------------------------

REF_CASE(smap_pmean) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return pmean(b, "x"); },
                     {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(ramp({8, 2}), P("x")))};
}

REF_CASE(smap_psum_of_invariant) {
  // §9.3: psum of a value invariant over the axis is x * size (implicit pvary first).
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return psum(psum(b, "x"), "x"); },
                     {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(ramp({4}), P("x")))};
}

REF_CASE(smap_all_gather_stacked) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return ref::note_type(all_gather(b, "x")); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({8}), P("x")))};
}

REF_CASE(smap_all_gather_invariant_out) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        return ref::note_type(all_gather(b, "x", {.axis = 0, .tiled = true, .invariant = true}));
      },
      {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(ramp({8}), P("x")))};
}

REF_CASE(smap_all_gather_to_replicated_refused) {
  // §9.4: all_gather's result is typed varying, so out_specs P() fails the check.
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return all_gather(b, "x", {.tiled = true}); },
                     {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(ramp({8}), P("x")))};
}

REF_CASE(smap_psum_scatter_tiled) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return psum_scatter(b, "x", {.tiled = true}); },
                     {.in_specs = P(nullptr, "x"), .out_specs = P("x")});
  return {f(device_put(ramp({4, 4}), P(nullptr, "x")))};
}

REF_CASE(smap_psum_scatter_untiled_size_error) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return psum_scatter(b, "x"); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({12}), P("x")))};
}

REF_CASE(smap_ppermute_ring) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, "x", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({8}), P("x")))};
}

REF_CASE(smap_ppermute_partial_zeros) {
  // Devices that are no destination receive zeros (§4.5).
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, "x", {{0, 2}, {1, 3}});
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({8}) + 1.0, P("x")))};
}

REF_CASE(smap_ppermute_duplicate_dest_error) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        return ppermute(b, "x", {{0, 1}, {2, 1}});
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({8}), P("x")))};
}

REF_CASE(smap_all_to_all) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return all_to_all(b, "x", 1, 0, {.tiled = true}); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({4, 4}), P("x")))};
}

REF_CASE(smap_axis_index_2d) {
  Mesh m = ref::mesh({4, 2}, {"x", "y"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        return b * 0.0 +
               ref::note_type(axis_index(std::vector<std::string>{"x", "y"})).astype(float32);
      },
      {.in_specs = P(Axes{"x", "y"}), .out_specs = P(Axes{"x", "y"})});
  return {f(device_put(zeros({8}), P(Axes{"x", "y"})))};
}

REF_CASE(smap_out_specs_replication_error) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return b * 2.0; },
                     {.in_specs = P("x", "y"), .out_specs = P(nullptr, "y")});
  return {f(device_put(ramp({4, 4}), P("x", "y")))};
}

REF_CASE(unbound_axis_error) {
  // Outside any shard_map (inside one, JAX 0.10 asserts with no message).
  return {jit([](const Array& b) { return psum(b, "z"); })(ramp({3}))};
}

REF_CASE(smap_pvary_twice_error) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return pvary(b, "x"); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ramp({4}), P("x")))};
}

REF_CASE(smap_partial_manual) {
  // §2.4: axis_names={'x'}; 'y' keeps sharding-in-types inside the body.
  Mesh m = ref::mesh({2, 2}, {"x", "y"});
  MeshScope s(m);
  auto f =
      shard_map([](const Array& b) { return ref::note_type(psum(ref::note_type(b) * 2.0, "x")); },
                {.in_specs = P("x"), .out_specs = P(), .axis_names = {"x"}});
  return {f(device_put(ramp({4, 4}), P("x", "y")))};
}

REF_CASE(smap_scan_varying_carry) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& b) {
        auto [c, ys] = scan(
            [](const Array& c, const Array& x) {
              return std::pair{c + x, c * x};
            },
            b[0], b);
        return std::pair{ref::note_type(c).reshape({1}), ys};
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  auto [c, ys] = f(device_put(ramp({6}), P("x")));
  return {c, ys};
}

// ---- AD through shard_map (manual-spmd §5) --------------------------------------------

REF_CASE(grad_of_smap_sin) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto sm =
      shard_map([](const Array& b) { return sin(b); }, {.in_specs = P("x"), .out_specs = P("x")});
  Array g = grad([&](const Array& x) { return sum(sm(x)); })(device_put(ramp({8}), P("x")));
  return {g};
}

REF_CASE(grad_of_smap_fanin_psum) {
  // §5.4: psum (P('x') -> P()) transposes to a free pvary.
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto sm = shard_map([](const Array& b) { return psum(b * b, "x"); },
                      {.in_specs = P("x"), .out_specs = P()});
  return {grad([&](const Array& x) { return sum(sm(x)); })(device_put(ramp({8}), P("x")))};
}

REF_CASE(grad_of_smap_fanout) {
  // §5.4: an invariant input tiled out (P() -> P('x')) transposes to a psum.
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto sm =
      shard_map([](const Array& b) { return b * 3.0; }, {.in_specs = P(), .out_specs = P("x")});
  Array w = device_put(ramp({2}), P());
  return {grad([&](const Array& x) { return sum(sm(x) * sm(x)); })(w)};
}

REF_CASE(jvp_of_smap) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto sm = shard_map([](const Array& b) { return psum(sin(b) * b, "x"); },
                      {.in_specs = P("x"), .out_specs = P()});
  Array x = device_put(ramp({4}), P("x"));
  auto [y, t] = jvp(sm, x, device_put(ones({4}), P("x")));
  return {y, t};
}

REF_CASE(vjp_of_smap_check_vma_false) {
  // §5.4 with check_vma=False: the out cotangent is divided by the unmentioned axes'
  // sizes and the input cotangent psummed over them.
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  auto sm = shard_map([](const Array& b) { return b * 2.0; },
                      {.in_specs = P(), .out_specs = P(), .check_vma = false});
  Array w = device_put(ramp({3}), P());
  return {grad([&](const Array& x) { return sum(sm(x)); })(w)};
}

REF_CASE(linearize_transpose_in_body_error) {
  // §5.7: an invariant primal cannot take a varying tangent.
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  Array p = array({1.f});
  auto f = shard_map(
      [&](const Array& t) {
        auto [out, fwd] = linearize([](const Array& v) { return mean(v * v); }, p);
        return fwd(t);
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ones({2}), P("x")))};
}

REF_CASE(linearize_transpose_in_body_pvary) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  Array p = array({1.f});
  auto f = shard_map(
      [&](const Array& t) {
        Array pv = pvary(p, "x");
        auto [out, fwd] = linearize([](const Array& v) { return mean(v * v); }, pv);
        Array out_t = fwd(t);
        auto bwd = linear_transpose(fwd, pv);
        return std::get<0>(bwd(out_t));
      },
      {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(ones({2}), P("x")))};
}

REF_CASE(pmax_grad_error) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto sm = shard_map([](const Array& b) { return pmax(b, "x"); },
                      {.in_specs = P("x"), .out_specs = P()});
  return {grad([&](const Array& x) { return sum(sm(x)); })(device_put(ramp({4}), P("x")))};
}

REF_CASE(jit_grad_of_smap) {
  Mesh m = ref::mesh({2, 2}, {"x", "y"});
  MeshScope s(m);
  auto sm = shard_map(
      [](const Array& b) {
        return psum(tanh(b), Axes{"x", "y"});
      },
      {.in_specs = P("x", "y"), .out_specs = P()});
  auto g = jit(grad([&](const Array& x) { return sum(sm(x)); }));
  return {g(device_put(ramp({4, 4}), P("x", "y")))};
}

// ---- vmap with axis_name, pmap (manual-spmd §6, §7) ---------------------------------

REF_CASE(vmap_axis_name_collectives) {
  Array x = ramp({4, 3});
  auto f = vmap(
      [](const Array& r) {
        return std::tuple{psum(r, "i"), all_gather(r, "i"), axis_index("i"),
                          ppermute(r, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}})};
      },
      {.out_axes = 0, .axis_name = "i"});
  auto [a, b, c, d] = f(x);
  return {a, b, c, d};
}

REF_CASE(vmap_out_axes_none_batched_error) {
  auto f = vmap([](const Array& r) { return r * 2.0; }, {.out_axes = none, .axis_name = "foo"});
  return {f(ramp({4, 3}))};
}

REF_CASE(vmap_of_smap) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto sm = shard_map([](const Array& b) { return psum(b * b, "x"); },
                      {.in_specs = P("x"), .out_specs = P()});
  return {vmap(sm)(device_put(ramp({3, 4}), P(nullptr, "x")))};
}

REF_CASE(pmap_psum) {
  auto f = pmap([](const Array& r) { return r / psum(r, "i"); }, {.axis_name = "i"});
  return {f(ramp({4}) + 2.0)};
}

REF_CASE(pmap_grad_legacy) {
  // §5.5 / issue #3970: inside pmap the psum is legacy: per-device local derivative * N.
  auto f = pmap(
      [](const Array& w, const Array& d) {
        return grad([&](const Array& v) { return psum(sum((v * v + 1.0) * d), "batch"); })(w);
      },
      {.axis_name = "batch", .in_axes = {none, 0}});
  return {f(array({1.f}), array({0.f, 1.f}, {2, 1}))};
}
