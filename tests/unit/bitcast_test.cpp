// bitcast_convert_type (lax) and Array::view (jnp): values, shapes, sharding of the
// result, and the error texts (JAX's wording). Sharded-vs-oracle sweeps are in
// tests/rules/bitcast_records.cpp.
#include <gtest/gtest.h>

#include "support/error_of.h"

#include <bit>
#include <cstdint>

#include "tsr/tsr.h"

using namespace tsr;

TEST(Bitcast, SameWidthNarrowerWider) {
  Array f = array<float>({1.0f, -2.5f}, {2});
  Array i = bitcast_convert_type(f, int32);
  EXPECT_EQ(i.shape(), (Shape{2}));
  EXPECT_EQ(i.to_vector<int32_t>(),
            (std::vector<int32_t>{std::bit_cast<int32_t>(1.0f), std::bit_cast<int32_t>(-2.5f)}));
  // Narrower: a trailing dim of the ratio, least significant byte first (as XLA on CPU).
  Array b = bitcast_convert_type(f, uint8);
  EXPECT_EQ(b.shape(), (Shape{2, 4}));
  EXPECT_EQ(b.to_vector<uint8_t>(),
            (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0}));
  // Wider: the last dim must equal the ratio and is removed.
  Array back = bitcast_convert_type(b, float32);
  EXPECT_EQ(back.shape(), (Shape{2}));
  EXPECT_EQ(back.to_vector<float>(), f.to_vector<float>());
  Array w = bitcast_convert_type(array<uint16_t>({1, 2, 3, 4}, {4}), uint64);
  EXPECT_EQ(w.shape(), (Shape{}));
  EXPECT_EQ(w.item<uint64_t>(), 0x0004000300020001ull);
  // Weak types are stripped (as lax).
  Array weak = convert_element_type(f, float32, {.weak = true});
  ASSERT_TRUE(typeof(weak).weak);
  EXPECT_FALSE(typeof(bitcast_convert_type(weak, int32)).weak);
}

TEST(Bitcast, ViewScalesTheLastDim) {
  Array x = array<int16_t>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  EXPECT_EQ(x.view(int8).shape(), (Shape{1, 2, 6}));  // jnp's doc examples
  Array y = array<int8_t>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 4});
  EXPECT_EQ(y.view(int16).shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(y.view(int16).to_vector<int16_t>(),
            (std::vector<int16_t>{0x0201, 0x0403, 0x0605, 0x0807}));
  EXPECT_EQ(y.view(uint32).shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(y.view(int8).shape(), y.shape());
  EXPECT_EQ(array<int8_t>({1, 0, 1}, {3}).view(bool_).to_vector<bool>(),
            (std::vector<bool>{true, false, true}));
  EXPECT_EQ(array(std::vector<bool>{true, false}, {2}).view(uint8).to_vector<uint8_t>(),
            (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(scalar<float>(1.0f).view(uint32).item<uint32_t>(), 0x3f800000u);
  EXPECT_EQ(scalar<float>(1.0f).view(uint32).shape(), (Shape{}));
}

TEST(Bitcast, ShardingOfTheResult) {
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  Array f = iota({8, 4}, float32, NamedSharding(mesh, P("x", "y")));
  EXPECT_EQ(typeof(bitcast_convert_type(f, uint8)).str(), "u8[8@x,4@y,4]");
  EXPECT_EQ(typeof(bitcast_convert_type(f, int32)).str(), "i32[8@x,4@y]");
  Array u = iota({8, 4}, uint16, NamedSharding(mesh, P("x")));
  EXPECT_EQ(typeof(bitcast_convert_type(u, uint64)).str(), "u64[8@x]");
  // view keeps a sharded last dim sharded (the reshapes split/merge its major part).
  EXPECT_EQ(typeof(f.view(uint16)).str(), "u16[8@x,8@y]");
  auto j = jit([](const Array& a) { return bitcast_convert_type(a, uint8); });
  EXPECT_EQ(j(f).to_vector<uint8_t>(), bitcast_convert_type(f, uint8).to_vector<uint8_t>());
}

TEST(Bitcast, Errors) {
  std::string e = error_of<TypeError>([] { bitcast_convert_type(array<int8_t>({1}, {1}), bool_); });
  EXPECT_HAS(e,
             "[bitcast_convert_type] tsr::bitcast_convert_type does not support bool or "
             "complex values unless the operand and destination types match.");
  EXPECT_HAS(e, "Got operand dtype=int8, new_dtype=bool");
  EXPECT_HAS(e, "Consider using the arr.view() method instead");
  e = error_of<ValueError>([] {
    bitcast_convert_type(array<uint8_t>({1, 2, 3}, {1, 3}), float32);
  });
  EXPECT_HAS(e,
             "Attempting to convert array of shape (1, 3) from uint8 of size 8 bits to "
             "float32 of size 32, bits but 3 * 8 != 32");
  e = error_of<ValueError>([] { bitcast_convert_type(scalar<float>(1.0f), float64); });
  EXPECT_HAS(e, "but 1 * 32 != 64");
  // The merged last dim may not be sharded; the fix names the reshard.
  Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  Array u = iota({8, 4}, uint8, NamedSharding(mesh, P("x", "y")));
  e = error_of<ShardingTypeError>([&] { bitcast_convert_type(u, float32); });
  EXPECT_HAS(e, "must not be sharded");
  EXPECT_HAS(e, "reshard(x, P('x',))");
  auto j = jit([](const Array& a) { return bitcast_convert_type(a, float32); });
  EXPECT_EQ(error_of<ShardingTypeError>([&] { j(u); }), e);
  // Unreduced operands: refused, naming reshard.
  MeshScope scope(mesh);
  Array s = sum(reshard(iota({8, 4}, float32, NamedSharding(mesh, P())), P("x")), 0,
                {.out_sharding = P(Unreduced{{"x"}})});
  e = error_of<ShardingTypeError>([&] { bitcast_convert_type(s, int32); });
  EXPECT_HAS(e, "unreduced");
  EXPECT_HAS(e, "reshard(x, ");
  // view's own texts (jnp.ndarray.view).
  e = error_of<ValueError>([] { scalar<float>(1.0f).view(uint8); });
  EXPECT_HAS(e, "view() of a 0d array is only supported if the itemsize is unchanged.");
  e = error_of<ValueError>([] { array<uint8_t>({1, 2, 3}, {3}).view(float32); });
  EXPECT_HAS(e,
             "When changing to a larger dtype, its size must be a divisor of the total size "
             "in bytes of the last axis of the array.");
}
