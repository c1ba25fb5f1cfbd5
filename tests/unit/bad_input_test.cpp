// Bad inputs at the library's entry points (issue 9): host data that does not
// match its shape, negative or overflowing shapes, device counts, devices and
// TSR_* environment variables are refused with typed errors, never a crash.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdlib>

#include "support/error_of.h"

#include "tsr/tsr.h"

using namespace tsr;

namespace {

// --- item 5: host data + shape -------------------------------------------------

TEST(BadInput, ArrayDataShorterThanShape) {
  auto m = error_of<ValueError>([] { array<float>({1, 2, 3}, {5}); });
  EXPECT_HAS(m, "[array]");
  EXPECT_HAS(m, "Got 3 elements");
  EXPECT_HAS(m, "(5,)");
  EXPECT_HAS(m, "expected 5");
}

TEST(BadInput, ArrayDataLongerThanShape) {
  auto m = error_of<ValueError>([] { array<int>({1, 2, 3, 4, 5}, {2, 2}); });
  EXPECT_HAS(m, "Got 5 elements");
  EXPECT_HAS(m, "expected 4");
  error_of<ValueError>([] { array<bool>({true}, {2}); });
  error_of<ValueError>([] { array(std::vector<double>{}, Shape{}); });  // a scalar needs 1
}

TEST(BadInput, DevicePutHostDataShorterThanShape) {
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  auto m = error_of<ValueError>([] { device_put(std::vector<int>{1, 2, 3}, P("x"), {2, 2}); });
  EXPECT_HAS(m, "[device_put]");
  EXPECT_HAS(m, "Got 3 elements");
  EXPECT_HAS(m, "expected 4");
}

TEST(BadInput, MatchingHostDataStillWorks) {
  EXPECT_EQ(array<float>({1, 2, 3, 4}, {2, 2}).to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(scalar(7).item<int>(), 7);
  EXPECT_EQ(array(std::vector<float>{}, {0, 3}).shape(), (Shape{0, 3}));
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);
  EXPECT_EQ(device_put(std::vector<int>{1, 2, 3, 4}, P("x"), {2, 2}).to_vector<int>(),
            (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(device_put(std::vector<int>{1, 2}, P("x")).shape(), (Shape{2}));
}

// --- item 6: element counts and byte sizes that overflow int64 ------------------

TEST(BadInput, ElementCountOverflowIsValueError) {
  auto m = error_of<ValueError>([] { iota({int64_t{1} << 40, int64_t{1} << 40}); });
  EXPECT_HAS(m, "[iota]");
  EXPECT_HAS(m, "overflow");
  EXPECT_HAS(m, "(1099511627776, 1099511627776)");
  error_of<ValueError>([] { zeros({int64_t{1} << 32, int64_t{1} << 32}); });
  error_of<ValueError>([] { random::normal(random::key(0), {int64_t{1} << 40, 1 << 30}); });
}

TEST(BadInput, ByteSizeOverflowIsValueError) {
  // INT64_MAX elements fit an int64, their bytes (4 each) do not.
  auto m = error_of<ValueError>([] { full({INT64_MAX}, 1.0); });
  EXPECT_HAS(m, "[full]");
  EXPECT_HAS(m, "bytes");
  error_of<ValueError>([] { zeros({INT64_MAX / 2}, float64); });
  error_of<ValueError>([] { arange(0.0, 1e30, 1.0); });  // 1e30 elements: no int64 length
  error_of<ValueError>([] { arange(0.0, std::nan(""), 1.0); });
}

TEST(BadInput, OverflowingShapeRefusedByOpsAndUnderJit) {
  // 2^32 * 2^32 wraps to 0 elements, the size of an empty array.
  const int64_t big = int64_t{1} << 32;
  error_of<ValueError>([&] { reshape(zeros({0}), {big, big}); });
  error_of<ValueError>([&] { broadcast_to(ones({1, 1}), {big, big}); });
  error_of<ValueError>([&] { tile(ones({big}), {big}); });
  auto f = jit([&](const Array& x) { return broadcast_to(x, {big, big}); });
  error_of<ValueError>([&] { f(ones({1})); });
}

TEST(BadInput, AllocationFailureStaysBackendError) {
  // 2^50 floats (4 PiB) is a valid type but no host can hold it.
  error_of<BackendError>([] { zeros({int64_t{1} << 50}).block_until_ready(); });
}

// --- item 7: negative sizes --------------------------------------------------------

TEST(BadInput, NegativeSizesRefusedByCreationOps) {
  auto m = error_of<ValueError>([] { broadcast_to(ones({1}), {-3}); });
  EXPECT_HAS(m, "[broadcast_to]");
  EXPECT_HAS(m, "(-3,)");
  EXPECT_HAS(m, ">= 0");
  error_of<ValueError>([] { broadcast_in_dim(ones({1}), {-3}, {0}); });
  error_of<ValueError>([] { zeros({2, -1}); });
  error_of<ValueError>([] { full({-5}, 2.0); });
  error_of<ValueError>([] { iota({-1}); });
  error_of<ValueError>([] { broadcasted_iota(int32, {3, -2}, 0); });
  error_of<ValueError>([] { eye(-2); });
  error_of<ValueError>([] { array<float>({}, {-1, 0}); });
}

TEST(BadInput, NegativeSizesRefusedByReshape) {
  // (-2, -3) multiplies to 6, the size of the input: still not a shape.
  auto m = error_of<ValueError>([] { reshape(iota({6}), {-2, -3}); });
  EXPECT_HAS(m, "[reshape]");
  error_of<ValueError>([] { reshape(iota({6}), {-2, 3}); });
  error_of<ValueError>([] { reshape(iota({6}), {-1, -1}); });
  EXPECT_EQ(reshape(iota({6}), {2, -1}).shape(), (Shape{2, 3}));  // one -1 is inference
}

TEST(BadInput, NegativeSizesRefusedByRandomAndSlicing) {
  Array k = random::key(0);
  error_of<ValueError>([&] { random::normal(k, {-2}); });
  error_of<ValueError>([&] { random::uniform(k, {4, -1}); });
  error_of<ValueError>([&] { random::bits(k, {-1}); });
  error_of<ValueError>([&] { random::randint(k, {-1}, 0, 10); });
  error_of<ValueError>([&] { random::bernoulli(k, 0.5, {-1}); });
  error_of<ValueError>([&] { dynamic_slice(iota({8}), {0}, {-1}); });
}

TEST(BadInput, NegativeSizesRefusedUnderJit) {
  auto f = jit([](const Array& x) { return broadcast_to(x, {-3}); });
  error_of<ValueError>([&] { f(ones({1})); });
  auto g = jit([](const Array& x) { return add(x, zeros({-1})); });
  error_of<ValueError>([&] { g(ones({1})); });
}

}  // namespace
