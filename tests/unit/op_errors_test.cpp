// Spec §17 E1–E11 (and E25–E28) for the core ops: the type raised and its text.
#include <gtest/gtest.h>

#include "support/error_of.h"

#include "tsr/tsr.h"

using namespace tsr;

namespace {

class OpErrors : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  MeshScope scope{mesh};
};

TEST_F(OpErrors, E1IncompatibleBroadcastShardings) {
  Array a = device_put(zeros({8, 8}), P("x", "y"));
  Array b = device_put(zeros({8, 8}), P("y", "x"));
  auto m = error_of<ShardingTypeError>([&] { multiply(a, b); });
  EXPECT_HAS(m, "mul got incompatible shardings for broadcasting: ('x', 'y'), ('y', 'x').");
}

TEST_F(OpErrors, E2IllegallyShardedResult) {
  Array a = device_put(zeros({4, 4}, int32), P("x", nullptr));
  Array b = device_put(zeros({4, 4}, int32), P(nullptr, "x"));
  auto m = error_of<ShardingTypeError>([&] { add(a, b); });
  EXPECT_HAS(m,
             "add operation with inputs: i32[4@x,4], i32[4,4@x] produces an illegally sharded "
             "result: i32[4@x,4@x]");
  Array l = device_put(zeros({8, 2}), P("x", nullptr));
  Array r = device_put(zeros({2, 8}), P(nullptr, "x"));
  auto d = error_of<ShardingTypeError>([&] { matmul(l, r); });
  EXPECT_HAS(d,
             "dot_general operation with inputs: f32[8@x,2], f32[2,8@x] produces an illegally "
             "sharded result: f32[8@x,8@x]");
}

TEST_F(OpErrors, E3MeshesDiffer) {
  Array a = device_put(zeros({8}), P("x"));
  Mesh other = make_mesh({8}, {"z"});
  Array b;
  {
    MeshScope s2(other);
    b = device_put(zeros({8}), P("z"));
  }
  set_mesh(std::nullopt);
  auto m = error_of<ShardingTypeError>([&] { add(a, b); });
  EXPECT_HAS(m, "Mesh for all inputs should be equal. Got one mesh: ");
  set_mesh(mesh);
}

TEST_F(OpErrors, E4ContextMeshMismatch) {
  Array a = device_put(zeros({8}), P("x"));
  Mesh other = make_mesh({8}, {"z"});
  MeshScope s2(other);
  auto m = error_of<ValueError>([&] { sin(a); });
  EXPECT_HAS(m, "For primitive sin, context mesh ");
  EXPECT_HAS(m, "should match the aval mesh");
}

TEST_F(OpErrors, E6BatchShardingsDiffer) {
  Array a = device_put(zeros({4, 8, 2}), P("x"));
  Array b = device_put(zeros({4, 2, 8}), P());
  auto m = error_of<ShardingTypeError>([&] { matmul(a, b); });
  EXPECT_HAS(m,
             "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
             "same sharding, got ('x',) and (None,).");
}

TEST_F(OpErrors, E7ContractingAmbiguous) {
  Array a = device_put(zeros({8, 4}), P(nullptr, "x"));
  Array b = device_put(zeros({4, 8}), P("x"));
  auto m = error_of<ShardingTypeError>([&] { matmul(a, b); });
  EXPECT_HAS(m,
             "Contracting dimensions are sharded and it is ambiguous how the output should be "
             "sharded. Please specify the output sharding via the `out_sharding` parameter. "
             "Got lhs_contracting_spec=('x',) and rhs_contracting_spec=('x',)");
  // The escape hatch works.
  EXPECT_EQ(typeof(matmul(a, b, {.out_sharding = P("x")})).str(), "f32[8@x,8]");
  EXPECT_EQ(typeof(matmul(a, b, {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})})).str(),
            "f32[8,8]{U:x}");
}

TEST_F(OpErrors, E8UnsupportedReshape) {
  Array a = device_put(zeros({4, 2, 8, 8}), P(nullptr, nullptr, "y", "x"));
  auto m = error_of<ShardingTypeError>([&] { reshape(a, {4, 16, 8}); });
  EXPECT_HAS(m,
             "This reshape is not supported. Please specify the sharding of the output via the "
             "`out_sharding` argument of tsr::reshape. Got operand type: f32[4,2,8@y,8@x], new "
             "sizes: (4, 16, 8)");
  Array b = reshape(a, {4, 16, 8}, P(nullptr, "y", "x"));
  EXPECT_EQ(typeof(b).str(), "f32[4,16@y,8@x]");
  EXPECT_EQ(sum(b).item<float>(), 0.f);
}

TEST_F(OpErrors, E9SliceNotDivisible) {
  Array a = device_put(zeros({4, 4}), P("x", "y"));
  auto m = error_of<ShardingTypeError>([&] { slice(a, {0, 0}, {4, 3}); });
  EXPECT_HAS(m,
             "slicing on sharded dims where out dim (3) is not divisible by mesh axes (4) with "
             "spec (y) is not implemented. Got input type=f32[4@x,4@y] and output shape=(4, 3)");
  Array p = device_put(zeros({8}), P("x"));
  EXPECT_EQ(typeof(pad(p, 0.0, {{2, 2, 0}})).str(), "f32[12@x]");
  auto pm = error_of<ShardingTypeError>([&] { pad(p, 0.0, {{2, 3, 0}}); });
  EXPECT_HAS(pm, "padding on sharded dims where out dim (13)");
  // A tuple entry prints as Python's f-string prints the tuple.
  Array t = device_put(zeros({8}), P(Axes{"x", "y"}));
  EXPECT_HAS(error_of<ShardingTypeError>([&] { split(t, std::vector<int64_t>{3}, 0); }),
             "split on sharded dims where out dim (3) is not divisible by mesh axes (8) with spec "
             "(('x', 'y')) is not implemented.");
}

TEST_F(OpErrors, E10ConcatenateShardingsDiffer) {
  Array a = device_put(zeros({8, 4}), P("x"));
  Array b = device_put(zeros({8, 4}), P());
  auto m = error_of<ShardingTypeError>([&] { concatenate({a, b}, 1); });
  EXPECT_HAS(
      m, "All operands should have the same sharding. Got shardings P('x', None), P(None, None)");
}

TEST_F(OpErrors, E11SelectShardings) {
  Array a = device_put(zeros({8, 4}), P("x"));
  Array b = device_put(zeros({8, 4}), P());
  Array c = device_put(zeros({8, 4}, bool_), P("x"));
  auto m = error_of<ShardingTypeError>([&] { select_n(c, {a, b}); });
  EXPECT_HAS(m, "select cases must have the same shardings, got [P('x', None), P(None, None)].");
  Array w = device_put(zeros({8, 4}, bool_), P());
  auto m2 = error_of<ShardingTypeError>([&] { select_n(w, {a, a}); });
  EXPECT_HAS(m2,
             "select `which` must be scalar or have the same sharding as cases, got `which` "
             "sharding P(None, None) but case sharding P('x', None).");
}

TEST_F(OpErrors, E25E26E27OutShardingCanonicalization) {
  Mesh am = make_mesh({2, 4}, {"x", "y"}, {AxisType::Explicit, AxisType::Auto});
  {
    MeshScope s(am);
    auto m = error_of<ValueError>([&] { zeros({8, 4}, float32, P(nullptr, "y")); });
    EXPECT_HAS(m,
               "PartitionSpec passed to zeros cannot contain axis names that are of type Auto "
               "or Manual. Got PartitionSpec: P(None, 'y') with axis name: y of type: Auto");
  }
  set_mesh(std::nullopt);
  Array a = zeros({8, 4});
  Array b = zeros({4, 8});
  auto m = error_of<ValueError>([&] { matmul(a, b, {.out_sharding = P("x")}); });
  EXPECT_HAS(m, "Using PartitionSpec when you are not under a mesh context is not allowed.");
  set_mesh(mesh);
  Mesh other = make_mesh({8}, {"z"});
  auto m3 = error_of<ValueError>([&] {
    reshape(zeros({8, 4}), {32}, NamedSharding(other.abstract_mesh(), P("z")));
  });
  EXPECT_HAS(m3, "Context mesh ");
  EXPECT_HAS(m3, "should match the mesh of sharding");
}

TEST_F(OpErrors, E28ConstraintIsAnAssertion) {
  Array a = device_put(zeros({8, 4}), P("x"));
  EXPECT_NO_THROW(with_sharding_constraint(a, P("x", nullptr)));
  EXPECT_NO_THROW(with_sharding_constraint(a, P("x", UNCONSTRAINED)));
  auto m = error_of<AssertionError>([&] { with_sharding_constraint(a, P(nullptr, "y")); });
  EXPECT_HAS(m,
             "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
             "`Explicit`. The array sharding: P('x', None) did not match the sharding "
             "provided: P(None, 'y').");
}

TEST_F(OpErrors, UnreducedRules) {
  Array a = device_put(zeros({8, 4}), P(nullptr, "x"));
  Array b = device_put(zeros({4, 8}), P("x"));
  Array u = matmul(a, b, {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})});
  auto m = error_of<NotImplementedError>([&] { sin(u); });
  EXPECT_HAS(m, "unreduced rule for sin is not implemented");
  Array r = device_put(zeros({8, 8}), P());
  auto m2 = error_of<ShardingTypeError>([&] { add(u, r); });
  EXPECT_HAS(m2,
             "lhs is unreduced while rhs is not. `add` operation does not allow this because "
             "there will be implicit communication. Please reduce lhs via `reshard` before "
             "calling `add`.");
  EXPECT_EQ(typeof(add(u, u)).str(), "f32[8,8]{U:x}");
  // Linear in u: u @ r stays unreduced (beyond JAX); u @ u is bilinear and refused.
  EXPECT_EQ(typeof(matmul(u, r)).str(), "f32[8,8]{U:x}");
  auto m3 = error_of<ShardingTypeError>([&] { matmul(u, u); });
  EXPECT_HAS(m3, "lhs or rhs passed to dot_general cannot be unreduced.");
  // Partials summed in int8 (wrapping) are not the sum of int16 partial products.
  Array ai = device_put(zeros({8, 4}, int8), P(nullptr, "x"));
  Array bi = device_put(zeros({4, 8}, int8), P("x"));
  Array ui = matmul(ai, bi, {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})});
  Array ri = device_put(zeros({8, 8}, int8), P());
  EXPECT_EQ(typeof(matmul(ui, ri)).str(), "i8[8,8]{U:x}");
  auto m4 = error_of<ShardingTypeError>([&] { matmul(ui, ri, {.preferred_element_type = int16}); });
  EXPECT_HAS(m4, "an unreduced operand cannot be multiplied into another dtype.");
  // reshard reduces: the value is the full product.
  Array x = device_put(arange(32.f).reshape({8, 4}), P(nullptr, "x"));
  Array y = device_put(ones({4, 8}), P("x"));
  Array p = matmul(x, y, {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})});
  Array full_prod = reshard(p, P("y"));
  EXPECT_EQ(typeof(full_prod).str(), "f32[8@y,8]");
  EXPECT_FLOAT_EQ(full_prod.to_vector<float>()[0], 0 + 1 + 2 + 3);
  EXPECT_FLOAT_EQ(sum(full_prod).item<float>(), 8 * (31 * 32 / 2));
}

TEST_F(OpErrors, ReductionTypes) {
  MeshScope sq(make_mesh({2, 2}, {"x", "y"}));  // the spec's examples use x = y = 2
  Array a = device_put(zeros({8, 2}), P("x", "y"));
  EXPECT_EQ(typeof(sum(a)).str(), "f32[]");
  EXPECT_EQ(typeof(sum(a, 0)).str(), "f32[2@y]");
  EXPECT_EQ(typeof(sum(a, 1)).str(), "f32[8@x]");
  EXPECT_EQ(typeof(argmax(a, 0)).str(), "i32[2@y]");
  Array b = device_put(zeros({8, 2}), P(Axes{"x", "y"}));
  EXPECT_EQ(typeof(sum(b, 0)).str(), "f32[2]");
  EXPECT_EQ(typeof(sum(b, 1)).str(), "f32[8@(x,y)]");
  EXPECT_EQ(typeof(sum(b, 0, {.out_sharding = P(nullptr, Unreduced{{"x", "y"}})})).str(),
            "f32[2]{U:(x,y)}");
}

TEST_F(OpErrors, ShapeRuleTypes) {
  MeshScope sq(make_mesh({2, 2}, {"x", "y"}));
  Array a = device_put(zeros({8, 2}), P("x", "y"));
  EXPECT_EQ(typeof(expand_dims(a, 0)).str(), "f32[1,8@x,2@y]");
  EXPECT_EQ(typeof(expand_dims(a, 1)).str(), "f32[8@x,1,2@y]");
  EXPECT_EQ(typeof(transpose(a)).str(), "f32[2@y,8@x]");
  Array s = device_put(zeros({16}), P(Axes{"x", "y"}));
  EXPECT_EQ(typeof(reshape(s, {4, 4})).str(), "f32[4@(x,y),4]");
  Array t = device_put(zeros({8}), P(Axes{"x", "y"}));
  EXPECT_EQ(typeof(reshape(t, {2, 4})).str(), "f32[2@x,4@y]");
  Array u = device_put(zeros({2, 4}), P("x", "y"));
  EXPECT_EQ(typeof(reshape(u, {8})).str(), "f32[8@(x,y)]");
  auto v = reshape(u, {8});
  EXPECT_EQ(v.to_vector<float>().size(), 8u);
  Array sp = device_put(zeros({8, 4}), P("x", "y"));
  auto parts = split(sp, 2, 0);
  EXPECT_EQ(typeof(parts[0]).str(), "f32[4@x,4@y]");
  EXPECT_EQ(typeof(broadcast_to(device_put(zeros({4}), P("y")), {8, 4})).str(), "f32[8,4@y]");
  auto m = error_of<ValueError>([&] {
    broadcast_to(device_put(zeros({8, 1}), P("x")), {8, 4}, P());
  });
  EXPECT_HAS(
      m, "Incompatible types for broadcasting: input type=f32[8@x,1] and requested type=f32[8,4]");
}

}  // namespace
