// Collectives over a vmap's axis_name under autodiff, spmd_axis_name and vmap of pmap
// (issue 23 items 1, 10, 11; twins in cases_values.py).
#include "ref.h"

using namespace tsr;

namespace {
Array ramp(const Shape& s) { return iota(s) * 0.25 - 1.0; }

// vmap(grad(sum(w_k * sin(coll(v))))) over axis "i".
template <class C>
Array per_example_grad(C coll, const Array& x, const Array& w) {
  return vmap(
      [coll](const Array& v, const Array& wk) {
        return grad([&](const Array& u) { return sum(wk * sin(coll(u))); })(v);
      },
      {.axis_name = "i"})(x, w);
}
}  // namespace

REF_CASE(values_vmap_grad_psum) {
  return {vmap(grad([](const Array& x) { return -psum(x, "i"); }), {.axis_name = "i"})(ones({5}))};
}

REF_CASE(values_vmap_grad_pmean) {
  return {per_example_grad([](const Array& v) { return pmean(v, "i"); }, ramp({4, 3}),
                           cos(ramp({4, 3})))};
}

REF_CASE(values_vmap_grad_psum_product) {
  // v * psum(v * v): the gradient reads every example's v.
  return {vmap(grad([](const Array& v) { return sum(v * psum(v * v, "i")); }),
               {.axis_name = "i"})(ramp({4, 3}))};
}

REF_CASE(values_vmap_grad_all_gather) {
  return {per_example_grad([](const Array& v) { return all_gather(v, "i", {.axis = 1}); },
                           ramp({4, 3}), cos(ramp({4, 3, 4})))};
}

REF_CASE(values_vmap_grad_all_gather_tiled) {
  return {per_example_grad([](const Array& v) { return all_gather(v, "i", {.tiled = true}); },
                           ramp({4, 3}), cos(ramp({4, 12})))};
}

REF_CASE(values_vmap_grad_psum_scatter) {
  return {per_example_grad([](const Array& v) { return psum_scatter(v, "i"); }, ramp({4, 4, 3}),
                           cos(ramp({4, 3})))};
}

REF_CASE(values_vmap_grad_psum_scatter_tiled) {
  return {per_example_grad(
      [](const Array& v) { return psum_scatter(v, "i", {.scatter_dimension = 1, .tiled = true}); },
      ramp({4, 3, 8}), cos(ramp({4, 3, 2})))};
}

REF_CASE(values_vmap_grad_ppermute) {
  return {per_example_grad(
      [](const Array& v) {
        return ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
      },
      ramp({4, 3}), cos(ramp({4, 3})))};
}

REF_CASE(values_vmap_vjp_psum) {
  auto one = [](const Array& v, const Array& c) {
    auto [y, f] = vjp([](const Array& u) { return sin(psum(u, "i")); }, v);
    return std::get<0>(f(c));
  };
  return {vmap(one, {.axis_name = "i"})(ramp({5, 2}), cos(ramp({5, 2})))};
}

REF_CASE(values_grad_of_vmap_all_to_all) {
  // JAX's vmap(grad(all_to_all)) fails (a cotangent shape error): the gradient of the vmap.
  Array w = cos(ramp({4, 3, 4}));
  auto loss = [w](const Array& x) {
    Array y = vmap([](const Array& v) { return all_to_all(v, "i", 0, 1); }, {.axis_name = "i"})(x);
    return sum(w * sin(y));
  };
  return {grad(loss)(ramp({4, 4, 3}))};
}

REF_CASE(values_pmap_vmap_grad_mixed_psum) {
  auto loss = [](const Array& v) { return -psum(v, AxisNames{"j", "i"}); };
  return {pmap(vmap(grad(loss), {.axis_name = "i"}), {.axis_name = "j"})(ones({2, 3}))};
}

REF_CASE(values_vmap_pmap_grad_mixed_psum) {
  auto loss = [](const Array& v) { return -psum(v, AxisNames{"j", "i"}); };
  return {vmap(pmap(grad(loss), {.axis_name = "j"}), {.axis_name = "i"})(ones({3, 2}))};
}

REF_CASE(values_spmd_axis_name_no_context_mesh) {
  Mesh m = ref::mesh({2}, {"i"}, AxisType::Auto);
  auto f = shard_map([](const Array& b) { return b * 2.0; },
                     {.mesh = m, .in_specs = P(), .out_specs = P()});
  return {vmap(f, {.spmd_axis_name = {"i"}})(ramp({4, 2}))};
}

REF_CASE(values_spmd_axis_name_2d) {
  Mesh m = ref::mesh({2, 2}, {"i", "j"}, AxisType::Auto);
  auto f = shard_map([](const Array& b) { return b + psum(b, "j"); },
                     {.mesh = m, .in_specs = P(), .out_specs = P()});
  return {vmap(f, {.spmd_axis_name = {"i"}})(ramp({4, 4}))};
}

REF_CASE(values_vmap_pmap_ppermute) {
  auto f = pmap(
      [](const Array& z) {
        return ppermute(z, "i", {{0, 1}, {1, 0}});
      },
      {.axis_name = "j"});
  return {vmap(f, {.axis_name = "i"})(reshape(iota({4}), {2, 2}))};
}
