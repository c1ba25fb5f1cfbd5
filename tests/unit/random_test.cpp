// tsr::random: threefry known answers, JAX-derived values, invariance under
// sharding (eager and jit), per-device blocks, distribution sanity, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

std::vector<uint32_t> u32(const Array& a) { return a.to_vector<uint32_t>(); }

// Runs the raw hash on one counter pair.
std::pair<uint32_t, uint32_t> hash(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  Array key = array(std::vector<uint32_t>{k0, k1}, {2});
  auto [a, b] = random::threefry2x32(key, array(std::vector<uint32_t>{x0}, {1}),
                                     array(std::vector<uint32_t>{x1}, {1}));
  return {u32(a)[0], u32(b)[0]};
}

TEST(Random, Threefry2x32Random123Vectors) {
  // Random123's test vectors, as in JAX's tests/random_test.py testThreefry2x32.
  EXPECT_EQ(hash(0, 0, 0, 0), std::make_pair(0x6b200159u, 0x99ba4efeu));
  EXPECT_EQ(hash(~0u, ~0u, ~0u, ~0u), std::make_pair(0x1cb996fcu, 0xbb002be7u));
  EXPECT_EQ(hash(0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3),
            std::make_pair(0xc4923a9cu, 0x483df7a0u));
}

TEST(Random, Threefry2x32JaxDerivedVectors) {
  // From JAX's tests (random_test.py testPRNGValues / testRngRandomBits, legacy
  // non-partitionable layout): legacy split(PRNGKey(0), 4) hashes counters
  // (i, i+4); legacy random_bits(PRNGKey(1701), 32/64, (3,)) hashes (0,2), (1,0),
  // (0,3), (1,4), (2,5). The hash itself is the same in both modes.
  const uint32_t o0[4] = {2285895361u, 1501764800u, 1518642379u, 4090693311u};
  const uint32_t o1[4] = {433833334u, 4221794875u, 839183663u, 3740430601u};
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(hash(0, 0, i, i + 4), std::make_pair(o0[i], o1[i]));
  EXPECT_EQ(hash(0, 1701, 0, 2), std::make_pair(56197195u, 961309823u));
  EXPECT_EQ(hash(0, 1701, 1, 0).first, 4200222568u);
  EXPECT_EQ(hash(0, 1701, 0, 3), std::make_pair(927208350u, 676898860u));
  EXPECT_EQ(hash(0, 1701, 1, 4), std::make_pair(3916705582u, 3164047411u));
  EXPECT_EQ(hash(0, 1701, 2, 5), std::make_pair(1835323421u, 4010691890u));
}

TEST(Random, KeyFoldInSplitMatchJax) {
  // jax test_prng_seeds_and_keys (x64): seed -> (hi, lo).
  EXPECT_EQ(u32(random::key(0)), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(u32(random::key(3)), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(u32(random::key(-3)), (std::vector<uint32_t>{4294967295u, 4294967293u}));
  EXPECT_EQ(u32(random::key(int64_t{2147483647} + 100)), (std::vector<uint32_t>{0, 2147483747u}));
  // jax testPRNGValues: fold_in(PRNGKey(0), 4) (fold_in is the same in both modes).
  EXPECT_EQ(u32(random::fold_in(random::key(0), 4)),
            (std::vector<uint32_t>{2285895361u, 433833334u}));
  // Partitionable split: row i hashes (0, i), so it equals fold_in(key, i)
  // (jax test_threefry_split_fold_in_symmetry).
  Array k = random::key(72);
  Array s = random::split(k, 5);
  EXPECT_EQ(s.shape(), (Shape{5, 2}));
  EXPECT_EQ(s.dtype(), uint32);
  std::vector<uint32_t> sv = u32(s);
  for (uint32_t i = 0; i < 5; ++i) {
    std::vector<uint32_t> f = u32(random::fold_in(k, i));
    EXPECT_EQ(f[0], sv[2 * i]);
    EXPECT_EQ(f[1], sv[2 * i + 1]);
  }
  EXPECT_EQ(u32(random::split(random::key(0), 5)).at(8), 2285895361u);
  std::vector<Array> keys = random::split_keys(k, 3);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(u32(keys[2]), u32(random::fold_in(k, 2)));
}

TEST(Random, BitsAndUniformPartitionableValues) {
  // bits[i] = out0 ^ out1 of the hash of (0, i); the hash values are JAX's (above).
  std::vector<uint32_t> b = u32(random::bits(random::key(1701), {4}));
  EXPECT_EQ(b[2], 56197195u ^ 961309823u);
  EXPECT_EQ(b[3], 927208350u ^ 676898860u);
  std::vector<uint32_t> b0 = u32(random::bits(random::key(0), {5}));
  EXPECT_EQ(b0[4], 2285895361u ^ 433833334u);
  EXPECT_EQ(random::bits(random::key(0), {5}, uint8).to_vector<uint8_t>()[4],
            static_cast<uint8_t>(b0[4]));
  // uint16: the low 16 bits of out0 ^ out1; uint64: out0 << 32 | out1 (JAX's
  // _threefry_random_bits_partitionable).
  EXPECT_EQ(random::bits(random::key(0), {5}, uint16).to_vector<uint16_t>()[4],
            static_cast<uint16_t>(b0[4]));
  EXPECT_EQ(random::bits(random::key(0), {5}, uint64).to_vector<uint64_t>()[4],
            (uint64_t{2285895361u} << 32) | 433833334u);
  // uniform f32 = bitcast((bits >> 9) | 0x3f800000) - 1.
  float u = random::uniform(random::key(0), {5}).to_vector<float>()[4];
  uint32_t ub = (b0[4] >> 9) | 0x3f800000u;
  float want;
  std::memcpy(&want, &ub, 4);
  EXPECT_EQ(u, want - 1.0f);
  EXPECT_FLOAT_EQ(u, 0.569888710975647f);
  // Scaled: max(minval, u * (maxval - minval) + minval) in float32.
  float s = random::uniform(random::key(0), {5}, float32, -2.0, 3.0).to_vector<float>()[4];
  EXPECT_EQ(s, std::max(-2.0f, (want - 1.0f) * 5.0f + -2.0f));
}

struct MeshCase {
  std::vector<int> sizes;
  std::vector<std::string> names;
};

const std::vector<MeshCase>& meshes() {
  static const std::vector<MeshCase> m = {
      {{1}, {"x"}}, {{2}, {"x"}}, {{8}, {"x"}}, {{2, 4}, {"x", "y"}}};
  return m;
}

bool uses_only(const PartitionSpec& p, const MeshCase& m) {
  for (const auto& a : p.partition_axes())
    if (std::find(m.names.begin(), m.names.end(), a) == m.names.end()) return false;
  return true;
}

// Every sampler, as (name, fn(key, out_sharding)) on a (16, 8) shape (or
// (16, 8) samples of categorical).
using Sampler = std::function<Array(const Array&, const ShardingArg&)>;
std::vector<std::pair<std::string, Sampler>> samplers() {
  return {
      {"bits",
       [](const Array& k, const ShardingArg& s) {
         return random::bits(k, {16, 8}, uint32, s);
       }},
      {"uniform",
       [](const Array& k, const ShardingArg& s) {
         return random::uniform(k, {16, 8}, float32, -1.0, 4.0, s);
       }},
      {"uniform_bf16",
       [](const Array& k, const ShardingArg& s) {
         return random::uniform(k, {16, 8}, bfloat16, 0.0, 1.0, s);
       }},
      {"uniform_f64",
       [](const Array& k, const ShardingArg& s) {
         return random::uniform(k, {16, 8}, float64, 0.0, 1.0, s);
       }},
      {"normal",
       [](const Array& k, const ShardingArg& s) {
         return random::normal(k, {16, 8}, float32, s);
       }},
      {"randint",
       [](const Array& k, const ShardingArg& s) {
         return random::randint(k, {16, 8}, -5, 17, int32, s);
       }},
      {"randint_i64",
       [](const Array& k, const ShardingArg& s) {
         return random::randint(k, {16, 8}, -5, int64_t{1} << 40, int64, s);
       }},
      {"bits_u16",
       [](const Array& k, const ShardingArg& s) {
         return random::bits(k, {16, 8}, uint16, s);
       }},
      {"bits_u64",  // compared as doubles: the high 53 bits, from out0 and out1
       [](const Array& k, const ShardingArg& s) {
         return random::bits(k, {16, 8}, uint64, s);
       }},
      {"randint_i16",
       [](const Array& k, const ShardingArg& s) {
         return random::randint(k, {16, 8}, -300, 30000, int16, s);
       }},
      {"randint_u16",
       [](const Array& k, const ShardingArg& s) {
         return random::randint(k, {16, 8}, 3, 70000, uint16, s);
       }},
      {"randint_u64",
       [](const Array& k, const ShardingArg& s) {
         return random::randint(k, {16, 8}, 0, int64_t{1} << 50, uint64, s);
       }},
      {"bernoulli",
       [](const Array& k, const ShardingArg& s) {
         return random::bernoulli(k, 0.25, {16, 8}, s);
       }},
      {"truncated_normal",
       [](const Array& k, const ShardingArg& s) {
         return random::truncated_normal(k, -1.0, 0.5, {16, 8}, float32, s);
       }},
      {"gumbel",
       [](const Array& k, const ShardingArg& s) {
         return random::gumbel(k, {16, 8}, float32, s);
       }},
      {"categorical",
       [](const Array& k, const ShardingArg& s) {
         Array logits = log(arange(1, 7, 1, float32));
         return random::categorical(k, logits, -1, Shape{16, 8}, s);
       }},
  };
}

std::vector<double> host(const Array& a) { return a.to_vector<double>(); }

TEST(Random, ValuesDoNotDependOnMeshOrSharding) {
  std::vector<std::vector<double>> want;
  for (auto& [name, f] : samplers()) want.push_back(host(f(random::key(123), {})));
  const std::vector<PartitionSpec> specs = {
      P(), P("x"), P("x", "y"), P(nullptr, "x"), P(Axes{"x", "y"}), P("y", "x")};
  int checked = 0;
  for (const auto& mc : meshes()) {
    Mesh mesh = make_mesh(mc.sizes, mc.names);
    MeshScope scope(mesh);
    Array key = random::key(123);
    for (const auto& spec : specs) {
      if (!uses_only(spec, mc)) continue;
      auto all = samplers();
      for (size_t i = 0; i < all.size(); ++i) {
        const auto& [name, f] = all[i];
        std::string what = name + " on " + mesh.str() + " " + spec.repr();
        Array eager = f(key, spec);
        EXPECT_EQ(typeof(eager).sharding.spec().normalized(2), spec.normalized(2)) << what;
        EXPECT_EQ(host(eager), want[i]) << what << " (eager)";
        auto jf = jit([&f = all[i].second, spec](const Array& k) { return f(k, spec); });
        EXPECT_EQ(host(jf(key)), want[i]) << what << " (jit)";
        // Each device holds exactly the block at its index.
        for (const auto& sh : eager.addressable_shards()) {
          std::vector<double> got = sh.data->to_vector<double>();
          int64_t r0 = sh.index[0].full ? 0 : sh.index[0].start;
          int64_t r1 = sh.index[0].full ? 16 : sh.index[0].stop;
          int64_t c0 = sh.index[1].full ? 0 : sh.index[1].start;
          int64_t c1 = sh.index[1].full ? 8 : sh.index[1].stop;
          size_t k = 0;
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c, ++k)
              ASSERT_EQ(got.at(k), want[i][static_cast<size_t>(r * 8 + c)]) << what << " shard";
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(Random, ShardedSamplerDoesNoGatherAndRunsUnderJit) {
  Mesh mesh = make_mesh({8}, {"x"});
  MeshScope scope(mesh);
  auto f = jit([](const Array& k) { return random::normal(k, {64, 4}, float32, P("x")); });
  std::string text = f.lower(random::key(0)).local;
  // The only data movement allowed is the replicated key: no gathers of the output.
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_to_all"), std::string::npos) << text;
  EXPECT_NE(text.find("random_uniform"), std::string::npos) << text;
}

TEST(Random, DistributionSanity) {
  Array k = random::key(2024);
  const int64_t n = 100000;
  std::vector<float> z = random::normal(k, {n}).to_vector<float>();
  double m = 0, v = 0;
  for (float x : z) m += x;
  m /= n;
  for (float x : z) v += (x - m) * (x - m);
  v /= n;
  EXPECT_NEAR(m, 0.0, 0.02);
  EXPECT_NEAR(v, 1.0, 0.02);
  std::vector<float> u = random::uniform(k, {n}, float32, 2.0, 3.0).to_vector<float>();
  for (float x : u) ASSERT_TRUE(x >= 2.0f && x < 3.0f) << x;
  std::vector<int32_t> r = random::randint(k, {n}, -3, 4).to_vector<int32_t>();
  std::set<int32_t> seen(r.begin(), r.end());
  EXPECT_EQ(seen, (std::set<int32_t>{-3, -2, -1, 0, 1, 2, 3}));
  std::vector<uint8_t> r8 = random::randint(k, {n}, 0, 256, uint8).to_vector<uint8_t>();
  EXPECT_EQ(std::set<uint8_t>(r8.begin(), r8.end()).size(), 256u);  // maxval above the range
  EXPECT_EQ(random::randint(k, {4}, 5, 5).to_vector<int32_t>(), (std::vector<int32_t>(4, 5)));
  std::vector<bool> b = random::bernoulli(k, 0.3, {n}).to_vector<bool>();
  double freq = 0;
  for (bool x : b) freq += x;
  EXPECT_NEAR(freq / n, 0.3, 0.01);
  std::vector<float> t = random::truncated_normal(k, -0.3, 0.3, {n}).to_vector<float>();
  for (float x : t) ASSERT_TRUE(x > -0.3f && x < 0.3f) << x;
  // categorical with p = (0.1, 0.2, 0.3, 0.4).
  Array logits = log(array(std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f}, {4})) - 42.0;
  std::vector<int32_t> c = random::categorical(k, logits, -1, Shape{n}).to_vector<int32_t>();
  double counts[4] = {0, 0, 0, 0};
  for (int32_t x : c) counts[x] += 1;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(counts[i] / n, 0.1 * (i + 1), 0.01) << i;
  // bernoulli with an array of probabilities, broadcast along rows.
  Array p = array(std::vector<float>{0.0f, 1.0f}, {2});
  std::vector<bool> bp = random::bernoulli(k, p, Shape{3, 2}).to_vector<bool>();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(bp[2 * i]);
    EXPECT_TRUE(bp[2 * i + 1]);
  }
}

TEST(Random, KeysAreDistinct) {
  Array k = random::key(0);
  std::set<std::vector<uint32_t>> all;
  std::vector<uint32_t> s = u32(random::split(k, 100));
  for (int i = 0; i < 100; ++i) all.insert({s[2 * i], s[2 * i + 1]});
  for (uint32_t d = 100; d < 200; ++d) all.insert(u32(random::fold_in(k, d)));
  all.insert(u32(k));
  EXPECT_EQ(all.size(), 201u);
  EXPECT_NE(host(random::uniform(random::split_keys(k)[0], {8})),
            host(random::uniform(random::split_keys(k)[1], {8})));
  // fold_in with a traced datum under jit.
  auto f = jit([](const Array& key, const Array& d) { return random::fold_in(key, d); });
  EXPECT_EQ(u32(f(k, scalar<int32_t>(4))), u32(random::fold_in(k, 4)));
}

template <typename E>
void expect_error(const std::function<void()>& f, const std::string& op, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error for " << op;
  } catch (const E& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[" + op + "]", 0), 0u) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
    EXPECT_NE(msg.find("Got"), std::string::npos) << msg;
  }
}

TEST(Random, TypedErrors) {
  Array k = random::key(0);
  Array bad_dtype = array(std::vector<int32_t>{0, 1}, {2});
  Array bad_shape = array(std::vector<uint32_t>{0, 1, 2}, {3});
  expect_error<TypeError>([&] { random::uniform(bad_dtype, {3}); }, "uniform",
                          "raw threefry2x32 key");
  expect_error<TypeError>([&] { random::normal(bad_shape, {3}); }, "normal", "shape (2,)");
  expect_error<TypeError>([&] { random::split(bad_shape); }, "split", "uint32");
  expect_error<TypeError>([&] { random::fold_in(bad_dtype, 1); }, "fold_in", "key");
  expect_error<ValueError>([&] { random::uniform(k, {3}, int32); }, "uniform", "float dtype");
  expect_error<ValueError>([&] { random::normal(k, {3}, uint8); }, "normal", "float dtype");
  expect_error<ValueError>([&] { random::bits(k, {3}, int32); }, "bits", "unsigned");
  expect_error<TypeError>([&] { random::randint(k, {3}, 0, 4, float32); }, "randint", "integer");
  expect_error<ValueError>([&] { random::uniform(k, {-1}); }, "uniform", "negative");
  expect_error<ValueError>([&] { random::split(k, -2); }, "split", "num");
  expect_error<TypeError>([&] { random::bernoulli(k, array(std::vector<int32_t>{1}, {1})); },
                          "bernoulli", "floating");
  expect_error<ValueError>(
      [&] {
        random::bernoulli(k, array(std::vector<float>{.5f, .5f}, {2}), Shape{3});
      },
      "bernoulli", "broadcast");
  Array logits = zeros({3, 5});
  expect_error<ValueError>([&] { random::categorical(k, logits, 1, Shape{4}); }, "categorical",
                           "broadcast");
  expect_error<ValueError>([&] { random::categorical(k, logits, 2); }, "categorical", "axis");
  expect_error<TypeError>([&] { random::fold_in(k, zeros({2}, int32)); }, "fold_in", "scalar");
  // JAX returns minval when maxval <= minval (no error).
  EXPECT_EQ(random::randint(k, {2}, 3, 1).to_vector<int32_t>(), (std::vector<int32_t>{3, 3}));
}

TEST(Random, ErfInv) {
  std::vector<double> xs = {-0.999999, -0.9, -0.5, -1e-8, 0.0, 0.3, 0.7, 0.99, 0.9999999};
  std::vector<double> y = erfinv(array(xs, {static_cast<int64_t>(xs.size())})).to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(std::erf(y[i]), xs[i], 1e-15) << xs[i];
  std::vector<float> e =
      erfinv(array(std::vector<float>{1.0f, -1.0f, 1.5f}, {3})).to_vector<float>();
  EXPECT_TRUE(std::isinf(e[0]) && e[0] > 0);
  EXPECT_TRUE(std::isinf(e[1]) && e[1] < 0);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_EQ(erfinv(zeros({2}, int32)).dtype(), float32);  // integers promote, as jnp
}

}  // namespace

namespace {

TEST(Random, PermutationIsAPermutationAndShardingInvariant) {
  std::vector<double> p = host(random::permutation(random::key(7), 10));
  std::vector<double> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(p, sorted);  // 1 in 10! to fail by chance
  // Whole rows move together; each row's content is intact.
  Array x = iota({16, 8}, int32);
  std::vector<double> rows = host(random::permutation(random::key(7), x));
  std::vector<double> ind = host(random::permutation(random::key(7), x, 1, true));
  for (int r = 0; r < 16; ++r) {
    double first = rows[r * 8];
    for (int c = 0; c < 8; ++c) EXPECT_EQ(rows[r * 8 + c], first + c);
  }
  for (const auto& mc : meshes()) {
    Mesh mesh = make_mesh(mc.sizes, mc.names);
    MeshScope scope(mesh);
    EXPECT_EQ(host(random::permutation(random::key(7), 10, P())), p) << mesh.str();
    // Sharded on the dim that is not shuffled.
    Array xs = device_put(iota({16, 8}, int32), P("x", nullptr));
    Array ys = device_put(iota({16, 8}, int32), P(nullptr, "x"));
    EXPECT_EQ(host(random::permutation(random::key(7), xs, 1, true)), ind) << mesh.str();
    auto jf = jit([](const Array& k, const Array& y) { return random::permutation(k, y); });
    EXPECT_EQ(host(jf(random::key(7), ys)), rows) << mesh.str();
  }
}

}  // namespace
