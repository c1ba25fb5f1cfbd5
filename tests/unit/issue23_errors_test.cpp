// Issue 23, errors and small API gaps (items 12-17, 23): typed errors for traced
// reads, message texts in our names, specs as given, divisibility classes, DType
// validation, and copy / eval_shape / check_grads / pcast.
#include <gtest/gtest.h>

#include <string>

#include "support/error_of.h"

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
  expect_bool_error([&] { (void)grad([](const Array& v) { return sum(branchy(v)); })(x); },
                    "grad");
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
  auto m = error_of<ConcretizationTypeError>([&] {
    (void)jit([](const Array& v) { return v * v.to_vector<float>()[0]; })(x);
  });
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
  if (all(array<int>({1, 2}) == array<int>({1, 2}))) taken = true;
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
  EXPECT_HAS(e, "shard_map applied to the function 'f' was given an in_specs entry which is too "
                "long to be compatible with the corresponding input value from the function");
  EXPECT_HAS(e, "has shape f32[4@x], which has rank 1 (and 1 < 2)");
  e = error_of<ValueError>([&] {
    (void)shard_map(id, {.in_specs = P("x", nullptr), .out_specs = P("x"), .name = "step"})(x);
  });
  EXPECT_HAS(e, "shard_map applied to the function 'step' was given an in_specs entry");
  EXPECT_HAS(e, "or modify 'step' so that its inputs have sufficient rank");
  // Every shard_map message that names the function takes the same name.
  e = error_of<ValueError>([&] {
    (void)shard_map(id, {.in_specs = P("x"), .out_specs = P(), .name = "step"})(x);
  });
  EXPECT_HAS(e, "shard_map applied to the function 'step' was given out_specs which require");
  e = error_of<ValueError>([&] {
    (void)shard_map([](const Array& b) { return sum(b); },
                    {.in_specs = P("x"), .out_specs = P("x"), .name = "step"})(x);
  });
  EXPECT_HAS(e, "shard_map applied to the function 'step' was given an out_specs entry which is "
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
  auto gain = [](const Array& b) {
    auto step = [](const Array& c, const Array& xi) {
      return std::pair<Array, Array>(c + xi, xi);
    };
    return scan(step, zeros({}), b).first;
  };
  e = error_of<TypeError>(
      [&] { (void)shard_map(gain, {.in_specs = P("i"), .out_specs = P()})(x); });
  EXPECT_HAS(e, "This might be fixed by applying `tsr::pvary(..., ('i',))`");
  EXPECT_HAS(e, "to the initial carry value corresponding to carry[0]");
}

TEST(Messages, VmapOutAxesNoneNamesTheAxis) {
  Array a = iota({3, 2});
  auto id = [](const Array& x) { return x * 2.0; };
  auto e = error_of<ValueError>(
      [&] { (void)vmap(id, {.out_axes = none, .axis_name = "foo"})(a); });
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
  EXPECT_EQ(x.sharding().spec().repr(), "P('i',)");          // as given (JAX prints this)
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
  EXPECT_HAS(c, "Sharding spec ('x',) implies that array axis 0 is partitioned 4 times, but does "
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
    c = class_of([&] {
      (void)jit([](const Array& v) { return v * 2.0; }, {.out_shardings = P("x")})(x);
    });
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

}  // namespace
