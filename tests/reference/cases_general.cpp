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
