// Issue 23, errors and small API gaps (items 12-17, 23): typed errors for traced
// reads, message texts in our names, specs as given, divisibility classes, DType
// validation, and copy / eval_shape / check_grads / pcast.
#include <gtest/gtest.h>

#include <string>

#include "support/error_of.h"

#include "tsr/check_grads.h"
#include "tsr/core/array_impl.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

// --- item 12: a traced array read as a C++ bool -----------------------------------

// The data-dependent Python-style branch JAX users write first.
Array branchy(const Array& x) {
  if (sum(x) > 0.0) return x * 2.0;
  return -x;
}

void expect_bool_error(const std::function<void()>& f, const std::string& what) {
  std::string m = error_of<TracerBoolConversionError>(f);
  EXPECT_HAS(m, "[bool] Attempted boolean conversion of traced array") << what;
  EXPECT_HAS(m, "tsr::cond") << what;
  EXPECT_HAS(m, "tsr::where") << what;
}

TEST(TracedBool, IfOnATracedArrayIsTracerBoolConversionError) {
  Array x = array<float>({1.f, -2.f, 4.f});
  expect_bool_error([&] { (void)jit(branchy)(x); }, "jit");
  // Beyond JAX's behaviour (its grad carries concrete primals): our grad traces f.
  expect_bool_error([&] { (void)grad([](const Array& v) { return sum(branchy(v)); })(x); }, "grad");
  expect_bool_error([&] { (void)vmap(branchy)(reshape(iota({6}), {2, 3})); }, "vmap");
  Mesh m = make_mesh({2}, {"i"});
  MeshScope scope(m);
  Array xs = device_put(iota({4}), P("i"));
  expect_bool_error(
      [&] { (void)shard_map(branchy, {.in_specs = P("i"), .out_specs = P("i")})(xs); },
      "shard_map");
  // It is a ConcretizationTypeError and a TypeError, as JAX's.
  EXPECT_THROW((void)jit(branchy)(x), ConcretizationTypeError);
  EXPECT_THROW((void)jit(branchy)(x), TypeError);
}

TEST(TracedBool, ReadingTracedDataIsConcretizationTypeError) {
  Array x = array<float>({1.f, 2.f});
  auto m = error_of<ConcretizationTypeError>(
      [&] { (void)jit([](const Array& v) { return v * v.to_vector<float>()[0]; })(x); });
  EXPECT_HAS(m, "[to_vector]");
  EXPECT_HAS(m, "Abstract tracer value encountered where concrete value is expected");
  m = error_of<ConcretizationTypeError>(
      [&] { (void)jit([](const Array& v) { return v * sum(v).item<float>(); })(x); });
  EXPECT_HAS(m, "[item]");
  // Not the bool error: a read is the parent class only.
  try {
    (void)jit([](const Array& v) { return v * sum(v).item<float>(); })(x);
  } catch (const TracerBoolConversionError&) {
    ADD_FAILURE() << "item() raised the bool error";
  } catch (const ConcretizationTypeError&) {
  }
}

TEST(TracedBool, ConcreteArraysConvertLikeNumPy) {
  EXPECT_TRUE(static_cast<bool>(scalar(1.5) > 0.0));
  EXPECT_FALSE(static_cast<bool>(array<float>({-1.f}) > 0.0));
  bool taken = false;
  if (all(equal(array<int>({1, 2}), array<int>({1, 2})))) taken = true;
  EXPECT_TRUE(taken);
  auto m = error_of<ValueError>([] { (void)static_cast<bool>(array<float>({1.f, 2.f}) > 0.0); });
  EXPECT_HAS(m, "The truth value of an array with more than one element is ambiguous");
  EXPECT_HAS(m, "any(x) or all(x)");
  try {
    (void)static_cast<bool>(array<float>({1.f, 2.f}));
  } catch (const ConcretizationTypeError&) {
    ADD_FAILURE() << "a concrete array raised the tracer error";
  } catch (const ValueError&) {
  }
}

// --- item 13: messages name the function, give JAX's hints, use our API names -------

TEST(Messages, InSpecsRankErrorNamesTheFunction) {
  Mesh m = make_mesh({2}, {"x"});
  MeshScope scope(m);
  Array x = device_put(iota({4}), P("x"));
  auto id = [](const Array& b) { return b; };
  auto e = error_of<ValueError>(
      [&] { (void)shard_map(id, {.in_specs = P("x", nullptr), .out_specs = P("x")})(x); });
  EXPECT_HAS(e,
             "shard_map applied to the function 'f' was given an in_specs entry which is too "
             "long to be compatible with the corresponding input value from the function");
  EXPECT_HAS(e, "has shape f32[4@x], which has rank 1 (and 1 < 2)");
  e = error_of<ValueError>([&] {
    (void)shard_map(id, {.in_specs = P("x", nullptr), .out_specs = P("x"), .name = "step"})(x);
  });
  EXPECT_HAS(e, "shard_map applied to the function 'step' was given an in_specs entry");
  EXPECT_HAS(e, "or modify 'step' so that its inputs have sufficient rank");
  // Every shard_map message that names the function takes the same name.
  e = error_of<ValueError>(
      [&] { (void)shard_map(id, {.in_specs = P("x"), .out_specs = P(), .name = "step"})(x); });
  EXPECT_HAS(e, "shard_map applied to the function 'step' was given out_specs which require");
  e = error_of<ValueError>([&] {
    (void)shard_map([](const Array& b) { return sum(b); },
                    {.in_specs = P("x"), .out_specs = P("x"), .name = "step"})(x);
  });
  EXPECT_HAS(e,
             "shard_map applied to the function 'step' was given an out_specs entry which is "
             "too long");
  EXPECT_HAS(e, "For scalar values (rank 0), consider using an out_specs entry of `P()`");
}

TEST(Messages, ScanCarryThatLosesVaryingAxesGetsThePvaryHint) {
  Mesh m = make_mesh({2}, {"i"});
  MeshScope scope(m);
  Array x = device_put(iota({4}), P("i"));
  auto lose = [](const Array& b) {
    auto step = [](const Array& c, const std::tuple<>&) {
      return std::pair<Array, std::tuple<>>(psum(c, "i"), {});
    };
    return scan(step, b, std::tuple<>{}, {.length = 2}).first;
  };
  auto e = error_of<TypeError>(
      [&] { (void)shard_map(lose, {.in_specs = P("i"), .out_specs = P("i")})(x); });
  EXPECT_HAS(e, "scan body function carry input and carry output must have equal types");
  EXPECT_HAS(e, "the manual axis types do not match");
  EXPECT_HAS(e, "This might be fixed by applying `tsr::pvary(..., ('i',))`");
  EXPECT_EQ(e.find("astype"), std::string::npos) << e;
  // A carry that gains axes: the hint names the initial carry (JAX's text).
  auto gain = [](const Array& c0, const Array& b) {
    auto step = [](const Array& c, const Array& xi) { return std::pair<Array, Array>(c + xi, xi); };
    return scan(step, c0, b).first;
  };
  e = error_of<TypeError>([&] {
    (void)shard_map(gain, {.in_specs = {P(), P("i")}, .out_specs = P()})(
        device_put(scalar(0.f), P()), x);
  });
  EXPECT_HAS(e, "This might be fixed by applying `tsr::pvary(..., ('i',))`");
  EXPECT_HAS(e, "to the initial carry value corresponding to carry[0]");
}

TEST(Messages, VmapOutAxesNoneNamesTheAxis) {
  Array a = iota({3, 2});
  auto id = [](const Array& x) { return x * 2.0; };
  auto e = error_of<ValueError>([&] { (void)vmap(id, {.out_axes = none, .axis_name = "foo"})(a); });
  EXPECT_HAS(e, "vmap has mapped output (axis_name=foo) but out_axes is None");
  EXPECT_EQ(e.find("result result"), std::string::npos) << e;
  e = error_of<ValueError>([&] { (void)vmap(id, {.out_axes = none})(a); });
  EXPECT_HAS(e, "at vmap out_axes, got axis spec None but output was batched on axis 0");
  EXPECT_EQ(e.find("result result"), std::string::npos) << e;
}

TEST(Messages, NoJaxApiNamesWhereOursExist) {
  Mesh m = make_mesh({2}, {"x"});
  auto e = error_of<ValueError>([&] {
    (void)explicit_axes([](const Array& v) { return v; }, {.in_sharding = P("x")})(iota({4}));
  });
  EXPECT_HAS(e, "`set_mesh`");
  EXPECT_EQ(e.find("jax."), std::string::npos) << e;
  e = error_of<TypeError>([&] {
    (void)jvp([](const Array& v) { return v; }, std::make_tuple(iota({2})),
              std::make_tuple(iota({2}, int32)));
  });
  EXPECT_EQ(e.find("jax."), std::string::npos) << e;
  e = error_of<TypeError>([&] { (void)grad([](const Array& v) { return v; })(iota({2})); });
  EXPECT_HAS(e, "tsr::jacfwd / tsr::jacrev");
  EXPECT_EQ(e.find("jax."), std::string::npos) << e;
}

// --- item 14: a NamedSharding keeps its spec as given -------------------------------

TEST(SpecAsGiven, DevicePutKeepsTheSpecTypesNormalise) {
  Mesh m = make_mesh({2}, {"i"});
  NamedSharding s(m, P("i"));
  EXPECT_EQ(s.spec().repr(), "P('i',)");
  Array x = device_put(iota({4, 2}), s);
  EXPECT_EQ(x.sharding().spec().repr(), "P('i',)");             // as given (JAX prints this)
  EXPECT_EQ(typeof(x).sharding.spec().repr(), "P('i', None)");  // types are normalised
  EXPECT_EQ(typeof(x).str(), "f32[4@i,2]");
  Array h = array<float>({1, 2, 3, 4}, {2, 2}, s);  // from host data too
  EXPECT_EQ(h.sharding().spec().repr(), "P('i',)");
  MeshScope scope(m);
  EXPECT_EQ(device_put(iota({4, 2}), P("i")).sharding().spec().repr(), "P('i',)");
  // Results of ops (and reshard) take their type's spec, as JAX's.
  EXPECT_EQ((x * 2.0).sharding().spec().repr(), "P('i', None)");
  EXPECT_EQ(reshard(iota({4, 2}), P("i")).sharding().spec().repr(), "P('i', None)");
  // The value and the layout are those of the normalised spec.
  EXPECT_EQ(x.to_vector<float>(), iota({4, 2}).to_vector<float>());
  EXPECT_EQ(x.addressable_shards()[1].index[0].start, 2);
  EXPECT_EQ(reshard(x, P("i", nullptr)).impl(), x.impl());  // nothing to move
}

// --- item 15: divisibility: ValueError from types, IndivisibleError from shard shapes -

template <class F>
std::string class_of(F&& f) {
  try {
    f();
  } catch (const IndivisibleError& e) {
    return std::string("IndivisibleError: ") + e.what();
  } catch (const ValueError& e) {
    return std::string("ValueError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("other: ") + e.what();
  }
  return "no error";
}

TEST(Divisibility, TypesRaiseValueErrorShardShapesIndivisibleError) {
  Mesh m = make_mesh({4}, {"x"});
  Mesh ma = make_mesh({4}, {"x"}, {AxisType::Auto});
  Array x = iota({6});
  // A type with an indivisible spec (E23): ValueError, as JAX's get_sharding.
  std::string c = class_of([&] { (void)device_put(x, NamedSharding(m, P("x"))); });
  EXPECT_EQ(c.rfind("ValueError: [device_put]", 0), 0u) << c;
  EXPECT_HAS(c,
             "Sharding spec ('x',) implies that array axis 0 is partitioned 4 times, but does "
             "not evenly divide the dimension size 6");
  c = class_of([&] { (void)type_sharding(NamedSharding(m, P("x")), {6}); });
  EXPECT_EQ(c.rfind("ValueError: [type]", 0), 0u) << c;
  {
    MeshScope scope(m);
    c = class_of([&] { (void)zeros({6}, float32, P("x")); });
    EXPECT_EQ(c.rfind("ValueError:", 0), 0u) << c;
    c = class_of([&] { (void)reshard(x, P("x")); });
    EXPECT_EQ(c.rfind("ValueError:", 0), 0u) << c;
    c = class_of([&] { (void)jit([](const Array& v) { return reshard(v, P("x")); })(x); });
    EXPECT_EQ(c.rfind("ValueError:", 0), 0u) << c;
    // jit out_shardings / in_shardings check the concrete sharding's shard shape
    // (JAX 0.10's IndivisibleError, a ValueError, with its "One of pjit outputs" text).
    c = class_of(
        [&] { (void)jit([](const Array& v) { return v * 2.0; }, {.out_shardings = P("x")})(x); });
    EXPECT_EQ(c.rfind("IndivisibleError: [jit] One of pjit outputs", 0), 0u) << c;
  }
  // On Auto axes types carry nothing: the concrete shard shape refuses (E22).
  c = class_of([&] { (void)device_put(x, NamedSharding(ma, P("x"))); });
  EXPECT_EQ(c.rfind("IndivisibleError:", 0), 0u) << c;
  EXPECT_HAS(c, "implies that array axis 0 is partitioned 4 times, but the dimension size is 6");
}

// --- item 23: a DType outside the enum -------------------------------------------

TEST(BadDType, EveryEntryPointRefusesAValueOutsideTheEnum) {
  const DType bad = static_cast<DType>(77);
  auto check = [](const std::function<void()>& f, const std::string& api) {
    std::string m = error_of<ValueError>(f);
    EXPECT_HAS(m, "[" + api + "] invalid dtype value 77");
    EXPECT_HAS(m, "expected one of bool, int8");
  };
  Array x = iota({2});
  check([&] { (void)zeros({2}, bad); }, "zeros");
  check([&] { (void)ones({2}, bad); }, "ones");
  check([&] { (void)full({2}, 1.0, bad); }, "full");
  check([&] { (void)iota({2}, bad); }, "iota");
  check([&] { (void)arange(0, 4, 1, bad); }, "arange");
  check([&] { (void)eye(2, 2, 0, bad); }, "eye");
  check([&] { (void)linspace(0, 1, 3, true, bad); }, "linspace");
  check([&] { (void)zeros_like(x, bad); }, "full_like");
  check([&] { (void)astype(x, bad); }, "astype");
  check([&] { (void)x.astype(bad); }, "astype");
  check([&] { (void)convert_element_type(x, bad); }, "convert_element_type");
  check([&] { (void)bitcast_convert_type(x, bad); }, "bitcast_convert_type");
  check([&] { (void)x.view(bad); }, "view");
  check([&] { (void)one_hot(array<int>({0, 1}), 2, bad); }, "one_hot");
  check([&] { (void)random::uniform(random::key(0), {2}, bad); }, "uniform");
  float host[2] = {1, 2};
  check([&] { (void)from_host(host, 2, bad, {2}, {}, "from_host"); }, "from_host");
  check([&] { (void)sum(x, {0}, {.dtype = bad}); }, "sum");
  check([&] { (void)mean(x, {0}, {.dtype = bad}); }, "mean");
  check([&] { (void)cumsum(x, 0, {.dtype = bad}); }, "cumsum");
  check([&] { (void)dot(x, x, {.preferred_element_type = bad}); }, "dot_general");
  // Under jit too, with the same text.
  check([&] { (void)jit([&](const Array& v) { return astype(v, bad); })(x); }, "astype");
  check([&] { (void)jit([&](const Array& v) { return v + zeros({2}, bad); })(x); }, "zeros");
  EXPECT_STREQ(dtype_name(bad), "invalid");
  EXPECT_EQ(itemsize(bad), 0);
}

TEST(SpecAsGiven, JitOutShardingsKeepTheSpec) {
  Mesh m = make_mesh({2}, {"i"});
  MeshScope scope(m);
  auto f = jit([](const Array& v) { return v * 2.0; }, {.out_shardings = P("i")});
  Array y = f(iota({4, 2}));
  EXPECT_EQ(y.sharding().spec().repr(), "P('i',)");
  EXPECT_EQ(typeof(y).str(), "f32[4@i,2]");
  EXPECT_EQ(y.to_vector<float>(), (iota({4, 2}) * 2.0).to_vector<float>());
}

// --- item 16: max/min-unreduced placement is kept (README states the rule) -----------

TEST(UnreducedKinds, ReshardMayAddMaxMinUnreducedAxes) {
  Mesh m = make_mesh({4}, {"x"});
  MeshScope scope(m);
  std::vector<float> v = {3, -1, 4, -1, 5, -9, 2, -6};
  Array rep = array<float>(v, {8});
  Array sharded = device_put(rep, P("x"));
  for (UnreducedKind k : {UnreducedKind::Max, UnreducedKind::Min}) {
    for (const Array& from : {rep, sharded}) {
      Array u = reshard(from, P(Unreduced{{"x"}, k}));
      EXPECT_EQ(typeof(u).str(), k == UnreducedKind::Max ? "f32[8]{U_max:x}" : "f32[8]{U_min:x}");
      EXPECT_EQ(reshard(u, P()).to_vector<float>(), v);
      EXPECT_EQ(reshard(u, P("x")).to_vector<float>(), v);
      Array j = jit([&](const Array& a) {
        return reshard(reshard(a, P(Unreduced{{"x"}, k})), P());
      })(from);
      EXPECT_EQ(j.to_vector<float>(), v);
    }
  }
  // A kind change of an axis already unreduced is refused.
  Array u = reshard(rep, P(Unreduced{{"x"}}));
  auto e = error_of<ValueError>([&] { (void)reshard(u, P(Unreduced{{"x"}, UnreducedKind::Max})); });
  EXPECT_HAS(e, "the unreduced kinds differ");
}

// --- item 17: copy, eval_shape, check_grads, pcast -----------------------------------

TEST(Copy, NewBuffersSameTypeAndLayout) {
  Mesh m = make_mesh({4}, {"x"});
  MeshScope scope(m);
  Array x = device_put(iota({8}), P("x"));
  Array c = copy(x);
  EXPECT_NE(c.impl(), x.impl());
  EXPECT_NE(c.impl()->buffers[0].get(), x.impl()->buffers[0].get());  // its own buffers
  EXPECT_EQ(typeof(c).str(), "f32[8@x]");
  EXPECT_EQ(c.sharding(), x.sharding());
  EXPECT_EQ(c.to_vector<float>(), x.to_vector<float>());
  Array j = jit([](const Array& v) { return copy(v); })(x);
  EXPECT_EQ(typeof(j).str(), "f32[8@x]");
  EXPECT_EQ(j.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(grad([](const Array& v) { return sum(copy(v) * v); })(x).to_vector<float>(),
            (x * 2.0).to_vector<float>());
  // A copy outlives the donation of its source.
  Array keep = copy(x);
  (void)jit([](const Array& v) { return v + 1.0; }, {.donate_argnums = {0}})(x);
  EXPECT_EQ(keep.to_vector<float>(), iota({8}).to_vector<float>());
  Array w = array<int>({1, 2, 3});
  EXPECT_EQ(copy(w).dtype(), int32);
  EXPECT_EQ(copy(scalar(2.5f)).type().weak, scalar(2.5f).type().weak);
}

TEST(EvalShape, TypesAndShardingsWithoutRunning) {
  Mesh m = make_mesh({4}, {"x"});
  MeshScope scope(m);
  Array x = shape_dtype_struct({8, 4}, float32, NamedSharding(m, P("x")));
  EXPECT_TRUE(is_abstract(x));
  EXPECT_EQ(typeof(x).str(), "f32[8@x,4]");
  EXPECT_EQ(x.sharding().spec().repr(), "P('x',)");
  int calls = 0;
  auto f = [&](const Array& a) {
    ++calls;
    return std::make_tuple(sum(a, 1), a * 2.0, a.astype(int32));
  };
  auto [s, d, i] = eval_shape(f, x);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(typeof(s).str(), "f32[8@x]");
  EXPECT_EQ(typeof(d).str(), "f32[8@x,4]");
  EXPECT_EQ(typeof(i).str(), "i32[8@x,4]");
  EXPECT_TRUE(is_abstract(s));
  EXPECT_EQ(s.sharding().mesh(), m.abstract_mesh());
  // Trees, concrete arguments (never read), and abstract results fed back in.
  std::vector<Array> v = eval_shape(
      [](const std::vector<Array>& l) {
        return std::vector<Array>{l[0] + l[1], matmul(l[0], l[1])};
      },
      std::vector<Array>{zeros({3, 3}), ones({3, 3})});
  EXPECT_EQ(typeof(v[1]).str(), "f32[3,3]");
  EXPECT_EQ(typeof(eval_shape([](const Array& a) { return sum(a); }, d)).str(), "f32[]");
  // Abstract arrays have no data.
  auto e = error_of<ConcretizationTypeError>([&] { (void)s.to_vector<float>(); });
  EXPECT_HAS(e, "the array is abstract");
  error_of<ConcretizationTypeError>([&] { (void)(s + 1.0); });
  error_of<ConcretizationTypeError>([&] { (void)jit([](const Array& a) { return a; })(s); });
  error_of<ConcretizationTypeError>([&] {
    (void)jit([&](const Array& a) { return a + s; })(zeros({8}));  // captured
  });
  // Shape errors surface as the ops raise them, without running.
  error_of<TypeError>([&] { (void)eval_shape([](const Array& a) { return reshape(a, {5}); }, x); });
}

TEST(CheckGrads, PublicApiChecksAndRaises) {
  Array x = array<double>({0.5, -1.0, 2.0});
  check_grads([](const Array& v) { return sum(sin(v) * v); }, x, 2);
  check_grads([](const Array& a, const Array& b) { return sum(a * b) + sum(exp(a)); },
              std::make_tuple(x, x * 2.0), 2, {.modes = {GradMode::Rev}});
  check_grads([](const Array& v) { return tanh(v); }, x.astype(float32), 1,
              {.modes = {GradMode::Fwd}});
  auto wrong = custom_jvp([](const Array& v) { return sin(v); },
                          [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                            return std::make_pair(sin(std::get<0>(p)), std::get<0>(t) * 2.0);
                          });
  auto e = error_of<AssertionError>([&] { check_grads(wrong, x, 1); });
  EXPECT_HAS(e, "[check_grads] JVP tangent 0: not close");
  e = error_of<AssertionError>([&] { check_grads(wrong, x, 1, {.modes = {GradMode::Rev}}); });
  EXPECT_HAS(e, "[check_grads] VJP: cotangent projection");
  // Second order reaches a wrong rule of the derivative only.
  auto wrong2 = custom_jvp([](const Array& v) { return v * v; },
                           [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                             Array a = std::get<0>(p);
                             return std::make_pair(a * a, stop_gradient(a) * std::get<0>(t) * 2.0);
                           });
  check_grads(wrong2, x, 1);
  e = error_of<AssertionError>([&] { check_grads(wrong2, x, 2, {.modes = {GradMode::Fwd}}); });
  EXPECT_HAS(e, "JVP of JVP");
  error_of<ValueError>([&] { check_grads(wrong2, x, 0); });
}

// pcast (manual-spmd §3.5, §3.6): the four casts, unreduced psum, transposes, errors.
class Pcast : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope{mesh};
  Array w = device_put(array<float>({1.f, 2.f}), P());
  Array v = device_put(iota({4}), P("x"));
  template <class F>
  auto smap(F f, tree::Prefix<std::optional<PartitionSpec>> in, PartitionSpec out) {
    return shard_map(f, {.in_specs = std::move(in), .out_specs = std::move(out)});
  }
};

TEST_F(Pcast, ToVaryingIsPvary) {
  std::string t;
  Array y = smap(
      [&](const Array& a) {
        Array b = pcast(a, "x", PcastTo::Varying);
        t = typeof(b).str();
        return b * 2.0;
      },
      P(), P("x"))(w);
  EXPECT_EQ(t, "f32[2]{V:x}");
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 2, 4}));
}

TEST_F(Pcast, VaryingToUnreducedThenPsum) {
  std::vector<std::string> t;
  auto body = [&](const Array& b) {
    Array u = pcast(b * b, "x", PcastTo::Unreduced);
    t.push_back(typeof(u).str());
    Array s = psum(u, "x");
    t.push_back(typeof(s).str());
    return s;
  };
  Array y = smap(body, P("x"), P())(v);
  EXPECT_EQ(t, (std::vector<std::string>{"f32[2]{U:x}", "f32[2]"}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 10}));  // [0+4, 1+9]
  Array jy = jit([&](const Array& a) { return smap(body, P("x"), P())(a); })(v);
  EXPECT_EQ(jy.to_vector<float>(), y.to_vector<float>());
  // grad: the cotangent goes reduced -> varying.
  auto f = smap([](const Array& b) { return psum(pcast(b * b, "x", PcastTo::Unreduced), "x"); },
                P("x"), P());
  Array g = grad([&](const Array& a) { return sum(f(a)); })(v);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 2, 4, 6}));
  EXPECT_EQ(typeof(g).str(), "f32[4@x]");
}

TEST_F(Pcast, InvariantToReducedToVarying) {
  std::vector<std::string> t;
  auto body = [&](const Array& a, const Array& b) {
    Array r = pcast(a, "x", PcastTo::Reduced);
    Array q = pcast(r, "x", PcastTo::Varying);
    Array imp = r * b;  // reduced meets varying: the cast to varying is implicit
    t = {typeof(r).str(), typeof(q).str(), typeof(imp).str()};
    return q * b + imp;
  };
  Array y = smap(body, {P(), P("x")}, P("x"))(w, v);
  EXPECT_EQ(t, (std::vector<std::string>{"f32[2]{R:x}", "f32[2]{V:x}", "f32[2]{V:x}"}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 4, 4, 12}));
  auto loss = smap(
      [](const Array& a, const Array& b) {
        Array q = pcast(pcast(a, "x", PcastTo::Reduced), "x", PcastTo::Varying);
        return psum(sum(q * b), "x");
      },
      {P(), P("x")}, P());
  Array g = grad(loss)(w, v);  // the cotangent: varying -> unreduced -> psum'd
  EXPECT_EQ(typeof(g).str(), "f32[2]");
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2, 4}));  // [0+2, 1+3]
  Array gj = jit(grad(loss))(w, v);
  EXPECT_EQ(gj.to_vector<float>(), g.to_vector<float>());
}

TEST_F(Pcast, UnreducedRulesAndErrors) {
  std::string t;
  Array y = smap(
      [&](const Array& a, const Array& b) {
        Array u = pcast(b, "x", PcastTo::Unreduced);
        Array r = pcast(a, "x", PcastTo::Reduced);
        Array p = u * r + u;  // mul by the reduced value, add of two unreduced
        t = typeof(p).str();
        return psum(reshape(p, {2, 1}), "x");
      },
      {P(), P("x")}, P())(w, v);
  EXPECT_EQ(t, "f32[2]{U:x}");
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 12}));  // [0*2 + 2*2, 1*3 + 3*3]
  auto run = [&](const std::function<Array(const Array&)>& body) {
    return [&, body] { (void)smap(body, P("x"), P())(v); };
  };
  auto U = [](const Array& b) { return pcast(b, "x", PcastTo::Unreduced); };
  auto e = error_of<NotImplementedError>(run([&](const Array& b) { return psum(sin(U(b)), "x"); }));
  EXPECT_HAS(e, "[sin] unreduced rule for sin is not implemented");
  e = error_of<ShardingTypeError>(run([&](const Array& b) { return psum(U(b) * 2.0, "x"); }));
  EXPECT_HAS(e, "RHS should be reduced along the same axes LHS is unreduced on");
  e = error_of<ShardingTypeError>(run([&](const Array& b) { return psum(U(b) + 1.0, "x"); }));
  EXPECT_HAS(e, "lhs is unreduced while rhs is not");
  e = error_of<ShardingTypeError>(run([&](const Array& b) { return psum(U(b) * U(b), "x"); }));
  EXPECT_HAS(e, "cannot be unreduced since mul is bilinear");
  e = error_of<ValueError>(run([&](const Array& b) { return pmax(U(b), "x"); }));
  EXPECT_HAS(e, "pvary cannot accept args which are unreduced");
  e = error_of<ValueError>(run([&](const Array& b) { return pcast(b, "x", PcastTo::Varying); }));
  EXPECT_HAS(e, "[pcast] Unsupported pcast from=varying, to='varying'");
  e = error_of<ValueError>(
      run([&](const Array& b) { return psum(pcast(U(b), "x", PcastTo::Varying), "x"); }));
  EXPECT_HAS(e, "Unsupported pcast from=unreduced, to='varying'");
  e = error_of<NotImplementedError>(run([&](const Array& b) { return U(b); }));
  EXPECT_HAS(e, "out_specs with unreduced= / reduced= are not supported yet");
  e = error_of<ShardingTypeError>([&] {
    (void)smap(
        [](const Array& a) {
          return pcast(pcast(a, "x", PcastTo::Reduced) * 2.0, "x", PcastTo::Varying);
        },
        P(), P("x"))(w);
  });
  EXPECT_HAS(e, "Inputs cannot be replicated on the same axes that another input is reduced on");
  e = error_of<ValueError>([&] {
    (void)smap([](const Array& a) { return pcast(a, "x", PcastTo::Unreduced); }, P(), P())(w);
  });
  EXPECT_HAS(e, "Unsupported pcast from=invarying, to='unreduced'");
  // Outside shard_map: the axis is unbound.
  error_of<NameError>([&] { (void)pcast(w, "x", PcastTo::Reduced); });
  // check_vma=false: the casts are no-ops.
  Array same = shard_map([](const Array& b) { return pcast(b, "x", PcastTo::Unreduced); },
                         {.in_specs = P("x"), .out_specs = P("x"), .check_vma = false})(v);
  EXPECT_EQ(same.to_vector<float>(), v.to_vector<float>());
}

TEST_F(Pcast, UnderVmap) {
  Array vs = device_put(reshape(iota({12}), {3, 4}), P(nullptr, "x"));
  auto per = [](const Array& row) {
    return shard_map(
        [](const Array& b) { return psum(pcast(b * b, "x", PcastTo::Unreduced), "x"); },
        {.in_specs = P("x"), .out_specs = P()})(row);
  };
  Array y = vmap(per)(vs);
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<float> row = per(device_put(vs[k], P("x"))).to_vector<float>();
    std::vector<float> got = y[k].to_vector<float>();
    EXPECT_EQ(got, row);
  }
}

}  // namespace
