// Records for the block-moving collectives (all_gather, psum_scatter, ppermute,
// all_to_all, pbroadcast): each body applies a collective over the axes its block
// varies over and undoes it, so the result does not depend on the layout and the
// driver can compare it with the function on one device on every mesh and spec. The
// values of each collective alone are checked against a loop over devices in
// tests/unit/collectives_test.cpp.
#include "rules/record.h"
#include "tsr/shard_map.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
}

// The manual axes the block varies over, in mesh order (none for a replicated input:
// a group of one device).
AxisNames varying(const Array& b) {
  std::vector<std::string> v;
  for (const auto& a : get_abstract_mesh().axis_names())
    if (typeof(b).vma.count(a)) v.push_back(a);
  return AxisNames(v);
}

Record rec(std::vector<std::string> prims, std::string name,
           std::function<Array(const Array&)> body, bool replicated_out = false) {
  prims.insert(prims.begin(), "shard_map");
  return Record{std::move(prims),
                std::move(name),
                {{{16, 8}}},
                one([body, replicated_out](const std::vector<Array>& a) {
                  PartitionSpec out = replicated_out ? P() : typeof(a[0]).sharding.spec();
                  return shard_map(body, {.out_specs = out})(a[0]);
                }),
                specs(),
                1e-5};
}

// The block as a vector: its size (128 / n) is a multiple of every group size n <= 8.
Array flat(const Array& b) { return reshape(b, {-1}); }

}  // namespace

std::vector<Record> collective_records() {
  std::vector<Record> r;
  r.push_back(
      rec({"all_gather", "reduce_scatter"}, "all_gather_then_psum_scatter", [](const Array& b) {
        AxisNames ax = varying(b);
        double n = static_cast<double>(axis_size(ax));
        Array g = all_gather(flat(b), ax, {.tiled = true});
        return reshape(psum_scatter(g, ax, {.tiled = true}) / n, b.shape());
      }));
  r.push_back(rec({"all_gather"}, "all_gather_stacked_own_slot", [](const Array& b) {
    // Stacked on a new middle axis, then this device's slot taken back.
    AxisNames ax = varying(b);
    Array g = all_gather(b, ax, {.axis = 1});
    Array k = axis_index(ax);
    Array own = squeeze(dynamic_slice(g, {0, k, 0}, {b.shape()[0], 1, b.shape()[1]}), 1);
    return own * 2.0;
  }));
  r.push_back(rec(
      {"all_gather_invariant"}, "all_gather_invariant_total",
      [](const Array& b) {
        double copies = 1;
        for (const auto& a : get_abstract_mesh().axis_names())
          if (!typeof(b).vma.count(a)) copies *= static_cast<double>(axis_size(a));
        Array g = all_gather(flat(b), get_abstract_mesh().axis_names(),
                             {.tiled = true, .invariant = true});
        return sum(g * g) / copies;
      },
      true));
  r.push_back(rec({"ppermute"}, "ppermute_there_and_back", [](const Array& b) {
    AxisNames ax = varying(b);
    int n = static_cast<int>(axis_size(ax));
    std::vector<std::pair<int, int>> fwd, back;
    for (int i = 0; i < n; ++i) {
      fwd.emplace_back(i, (i + 1) % n);
      back.emplace_back((i + 1) % n, i);
    }
    return ppermute(sin(ppermute(b, ax, fwd)), ax, back);
  }));
  r.push_back(rec({"all_to_all"}, "all_to_all_twice", [](const Array& b) {
    // all_to_all with split == concat is its own inverse.
    AxisNames ax = varying(b);
    Array y = all_to_all(flat(b), ax, 0, 0, true);
    return reshape(all_to_all(y * 3.0, ax, 0, 0, true), b.shape());
  }));
  r.push_back(rec({"all_to_all"}, "all_to_all_untiled_there_and_back", [](const Array& b) {
    AxisNames ax = varying(b);
    int64_t n = axis_size(ax);
    Array v = reshape(b, {n, -1});
    Array y = all_to_all(v, ax, 0, 1);  // [m, n]: column j came from device j
    return reshape(all_to_all(y, ax, 1, 0), b.shape());
  }));
  r.push_back(rec({"pbroadcast"}, "pbroadcast_kept_on_source", [](const Array& b) {
    AxisNames ax = varying(b);
    Array first = equal(axis_index(ax), 0);
    return where(first, pbroadcast(exp(b), ax, 0), exp(b));
  }));
  return r;
}

static const RecordSet kSet(collective_records);

}  // namespace rules
