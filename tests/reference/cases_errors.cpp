// Issue 23's errors and small API gaps (twins in cases_errors.py): typed errors for
// traced reads, messages, specs as given, divisibility classes, copy / eval_shape /
// check_grads / pcast.
#include "ref.h"
#include "tsr/check_grads.h"

using namespace tsr;

namespace {

Array branchy(const Array& x) {
  if (sum(x) > 0.0) return x * 2.0;
  return -x;
}

Array f32(std::vector<float> v) { return array<float>(v, {static_cast<int64_t>(v.size())}); }

}  // namespace

// --- item 12: a traced array read as a bool ------------------------------------------

REF_CASE(bool_traced_in_jit) { return {jit(branchy)(f32({1, -2, 4}))}; }

REF_CASE(bool_traced_in_vmap) { return {vmap(branchy)(iota({2, 3}))}; }

REF_CASE(bool_traced_in_grad) {
  return {grad([](const Array& v) { return sum(branchy(v)); })(f32({1, -2, 4}))};
}

REF_CASE(bool_traced_in_shard_map) {
  Mesh m = ref::mesh({2}, {"i"});
  MeshScope s(m);
  auto f = shard_map(branchy, {.in_specs = P("i"), .out_specs = P("i")});
  return {f(device_put(iota({4}), P("i")))};
}

REF_CASE(item_traced_in_jit) {
  return {jit([](const Array& v) { return v * sum(v).item<float>(); })(f32({1, 2}))};
}

REF_CASE(bool_concrete_one_element) {
  Array x = f32({1.5});
  return {(x > 0.0) ? x * 2.0 : -x};
}

REF_CASE(bool_concrete_two_elements) {
  Array x = f32({1, 2});
  return {(x > 0.0) ? x * 2.0 : -x};
}

// --- item 13: messages (the error classes) ---------------------------------------------

REF_CASE(smap_in_specs_too_long) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& b) { return b; },
                     {.in_specs = P("x", nullptr), .out_specs = P("x")});
  return {f(device_put(iota({4}), P("x")))};
}

REF_CASE(scan_carry_loses_vma) {
  Mesh m = ref::mesh({2}, {"i"});
  MeshScope s(m);
  auto body = [](const Array& b) {
    auto step = [](const Array& c, const std::tuple<>&) {
      return std::pair<Array, std::tuple<>>(psum(c, "i"), {});
    };
    return scan(step, b, std::tuple<>{}, {.length = 2}).first;
  };
  return {
      shard_map(body, {.in_specs = P("i"), .out_specs = P("i")})(device_put(iota({4}), P("i")))};
}

REF_CASE(vmap_out_axes_none_mapped) {
  return {vmap([](const Array& x) { return x * 2.0; },
               {.out_axes = none, .axis_name = "foo"})(iota({3, 2}))};
}

REF_CASE(explicit_axes_no_mesh) {
  return {explicit_axes([](const Array& v) { return v; }, {.in_sharding = P("x")})(iota({4}))};
}

// --- item 14: a NamedSharding keeps its spec as given ------------------------------------

REF_CASE(named_sharding_spec_as_given) {
  Mesh m = ref::mesh({2}, {"i"});
  Array x = device_put(iota({4, 2}), NamedSharding(m, P("i")));
  ref::note(x.sharding().spec().repr());
  MeshScope s(m);
  Array y = x * 2.0;
  ref::note(y.sharding().spec().repr());
  return {x, y};
}

// --- item 15: divisibility classes -----------------------------------------------------

REF_CASE(indivisible_device_put_explicit) {
  Mesh m = ref::mesh({4}, {"x"});
  return {device_put(iota({6}), NamedSharding(m, P("x")))};
}

REF_CASE(indivisible_zeros_out_sharding) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  return {zeros({6}, float32, P("x"))};
}

REF_CASE(indivisible_device_put_auto) {
  Mesh m = ref::mesh({4}, {"x"}, AxisType::Auto);
  return {device_put(iota({6}), NamedSharding(m, P("x")))};
}

REF_CASE(indivisible_jit_out_shardings) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  return {jit([](const Array& v) { return v * 2.0; }, {.out_shardings = P("x")})(iota({6}))};
}

// --- item 16: unreduced placement (sum kind; max/min kinds are beyond JAX) --------------

REF_CASE(reshard_replicated_to_unreduced) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  Array u = ref::note_type(reshard(iota({8}), P(Unreduced{{"x"}})));
  return {reshard(u, P())};
}

// --- item 17: copy, eval_shape, check_grads, pcast ---------------------------------------

REF_CASE(copy_keeps_type_and_sharding) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  Array x = device_put(iota({8}), P("x"));
  return {copy(x), jit([](const Array& v) { return copy(v); })(x)};
}

REF_CASE(eval_shape_types) {
  Mesh m = ref::mesh({4}, {"x"});
  MeshScope s(m);
  Array x = shape_dtype_struct({8, 4}, float32, NamedSharding(m, P("x")));
  auto [a, b, c] = eval_shape(
      [](const Array& v) { return std::make_tuple(sum(v, 1), v * 2.0, v.astype(int32)); }, x);
  return {typeof(a).str(), typeof(b).str(), typeof(c).str()};
}

REF_CASE(check_grads_passes) {
  Array x = f32({0.5, -1, 2});
  check_grads([](const Array& v) { return sum(sin(v) * v); }, x, 2);
  return {x};
}

REF_CASE(check_grads_wrong_jvp) {
  auto wrong = custom_jvp([](const Array& v) { return sin(v); },
                          [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                            return std::make_pair(sin(std::get<0>(p)), std::get<0>(t) * 2.0);
                          });
  check_grads(wrong, f32({0.5, -1, 2}), 1);
  return {zeros({1})};
}

namespace {
Array w2() { return device_put(f32({1, 2}), P()); }
}  // namespace

REF_CASE(pcast_to_varying) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& a) { return ref::note_type(pcast(a, "x", PcastTo::Varying)) * 2.0; },
      {.in_specs = P(), .out_specs = P("x")});
  return {f(w2())};
}

REF_CASE(pcast_varying_to_unreduced_psum) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& v) {
        Array u = ref::note_type(pcast(v * v, "x", PcastTo::Unreduced));
        return ref::note_type(psum(u, "x"));
      },
      {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_reduced_to_varying) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& w, const Array& v) {
        Array r = ref::note_type(pcast(w, "x", PcastTo::Reduced));
        Array q = ref::note_type(pcast(r, "x", PcastTo::Varying));
        return q * v;
      },
      {.in_specs = {P(), P("x")}, .out_specs = P("x")});
  return {f(w2(), device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_reduced_times_varying) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& w, const Array& v) {
        return ref::note_type(pcast(w, "x", PcastTo::Reduced) * v);  // the cast is implicit
      },
      {.in_specs = {P(), P("x")}, .out_specs = P("x")});
  return {f(w2(), device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_unreduced_times_reduced) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& w, const Array& v) {
        Array u = pcast(v, "x", PcastTo::Unreduced);
        Array r = pcast(w, "x", PcastTo::Reduced);
        return psum(ref::note_type(u * r), "x");
      },
      {.in_specs = {P(), P("x")}, .out_specs = P()});
  return {f(w2(), device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_grad_varying_unreduced) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f =
      shard_map([](const Array& v) { return psum(pcast(v * v, "x", PcastTo::Unreduced), "x"); },
                {.in_specs = P("x"), .out_specs = P()});
  return {grad([&](const Array& v) { return sum(f(v)); })(device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_grad_invariant_reduced) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map(
      [](const Array& w, const Array& v) {
        Array q = pcast(pcast(w, "x", PcastTo::Reduced), "x", PcastTo::Varying);
        return psum(sum(q * v), "x");
      },
      {.in_specs = {P(), P("x")}, .out_specs = P()});
  return {grad(f)(w2(), device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_varying_to_varying) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& v) { return pcast(v, "x", PcastTo::Varying); },
                     {.in_specs = P("x"), .out_specs = P("x")});
  return {f(device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_invariant_to_unreduced) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f = shard_map([](const Array& w) { return pcast(w, "x", PcastTo::Unreduced); },
                     {.in_specs = P(), .out_specs = P()});
  return {f(device_put(iota({2}), P()))};
}

REF_CASE(pcast_unreduced_nonlinear) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f =
      shard_map([](const Array& v) { return psum(sin(pcast(v, "x", PcastTo::Unreduced)), "x"); },
                {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(iota({4}), P("x")))};
}

REF_CASE(pcast_unreduced_times_invariant) {
  Mesh m = ref::mesh({2}, {"x"});
  MeshScope s(m);
  auto f =
      shard_map([](const Array& v) { return psum(pcast(v, "x", PcastTo::Unreduced) * 2.0, "x"); },
                {.in_specs = P("x"), .out_specs = P()});
  return {f(device_put(iota({4}), P("x")))};
}
