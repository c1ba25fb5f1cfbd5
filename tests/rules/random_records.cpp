#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

// The (8, 4) input carries the mesh; its sharding is the requested out_sharding.
std::vector<std::vector<PartitionSpec>> out_specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}, {P("y", "x")}};
}

Record sampler(std::vector<std::string> prims, std::string name,
               std::function<Array(const Array& key, const NamedSharding& s)> f) {
  return {
      std::move(prims),
      std::move(name),
      {{{8, 4}}},
      one([f](const std::vector<Array>& a) { return f(random::key(1701), typeof(a[0]).sharding); }),
      out_specs(),
      1e-6};
}

}  // namespace

std::vector<Record> random_records() {
  std::vector<Record> r;
  r.push_back(sampler({"random_bits"}, "bits_u32", [](const Array& k, const NamedSharding& s) {
    return random::bits(k, {8, 4}, uint32, s);
  }));
  r.push_back(sampler({"random_bits"}, "bits_u8", [](const Array& k, const NamedSharding& s) {
    return random::bits(k, {8, 4}, uint8, s);
  }));
  r.push_back(sampler({"random_bits"}, "bits_u16", [](const Array& k, const NamedSharding& s) {
    return random::bits(k, {8, 4}, uint16, s);
  }));
  r.push_back(sampler({"random_bits"}, "bits_u64", [](const Array& k, const NamedSharding& s) {
    return random::bits(k, {8, 4}, uint64, s);
  }));
  for (DType dt : {float32, float64, float16, bfloat16})
    r.push_back(sampler({"random_uniform"}, std::string("uniform_") + dtype_short_name(dt),
                        [dt](const Array& k, const NamedSharding& s) {
                          return random::uniform(k, {8, 4}, dt, -2.0, 3.0, s);
                        }));
  for (DType dt : {int32, int64, int8, int16, uint8, uint16, uint32, uint64})
    r.push_back(sampler({"random_randint"}, std::string("randint_") + dtype_short_name(dt),
                        [dt](const Array& k, const NamedSharding& s) {
                          return random::randint(k, {8, 4}, -3, 250, dt, s);
                        }));
  r.push_back(
      sampler({"random_uniform", "erf_inv"}, "normal", [](const Array& k, const NamedSharding& s) {
        return random::normal(k, {8, 4}, float32, s);
      }));
  r.push_back(sampler({"random_uniform", "erf_inv", "clamp"}, "truncated_normal",
                      [](const Array& k, const NamedSharding& s) {
                        return random::truncated_normal(k, -0.5, 1.5, {8, 4}, float32, s);
                      }));
  r.push_back(
      sampler({"random_uniform", "lt"}, "bernoulli", [](const Array& k, const NamedSharding& s) {
        return astype(random::bernoulli(k, 0.3, {8, 4}, s), float32);
      }));
  r.push_back(sampler({"random_uniform", "argmax"}, "categorical",
                      [](const Array& k, const NamedSharding& s) {
                        Array logits = log(arange(1, 6, 1, float32));
                        return random::categorical(k, logits, -1, Shape{8, 4}, s);
                      }));
  r.push_back(
      sampler({"threefry2x32"}, "split_then_uniform", [](const Array& k, const NamedSharding& s) {
        Array k2 = random::split_keys(random::fold_in(k, 7), 3)[2];
        return random::uniform(k2, {8, 4}, float32, 0.0, 1.0, s);
      }));
  // threefry2x32 on sharded counters: outputs follow the counters' sharding.
  r.push_back({{"threefry2x32"},
               "threefry2x32_counters",
               {{{8, 4}, uint32, Gen::Int}, {{8, 4}, uint32, Gen::Index}},
               [](const std::vector<Array>& a) {
                 auto [y0, y1] = random::threefry2x32(random::key(5), a[0], a[1]);
                 return std::vector<Array>{y0, y1};
               },
               {{P(), P()},
                {P("x"), P("x")},
                {P("x", "y"), P("x", "y")},
                {P("x"), P()},
                {P(nullptr, "y"), P(nullptr, "y")}}});
  // A sharded key is gathered (it is 8 bytes) before the kernel.
  r.push_back({{"random_uniform"},
               "uniform_sharded_key",
               {{{2}, uint32, Gen::Int}},
               one([](const std::vector<Array>& a) {
                 return random::uniform(a[0], {8, 4}, float32);
               }),
               {{P()}, {P("x")}}});
  // Keys as inputs (a batch of keys under vmap draws one sample per key).
  r.push_back({{"random_bits"},
               "bits_key_input",
               {{{2}, uint32, Gen::Int}},
               one([](const std::vector<Array>& a) {
                 return random::bits(a[0], {4, 2}, uint32);
               }),
               {{P()}, {P("x")}}});
  r.push_back({{"random_randint"},
               "randint_key_input",
               {{{2}, uint32, Gen::Int}},
               one([](const std::vector<Array>& a) { return random::randint(a[0], {6}, -3, 9); }),
               {{P()}, {P("x")}}});
  // split with a sharded out_sharding.
  r.push_back({{"threefry2x32", "iota"},
               "split_sharded",
               {{{8, 2}}},
               one([](const std::vector<Array>& a) {
                 return random::split(random::key(3), 8, typeof(a[0]).sharding);
               }),
               {{P()}, {P("x")}, {P(Axes{"x", "y"})}}});
  r.push_back({{"erf_inv"},
               "erf_inv_f32",
               {{{8, 4}, float32, Gen::Small}},
               one([](const std::vector<Array>& a) { return erfinv(a[0]); }),
               out_specs(),
               2e-6});
  r.push_back({{"erf_inv"},
               "erf_inv_f64",
               {{{8, 4}, float64, Gen::Small}},
               one([](const std::vector<Array>& a) { return erfinv(a[0]); }),
               {{P()}, {P("x", "y")}},
               1e-12});
  return r;
}

static const RecordSet kSet(random_records);

}  // namespace rules
